// REQUIRES: ptxas
// RUN: tessel-opt %s --tessel-nvvm-pipeline=ptxas-verbose=1 \
// RUN:   -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// ptxas (sm_90, the H200) builds the SwiGLU kernels, both layouts of h,
// without local memory.

// CHECK:     Compiling entry function 'swiglu_parts' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Compiling entry function 'swiglu_backward_parts' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Compiling entry function 'swiglu_backward_dsv3' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @swiglu_parts(%h: memref<2x?x512xbf16>, %a: memref<?x512xbf16>) {
  tessel.swiglu h(%h : memref<2x?x512xbf16>) act(%a : memref<?x512xbf16>)
  return
}
func.func @swiglu_backward_parts(%g: memref<?x512xbf16>, %h: memref<2x?x512xbf16>, %w: memref<?x8xbf16>, %s: memref<?xi32>, %p: memref<?x8xi32>, %dh: memref<2x?x512xbf16>, %aw: memref<?x512xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x512xbf16>) h(%h : memref<2x?x512xbf16>) topk_weights(%w : memref<?x8xbf16>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>) dh(%dh : memref<2x?x512xbf16>) act_weighted(%aw : memref<?x512xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}
func.func @swiglu_backward_dsv3(%g: memref<?x2048xbf16>, %h: memref<?x4096xbf16>, %w: memref<?x8xf32>, %s: memref<?xi32>, %p: memref<?x8xi32>, %dh: memref<?x4096xbf16>, %aw: memref<?x2048xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x2048xbf16>) h(%h : memref<?x4096xbf16>) topk_weights(%w : memref<?x8xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>) dh(%dh : memref<?x4096xbf16>) act_weighted(%aw : memref<?x2048xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}
