// The embedded default kernel set of tessel-aot: the attention and MoE
// kernels of the models Tessel is built for, bf16, paged KV blocks of 16 (64
// for MLA). Every public function is one kernel; this file is also an example
// of a kernel spec (see docs/architecture.md).


// llama3_8b: 32 query heads, 8 KV heads, head dim 128.
func.func @llama3_8b_prefill(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>) scale(%scale) {causal}
  return
}
func.func @llama3_8b_prefill_lse(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>) scale(%scale) {causal}
  return
}
func.func @llama3_8b_decode(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}
// Split-KV partials of llama3_8b decode (P from the shape of out), merged by llama3_8b_lse_merge_n.
func.func @llama3_8b_decode_split(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x32x128xf32>, %lse: memref<?x32x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @llama3_8b_reshape_and_cache(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}
func.func @llama3_8b_decode_shuffled(%q: memref<?x32x128xbf16>, %kc: memref<?x8x16x16x8xbf16>, %vc: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>) v_cache(%vc : memref<?x8x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) layout(shuffled) scale(%scale)
  return
}
func.func @llama3_8b_reshape_and_cache_shuffled(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %kc: memref<?x8x16x16x8xbf16>, %vc: memref<?x8x2x128x8xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>) v_cache(%vc : memref<?x8x2x128x8xbf16>) slot_mapping(%slots : memref<?xi32>) layout(shuffled)
  return
}
func.func @llama3_8b_extend(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}
// Extend on a GPU, as the dispatcher runs it: the new tokens' causal prefill as an f32
// partial, then the cached context chunk by chunk (split form), each folded in by llama3_8b_extend_merge_*.
func.func @llama3_8b_extend_new(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %out: memref<?x32x128xf32>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xf32>) lse(%lse : memref<32x?xf32>) scale(%scale) {causal}
  return
}
func.func @llama3_8b_extend_context(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x?x32x128xf32>, %lse: memref<?x32x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>) layout(nhd) scale(%scale)
  return
}
// The unified routing: the whole batch (decodes, extends, prefills) over each
// request's cached sequence in one causal kernel, whole or in split windows.
func.func @llama3_8b_unified(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) causal layout(nhd) scale(%scale)
  return
}
func.func @llama3_8b_unified_split(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x?x32x128xf32>, %lse: memref<?x32x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>) causal layout(nhd) scale(%scale)
  return
}
// Extend merges: a context chunk into the f32 accumulator, the last one into out.
func.func @llama3_8b_extend_merge_acc(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>, %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>, %out: memref<?x32x128xf32>, %lse: memref<32x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>) b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>) out(%out : memref<?x32x128xf32>) lse_out(%lse : memref<32x?xf32>)
  return
}
func.func @llama3_8b_extend_merge_out(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>, %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>, %out: memref<?x32x128xbf16>) {
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>) b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>) out(%out : memref<?x32x128xbf16>)
  return
}
func.func @llama3_8b_lse_merge_n(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xf32>, %out: memref<?x32x128xbf16>) {
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>, %pl : memref<?x32x?xf32>) out(%out : memref<?x32x128xbf16>)
  return
}

