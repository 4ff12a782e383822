// REQUIRES: ptxas
// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=sm_90a ptxas-verbose=1" \
// RUN:   -mlir-print-op-on-diagnostic=false > %t.log 2>&1
// RUN: FileCheck %s < %t.log
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.log

// ptxas builds the unified mode's kernel (NHD, whole form: the one the
// dispatcher launches unless it splits) without spilling.

// CHECK:       Compiling entry function 'unified' for 'sm_90a'
// CHECK:       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: {{[1-9][0-9]* bytes (stack frame|spill)}}

func.func @unified(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) causal layout(nhd) scale(%scale)
  return
}
