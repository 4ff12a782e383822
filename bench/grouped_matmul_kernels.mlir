// Grouped-matmul kernels (tessel.grouped_matmul, ragged M) timed by
// grouped_matmul_bench.py (the E = 8, N = K = 64 ones are its --smoke
// shape; the others of E = 1, 8, 256 and f16 are there to time by hand
// with --only). Names give
// the layout of b, the element type and the shape:
//   gm_e<E>_n<N>_k<K>:   b stacked [E, N, K] (trans_b, an nn.Linear weight;
//                        the MoE forward);
//   gmd_*:               b stacked [E, K, N] (no trans_b; the MoE dgrad);
//   gmp_* / gmpd_*:      b a pointer table [E] of [N, K] / [K, N] matrices;
//   <family>_f16_*:      f16 instead of bf16.
// a is [T, K], c is [T, N]; T is dynamic. The weight gradients
// (tessel.grouped_matmul_wgrad, gmw_*) are in grouped_matmul_wgrad_kernels.mlir.
//
// Reference MoE (E=128, H=2048, I=512): gate/up N=1024 K=2048, down N=2048
// K=512; their dgrads: of down N=512 K=2048, of gate/up N=2048 K=1024.
// DeepSeek-V3 experts (32 local, H=7168, I=2048): gate/up fused N=4096
// K=7168, down N=7168 K=2048; dgrads: of down N=2048 K=7168, of gate/up
// N=7168 K=4096.

// --- Reference MoE shapes, E=128 (and E=8 for a large group of 12001 rows).

func.func @gm_e128_n1024_k2048(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128x1024x2048xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x1024xbf16>) {trans_b}
  return
}

func.func @gm_e128_n2048_k512(%a: memref<?x512xbf16>, %b: memref<128x2048x512xbf16>,
    %g: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x512xbf16>) b(%b : memref<128x2048x512xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x2048xbf16>) {trans_b}
  return
}

func.func @gm_e8_n1024_k2048(%a: memref<?x2048xbf16>, %b: memref<8x1024x2048xbf16>,
    %g: memref<8xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<8x1024x2048xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x1024xbf16>) {trans_b}
  return
}

func.func @gmp_e128_n1024_k2048(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x1024xbf16>) {trans_b, b_shape = array<i64: 1024, 2048>}
  return
}

func.func @gmp_e128_n2048_k512(%a: memref<?x512xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x512xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x2048xbf16>) {trans_b, b_shape = array<i64: 2048, 512>}
  return
}

func.func @gmd_e128_n512_k2048(%a: memref<?x2048xbf16>, %b: memref<128x2048x512xbf16>,
    %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128x2048x512xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>)
  return
}

func.func @gmd_e128_n2048_k1024(%a: memref<?x1024xbf16>, %b: memref<128x1024x2048xbf16>,
    %g: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x1024xbf16>) b(%b : memref<128x1024x2048xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x2048xbf16>)
  return
}

func.func @gmpd_e128_n512_k2048(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>) {b_shape = array<i64: 2048, 512>}
  return
}

func.func @gmpd_e128_n2048_k1024(%a: memref<?x1024xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x1024xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x2048xbf16>) {b_shape = array<i64: 1024, 2048>}
  return
}

// --- DeepSeek-V3 expert shapes, E=32 (stacked weights).

func.func @gm_e32_n2048_k7168(%a: memref<?x7168xbf16>, %b: memref<32x2048x7168xbf16>,
    %g: memref<32xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>) b(%b : memref<32x2048x7168xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<?x2048xbf16>) {trans_b}
  return
}

func.func @gm_e32_n4096_k7168(%a: memref<?x7168xbf16>, %b: memref<32x4096x7168xbf16>,
    %g: memref<32xi32>, %c: memref<?x4096xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>) b(%b : memref<32x4096x7168xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<?x4096xbf16>) {trans_b}
  return
}

func.func @gm_e32_n7168_k2048(%a: memref<?x2048xbf16>, %b: memref<32x7168x2048xbf16>,
    %g: memref<32xi32>, %c: memref<?x7168xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<32x7168x2048xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<?x7168xbf16>) {trans_b}
  return
}

func.func @gmd_e32_n2048_k7168(%a: memref<?x7168xbf16>, %b: memref<32x7168x2048xbf16>,
    %g: memref<32xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>) b(%b : memref<32x7168x2048xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<?x2048xbf16>)
  return
}

func.func @gmd_e32_n7168_k4096(%a: memref<?x4096xbf16>, %b: memref<32x4096x7168xbf16>,
    %g: memref<32xi32>, %c: memref<?x7168xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x4096xbf16>) b(%b : memref<32x4096x7168xbf16>)
      group_offsets(%g : memref<32xi32>) c(%c : memref<?x7168xbf16>)
  return
}

// --- Small shapes: E in {1, 8, 128, 256}, N and K 64; N=200, K=72 are no
// tile multiples. Every layout.

