// RUN: tessel-opt %s --tessel-emulate-gpu | FileCheck %s

// A raw buffer resource (the CDNA grouped matmuls' bounds-checked loads)
// becomes a tessel_emu_buffer_resource {base, num_records, stride} in a
// 16-byte slot of the lane body's entry block, and each load through it a
// call of op 20 (buffer_load) with {resource, offset, soffset, bytes} in
// the I/O record and the words read back from offset 20. The resource's
// operands come through v_readfirstlane (op 21, a u32 op).

// CHECK-LABEL: llvm.func internal @kern.lane(
// CHECK: %[[IO:.*]] = llvm.alloca %{{.*}} x !llvm.array<256 x i8> {alignment = 16 : i64}
// CHECK: %[[RES:.*]] = llvm.alloca %{{.*}} x !llvm.array<16 x i8> {alignment = 16 : i64}
// CHECK: llvm.getelementptr %{{.*}}[21] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[FIRST_AT:.*]] = llvm.getelementptr %[[IO]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[FIRST:.*]] = llvm.load %[[FIRST_AT]] {alignment = 1 : i64} : !llvm.ptr -> i32
// CHECK: llvm.zext %[[FIRST]] : i32 to i64
// CHECK: %[[BASE_AT:.*]] = llvm.getelementptr %[[RES]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %{{.*}}, %[[BASE_AT]] : !llvm.ptr, !llvm.ptr
// The hardware keeps 32 bits of the size.
// CHECK: %[[SIZE:.*]] = llvm.trunc %{{.*}} : i64 to i32
// CHECK: %[[SIZE_AT:.*]] = llvm.getelementptr %[[RES]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[SIZE]], %[[SIZE_AT]] : i32, !llvm.ptr
// CHECK: %[[STRIDE:.*]] = llvm.zext %{{.*}} : i16 to i32
// CHECK: %[[STRIDE_AT:.*]] = llvm.getelementptr %[[RES]][12] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[STRIDE]], %[[STRIDE_AT]] : i32, !llvm.ptr
// CHECK: %[[RES_AT:.*]] = llvm.getelementptr %[[IO]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[RES]], %[[RES_AT]]
// CHECK: %[[OFF_AT:.*]] = llvm.getelementptr %[[IO]][8] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[OFF:.*]], %[[OFF_AT]]
// CHECK: %[[SOFF_AT:.*]] = llvm.getelementptr %[[IO]][12] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[SOFF:.*]], %[[SOFF_AT]]
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(16 : i32) : i32
// CHECK: %[[BYTES_AT:.*]] = llvm.getelementptr %[[IO]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.store %[[BYTES]], %[[BYTES_AT]]
// CHECK: llvm.getelementptr %{{.*}}[20] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[WORDS_AT:.*]] = llvm.getelementptr %[[IO]][20] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: llvm.load %[[WORDS_AT]] {alignment = 1 : i64} : !llvm.ptr -> vector<4xi32>
// CHECK-NOT: rocdl.

module attributes {gpu.container_module} {
  gpu.module @k {
    llvm.func @kern(%a: !llvm.ptr<1>, %out: !llvm.ptr<1>, %n: i64, %off: i32, %soff: i32) attributes {rocdl.kernel} {
      %stride = llvm.mlir.constant(0 : i16) : i16
      %flags = llvm.mlir.constant(159744 : i32) : i32
      %aux = llvm.mlir.constant(0 : i32) : i32
      %n32 = llvm.trunc %n : i64 to i32
      %first = rocdl.readfirstlane %n32 : i32
      %size = llvm.zext %first : i32 to i64
      %r = rocdl.make.buffer.rsrc %a, %stride, %size, %flags : !llvm.ptr<1> to !llvm.ptr<8>
      %v = rocdl.raw.ptr.buffer.load %r, %off, %soff, %aux : vector<4xi32>
      llvm.store %v, %out : vector<4xi32>, !llvm.ptr<1>
      llvm.return
    }
  }
}