// qwen3_235b: 64 query heads, 4 KV heads, head dim 128.
func.func @qwen3_235b_prefill(%q: memref<?x64x128xbf16>, %k: memref<?x4x128xbf16>, %v: memref<?x4x128xbf16>, %cu: memref<?xi32>, %out: memref<?x64x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x64x128xbf16>) k(%k : memref<?x4x128xbf16>) v(%v : memref<?x4x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x64x128xbf16>) scale(%scale) {causal}
  return
}
func.func @qwen3_235b_prefill_lse(%q: memref<?x64x128xbf16>, %k: memref<?x4x128xbf16>, %v: memref<?x4x128xbf16>, %cu: memref<?xi32>, %out: memref<?x64x128xbf16>, %lse: memref<64x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x64x128xbf16>) k(%k : memref<?x4x128xbf16>) v(%v : memref<?x4x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x64x128xbf16>) lse(%lse : memref<64x?xf32>) scale(%scale) {causal}
  return
}
func.func @qwen3_235b_decode(%q: memref<?x64x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x64x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x64x128xbf16>) layout(nhd) scale(%scale)
  return
}
// Split-KV partials of qwen3_235b decode (P from the shape of out), merged by qwen3_235b_lse_merge_n.
func.func @qwen3_235b_decode_split(%q: memref<?x64x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x64x128xf32>, %lse: memref<?x64x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x64x128xf32>) lse(%lse : memref<?x64x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @qwen3_235b_reshape_and_cache(%k: memref<?x4x128xbf16>, %v: memref<?x4x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x4x128xbf16>) v(%v : memref<?x4x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}
func.func @qwen3_235b_decode_shuffled(%q: memref<?x64x128xbf16>, %kc: memref<?x4x16x16x8xbf16>, %vc: memref<?x4x2x128x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x64x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x4x16x16x8xbf16>) v_cache(%vc : memref<?x4x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x64x128xbf16>) layout(shuffled) scale(%scale)
  return
}
func.func @qwen3_235b_reshape_and_cache_shuffled(%k: memref<?x4x128xbf16>, %v: memref<?x4x128xbf16>, %kc: memref<?x4x16x16x8xbf16>, %vc: memref<?x4x2x128x8xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x4x128xbf16>) v(%v : memref<?x4x128xbf16>) k_cache(%kc : memref<?x4x16x16x8xbf16>) v_cache(%vc : memref<?x4x2x128x8xbf16>) slot_mapping(%slots : memref<?xi32>) layout(shuffled)
  return
}
func.func @qwen3_235b_extend(%q: memref<?x64x128xbf16>, %k: memref<?x4x128xbf16>, %v: memref<?x4x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x64x128xbf16>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x64x128xbf16>) k(%k : memref<?x4x128xbf16>) v(%v : memref<?x4x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x64x128xbf16>) layout(nhd) scale(%scale)
  return
}
// Extend on a GPU, as the dispatcher runs it: the new tokens' causal prefill as an f32
// partial, then the cached context chunk by chunk (split form), each folded in by qwen3_235b_extend_merge_*.
func.func @qwen3_235b_extend_new(%q: memref<?x64x128xbf16>, %k: memref<?x4x128xbf16>, %v: memref<?x4x128xbf16>, %cu: memref<?xi32>, %out: memref<?x64x128xf32>, %lse: memref<64x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x64x128xbf16>) k(%k : memref<?x4x128xbf16>) v(%v : memref<?x4x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x64x128xf32>) lse(%lse : memref<64x?xf32>) scale(%scale) {causal}
  return
}
func.func @qwen3_235b_extend_context(%q: memref<?x64x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x?x64x128xf32>, %lse: memref<?x64x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x64x128xf32>) lse(%lse : memref<?x64x?xf32>) layout(nhd) scale(%scale)
  return
}
// The unified routing: the whole batch (decodes, extends, prefills) over each
// request's cached sequence in one causal kernel, whole or in split windows.
func.func @qwen3_235b_unified(%q: memref<?x64x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x64x128xbf16>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x64x128xbf16>) causal layout(nhd) scale(%scale)
  return
}
func.func @qwen3_235b_unified_split(%q: memref<?x64x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x?x64x128xf32>, %lse: memref<?x64x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x64x128xf32>) lse(%lse : memref<?x64x?xf32>) causal layout(nhd) scale(%scale)
  return
}
// Extend merges: a context chunk into the f32 accumulator, the last one into out.
func.func @qwen3_235b_extend_merge_acc(%oa: memref<?x64x128xf32>, %la: memref<64x?xf32>, %ob: memref<?x64x128xf32>, %lb: memref<64x?xf32>, %out: memref<?x64x128xf32>, %lse: memref<64x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x64x128xf32>, %la : memref<64x?xf32>) b(%ob : memref<?x64x128xf32>, %lb : memref<64x?xf32>) out(%out : memref<?x64x128xf32>) lse_out(%lse : memref<64x?xf32>)
  return
}
func.func @qwen3_235b_extend_merge_out(%oa: memref<?x64x128xf32>, %la: memref<64x?xf32>, %ob: memref<?x64x128xf32>, %lb: memref<64x?xf32>, %out: memref<?x64x128xbf16>) {
  tessel.lse_merge a(%oa : memref<?x64x128xf32>, %la : memref<64x?xf32>) b(%ob : memref<?x64x128xf32>, %lb : memref<64x?xf32>) out(%out : memref<?x64x128xbf16>)
  return
}
func.func @qwen3_235b_lse_merge_n(%p: memref<?x?x64x128xf32>, %pl: memref<?x64x?xf32>, %out: memref<?x64x128xbf16>) {
  tessel.lse_merge_n partials(%p : memref<?x?x64x128xf32>, %pl : memref<?x64x?xf32>) out(%out : memref<?x64x128xbf16>)
  return
}