func.func @gm_e1_n64_k64(%a: memref<?x64xbf16>, %b: memref<1x64x64xbf16>,
    %g: memref<1xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<1x64x64xbf16>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

func.func @gm_e8_n64_k64(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
    %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

func.func @gm_e128_n64_k64(%a: memref<?x64xbf16>, %b: memref<128x64x64xbf16>,
    %g: memref<128xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<128x64x64xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

func.func @gm_e256_n64_k64(%a: memref<?x64xbf16>, %b: memref<256x64x64xbf16>,
    %g: memref<256xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<256x64x64xbf16>)
      group_offsets(%g : memref<256xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

func.func @gm_e8_n200_k72(%a: memref<?x72xbf16>, %b: memref<8x200x72xbf16>,
    %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8x200x72xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>) {trans_b}
  return
}

func.func @gmd_e1_n64_k64(%a: memref<?x64xbf16>, %b: memref<1x64x64xbf16>,
    %g: memref<1xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<1x64x64xbf16>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<?x64xbf16>)
  return
}

func.func @gmd_e8_n64_k64(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
    %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
  return
}

func.func @gmd_e128_n64_k64(%a: memref<?x64xbf16>, %b: memref<128x64x64xbf16>,
    %g: memref<128xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<128x64x64xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x64xbf16>)
  return
}

func.func @gmd_e256_n64_k64(%a: memref<?x64xbf16>, %b: memref<256x64x64xbf16>,
    %g: memref<256xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<256x64x64xbf16>)
      group_offsets(%g : memref<256xi32>) c(%c : memref<?x64xbf16>)
  return
}

func.func @gmd_e8_n200_k72(%a: memref<?x72xbf16>, %b: memref<8x72x200xbf16>,
    %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8x72x200xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>)
  return
}

func.func @gmp_e1_n64_k64(%a: memref<?x64xbf16>, %b: memref<1xi64>,
    %g: memref<1xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<1xi64>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<?x64xbf16>) {trans_b, b_shape = array<i64: 64, 64>}
  return
}

func.func @gmp_e8_n64_k64(%a: memref<?x64xbf16>, %b: memref<8xi64>,
    %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {trans_b, b_shape = array<i64: 64, 64>}
  return
}

func.func @gmp_e128_n64_k64(%a: memref<?x64xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x64xbf16>) {trans_b, b_shape = array<i64: 64, 64>}
  return
}

func.func @gmp_e256_n64_k64(%a: memref<?x64xbf16>, %b: memref<256xi64>,
    %g: memref<256xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<256xi64>)
      group_offsets(%g : memref<256xi32>) c(%c : memref<?x64xbf16>) {trans_b, b_shape = array<i64: 64, 64>}
  return
}

func.func @gmp_e8_n200_k72(%a: memref<?x72xbf16>, %b: memref<8xi64>,
    %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>) {trans_b, b_shape = array<i64: 200, 72>}
  return
}

func.func @gmpd_e1_n64_k64(%a: memref<?x64xbf16>, %b: memref<1xi64>,
    %g: memref<1xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<1xi64>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<?x64xbf16>) {b_shape = array<i64: 64, 64>}
  return
}

func.func @gmpd_e8_n64_k64(%a: memref<?x64xbf16>, %b: memref<8xi64>,
    %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {b_shape = array<i64: 64, 64>}
  return
}

func.func @gmpd_e128_n64_k64(%a: memref<?x64xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x64xbf16>) {b_shape = array<i64: 64, 64>}
  return
}

func.func @gmpd_e256_n64_k64(%a: memref<?x64xbf16>, %b: memref<256xi64>,
    %g: memref<256xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<256xi64>)
      group_offsets(%g : memref<256xi32>) c(%c : memref<?x64xbf16>) {b_shape = array<i64: 64, 64>}
  return
}

func.func @gmpd_e8_n200_k72(%a: memref<?x72xbf16>, %b: memref<8xi64>,
    %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>) {b_shape = array<i64: 72, 200>}
  return
}

// --- f16.

func.func @gm_f16_e8_n64_k64(%a: memref<?x64xf16>, %b: memref<8x64x64xf16>,
    %g: memref<8xi32>, %c: memref<?x64xf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xf16>) b(%b : memref<8x64x64xf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xf16>) {trans_b}
  return
}

func.func @gmd_f16_e8_n64_k64(%a: memref<?x64xf16>, %b: memref<8x64x64xf16>,
    %g: memref<8xi32>, %c: memref<?x64xf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xf16>) b(%b : memref<8x64x64xf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xf16>)
  return
}

func.func @gm_f16_e128_n1024_k2048(%a: memref<?x2048xf16>, %b: memref<128x1024x2048xf16>,
    %g: memref<128xi32>, %c: memref<?x1024xf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xf16>) b(%b : memref<128x1024x2048xf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x1024xf16>) {trans_b}
  return
}

func.func @gmd_f16_e128_n512_k2048(%a: memref<?x2048xf16>, %b: memref<128x2048x512xf16>,
    %g: memref<128xi32>, %c: memref<?x512xf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xf16>) b(%b : memref<128x2048x512xf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xf16>)
  return
}
