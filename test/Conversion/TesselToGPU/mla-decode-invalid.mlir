// RUN: tessel-opt %s --tessel-to-gpu=chip=sm80 -split-input-file -verify-diagnostics
// RUN: not tessel-opt %s --tessel-to-gpu="chip=sm80 stages=9" -split-input-file 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not tessel-opt %s --tessel-to-gpu="chip=gfx942 stages=3" -split-input-file 2>&1 | FileCheck %s --check-prefix=GFX942

// What the MLA decode template refuses, each with the constraint named.
// SMEM:   error: 'tessel.mla_decode' op GPU template: no MLA decode tile of head dim 576 with 9 stages fits the 166912 bytes of shared memory of sm_80
// GFX942: error: 'tessel.mla_decode' op GPU template: stages must be 2 (tiles go through registers), got 3

func.func @mla_ok(%q: memref<?x16x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x16x512xbf16>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x16x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x16x512xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_head_dim_96(%q: memref<?x8x96xbf16>, %c: memref<?x16x96xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x64xbf16>, %scale: f32) {
  // expected-error @below {{GPU template: the MLA head dim 96 must be a multiple of 64 (whole swizzled shared-memory rows)}}
  tessel.mla_decode q(%q : memref<?x8x96xbf16>) kv_cache(%c : memref<?x16x96xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x64xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_f32(%q: memref<?x8x576xf32>, %c: memref<?x16x576xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x512xf32>, %scale: f32) {
  // expected-error @below {{GPU template: sm_80 has no MMA for 'f32' operands with f32 accumulation}}
  tessel.mla_decode q(%q : memref<?x8x576xf32>) kv_cache(%c : memref<?x16x576xf32>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x512xf32>) scale(%scale)
  return
}
