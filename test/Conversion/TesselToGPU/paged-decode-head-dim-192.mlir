// RUN: tessel-opt %s --tessel-to-gpu=chip=sm80 | FileCheck %s

// Head dim 192 splits V's columns over two warps, 12 output atoms each:
// P.V loads its B fragments 8 atoms at a time, then the 4 left over (the
// last group once ran past the accumulators and crashed the compiler).
// Per tile and warp: Q.K^T 12 k-steps x 2 score atoms, P.V 12 atoms.

// CHECK-LABEL: gpu.func @decode_d192(
// CHECK-COUNT-36: nvvm.mma.sync
// CHECK-NOT:      nvvm.mma.sync
// CHECK:          gpu.return
func.func @decode_d192(%q: memref<?x8x192xbf16>, %kc: memref<?x16x2x192xbf16>, %vc: memref<?x16x2x192xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x192xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x8x192xbf16>) k_cache(%kc : memref<?x16x2x192xbf16>) v_cache(%vc : memref<?x16x2x192xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x192xbf16>) layout(nhd) scale(%scale)
  return
}
