// RUN: tessel-opt %s -split-input-file -verify-diagnostics --tessel-to-gpu=chip=gfx942

// gfx942 has 64 KB of LDS per workgroup (gfx950: 160 KB).
func.func @lds_overflow(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
                        %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  // expected-error@+1 {{GPU template: 2 stages need 81920 bytes of shared memory, more than the 65536 a block of gfx942 can use}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
      {trans_b, tessel.gpu_tile = {tile_k = 64}}
  return
}

// -----

func.func @three_stages(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
                        %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  // expected-error@+1 {{GPU template: gfx942 stages tiles through registers into a double buffer, so stages must be 2, got 3}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
      {trans_b, tessel.gpu_tile = {stages = 3}}
  return
}

// -----

// CDNA MFMAs take 16-bit (and 8-bit) operands; f32 data has no bf16 atom.
func.func @f32_data(%a: memref<?x64xf32>, %b: memref<8x64x64xf32>,
                    %g: memref<8xi32>, %c: memref<?x64xf32>) {
  // expected-error@+1 {{GPU template: gfx942 has no MMA for 'f32' operands with f32 accumulation}}
  tessel.grouped_matmul a(%a : memref<?x64xf32>) b(%b : memref<8x64x64xf32>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xf32>) {trans_b}
  return
}
