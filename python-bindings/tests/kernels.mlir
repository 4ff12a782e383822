//===- kernels.mlir - Kernels of the Python binding tests -------*- mlir -*-===//
//
// Compiled for the host by the build (python-tests.tsb) and loaded by the
// tests in this folder. Sizes the tests choose at launch are dynamic; the
// static ones are small and deliberately not powers of two where the op
// allows it (grouped matmul K and N).
//
//===----------------------------------------------------------------------===//

// Causal varlen prefill, GQA 4:2, head dim 64, with the LSE.
func.func @prefill_f32_h4kv2_d64(%q: memref<?x4x64xf32>, %k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>, %cu: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x2x64xf32>) v(%v : memref<?x2x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}

// The same in bf16 (torch only: numpy has no bfloat16).
func.func @prefill_bf16_h4kv2_d64(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>, %cu: memref<?xi32>, %out: memref<?x4x64xbf16>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xbf16>) k(%k : memref<?x2x64xbf16>) v(%v : memref<?x2x64xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xbf16>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
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

// tessel.torch.moe_mlp, moe_mlp_unstacked and patch_deepseek_moe (test_moe.py
// checks that this text is what the spec writer gives):
// moe_mlp_spec(5, 19, 11, 3, "f32", "moe_k3") — 5 experts, H = 19, I = 11,
// top-3, f32; and moe_mlp_spec(4, 24, 10, 2, "bf16", "moe_k2").
func.func @moe_k3_histogram(%ids: memref<?x3xi32>, %counts: memref<5xi32>, %offsets: memref<5xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x3xi32>) counts(%counts : memref<5xi32>) group_offsets(%offsets : memref<5xi32>)
  return
}
func.func @moe_k3_sort(%ids: memref<?x3xi32>, %offsets: memref<5xi32>, %sorted: memref<?xi32>, %pos: memref<?x3xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x3xi32>) group_offsets(%offsets : memref<5xi32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x3xi32>)
  return
}
func.func @moe_k3_unpermute(%y: memref<?x19xf32>, %pos: memref<?x3xi32>, %w: memref<?x3xf32>, %out: memref<?x19xf32>) {
  tessel.moe_unpermute y(%y : memref<?x19xf32>) row_positions(%pos : memref<?x3xi32>) weights(%w : memref<?x3xf32>) out(%out : memref<?x19xf32>)
  return
}
func.func @moe_k3_unpermute_parts(%y: memref<?x19xf32>, %pos: memref<?x6xi32>, %w: memref<?x6xf32>, %out: memref<?x19xf32>) {
  tessel.moe_unpermute y(%y : memref<?x19xf32>) row_positions(%pos : memref<?x6xi32>) weights(%w : memref<?x6xf32>) out(%out : memref<?x19xf32>)
  return
}
func.func @moe_k3_down_wgrad(%a: memref<?x19xf32>, %arows: memref<?xi32>, %b: memref<?x11xf32>, %off: memref<5xi32>, %c: memref<5x19x11xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x19xf32>) a_rows(%arows : memref<?xi32>) b(%b : memref<?x11xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<5x19x11xf32>) {rows_divisor = 3}
  return
}
func.func @moe_k3_gate_up(%a: memref<?x19xf32>, %rows: memref<?xi32>, %b: memref<5x22x19xf32>, %off: memref<5xi32>, %c: memref<?x22xf32>, %act: memref<?x11xf32>) {
  tessel.grouped_matmul a(%a : memref<?x19xf32>) a_rows(%rows : memref<?xi32>) b(%b : memref<5x22x19xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x22xf32>) act(%act : memref<?x11xf32>) {trans_b, a_rows_divisor = 3}
  return
}
func.func @moe_k3_gate_up_dgrad(%a: memref<?x22xf32>, %b: memref<5x22x19xf32>, %off: memref<5xi32>, %c: memref<?x19xf32>) {
  tessel.grouped_matmul a(%a : memref<?x22xf32>) b(%b : memref<5x22x19xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x19xf32>)
  return
}
func.func @moe_k3_gate_up_wgrad(%a: memref<?x22xf32>, %b: memref<?x19xf32>, %brows: memref<?xi32>, %off: memref<5xi32>, %c: memref<5x22x19xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x22xf32>) b(%b : memref<?x19xf32>) b_rows(%brows : memref<?xi32>) group_offsets(%off : memref<5xi32>) c(%c : memref<5x22x19xf32>) {rows_divisor = 3}
  return
}
func.func @moe_k3_down(%a: memref<?x11xf32>, %b: memref<5x19x11xf32>, %off: memref<5xi32>, %c: memref<?x19xf32>) {
  tessel.grouped_matmul a(%a : memref<?x11xf32>) b(%b : memref<5x19x11xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x19xf32>) {trans_b}
  return
}
func.func @moe_k3_down_dgrad(%a: memref<?x19xf32>, %rows: memref<?xi32>, %b: memref<5x19x11xf32>, %off: memref<5xi32>, %c: memref<?x11xf32>) {
  tessel.grouped_matmul a(%a : memref<?x19xf32>) a_rows(%rows : memref<?xi32>) b(%b : memref<5x19x11xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x11xf32>) {a_rows_divisor = 3}
  return
}
func.func @moe_k3_gate_or_up(%a: memref<?x19xf32>, %rows: memref<?xi32>, %b: memref<5x11x19xf32>, %off: memref<5xi32>, %c: memref<?x11xf32>) {
  tessel.grouped_matmul a(%a : memref<?x19xf32>) a_rows(%rows : memref<?xi32>) b(%b : memref<5x11x19xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x11xf32>) {trans_b, a_rows_divisor = 3}
  return
}
func.func @moe_k3_gate_or_up_dgrad(%a: memref<?x11xf32>, %b: memref<5x11x19xf32>, %off: memref<5xi32>, %c: memref<?x19xf32>) {
  tessel.grouped_matmul a(%a : memref<?x11xf32>) b(%b : memref<5x11x19xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x19xf32>)
  return
}
func.func @moe_k3_gate_or_up_wgrad(%a: memref<?x11xf32>, %b: memref<?x19xf32>, %brows: memref<?xi32>, %off: memref<5xi32>, %c: memref<5x11x19xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x11xf32>) b(%b : memref<?x19xf32>) b_rows(%brows : memref<?xi32>) group_offsets(%off : memref<5xi32>) c(%c : memref<5x11x19xf32>) {rows_divisor = 3}
  return
}
func.func @moe_k3_gate_or_up_ptrs(%a: memref<?x19xf32>, %rows: memref<?xi32>, %b: memref<5xi64>, %off: memref<5xi32>, %c: memref<?x11xf32>) {
  tessel.grouped_matmul a(%a : memref<?x19xf32>) a_rows(%rows : memref<?xi32>) b(%b : memref<5xi64>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x11xf32>) {trans_b, b_shape = array<i64: 11, 19>, a_rows_divisor = 3}
  return
}
func.func @moe_k3_gate_or_up_dgrad_ptrs(%a: memref<?x11xf32>, %b: memref<5xi64>, %off: memref<5xi32>, %c: memref<?x19xf32>) {
  tessel.grouped_matmul a(%a : memref<?x11xf32>) b(%b : memref<5xi64>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x19xf32>) {b_shape = array<i64: 11, 19>}
  return
}
func.func @moe_k3_down_ptrs(%a: memref<?x11xf32>, %b: memref<5xi64>, %off: memref<5xi32>, %c: memref<?x19xf32>) {
  tessel.grouped_matmul a(%a : memref<?x11xf32>) b(%b : memref<5xi64>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x19xf32>) {trans_b, b_shape = array<i64: 19, 11>}
  return
}
func.func @moe_k3_down_dgrad_ptrs(%a: memref<?x19xf32>, %rows: memref<?xi32>, %b: memref<5xi64>, %off: memref<5xi32>, %c: memref<?x11xf32>) {
  tessel.grouped_matmul a(%a : memref<?x19xf32>) a_rows(%rows : memref<?xi32>) b(%b : memref<5xi64>) group_offsets(%off : memref<5xi32>) c(%c : memref<?x11xf32>) {b_shape = array<i64: 19, 11>, a_rows_divisor = 3}
  return
}
func.func @moe_k3_swiglu_backward(%g: memref<?x11xf32>, %h: memref<?x22xf32>, %w: memref<?x3xf32>, %sorted: memref<?xi32>, %pos: memref<?x3xi32>, %dh: memref<?x22xf32>, %aw: memref<?x11xf32>, %dw: memref<?x3xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x11xf32>) h(%h : memref<?x22xf32>) topk_weights(%w : memref<?x3xf32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x3xi32>) dh(%dh : memref<?x22xf32>) act_weighted(%aw : memref<?x11xf32>) d_topk_weights(%dw : memref<?x3xf32>)
  return
}
func.func @moe_k3_swiglu_parts(%h: memref<2x?x11xf32>, %act: memref<?x11xf32>) {
  tessel.swiglu h(%h : memref<2x?x11xf32>) act(%act : memref<?x11xf32>)
  return
}
func.func @moe_k3_swiglu_parts_backward(%g: memref<?x11xf32>, %h: memref<2x?x11xf32>, %w: memref<?x3xf32>, %sorted: memref<?xi32>, %pos: memref<?x3xi32>, %dh: memref<2x?x11xf32>, %aw: memref<?x11xf32>, %dw: memref<?x3xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x11xf32>) h(%h : memref<2x?x11xf32>) topk_weights(%w : memref<?x3xf32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x3xi32>) dh(%dh : memref<2x?x11xf32>) act_weighted(%aw : memref<?x11xf32>) d_topk_weights(%dw : memref<?x3xf32>)
  return
}
func.func @moe_k2_histogram(%ids: memref<?x2xi32>, %counts: memref<4xi32>, %offsets: memref<4xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>) counts(%counts : memref<4xi32>) group_offsets(%offsets : memref<4xi32>)
  return
}
func.func @moe_k2_sort(%ids: memref<?x2xi32>, %offsets: memref<4xi32>, %sorted: memref<?xi32>, %pos: memref<?x2xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x2xi32>) group_offsets(%offsets : memref<4xi32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x2xi32>)
  return
}
func.func @moe_k2_unpermute(%y: memref<?x24xbf16>, %pos: memref<?x2xi32>, %w: memref<?x2xf32>, %out: memref<?x24xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x24xbf16>) row_positions(%pos : memref<?x2xi32>) weights(%w : memref<?x2xf32>) out(%out : memref<?x24xbf16>)
  return
}
func.func @moe_k2_unpermute_parts(%y: memref<?x24xbf16>, %pos: memref<?x4xi32>, %w: memref<?x4xf32>, %out: memref<?x24xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x24xbf16>) row_positions(%pos : memref<?x4xi32>) weights(%w : memref<?x4xf32>) out(%out : memref<?x24xbf16>)
  return
}
func.func @moe_k2_down_wgrad(%a: memref<?x24xbf16>, %arows: memref<?xi32>, %b: memref<?x10xbf16>, %off: memref<4xi32>, %c: memref<4x24x10xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x24xbf16>) a_rows(%arows : memref<?xi32>) b(%b : memref<?x10xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<4x24x10xbf16>) {rows_divisor = 2}
  return
}
func.func @moe_k2_gate_up(%a: memref<?x24xbf16>, %rows: memref<?xi32>, %b: memref<4x20x24xbf16>, %off: memref<4xi32>, %c: memref<?x20xbf16>, %act: memref<?x10xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x24xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<4x20x24xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x20xbf16>) act(%act : memref<?x10xbf16>) {trans_b, a_rows_divisor = 2}
  return
}
func.func @moe_k2_gate_up_dgrad(%a: memref<?x20xbf16>, %b: memref<4x20x24xbf16>, %off: memref<4xi32>, %c: memref<?x24xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x20xbf16>) b(%b : memref<4x20x24xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x24xbf16>)
  return
}
func.func @moe_k2_gate_up_wgrad(%a: memref<?x20xbf16>, %b: memref<?x24xbf16>, %brows: memref<?xi32>, %off: memref<4xi32>, %c: memref<4x20x24xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x20xbf16>) b(%b : memref<?x24xbf16>) b_rows(%brows : memref<?xi32>) group_offsets(%off : memref<4xi32>) c(%c : memref<4x20x24xbf16>) {rows_divisor = 2}
  return
}
func.func @moe_k2_down(%a: memref<?x10xbf16>, %b: memref<4x24x10xbf16>, %off: memref<4xi32>, %c: memref<?x24xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x10xbf16>) b(%b : memref<4x24x10xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x24xbf16>) {trans_b}
  return
}
func.func @moe_k2_down_dgrad(%a: memref<?x24xbf16>, %rows: memref<?xi32>, %b: memref<4x24x10xbf16>, %off: memref<4xi32>, %c: memref<?x10xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x24xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<4x24x10xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x10xbf16>) {a_rows_divisor = 2}
  return
}
func.func @moe_k2_gate_or_up(%a: memref<?x24xbf16>, %rows: memref<?xi32>, %b: memref<4x10x24xbf16>, %off: memref<4xi32>, %c: memref<?x10xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x24xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<4x10x24xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x10xbf16>) {trans_b, a_rows_divisor = 2}
  return
}
func.func @moe_k2_gate_or_up_dgrad(%a: memref<?x10xbf16>, %b: memref<4x10x24xbf16>, %off: memref<4xi32>, %c: memref<?x24xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x10xbf16>) b(%b : memref<4x10x24xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x24xbf16>)
  return
}
func.func @moe_k2_gate_or_up_wgrad(%a: memref<?x10xbf16>, %b: memref<?x24xbf16>, %brows: memref<?xi32>, %off: memref<4xi32>, %c: memref<4x10x24xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x10xbf16>) b(%b : memref<?x24xbf16>) b_rows(%brows : memref<?xi32>) group_offsets(%off : memref<4xi32>) c(%c : memref<4x10x24xbf16>) {rows_divisor = 2}
  return
}
func.func @moe_k2_gate_or_up_ptrs(%a: memref<?x24xbf16>, %rows: memref<?xi32>, %b: memref<4xi64>, %off: memref<4xi32>, %c: memref<?x10xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x24xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<4xi64>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x10xbf16>) {trans_b, b_shape = array<i64: 10, 24>, a_rows_divisor = 2}
  return
}
func.func @moe_k2_gate_or_up_dgrad_ptrs(%a: memref<?x10xbf16>, %b: memref<4xi64>, %off: memref<4xi32>, %c: memref<?x24xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x10xbf16>) b(%b : memref<4xi64>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x24xbf16>) {b_shape = array<i64: 10, 24>}
  return
}
func.func @moe_k2_down_ptrs(%a: memref<?x10xbf16>, %b: memref<4xi64>, %off: memref<4xi32>, %c: memref<?x24xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x10xbf16>) b(%b : memref<4xi64>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x24xbf16>) {trans_b, b_shape = array<i64: 24, 10>}
  return
}
func.func @moe_k2_down_dgrad_ptrs(%a: memref<?x24xbf16>, %rows: memref<?xi32>, %b: memref<4xi64>, %off: memref<4xi32>, %c: memref<?x10xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x24xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<4xi64>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x10xbf16>) {b_shape = array<i64: 24, 10>, a_rows_divisor = 2}
  return
}
func.func @moe_k2_swiglu_backward(%g: memref<?x10xbf16>, %h: memref<?x20xbf16>, %w: memref<?x2xf32>, %sorted: memref<?xi32>, %pos: memref<?x2xi32>, %dh: memref<?x20xbf16>, %aw: memref<?x10xbf16>, %dw: memref<?x2xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x10xbf16>) h(%h : memref<?x20xbf16>) topk_weights(%w : memref<?x2xf32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x2xi32>) dh(%dh : memref<?x20xbf16>) act_weighted(%aw : memref<?x10xbf16>) d_topk_weights(%dw : memref<?x2xf32>)
  return
}
func.func @moe_k2_swiglu_parts(%h: memref<2x?x10xbf16>, %act: memref<?x10xbf16>) {
  tessel.swiglu h(%h : memref<2x?x10xbf16>) act(%act : memref<?x10xbf16>)
  return
}
func.func @moe_k2_swiglu_parts_backward(%g: memref<?x10xbf16>, %h: memref<2x?x10xbf16>, %w: memref<?x2xf32>, %sorted: memref<?xi32>, %pos: memref<?x2xi32>, %dh: memref<2x?x10xbf16>, %aw: memref<?x10xbf16>, %dw: memref<?x2xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x10xbf16>) h(%h : memref<2x?x10xbf16>) topk_weights(%w : memref<?x2xf32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x2xi32>) dh(%dh : memref<2x?x10xbf16>) act_weighted(%aw : memref<?x10xbf16>) d_topk_weights(%dw : memref<?x2xf32>)
  return
}
