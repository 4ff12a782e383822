// RUN: tessel-opt %s -split-input-file -verify-diagnostics --tessel-to-gpu

// Rows are moved as 16-byte chunks of the narrowest element type involved:
// a bf16 out makes 8-element chunks even for f32 partials.
func.func @merge_head_dim(%oa: memref<?x4x36xf32>, %la: memref<4x?xf32>,
                          %ob: memref<?x4x36xf32>, %lb: memref<4x?xf32>,
                          %out: memref<?x4x36xbf16>) {
  // expected-error@+1 {{GPU template: head dim (36) must be a multiple of 8 for 'bf16', so that every row is made of 16-byte chunks}}
  tessel.lse_merge a(%oa : memref<?x4x36xf32>, %la : memref<4x?xf32>)
      b(%ob : memref<?x4x36xf32>, %lb : memref<4x?xf32>)
      out(%out : memref<?x4x36xbf16>)
  return
}

// -----

func.func @merge_n_head_dim(%p: memref<?x?x4x6xf32>, %pl: memref<?x4x?xf32>,
                            %out: memref<?x4x6xf32>) {
  // expected-error@+1 {{GPU template: head dim (6) must be a multiple of 4 for 'f32', so that every row is made of 16-byte chunks}}
  tessel.lse_merge_n partials(%p : memref<?x?x4x6xf32>, %pl : memref<?x4x?xf32>)
      out(%out : memref<?x4x6xf32>)
  return
}
