// RUN: tessel-opt %s --tessel-to-gpu=chip=sm80 -split-input-file -verify-diagnostics
// RUN: not tessel-opt %s --tessel-to-gpu="chip=sm80 stages=40" -split-input-file 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not tessel-opt %s --tessel-to-gpu="chip=gfx942 stages=3" -split-input-file 2>&1 | FileCheck %s --check-prefix=GFX942

// What the paged decode template refuses, each with the constraint named.
// SMEM:   error: 'tessel.decode_attention' op GPU template: no decode tile of head dims 128/128 with 40 stages fits the 166912 bytes of shared memory of sm_80
// GFX942: error: 'tessel.decode_attention' op GPU template: gfx942 stages tiles through registers into a double buffer, so stages must be 2, got 3

func.func @decode_ok(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

// 32 query heads share one KV head: more than the 16 rows of an MMA tile.
func.func @decode_group_too_large(%q: memref<?x32x128xbf16>, %kc: memref<?x16x1x128xbf16>, %vc: memref<?x16x1x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{GPU template: 32 query heads per KV head; the decode kernel takes at most 16 (the MMA rows) on sm_80}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x1x128xbf16>) v_cache(%vc : memref<?x16x1x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_head_dim_96(%q: memref<?x8x96xbf16>, %kc: memref<?x16x2x96xbf16>, %vc: memref<?x16x2x96xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x8x96xbf16>, %scale: f32) {
  // expected-error @below {{GPU template: head dims 96/96 must be multiples of 64 (whole swizzled shared-memory rows)}}
  tessel.decode_attention q(%q : memref<?x8x96xbf16>) k_cache(%kc : memref<?x16x2x96xbf16>) v_cache(%vc : memref<?x16x2x96xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x8x96xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_f32(%q: memref<?x8x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x8x64xf32>, %scale: f32) {
  // expected-error @below {{GPU template: sm_80 has no MMA for 'f32' operands with f32 accumulation}}
  tessel.decode_attention q(%q : memref<?x8x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x8x64xf32>) layout(nhd) scale(%scale)
  return
}
