// Grouped-matmul kernels checked and timed by grouped_matmul_check.py, bf16:
// gm_e<E>_n<N>_k<K>: ragged-M, b stacked [E, N, K] (trans_b);
// gmd_*: b stacked [E, K, N] (no trans_b, the MoE dgrad);
// gmp_*: b a pointer table [E] of [N, K] matrices (trans_b);
// gmpd_*: b a pointer table [E] of [K, N] matrices (no trans_b).
// Reference MoE (H=2048, I=512): gate_up N=1024 K=2048, down N=2048 K=512;
// their dgrads: of down N=512 K=2048, of gate_up N=2048 K=1024.

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

func.func @gm_e8_n64_k64(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
    %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

func.func @gm_e1_n64_k64(%a: memref<?x64xbf16>, %b: memref<1x64x64xbf16>,
    %g: memref<1xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<1x64x64xbf16>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

func.func @gm_e8_n1024_k2048(%a: memref<?x2048xbf16>, %b: memref<8x1024x2048xbf16>,
    %g: memref<8xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<8x1024x2048xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x1024xbf16>) {trans_b}
  return
}

func.func @gm_e8_n200_k72(%a: memref<?x72xbf16>, %b: memref<8x200x72xbf16>,
    %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8x200x72xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>) {trans_b}
  return
}

func.func @gm_e128_n64_k64(%a: memref<?x64xbf16>, %b: memref<128x64x64xbf16>,
    %g: memref<128xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<128x64x64xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}

func.func @gmd_e8_n64_k64(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
    %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
  return
}

func.func @gmd_e1_n64_k64(%a: memref<?x64xbf16>, %b: memref<1x64x64xbf16>,
    %g: memref<1xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<1x64x64xbf16>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<?x64xbf16>)
  return
}

func.func @gmd_e8_n200_k72(%a: memref<?x72xbf16>, %b: memref<8x72x200xbf16>,
    %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8x72x200xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>)
  return
}

func.func @gmd_e128_n64_k64(%a: memref<?x64xbf16>, %b: memref<128x64x64xbf16>,
    %g: memref<128xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<128x64x64xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x64xbf16>)
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

func.func @gmp_e8_n64_k64(%a: memref<?x64xbf16>, %b: memref<8xi64>,
    %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {trans_b, b_shape = array<i64: 64, 64>}
  return
}

func.func @gmp_e1_n64_k64(%a: memref<?x64xbf16>, %b: memref<1xi64>,
    %g: memref<1xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<1xi64>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<?x64xbf16>) {trans_b, b_shape = array<i64: 64, 64>}
  return
}

func.func @gmp_e8_n200_k72(%a: memref<?x72xbf16>, %b: memref<8xi64>,
    %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>) {trans_b, b_shape = array<i64: 200, 72>}
  return
}

func.func @gmp_e128_n64_k64(%a: memref<?x64xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x64xbf16>) {trans_b, b_shape = array<i64: 64, 64>}
  return
}

func.func @gmp_e128_n1024_k2048(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x1024xbf16>) {trans_b, b_shape = array<i64: 1024, 2048>}
  return
}

func.func @gmpd_e8_n64_k64(%a: memref<?x64xbf16>, %b: memref<8xi64>,
    %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {b_shape = array<i64: 64, 64>}
  return
}

func.func @gmpd_e1_n64_k64(%a: memref<?x64xbf16>, %b: memref<1xi64>,
    %g: memref<1xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<1xi64>)
      group_offsets(%g : memref<1xi32>) c(%c : memref<?x64xbf16>) {b_shape = array<i64: 64, 64>}
  return
}

func.func @gmpd_e8_n200_k72(%a: memref<?x72xbf16>, %b: memref<8xi64>,
    %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>) {b_shape = array<i64: 72, 200>}
  return
}

func.func @gmpd_e128_n64_k64(%a: memref<?x64xbf16>, %b: memref<128xi64>,
    %g: memref<128xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x64xbf16>) {b_shape = array<i64: 64, 64>}
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
