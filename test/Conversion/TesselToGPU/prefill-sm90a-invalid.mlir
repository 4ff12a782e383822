// RUN: not tessel-opt %s --tessel-to-gpu="chip=sm_90a stages=4" 2>&1 | FileCheck %s --check-prefix=FOUR
// RUN: not tessel-opt %s --tessel-to-gpu="chip=sm_90a stages=1" 2>&1 | FileCheck %s --check-prefix=ONE

// The Hopper prefill's Q tile and K/V ring must fit in shared memory, with
// a stage to fill while another is computed. By default it takes as many
// stages as fit (3 at head dim 128).

// FOUR: error: 'tessel.prefill_attention' op GPU template: 4 stages of 128-key K/V tiles of head dims 128/128 need 296032 bytes of shared memory, more than the 232448 a block of sm_90a can use
// ONE:  error: 'tessel.prefill_attention' op GPU template: stages must be at least 2, got 1

func.func @prefill(%q: memref<?x8x128xbf16>, %k: memref<?x8x128xbf16>,
                   %v: memref<?x8x128xbf16>, %cu: memref<?xi32>,
                   %out: memref<?x8x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x8x128xbf16>)
      k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x128xbf16>)
      scale(%scale)
  return
}