// DeepSeek-V3 MLA: 128 heads, kv_lora_rank 512 + rope 64; non-absorbed prefill/extend with qk 192, v 128.
func.func @deepseek_v3_mla_decode(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x128x512xbf16>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x128x512xbf16>) scale(%scale)
  return
}
// Split-KV partials of the MLA decode (P from the shape of out), merged N-way.
func.func @deepseek_v3_mla_decode_split(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x128x512xf32>, %lse: memref<?x128x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x?x128x512xf32>) lse(%lse : memref<?x128x?xf32>) scale(%scale)
  return
}
func.func @deepseek_v3_mla_merge_n(%p: memref<?x?x128x512xf32>, %pl: memref<?x128x?xf32>, %out: memref<?x128x512xbf16>) {
  tessel.lse_merge_n partials(%p : memref<?x?x128x512xf32>, %pl : memref<?x128x?xf32>) out(%out : memref<?x128x512xbf16>)
  return
}
func.func @deepseek_v3_mla_prefill(%q: memref<?x128x192xbf16>, %k: memref<?x128x192xbf16>, %v: memref<?x128x128xbf16>, %cu: memref<?xi32>, %out: memref<?x128x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x128x192xbf16>) k(%k : memref<?x128x192xbf16>) v(%v : memref<?x128x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x128x128xbf16>) scale(%scale) {causal}
  return
}
// MLA extend on a GPU (see llama3_8b_extend_new): new tokens, context chunks, merge.
func.func @deepseek_v3_mla_extend_new(%q: memref<?x128x192xbf16>, %k: memref<?x128x192xbf16>, %v: memref<?x128x128xbf16>, %cu: memref<?xi32>, %out: memref<?x128x128xf32>, %lse: memref<128x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x128x192xbf16>) k(%k : memref<?x128x192xbf16>) v(%v : memref<?x128x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x128x128xf32>) lse(%lse : memref<128x?xf32>) scale(%scale) {causal}
  return
}
func.func @deepseek_v3_mla_extend_context(%q: memref<?x128x192xbf16>, %kc: memref<?x16x128x192xbf16>, %vc: memref<?x16x128x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x?x128x128xf32>, %lse: memref<?x128x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x128x192xbf16>) k_cache(%kc : memref<?x16x128x192xbf16>) v_cache(%vc : memref<?x16x128x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x128x128xf32>) lse(%lse : memref<?x128x?xf32>) layout(nhd) scale(%scale)
  return
}
// Extend merges: a context chunk into the f32 accumulator, the last one into out.
func.func @deepseek_v3_mla_extend_merge_acc(%oa: memref<?x128x128xf32>, %la: memref<128x?xf32>, %ob: memref<?x128x128xf32>, %lb: memref<128x?xf32>, %out: memref<?x128x128xf32>, %lse: memref<128x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x128x128xf32>, %la : memref<128x?xf32>) b(%ob : memref<?x128x128xf32>, %lb : memref<128x?xf32>) out(%out : memref<?x128x128xf32>) lse_out(%lse : memref<128x?xf32>)
  return
}
func.func @deepseek_v3_mla_extend_merge_out(%oa: memref<?x128x128xf32>, %la: memref<128x?xf32>, %ob: memref<?x128x128xf32>, %lb: memref<128x?xf32>, %out: memref<?x128x128xbf16>) {
  tessel.lse_merge a(%oa : memref<?x128x128xf32>, %la : memref<128x?xf32>) b(%ob : memref<?x128x128xf32>, %lb : memref<128x?xf32>) out(%out : memref<?x128x128xbf16>)
  return
}
func.func @deepseek_v3_mla_extend(%q: memref<?x128x192xbf16>, %k: memref<?x128x192xbf16>, %v: memref<?x128x128xbf16>, %kc: memref<?x16x128x192xbf16>, %vc: memref<?x16x128x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x128x128xbf16>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x128x192xbf16>) k(%k : memref<?x128x192xbf16>) v(%v : memref<?x128x128xbf16>) k_cache(%kc : memref<?x16x128x192xbf16>) v_cache(%vc : memref<?x16x128x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x128x128xbf16>) layout(nhd) scale(%scale)
  return
}

