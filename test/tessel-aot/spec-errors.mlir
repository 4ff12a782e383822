// A spec that is not a kernel, a spec without kernels, and a missing file are
// reported, not crashed on.
// RUN: split-file %s %t
// RUN: not tessel-aot %t/not-a-kernel.mlir -o %t.tsb 2>&1 | FileCheck %s --check-prefix=NOTKERNEL
// RUN: not tessel-aot %t/empty.mlir -o %t.tsb 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not tessel-aot %t/does-not-exist.mlir -o %t.tsb 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tessel-aot %t/invalid-op.mlir -o %t.tsb 2>&1 | FileCheck %s --check-prefix=INVALID

// NOTKERNEL: error: kernel 'copy': the body must be one tessel op, got 'memref.copy'
// EMPTY: error: the spec has no public kernel function
// MISSING: error: cannot open input file '{{.*}}does-not-exist.mlir'
// INVALID: error: 'tessel.expert_histogram' op 'counts' must be a memref of i32, got 'f32'

//--- not-a-kernel.mlir
func.func @copy(%a: memref<8xi32>, %b: memref<8xi32>) {
  memref.copy %a, %b : memref<8xi32> to memref<8xi32>
  return
}

//--- empty.mlir
func.func private @helper(%a: memref<8xi32>) {
  return
}

//--- invalid-op.mlir
func.func @histogram(%ids: memref<?x2xi32>, %counts: memref<4xf32>, %offsets: memref<4xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>) counts(%counts : memref<4xf32>) group_offsets(%offsets : memref<4xi32>)
  return
}
