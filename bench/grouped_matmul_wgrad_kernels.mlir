// Grouped weight-gradient kernels (tessel.grouped_matmul_wgrad, ragged K)
// timed by grouped_matmul_bench.py:
//   gmw_e<E>_m<M>_n<N>: a [T, M] bf16, b [T, N] bf16, group_offsets [E] i32,
//   c [E, M, N] f32 with c[g] = a[rows_g]^T . b[rows_g] (zeros for an empty
//   group). Kept apart from grouped_matmul_kernels.mlir so that the forward
//   bundle builds on its own.
//
// MoE weight gradients, dW[g] = dY[rows_g]^T . X[rows_g] in the nn.Linear
// layout [out, in]: reference MoE (E=128, H=2048, I=512) gate/up M=1024
// N=2048, down M=2048 N=512; DeepSeek-V3 (32 local experts, H=7168, I=2048)
// gate/up fused M=4096 N=7168, down M=7168 N=2048. Small ones for E in
// {1, 8, 256}; M=200, N=72 are no tile multiples; M=136, N=192 runs the
// Hopper kernel with a 192-column tile (f32 C stored in passes of 64
// columns).
//
// gmwb_*: the same with a bf16 c, what torch._grouped_mm writes (and the
// MoE layer's DeepSeek-V3 gate/up wgrad): the benchmark's like-for-like
// row.

func.func @gmw_e128_m1024_n2048(%a: memref<?x1024xbf16>, %b: memref<?x2048xbf16>,
    %g: memref<128xi32>, %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>) b(%b : memref<?x2048xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<128x1024x2048xf32>)
  return
}

func.func @gmw_e128_m2048_n512(%a: memref<?x2048xbf16>, %b: memref<?x512xbf16>,
    %g: memref<128xi32>, %c: memref<128x2048x512xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x2048xbf16>) b(%b : memref<?x512xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<128x2048x512xf32>)
  return
}

func.func @gmw_e32_m4096_n7168(%a: memref<?x4096xbf16>, %b: memref<?x7168xbf16>,
    %g: memref<32xi32>, %c: memref<32x4096x7168xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x4096xbf16>) b(%b : memref<?x7168xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<32x4096x7168xf32>)
  return
}

func.func @gmw_e32_m7168_n2048(%a: memref<?x7168xbf16>, %b: memref<?x2048xbf16>,
    %g: memref<32xi32>, %c: memref<32x7168x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x7168xbf16>) b(%b : memref<?x2048xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<32x7168x2048xf32>)
  return
}

func.func @gmw_e1_m64_n64(%a: memref<?x64xbf16>, %b: memref<?x64xbf16>,
    %g: memref<1xi32>, %c: memref<1x64x64xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x64xbf16>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<1x64x64xf32>)
  return
}

func.func @gmw_e8_m64_n64(%a: memref<?x64xbf16>, %b: memref<?x64xbf16>,
    %g: memref<8xi32>, %c: memref<8x64x64xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x64xf32>)
  return
}

func.func @gmw_e8_m200_n72(%a: memref<?x200xbf16>, %b: memref<?x72xbf16>,
    %g: memref<8xi32>, %c: memref<8x200x72xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x200xbf16>) b(%b : memref<?x72xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<8x200x72xf32>)
  return
}

func.func @gmw_e256_m512_n256(%a: memref<?x512xbf16>, %b: memref<?x256xbf16>,
    %g: memref<256xi32>, %c: memref<256x512x256xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x512xbf16>) b(%b : memref<?x256xbf16>)
      group_offsets(%g : memref<256xi32>) c(%c : memref<256x512x256xf32>)
  return
}
func.func @gmw_e8_m136_n192(%a: memref<?x136xbf16>, %b: memref<?x192xbf16>,
    %g: memref<8xi32>, %c: memref<8x136x192xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x136xbf16>) b(%b : memref<?x192xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<8x136x192xf32>)
  return
}

func.func @gmwb_e128_m1024_n2048(%a: memref<?x1024xbf16>, %b: memref<?x2048xbf16>,
    %g: memref<128xi32>, %c: memref<128x1024x2048xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>) b(%b : memref<?x2048xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<128x1024x2048xbf16>)
  return
}

func.func @gmwb_e128_m2048_n512(%a: memref<?x2048xbf16>, %b: memref<?x512xbf16>,
    %g: memref<128xi32>, %c: memref<128x2048x512xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x2048xbf16>) b(%b : memref<?x512xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<128x2048x512xbf16>)
  return
}

func.func @gmwb_e32_m4096_n7168(%a: memref<?x4096xbf16>, %b: memref<?x7168xbf16>,
    %g: memref<32xi32>, %c: memref<32x4096x7168xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x4096xbf16>) b(%b : memref<?x7168xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<32x4096x7168xbf16>)
  return
}

func.func @gmwb_e32_m7168_n2048(%a: memref<?x7168xbf16>, %b: memref<?x2048xbf16>,
    %g: memref<32xi32>, %c: memref<32x7168x2048xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x7168xbf16>) b(%b : memref<?x2048xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<32x7168x2048xbf16>)
  return
}

func.func @gmwb_e8_m136_n192(%a: memref<?x136xbf16>, %b: memref<?x192xbf16>,
    %g: memref<8xi32>, %c: memref<8x136x192xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x136xbf16>) b(%b : memref<?x192xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<8x136x192xbf16>)
  return
}