// DeepSeek-V3 routed experts: E=256, H=7168, I=2048, top-8; gate and up fused as one [2I, H] weight.
func.func @deepseek_v3_moe_histogram(%ids: memref<?x8xi32>, %counts: memref<256xi32>, %offsets: memref<256xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>) counts(%counts : memref<256xi32>) group_offsets(%offsets : memref<256xi32>)
  return
}
func.func @deepseek_v3_moe_sort(%ids: memref<?x8xi32>, %offsets: memref<256xi32>, %sorted: memref<?xi32>, %pos: memref<?x8xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>) group_offsets(%offsets : memref<256xi32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>)
  return
}
func.func @deepseek_v3_moe_permute(%x: memref<?x7168xbf16>, %sorted: memref<?xi32>, %out: memref<?x7168xbf16>) {
  tessel.moe_permute x(%x : memref<?x7168xbf16>) sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x7168xbf16>) {topk = 8 : i64}
  return
}
func.func @deepseek_v3_moe_unpermute(%y: memref<?x7168xbf16>, %pos: memref<?x8xi32>, %w: memref<?x8xf32>, %out: memref<?x7168xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x7168xbf16>) row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xf32>) out(%out : memref<?x7168xbf16>)
  return
}
func.func @deepseek_v3_moe_gate_up(%a: memref<?x7168xbf16>, %b: memref<256x4096x7168xbf16>, %offsets: memref<256xi32>, %c: memref<?x4096xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>) b(%b : memref<256x4096x7168xbf16>) group_offsets(%offsets : memref<256xi32>) c(%c : memref<?x4096xbf16>) {trans_b}
  return
}
func.func @deepseek_v3_moe_gate_up_ptrs(%a: memref<?x7168xbf16>, %b: memref<256xi64>, %offsets: memref<256xi32>, %c: memref<?x4096xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>) b(%b : memref<256xi64>) group_offsets(%offsets : memref<256xi32>) c(%c : memref<?x4096xbf16>) {trans_b, b_shape = array<i64: 4096, 7168>}
  return
}
func.func @deepseek_v3_moe_down(%a: memref<?x2048xbf16>, %b: memref<256x7168x2048xbf16>, %offsets: memref<256xi32>, %c: memref<?x7168xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<256x7168x2048xbf16>) group_offsets(%offsets : memref<256xi32>) c(%c : memref<?x7168xbf16>) {trans_b}
  return
}
func.func @deepseek_v3_moe_down_dgrad(%a: memref<?x7168xbf16>, %b: memref<256x7168x2048xbf16>, %offsets: memref<256xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>) b(%b : memref<256x7168x2048xbf16>) group_offsets(%offsets : memref<256xi32>) c(%c : memref<?x2048xbf16>) 
  return
}
func.func @deepseek_v3_moe_gate_up_dgrad(%a: memref<?x4096xbf16>, %b: memref<256x4096x7168xbf16>, %offsets: memref<256xi32>, %c: memref<?x7168xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x4096xbf16>) b(%b : memref<256x4096x7168xbf16>) group_offsets(%offsets : memref<256xi32>) c(%c : memref<?x7168xbf16>) 
  return
}
func.func @deepseek_v3_moe_gate_up_wgrad(%a: memref<?x4096xbf16>, %b: memref<?x7168xbf16>, %offsets: memref<256xi32>, %c: memref<256x4096x7168xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x4096xbf16>) b(%b : memref<?x7168xbf16>) group_offsets(%offsets : memref<256xi32>) c(%c : memref<256x4096x7168xf32>)
  return
}
func.func @deepseek_v3_moe_down_wgrad(%a: memref<?x7168xbf16>, %b: memref<?x2048xbf16>, %offsets: memref<256xi32>, %c: memref<256x7168x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x7168xbf16>) b(%b : memref<?x2048xbf16>) group_offsets(%offsets : memref<256xi32>) c(%c : memref<256x7168x2048xf32>)
  return
}
// silu(gate) * up and its backward with the routing weights.
func.func @deepseek_v3_moe_swiglu(%h: memref<?x4096xbf16>, %act: memref<?x2048xbf16>) {
  tessel.swiglu h(%h : memref<?x4096xbf16>) act(%act : memref<?x2048xbf16>)
  return
}
func.func @deepseek_v3_moe_swiglu_backward(%g: memref<?x2048xbf16>, %h: memref<?x4096xbf16>, %w: memref<?x8xf32>, %sorted: memref<?xi32>, %pos: memref<?x8xi32>, %dh: memref<?x4096xbf16>, %aw: memref<?x2048xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x2048xbf16>) h(%h : memref<?x4096xbf16>) topk_weights(%w : memref<?x8xf32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>) dh(%dh : memref<?x4096xbf16>) act_weighted(%aw : memref<?x2048xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}

