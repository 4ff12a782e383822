// RUN: tessel-opt %s --tessel-amdgpu-no-ieee | FileCheck %s

// tessel-amdgpu-no-ieee: every ROCDL kernel gets "amdgpu-ieee"="false"
// among its passthrough attributes (kept beside any it has, not doubled);
// functions that are not kernels are left alone.

// CHECK-LABEL: llvm.func @kernel()
// CHECK-SAME:    passthrough = {{\[}}["amdgpu-ieee", "false"]]
// CHECK-LABEL: llvm.func @kernel_with_attributes()
// CHECK-SAME:    passthrough = ["noinline", ["amdgpu-ieee", "false"]]
// CHECK-LABEL: llvm.func @helper()
// CHECK-NOT:     passthrough
// CHECK-SAME:    {
module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kernel() attributes {rocdl.kernel} {
      llvm.return
    }
    llvm.func @kernel_with_attributes() attributes {rocdl.kernel, passthrough = ["noinline", ["amdgpu-ieee", "false"]]} {
      llvm.return
    }
    llvm.func @helper() {
      llvm.return
    }
  }
}
