// RUN: tessel-opt %s -split-input-file -verify-diagnostics --tessel-to-gpu

func.func @no_trans_b_narrow_tile(%a: memref<?x64xbf16>,
                                  %b: memref<8x64x64xbf16>, %g: memref<8xi32>,
                                  %c: memref<?x64xbf16>) {
  // expected-error@+1 {{GPU template: tessel.gpu_tile {tile_n = 32 : i64} breaks tile_n % 64 == 0 without trans_b}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
      {tessel.gpu_tile = {tile_n = 32}}
  return
}

// -----

func.func @f32_data(%a: memref<?x64xf32>, %b: memref<8x64x64xf32>,
                    %g: memref<8xi32>, %c: memref<?x64xf32>) {
  // expected-error@+1 {{GPU template: sm_80 has no MMA for 'f32' operands with f32 accumulation}}
  tessel.grouped_matmul a(%a : memref<?x64xf32>) b(%b : memref<8x64x64xf32>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xf32>) {trans_b}
  return
}

// -----

func.func @k_not_multiple_of_8(%a: memref<?x60xbf16>, %b: memref<8x64x60xbf16>,
                               %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  // expected-error@+1 {{GPU template: N and K (64, 60) must be multiples of 8, so that every row is made of 16-byte chunks}}
  tessel.grouped_matmul a(%a : memref<?x60xbf16>) b(%b : memref<8x64x60xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

// -----

func.func @n_not_multiple_of_8(%a: memref<?x64xbf16>, %b: memref<8x36x64xbf16>,
                               %g: memref<8xi32>, %c: memref<?x36xbf16>) {
  // expected-error@+1 {{GPU template: N and K (36, 64) must be multiples of 8}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x36x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x36xbf16>) {trans_b}
  return
}

// -----

func.func @dynamic_groups(%a: memref<?x64xbf16>, %b: memref<?x64x64xbf16>,
                          %g: memref<?xi32>, %c: memref<?x64xbf16>) {
  // expected-error@+1 {{GPU template: the group count G must be static (the grid is sized from T and G)}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<?x64x64xbf16>)
      group_offsets(%g : memref<?xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

// -----

func.func @no_template(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>,
                       %v: memref<?x8x128xbf16>, %kc: memref<?x16x8x128xbf16>,
                       %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>,
                       %cu: memref<?xi32>, %cl: memref<?xi32>,
                       %out: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error@+1 {{'tessel.extend_attention' op is not one GPU kernel: on a GPU, extend is the new tokens' prefill_attention and the cached context's paged_attention (split form, with cu_seqlens), merged by lse_merge_n (kernels <model>_extend_new and _extend_context of the default set)}}
  tessel.extend_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>)
      cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>)
      out(%out : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @bad_tile_key(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
                        %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  // expected-error@+1 {{GPU template: tessel.gpu_tile takes positive integers tile_m, tile_n, tile_k, warps_m, warps_n, stages; got "tile_q" = 64 : i64}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
      {trans_b, tessel.gpu_tile = {tile_q = 64}}
  return
}

// -----

func.func @bad_tile_k(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
                      %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  // expected-error@+1 {{GPU template: tessel.gpu_tile {tile_k = 16 : i64} breaks tile_k in {32, 64}}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
      {trans_b, tessel.gpu_tile = {tile_k = 16}}
  return
}

// -----

func.func @bad_warps(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
                     %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  // expected-error@+1 {{breaks tile_m % (warps_m * 16) == 0 and tile_n % (warps_n * 8) == 0}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 48, warps_m = 2}}
  return
}

// -----

func.func @bad_copies(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
                      %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  // expected-error@+1 {{breaks a whole number of 16-byte copies per thread: (tile_m and tile_n) * tile_k / 8 % 1024 == 0}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
      {trans_b, tessel.gpu_tile = {warps_m = 4, warps_n = 8}}
  return
}

// -----

func.func @wgrad_m_not_multiple_of_8(%a: memref<?x60xbf16>, %b: memref<?x64xbf16>,
                                     %g: memref<8xi32>, %c: memref<8x60x64xf32>) {
  // expected-error@+1 {{GPU template: M and N (60, 64) must be multiples of 8, so that every row is made of 16-byte chunks}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x60xbf16>) b(%b : memref<?x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<8x60x64xf32>)
  return
}

// -----

// The wgrad stages A^T with M along its rows: the swizzle needs 64.
func.func @wgrad_narrow_m_tile(%a: memref<?x64xbf16>, %b: memref<?x64xbf16>,
                               %g: memref<8xi32>, %c: memref<8x64x64xf32>) {
  // expected-error@+1 {{GPU template: tessel.gpu_tile {tile_m = 32 : i64, warps_m = 1 : i64} breaks tile_m % 64 == 0}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x64xf32>)
      {tessel.gpu_tile = {tile_m = 32, warps_m = 1}}
  return
}

// -----

// The fused SwiGLU pairs gate and up atoms inside each warp's columns.
func.func @swiglu_warp_columns(%a: memref<?x64xbf16>, %b: memref<8x128x64xbf16>,
                               %g: memref<8xi32>, %c: memref<?x128xbf16>,
                               %act: memref<?x64xbf16>) {
  // expected-error@+1 {{GPU template: the fused SwiGLU ('act') needs each warp's 8 columns to be whole gate and up halves of 8-column MMA atoms (tile_n / warps_n % 16 == 0)}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x128x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x128xbf16>)
      act(%act : memref<?x64xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 64, tile_n = 32, warps_m = 1, warps_n = 4}}
  return
}
