// Grouped-matmul kernels checked and timed by grouped_matmul_check.py:
// gm_e<E>_n<N>_k<K>: ragged-M, b stacked [E, N, K] (trans_b), bf16.
// Reference MoE (H=2048, I=512): gate_up N=1024 K=2048, down N=2048 K=512.

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
