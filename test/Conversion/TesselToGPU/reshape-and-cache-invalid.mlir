// RUN: tessel-opt %s -split-input-file -verify-diagnostics --tessel-to-gpu=chip=gfx942

// Each lane copies one 16-byte chunk of a K or V row.
func.func @v_head_dim(%k: memref<?x2x64xf16>, %v: memref<?x2x20xf16>,
                      %kc: memref<?x16x2x64xf16>, %vc: memref<?x16x2x20xf16>,
                      %slots: memref<?xi32>) {
  // expected-error@+1 {{GPU template: V head dim (20) must be a multiple of 8 for 'f16', so that every row is made of 16-byte chunks}}
  tessel.reshape_and_cache k(%k : memref<?x2x64xf16>) v(%v : memref<?x2x20xf16>)
      k_cache(%kc : memref<?x16x2x64xf16>) v_cache(%vc : memref<?x16x2x20xf16>)
      slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}

// -----

func.func @k_head_dim(%k: memref<?x2x36xbf16>, %v: memref<?x2x64xbf16>,
                      %kc: memref<?x16x2x36xbf16>, %vc: memref<?x16x2x64xbf16>,
                      %slots: memref<?xi32>) {
  // expected-error@+1 {{GPU template: K head dim (36) must be a multiple of 8 for 'bf16'}}
  tessel.reshape_and_cache k(%k : memref<?x2x36xbf16>) v(%v : memref<?x2x64xbf16>)
      k_cache(%kc : memref<?x16x2x36xbf16>) v_cache(%vc : memref<?x16x2x64xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}
