// RUN: tessel-opt %s --tessel-host-entry | FileCheck %s

// The entry takes the CUDA-style parameter array: per argument in order, a
// buffer's data pointer or a scalar's value (the f32 softmax scale), then one
// i64 per shape symbol (here T, then B from cu_seqlens = B + 1).

// CHECK-LABEL: func.func @prefill(
// CHECK-SAME:      %[[P:.*]]: !llvm.ptr) attributes {tessel.entry}
// CHECK:         %[[T_SLOT:.*]] = llvm.getelementptr %[[P]][6]
// CHECK:         %[[T_PTR:.*]] = llvm.load %[[T_SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[T:.*]] = llvm.load %[[T_PTR]] : !llvm.ptr -> i64
// CHECK:         %[[B_SLOT:.*]] = llvm.getelementptr %[[P]][7]
// CHECK:         %[[B_PTR:.*]] = llvm.load %[[B_SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[B:.*]] = llvm.load %[[B_PTR]] : !llvm.ptr -> i64
// CHECK:         llvm.getelementptr %[[P]][0]
// CHECK:         llvm.insertvalue %[[T]], %{{.*}}[3, 0]
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)> to memref<?x4x64xf32>
// CHECK:         llvm.getelementptr %[[P]][3]
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    %[[B1:.*]] = llvm.add %[[B]], %[[ONE]] : i64
// CHECK:         llvm.insertvalue %[[B1]], %{{.*}}[3, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK:         %[[S_SLOT:.*]] = llvm.getelementptr %[[P]][5]
// CHECK:         %[[S_PTR:.*]] = llvm.load %[[S_SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[S:.*]] = llvm.load %[[S_PTR]] : !llvm.ptr -> f32
// CHECK:         call @prefill.impl({{.*}}, %[[S]])
// CHECK:       func.func private @prefill.impl(
// CHECK:         tessel.prefill_attention
func.func @prefill(%q: memref<?x4x64xf32>, %k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>, %cu: memref<?xi32>, %o: memref<?x4x64xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x2x64xf32>) v(%v : memref<?x2x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x4x64xf32>) scale(%scale) {causal}
  return
}

// Private functions are not kernels and are left alone.
// CHECK-LABEL: func.func private @helper
// CHECK-NOT:   tessel.entry
func.func private @helper(%a: memref<8xf32>) {
  return
}
