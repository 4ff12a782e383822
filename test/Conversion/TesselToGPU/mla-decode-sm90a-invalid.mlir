// RUN: not tessel-opt %s --tessel-to-gpu="chip=sm_90a stages=3" 2>&1 | FileCheck %s --check-prefix=THREE
// RUN: not tessel-opt %s --tessel-to-gpu="chip=sm_90a stages=1" 2>&1 | FileCheck %s --check-prefix=ONE

// The Hopper MLA decode's Q, its ring of 64-token tiles of 576-wide rows
// and the P tile must fit in shared memory: 2 stages do.

// THREE: error: 'tessel.mla_decode' op GPU template: 3 stages of 64-token tiles of 576-wide latent rows need 304720 bytes of shared memory, more than the 232448 a block of sm_90a can use
// ONE:   error: 'tessel.mla_decode' op GPU template: stages must be at least 2, got 1

func.func @mla(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>,
               %bt: memref<?x?xi32>, %sl: memref<?xi32>,
               %out: memref<?x128x512xbf16>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>)
      kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%out : memref<?x128x512xbf16>)
      scale(%scale)
  return
}
