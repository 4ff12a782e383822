//===- kernels.mlir - Kernels of the Python binding tests -------*- mlir -*-===//
//
// Compiled for the host by the build (python-tests.tsb) and loaded by the
// tests in this folder. Sizes the tests choose at launch are dynamic; the
// static ones are small and deliberately not powers of two where the op
// allows it (grouped matmul K and N).
//
//===----------------------------------------------------------------------===//

// Causal varlen prefill, GQA 4:2, head dim 64, with the LSE.
func.func @prefill_f32_h4kv2_d64(%q: memref<?x4x64xf32>, %k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>, %cu: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>) {
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x2x64xf32>) v(%v : memref<?x2x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) {scale = 0.125 : f32, causal}
  return
}

// The same in bf16 (torch only: numpy has no bfloat16).
func.func @prefill_bf16_h4kv2_d64(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>, %cu: memref<?xi32>, %out: memref<?x4x64xbf16>, %lse: memref<4x?xf32>) {
  tessel.prefill_attention q(%q : memref<?x4x64xbf16>) k(%k : memref<?x2x64xbf16>) v(%v : memref<?x2x64xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xbf16>) lse(%lse : memref<4x?xf32>) {scale = 0.125 : f32, causal}
  return
}

// Two partial attentions merged by LSE, f32 in and out.
func.func @merge_f32_h3_d64(%oa: memref<?x3x64xf32>, %la: memref<3x?xf32>, %ob: memref<?x3x64xf32>, %lb: memref<3x?xf32>, %out: memref<?x3x64xf32>, %lo: memref<3x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x3x64xf32>, %la : memref<3x?xf32>) b(%ob : memref<?x3x64xf32>, %lb : memref<3x?xf32>) out(%out : memref<?x3x64xf32>) lse_out(%lo : memref<3x?xf32>)
  return
}

// Ragged-M grouped matmul, B as nn.Linear weights [G, N, K], odd K and N.
func.func @gmm_f32_tb_g5_k19_n37(%a: memref<?x19xf32>, %b: memref<5x37x19xf32>, %off: memref<5xi32>, %c: memref<?x37xf32>) {
  tessel.grouped_matmul a(%a : memref<?x19xf32>) b(%b : memref<5x37x19xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x37xf32>) {trans_b}
  return
}

// f16 with B [G, K, N].
func.func @gmm_f16_g3_k24_n40(%a: memref<?x24xf16>, %b: memref<3x24x40xf16>, %off: memref<3xi32>, %c: memref<?x40xf16>) {
  tessel.grouped_matmul a(%a : memref<?x24xf16>) b(%b : memref<3x24x40xf16>) group_offsets(%off : memref<3xi32>) c(%c : memref<?x40xf16>)
  return
}

// B as a table of per-expert pointers (i64), read in place.
func.func @gmm_f32_ptr_tb_g4_k16_n20(%a: memref<?x16xf32>, %b: memref<4xi64>, %off: memref<4xi32>, %c: memref<?x20xf32>) {
  tessel.grouped_matmul a(%a : memref<?x16xf32>) b(%b : memref<4xi64>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x20xf32>) {trans_b, b_shape = array<i64: 20, 16>}
  return
}

// tessel.torch.grouped_mm: forward, dgrad and wgrad of b [3, 24, 16] f32
// (grouped_mm_spec(3, 24, 16, "f32", True, "gmm_autograd"); test_torch.py
// checks that this text is what it writes).
func.func @gmm_autograd_fwd(%a: memref<?x16xf32>, %b: memref<3x24x16xf32>, %off: memref<3xi32>, %c: memref<?x24xf32>) {
  tessel.grouped_matmul a(%a : memref<?x16xf32>) b(%b : memref<3x24x16xf32>) group_offsets(%off : memref<3xi32>) c(%c : memref<?x24xf32>) {trans_b}
  return
}
func.func @gmm_autograd_dgrad(%a: memref<?x24xf32>, %b: memref<3x24x16xf32>, %off: memref<3xi32>, %c: memref<?x16xf32>) {
  tessel.grouped_matmul a(%a : memref<?x24xf32>) b(%b : memref<3x24x16xf32>) group_offsets(%off : memref<3xi32>) c(%c : memref<?x16xf32>)
  return
}
func.func @gmm_autograd_wgrad(%a: memref<?x24xf32>, %b: memref<?x16xf32>, %off: memref<3xi32>, %c: memref<3x24x16xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x24xf32>) b(%b : memref<?x16xf32>) group_offsets(%off : memref<3xi32>) c(%c : memref<3x24x16xf32>)
  return
}
