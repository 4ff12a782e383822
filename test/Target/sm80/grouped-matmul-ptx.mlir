// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// The PTX of the reference MoE gate/up kernel uses the Ampere tensor-core
// path: 16-byte zero-filling cp.async into shared memory in 4 stages,
// ldmatrix.x4 fragments, bf16 mma.sync with fp32 accumulators, and no local
// memory (accumulators indexed at compile time).

// CHECK:       .version 8.0
// CHECK-NEXT:  .target sm_80
// CHECK:       .visible .entry moe_gate(
// CHECK-NEXT:    .param .u64 .ptr .align 1 moe_gate_param_0,
// CHECK-NEXT:    .param .u64 .ptr .align 1 moe_gate_param_1,
// CHECK-NEXT:    .param .u64 .ptr .align 1 moe_gate_param_2,
// CHECK-NEXT:    .param .u64 .ptr .align 1 moe_gate_param_3,
// CHECK-NEXT:    .param .u64 moe_gate_param_4
// CHECK-NEXT:  )
// CHECK-NEXT:  .maxntid 128, 1, 1
// The dynamic shared memory symbol (MLIR gives it internal linkage, so the
// NVPTX back end declares it in the kernel); the only shared variable, it
// sits at the start of the shared window, where the dynamic block begins.
// CHECK:       .shared .align 16 .b8 __dynamic_shmem__0;
// The loop is rotated, so the body's order is not checked.
// CHECK-DAG:   shfl.sync.up.b32
// CHECK-DAG:   cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK-DAG:   cp.async.commit_group;
// CHECK-DAG:   cp.async.wait_group 2;
// CHECK-DAG:   bar.sync 0;
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG:   st.global.b32

// NOLOCAL-NOT: .local
func.func @moe_gate(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}