// The reference MoE shape: E=128, H=2048, I=512, top-8; gate and up fused as one [2I, H] weight.
func.func @moe_ref_histogram(%ids: memref<?x8xi32>, %counts: memref<128xi32>, %offsets: memref<128xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>) counts(%counts : memref<128xi32>) group_offsets(%offsets : memref<128xi32>)
  return
}
func.func @moe_ref_sort(%ids: memref<?x8xi32>, %offsets: memref<128xi32>, %sorted: memref<?xi32>, %pos: memref<?x8xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>) group_offsets(%offsets : memref<128xi32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>)
  return
}
func.func @moe_ref_permute(%x: memref<?x2048xbf16>, %sorted: memref<?xi32>, %out: memref<?x2048xbf16>) {
  tessel.moe_permute x(%x : memref<?x2048xbf16>) sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x2048xbf16>) {topk = 8 : i64}
  return
}
func.func @moe_ref_unpermute(%y: memref<?x2048xbf16>, %pos: memref<?x8xi32>, %w: memref<?x8xf32>, %out: memref<?x2048xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x2048xbf16>) row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xf32>) out(%out : memref<?x2048xbf16>)
  return
}
func.func @moe_ref_gate_up(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>, %offsets: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128x1024x2048xbf16>) group_offsets(%offsets : memref<128xi32>) c(%c : memref<?x1024xbf16>) {trans_b}
  return
}
func.func @moe_ref_gate_up_ptrs(%a: memref<?x2048xbf16>, %b: memref<128xi64>, %offsets: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>) group_offsets(%offsets : memref<128xi32>) c(%c : memref<?x1024xbf16>) {trans_b, b_shape = array<i64: 1024, 2048>}
  return
}
func.func @moe_ref_down(%a: memref<?x512xbf16>, %b: memref<128x2048x512xbf16>, %offsets: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x512xbf16>) b(%b : memref<128x2048x512xbf16>) group_offsets(%offsets : memref<128xi32>) c(%c : memref<?x2048xbf16>) {trans_b}
  return
}
func.func @moe_ref_down_dgrad(%a: memref<?x2048xbf16>, %b: memref<128x2048x512xbf16>, %offsets: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128x2048x512xbf16>) group_offsets(%offsets : memref<128xi32>) c(%c : memref<?x512xbf16>) 
  return
}
func.func @moe_ref_gate_up_dgrad(%a: memref<?x1024xbf16>, %b: memref<128x1024x2048xbf16>, %offsets: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x1024xbf16>) b(%b : memref<128x1024x2048xbf16>) group_offsets(%offsets : memref<128xi32>) c(%c : memref<?x2048xbf16>) 
  return
}
func.func @moe_ref_gate_up_wgrad(%a: memref<?x1024xbf16>, %b: memref<?x2048xbf16>, %offsets: memref<128xi32>, %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>) b(%b : memref<?x2048xbf16>) group_offsets(%offsets : memref<128xi32>) c(%c : memref<128x1024x2048xf32>)
  return
}
func.func @moe_ref_down_wgrad(%a: memref<?x2048xbf16>, %b: memref<?x512xbf16>, %offsets: memref<128xi32>, %c: memref<128x2048x512xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x2048xbf16>) b(%b : memref<?x512xbf16>) group_offsets(%offsets : memref<128xi32>) c(%c : memref<128x2048x512xf32>)
  return
}
// silu(gate) * up and its backward with the routing weights.
func.func @moe_ref_swiglu(%h: memref<?x1024xbf16>, %act: memref<?x512xbf16>) {
  tessel.swiglu h(%h : memref<?x1024xbf16>) act(%act : memref<?x512xbf16>)
  return
}
func.func @moe_ref_swiglu_backward(%g: memref<?x512xbf16>, %h: memref<?x1024xbf16>, %w: memref<?x8xf32>, %sorted: memref<?xi32>, %pos: memref<?x8xi32>, %dh: memref<?x1024xbf16>, %aw: memref<?x512xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x512xbf16>) h(%h : memref<?x1024xbf16>) topk_weights(%w : memref<?x8xf32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>) dh(%dh : memref<?x1024xbf16>) act_weighted(%aw : memref<?x512xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}
