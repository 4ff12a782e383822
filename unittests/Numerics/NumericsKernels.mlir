//===- NumericsKernels.mlir - Kernels of the numerical tests ----*- mlir -*-===//
//
// The spec of the end-to-end numerical tests (unittests/Numerics). Every public
// function is one kernel; its arguments are in the op's operand order, so the
// tests bind buffers by the operand names the runtime reports. Shapes are
// chosen to cover GQA ratios 1/4/8, head dims 64/128/256 (and MLA 192/128,
// 576/512), block sizes 16/32, both KV layouts, f32/bf16/f16 and odd matmul
// sizes. The build compiles this file three times: default budgets, small
// budgets (--chunk-tokens=64 --split-kv-tokens=48) and --no-decompose.
//
// Scales are 1/sqrt(head dim) written with enough digits that the tests'
// float constants are the same f32 values.
//
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Prefill: GQA 1/4/8, head dims 64/128/256, MLA 192/128, f32/bf16/f16
//===----------------------------------------------------------------------===//

func.func @prefill_f32_h4kv4_d64(%q: memref<?x4x64xf32>, %k: memref<?x4x64xf32>, %v: memref<?x4x64xf32>, %cu: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x4x64xf32>) v(%v : memref<?x4x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}
// Also the 4096-token timing kernel and the launch error paths.
func.func @prefill_f32_h4kv1_d64(%q: memref<?x4x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x64xf32>, %cu: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x1x64xf32>) v(%v : memref<?x1x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}
func.func @prefill_f32_h8kv2_d128(%q: memref<?x8x128xf32>, %k: memref<?x2x128xf32>, %v: memref<?x2x128xf32>, %cu: memref<?xi32>, %out: memref<?x8x128xf32>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x8x128xf32>) k(%k : memref<?x2x128xf32>) v(%v : memref<?x2x128xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x128xf32>) lse(%lse : memref<8x?xf32>) scale(%scale) {causal}
  return
}
func.func @prefill_bf16_h8kv1_d256(%q: memref<?x8x256xbf16>, %k: memref<?x1x256xbf16>, %v: memref<?x1x256xbf16>, %cu: memref<?xi32>, %out: memref<?x8x256xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x8x256xbf16>) k(%k : memref<?x1x256xbf16>) v(%v : memref<?x1x256xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x256xbf16>) lse(%lse : memref<8x?xf32>) scale(%scale) {causal}
  return
}
func.func @prefill_f32_h4kv1_d64_noncausal(%q: memref<?x4x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x64xf32>, %cu: memref<?xi32>, %out: memref<?x4x64xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x1x64xf32>) v(%v : memref<?x1x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf32>) scale(%scale)
  return
}
// bf16 twins of the f32 shapes, for the GPU templates (no f32 MMA): GQA 1
// and 4, head dims 64 and 128, non-causal.
func.func @prefill_bf16_h4kv4_d64(%q: memref<?x4x64xbf16>, %k: memref<?x4x64xbf16>, %v: memref<?x4x64xbf16>, %cu: memref<?xi32>, %out: memref<?x4x64xbf16>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xbf16>) k(%k : memref<?x4x64xbf16>) v(%v : memref<?x4x64xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xbf16>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}
func.func @prefill_bf16_h8kv2_d128_noncausal(%q: memref<?x8x128xbf16>, %k: memref<?x2x128xbf16>, %v: memref<?x2x128xbf16>, %cu: memref<?xi32>, %out: memref<?x8x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x8x128xbf16>) k(%k : memref<?x2x128xbf16>) v(%v : memref<?x2x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x128xbf16>) lse(%lse : memref<8x?xf32>) scale(%scale)
  return
}
// MLA non-absorbed: qk 192, v 128; 16-bit inputs with an f32 output.
func.func @prefill_bf16_mla_h4_qk192_v128(%q: memref<?x4x192xbf16>, %k: memref<?x4x192xbf16>, %v: memref<?x4x128xbf16>, %cu: memref<?xi32>, %out: memref<?x4x128xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x192xbf16>) k(%k : memref<?x4x192xbf16>) v(%v : memref<?x4x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x128xf32>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}
func.func @prefill_f16_h4kv2_d64(%q: memref<?x4x64xf16>, %k: memref<?x2x64xf16>, %v: memref<?x2x64xf16>, %cu: memref<?xi32>, %out: memref<?x4x64xf16>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xf16>) k(%k : memref<?x2x64xf16>) v(%v : memref<?x2x64xf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf16>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}

//===----------------------------------------------------------------------===//
// Decode (run against all three bundles)
//===----------------------------------------------------------------------===//

// Split-KV partials in one kernel: out [P, B, Hq, Dv], lse [P, Hq, B].
func.func @paged_split_bf16_shuf_h8kv2_d64_bs16(%q: memref<?x8x64xbf16>, %kc: memref<?x2x8x16x8xbf16>, %vc: memref<?x2x2x64x8xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %out: memref<?x?x8x64xf32>, %lse: memref<?x8x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x8x64xbf16>) k_cache(%kc : memref<?x2x8x16x8xbf16>) v_cache(%vc : memref<?x2x2x64x8xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x8x64xf32>) lse(%lse : memref<?x8x?xf32>) layout(shuffled) scale(%scale)
  return
}
// MLA split-KV partials in one kernel: out [P, B, H, L], lse [P, H, B].
func.func @mla_split_bf16_h16_d576_l512_bs16(%q: memref<?x16x576xbf16>, %c: memref<?x16x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x16x512xf32>, %lse: memref<?x16x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x16x576xbf16>) kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x?x16x512xf32>) lse(%lse : memref<?x16x?xf32>) scale(%scale)
  return
}
func.func @decode_f32_nhd_h8kv2_d128_bs16(%q: memref<?x8x128xf32>, %kc: memref<?x16x2x128xf32>, %vc: memref<?x16x2x128xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x128xf32>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x8x128xf32>) k_cache(%kc : memref<?x16x2x128xf32>) v_cache(%vc : memref<?x16x2x128xf32>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x128xf32>) lse(%lse : memref<8x?xf32>) layout(nhd) scale(%scale)
  return
}
// The llama3 8B decode shape in bf16 (the f32 kernels cannot run on the
// emulated CDNA chips): tiles of several cache blocks.
func.func @decode_bf16_nhd_h8kv2_d128_bs16(%q: memref<?x8x128xbf16>, %kc: memref<?x16x2x128xbf16>, %vc: memref<?x16x2x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x2x128xbf16>) v_cache(%vc : memref<?x16x2x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x128xbf16>) lse(%lse : memref<8x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @decode_f32_shuf_h4kv4_d64_bs32(%q: memref<?x4x64xf32>, %kc: memref<?x4x16x32x4xf32>, %vc: memref<?x4x8x64x4xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x4x16x32x4xf32>) v_cache(%vc : memref<?x4x8x64x4xf32>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) layout(shuffled) scale(%scale)
  return
}
func.func @decode_bf16_nhd_h8kv1_d256_bs32(%q: memref<?x8x256xbf16>, %kc: memref<?x32x1x256xbf16>, %vc: memref<?x32x1x256xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x256xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x8x256xbf16>) k_cache(%kc : memref<?x32x1x256xbf16>) v_cache(%vc : memref<?x32x1x256xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x256xbf16>) layout(nhd) scale(%scale)
  return
}
func.func @decode_bf16_shuf_h8kv1_d128_bs16(%q: memref<?x8x128xbf16>, %kc: memref<?x1x16x16x8xbf16>, %vc: memref<?x1x2x128x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x8x128xbf16>) k_cache(%kc : memref<?x1x16x16x8xbf16>) v_cache(%vc : memref<?x1x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x128xbf16>) lse(%lse : memref<8x?xf32>) layout(shuffled) scale(%scale)
  return
}
// bf16: block size 64 with GQA 4; GQA 1 in the shuffled layout; and the
// > 16384-token split-KV case.
func.func @decode_bf16_nhd_h8kv2_d128_bs64(%q: memref<?x8x128xbf16>, %kc: memref<?x64x2x128xbf16>, %vc: memref<?x64x2x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x8x128xbf16>) k_cache(%kc : memref<?x64x2x128xbf16>) v_cache(%vc : memref<?x64x2x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x128xbf16>) lse(%lse : memref<8x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @decode_bf16_shuf_h4kv4_d64_bs32(%q: memref<?x4x64xbf16>, %kc: memref<?x4x8x32x8xbf16>, %vc: memref<?x4x4x64x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x4x64xbf16>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x4x64xbf16>) k_cache(%kc : memref<?x4x8x32x8xbf16>) v_cache(%vc : memref<?x4x4x64x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x4x64xbf16>) lse(%lse : memref<4x?xf32>) layout(shuffled) scale(%scale)
  return
}
func.func @decode_bf16_nhd_h4kv1_d64_bs16(%q: memref<?x4x64xbf16>, %kc: memref<?x16x1x64xbf16>, %vc: memref<?x16x1x64xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x4x64xbf16>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x4x64xbf16>) k_cache(%kc : memref<?x16x1x64xbf16>) v_cache(%vc : memref<?x16x1x64xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x4x64xbf16>) lse(%lse : memref<4x?xf32>) layout(nhd) scale(%scale)
  return
}
// Small heads for the > 16384-token split-KV case.
func.func @decode_f32_nhd_h4kv1_d64_bs16(%q: memref<?x4x64xf32>, %kc: memref<?x16x1x64xf32>, %vc: memref<?x16x1x64xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x1x64xf32>) v_cache(%vc : memref<?x16x1x64xf32>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) layout(nhd) scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// Extend (run against all three bundles)
//===----------------------------------------------------------------------===//

func.func @extend_f32_nhd_h4kv1_d64_bs16(%q: memref<?x4x64xf32>, %k: memref<?x1x64xf32>, %v: memref<?x1x64xf32>, %kc: memref<?x16x1x64xf32>, %vc: memref<?x16x1x64xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x1x64xf32>) v(%v : memref<?x1x64xf32>) k_cache(%kc : memref<?x16x1x64xf32>) v_cache(%vc : memref<?x16x1x64xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @extend_f32_shuf_h2kv2_d128_bs32(%q: memref<?x2x128xf32>, %k: memref<?x2x128xf32>, %v: memref<?x2x128xf32>, %kc: memref<?x2x32x32x4xf32>, %vc: memref<?x2x8x128x4xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x2x128xf32>, %lse: memref<2x?xf32>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x2x128xf32>) k(%k : memref<?x2x128xf32>) v(%v : memref<?x2x128xf32>) k_cache(%kc : memref<?x2x32x32x4xf32>) v_cache(%vc : memref<?x2x8x128x4xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x2x128xf32>) lse(%lse : memref<2x?xf32>) layout(shuffled) scale(%scale)
  return
}
func.func @extend_bf16_shuf_h8kv1_d256_bs16(%q: memref<?x8x256xbf16>, %k: memref<?x1x256xbf16>, %v: memref<?x1x256xbf16>, %kc: memref<?x1x32x16x8xbf16>, %vc: memref<?x1x2x256x8xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x8x256xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x8x256xbf16>) k(%k : memref<?x1x256xbf16>) v(%v : memref<?x1x256xbf16>) k_cache(%kc : memref<?x1x32x16x8xbf16>) v_cache(%vc : memref<?x1x2x256x8xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x8x256xbf16>) lse(%lse : memref<8x?xf32>) layout(shuffled) scale(%scale)
  return
}
func.func @extend_bf16_nhd_mla_h2_qk192_v128_bs16(%q: memref<?x2x192xbf16>, %k: memref<?x2x192xbf16>, %v: memref<?x2x128xbf16>, %kc: memref<?x16x2x192xbf16>, %vc: memref<?x16x2x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x2x128xbf16>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x2x192xbf16>) k(%k : memref<?x2x192xbf16>) v(%v : memref<?x2x128xbf16>) k_cache(%kc : memref<?x16x2x192xbf16>) v_cache(%vc : memref<?x16x2x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x2x128xbf16>) layout(nhd) scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// Paged attention without a window (the building block)
//===----------------------------------------------------------------------===//

// Context chunks of extend in one kernel: split form with cu_seqlens.
func.func @paged_split_f32_nhd_h4kv2_d64_bs16_cu(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x?x4x64xf32>, %lse: memref<?x4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x4x64xf32>) lse(%lse : memref<?x4x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @paged_f32_nhd_h4kv2_d64_bs16_cu(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) layout(nhd) scale(%scale)
  return
}
// The unified mode's kernel: causal, the context being each request's
// whole sequence with its queries last; whole and split form.
func.func @paged_causal_f32_nhd_h4kv2_d64_bs16_cu(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) causal layout(nhd) scale(%scale)
  return
}
func.func @paged_causal_split_f32_nhd_h4kv2_d64_bs16_cu(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x?x4x64xf32>, %lse: memref<?x4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x4x64xf32>) lse(%lse : memref<?x4x?xf32>) causal layout(nhd) scale(%scale)
  return
}
func.func @paged_bf16_shuf_h4kv1_d128_bs32(%q: memref<?x4x128xbf16>, %kc: memref<?x1x16x32x8xbf16>, %vc: memref<?x1x4x128x8xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %out: memref<?x4x128xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x128xbf16>) k_cache(%kc : memref<?x1x16x32x8xbf16>) v_cache(%vc : memref<?x1x4x128x8xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x4x128xf32>) lse(%lse : memref<4x?xf32>) layout(shuffled) scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// Reshape and cache, both layouts
//===----------------------------------------------------------------------===//

func.func @rac_f32_nhd_kv2_d64_bs16(%k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x2x64xf32>) v(%v : memref<?x2x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}
func.func @rac_f32_shuf_kv1_d64_bs32(%k: memref<?x1x64xf32>, %v: memref<?x1x64xf32>, %kc: memref<?x1x16x32x4xf32>, %vc: memref<?x1x8x64x4xf32>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x1x64xf32>) v(%v : memref<?x1x64xf32>) k_cache(%kc : memref<?x1x16x32x4xf32>) v_cache(%vc : memref<?x1x8x64x4xf32>) slot_mapping(%slots : memref<?xi32>) layout(shuffled)
  return
}
// Same caches as decode_bf16_shuf_h8kv1_d128_bs16: written, then decoded.
func.func @rac_bf16_shuf_kv1_d128_bs16(%k: memref<?x1x128xbf16>, %v: memref<?x1x128xbf16>, %kc: memref<?x1x16x16x8xbf16>, %vc: memref<?x1x2x128x8xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x1x128xbf16>) v(%v : memref<?x1x128xbf16>) k_cache(%kc : memref<?x1x16x16x8xbf16>) v_cache(%vc : memref<?x1x2x128x8xbf16>) slot_mapping(%slots : memref<?xi32>) layout(shuffled)
  return
}
func.func @rac_bf16_nhd_kv2_qk192_v128_bs16(%k: memref<?x2x192xbf16>, %v: memref<?x2x128xbf16>, %kc: memref<?x16x2x192xbf16>, %vc: memref<?x16x2x128xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x2x192xbf16>) v(%v : memref<?x2x128xbf16>) k_cache(%kc : memref<?x16x2x192xbf16>) v_cache(%vc : memref<?x16x2x128xbf16>) slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}

//===----------------------------------------------------------------------===//
// MLA decode, absorbed (run against all three bundles)
//===----------------------------------------------------------------------===//

func.func @mla_bf16_h16_d576_l512_bs16(%q: memref<?x16x576xbf16>, %c: memref<?x16x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x16x512xbf16>, %lse: memref<16x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x16x576xbf16>) kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x16x512xbf16>) lse(%lse : memref<16x?xf32>) scale(%scale)
  return
}
// 20 heads: a second head group with 12 padding columns, 32-token blocks.
func.func @mla_bf16_h20_d576_l512_bs32(%q: memref<?x20x576xbf16>, %c: memref<?x32x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x20x512xbf16>, %lse: memref<20x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x20x576xbf16>) kv_cache(%c : memref<?x32x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x20x512xbf16>) lse(%lse : memref<20x?xf32>) scale(%scale)
  return
}
// DeepSeek's MLA decode shape in bf16 (blocks of 64: a tile is one block or
// part of one).
func.func @mla_bf16_h16_d576_l512_bs64(%q: memref<?x16x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x16x512xbf16>, %lse: memref<16x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x16x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x16x512xbf16>) lse(%lse : memref<16x?xf32>) scale(%scale)
  return
}
func.func @mla_f32_h4_d576_l512_bs32(%q: memref<?x4x576xf32>, %c: memref<?x32x576xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x4x512xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x4x576xf32>) kv_cache(%c : memref<?x32x576xf32>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x4x512xf32>) lse(%lse : memref<4x?xf32>) scale(%scale)
  return
}
func.func @mla_f32_h8_d96_l64_bs16(%q: memref<?x8x96xf32>, %c: memref<?x16x96xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x8x64xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x8x96xf32>) kv_cache(%c : memref<?x16x96xf32>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x8x64xf32>) scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// LSE merge
//===----------------------------------------------------------------------===//

func.func @merge_f32_h4_d64(%oa: memref<?x4x64xf32>, %la: memref<4x?xf32>, %ob: memref<?x4x64xf32>, %lb: memref<4x?xf32>, %out: memref<?x4x64xf32>, %lo: memref<4x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x4x64xf32>, %la : memref<4x?xf32>) b(%ob : memref<?x4x64xf32>, %lb : memref<4x?xf32>) out(%out : memref<?x4x64xf32>) lse_out(%lo : memref<4x?xf32>)
  return
}
func.func @merge_f32_to_bf16_h8_d128(%oa: memref<?x8x128xf32>, %la: memref<8x?xf32>, %ob: memref<?x8x128xf32>, %lb: memref<8x?xf32>, %out: memref<?x8x128xbf16>, %lo: memref<8x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x8x128xf32>, %la : memref<8x?xf32>) b(%ob : memref<?x8x128xf32>, %lb : memref<8x?xf32>) out(%out : memref<?x8x128xbf16>) lse_out(%lo : memref<8x?xf32>)
  return
}
func.func @merge_bf16_to_f32_h2_d256(%oa: memref<?x2x256xbf16>, %la: memref<2x?xf32>, %ob: memref<?x2x256xbf16>, %lb: memref<2x?xf32>, %out: memref<?x2x256xf32>) {
  tessel.lse_merge a(%oa : memref<?x2x256xbf16>, %la : memref<2x?xf32>) b(%ob : memref<?x2x256xbf16>, %lb : memref<2x?xf32>) out(%out : memref<?x2x256xf32>)
  return
}
func.func @merge_n_f32_h4_d64(%p: memref<?x?x4x64xf32>, %pl: memref<?x4x?xf32>, %out: memref<?x4x64xf32>, %lo: memref<4x?xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x4x64xf32>, %pl : memref<?x4x?xf32>) out(%out : memref<?x4x64xf32>) lse_out(%lo : memref<4x?xf32>)
  return
}
func.func @merge_n_f32_to_bf16_h2_d128(%p: memref<?x?x2x128xf32>, %pl: memref<?x2x?xf32>, %out: memref<?x2x128xbf16>) {
  tessel.lse_merge_n partials(%p : memref<?x?x2x128xf32>, %pl : memref<?x2x?xf32>) out(%out : memref<?x2x128xbf16>)
  return
}

//===----------------------------------------------------------------------===//
// Grouped matmul: stacked and pointer-table B, trans_b and not
//===----------------------------------------------------------------------===//

func.func @gmm_f32_tb_k64_n96(%a: memref<?x64xf32>, %b: memref<4x96x64xf32>, %off: memref<4xi32>, %c: memref<?x96xf32>) {
  tessel.grouped_matmul a(%a : memref<?x64xf32>) b(%b : memref<4x96x64xf32>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x96xf32>) {trans_b}
  return
}
func.func @gmm_f32_k96_n48(%a: memref<?x96xf32>, %b: memref<4x96x48xf32>, %off: memref<4xi32>, %c: memref<?x48xf32>) {
  tessel.grouped_matmul a(%a : memref<?x96xf32>) b(%b : memref<4x96x48xf32>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x48xf32>)
  return
}
func.func @gmm_bf16_tb_k48_n64(%a: memref<?x48xbf16>, %b: memref<4x64x48xbf16>, %off: memref<4xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x48xbf16>) b(%b : memref<4x64x48xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}
func.func @gmm_bf16_k64_n96_f32out(%a: memref<?x64xbf16>, %b: memref<4x64x96xbf16>, %off: memref<4xi32>, %c: memref<?x96xf32>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<4x64x96xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x96xf32>)
  return
}
// Three K-tiles of 32 (an odd count: the register-staged loops run tiles
// in pairs and the last alone), the third partly past K.
func.func @gmm_bf16_k80_n96(%a: memref<?x80xbf16>, %b: memref<4x80x96xbf16>, %off: memref<4xi32>, %c: memref<?x96xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x80xbf16>) b(%b : memref<4x80x96xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x96xbf16>)
  return
}
func.func @gmm_f32_ptr_tb_k64_n96(%a: memref<?x64xf32>, %b: memref<4xi64>, %off: memref<4xi32>, %c: memref<?x96xf32>) {
  tessel.grouped_matmul a(%a : memref<?x64xf32>) b(%b : memref<4xi64>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x96xf32>) {trans_b, b_shape = array<i64: 96, 64>}
  return
}
func.func @gmm_bf16_ptr_k48_n96(%a: memref<?x48xbf16>, %b: memref<4xi64>, %off: memref<4xi32>, %c: memref<?x96xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x48xbf16>) b(%b : memref<4xi64>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x96xbf16>) {b_shape = array<i64: 48, 96>}
  return
}
func.func @gmm_bf16_gather_tb_k48_n64(%a: memref<?x48xbf16>, %b: memref<4x64x48xbf16>, %off: memref<4xi32>, %c: memref<?x64xbf16>, %rows: memref<?xi32>) {
  tessel.grouped_matmul a(%a : memref<?x48xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<4x64x48xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x64xbf16>) {a_rows_divisor = 7, trans_b}
  return
}
func.func @gmm_bf16_gather_ptr_tb_k72_n200(%a: memref<?x72xbf16>, %b: memref<4xi64>, %off: memref<4xi32>, %c: memref<?x200xbf16>, %rows: memref<?xi32>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<4xi64>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x200xbf16>) {a_rows_divisor = 2, trans_b, b_shape = array<i64: 200, 72>}
  return
}
func.func @gmm_bf16_swiglu_k48_n80(%a: memref<?x48xbf16>, %b: memref<4x80x48xbf16>, %off: memref<4xi32>, %c: memref<?x80xbf16>, %rows: memref<?xi32>, %act: memref<?x40xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x48xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<4x80x48xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x80xbf16>) act(%act : memref<?x40xbf16>) {a_rows_divisor = 7, trans_b}
  return
}
func.func @gmm_bf16_swiglu_k64_n272(%a: memref<?x64xbf16>, %b: memref<4x272x64xbf16>, %off: memref<4xi32>, %c: memref<?x272xbf16>, %act: memref<?x136xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<4x272x64xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x272xbf16>) act(%act : memref<?x136xbf16>) {trans_b}
  return
}
func.func @gmm_f32_gather_k96_n48(%a: memref<?x96xf32>, %b: memref<4x96x48xf32>, %off: memref<4xi32>, %c: memref<?x48xf32>, %rows: memref<?xi32>) {
  tessel.grouped_matmul a(%a : memref<?x96xf32>) a_rows(%rows : memref<?xi32>) b(%b : memref<4x96x48xf32>) group_offsets(%off : memref<4xi32>) c(%c : memref<?x48xf32>) {a_rows_divisor = 1}
  return
}
func.func @wgrad_bf16_gather_a_m96_n64(%a: memref<?x96xbf16>, %rows: memref<?xi32>, %b: memref<?x64xbf16>, %off: memref<4xi32>, %c: memref<4x96x64xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x96xbf16>) a_rows(%rows : memref<?xi32>) b(%b : memref<?x64xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<4x96x64xf32>) {rows_divisor = 6}
  return
}
func.func @wgrad_bf16_gather_b_m64_n200(%a: memref<?x64xbf16>, %b: memref<?x200xbf16>, %rows: memref<?xi32>, %off: memref<5xi32>, %c: memref<5x64x200xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x200xbf16>) b_rows(%rows : memref<?xi32>) group_offsets(%off : memref<5xi32>) c(%c : memref<5x64x200xf32>) {rows_divisor = 2}
  return
}
func.func @wgrad_f32_gather_a_m64_n48(%a: memref<?x64xf32>, %rows: memref<?xi32>, %b: memref<?x48xf32>, %off: memref<5xi32>, %c: memref<5x64x48xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xf32>) a_rows(%rows : memref<?xi32>) b(%b : memref<?x48xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<5x64x48xf32>) {rows_divisor = 3}
  return
}
func.func @wgrad_f32_m64_n48(%a: memref<?x64xf32>, %b: memref<?x48xf32>, %off: memref<5xi32>, %c: memref<5x64x48xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xf32>) b(%b : memref<?x48xf32>) group_offsets(%off : memref<5xi32>) c(%c : memref<5x64x48xf32>)
  return
}
func.func @wgrad_bf16_m256_n512(%a: memref<?x256xbf16>, %b: memref<?x512xbf16>, %off: memref<5xi32>, %c: memref<5x256x512xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x256xbf16>) b(%b : memref<?x512xbf16>) group_offsets(%off : memref<5xi32>) c(%c : memref<5x256x512xf32>)
  return
}
func.func @wgrad_bf16_gather_b_m256_n256(%a: memref<?x256xbf16>, %b: memref<?x256xbf16>, %rows: memref<?xi32>, %off: memref<4xi32>, %c: memref<4x256x256xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x256xbf16>) b(%b : memref<?x256xbf16>) b_rows(%rows : memref<?xi32>) group_offsets(%off : memref<4xi32>) c(%c : memref<4x256x256xf32>) {rows_divisor = 2}
  return
}
func.func @wgrad_bf16_m96_n64(%a: memref<?x96xbf16>, %b: memref<?x64xbf16>, %off: memref<4xi32>, %c: memref<4x96x64xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x96xbf16>) b(%b : memref<?x64xbf16>) group_offsets(%off : memref<4xi32>) c(%c : memref<4x96x64xf32>)
  return
}

//===----------------------------------------------------------------------===//
// MoE glue
//===----------------------------------------------------------------------===//

func.func @hist_e8_k2(%ids: memref<?x2xi32>, %counts: memref<8xi32>, %off: memref<8xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>) counts(%counts : memref<8xi32>) group_offsets(%off : memref<8xi32>)
  return
}
func.func @hist_e37_k4(%ids: memref<?x4xi32>, %counts: memref<37xi32>, %off: memref<37xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x4xi32>) counts(%counts : memref<37xi32>) group_offsets(%off : memref<37xi32>)
  return
}
func.func @sort_e8_k2(%ids: memref<?x2xi32>, %off: memref<8xi32>, %sorted: memref<?xi32>, %pos: memref<?x2xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x2xi32>) group_offsets(%off : memref<8xi32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x2xi32>)
  return
}
func.func @sort_e37_k4(%ids: memref<?x4xi32>, %off: memref<37xi32>, %sorted: memref<?xi32>, %pos: memref<?x4xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x4xi32>) group_offsets(%off : memref<37xi32>) sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x4xi32>)
  return
}
func.func @permute_f32_h96_k2(%x: memref<?x96xf32>, %sorted: memref<?xi32>, %out: memref<?x96xf32>) {
  tessel.moe_permute x(%x : memref<?x96xf32>) sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x96xf32>) {topk = 2 : i64}
  return
}
func.func @permute_bf16_h64_k4(%x: memref<?x64xbf16>, %sorted: memref<?xi32>, %out: memref<?x64xbf16>) {
  tessel.moe_permute x(%x : memref<?x64xbf16>) sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x64xbf16>) {topk = 4 : i64}
  return
}
func.func @unpermute_f32_h96_k2(%y: memref<?x96xf32>, %pos: memref<?x2xi32>, %w: memref<?x2xf32>, %out: memref<?x96xf32>) {
  tessel.moe_unpermute y(%y : memref<?x96xf32>) row_positions(%pos : memref<?x2xi32>) weights(%w : memref<?x2xf32>) out(%out : memref<?x96xf32>)
  return
}
func.func @unpermute_bf16_h64_k4_wbf16(%y: memref<?x64xbf16>, %pos: memref<?x4xi32>, %w: memref<?x4xbf16>, %out: memref<?x64xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x64xbf16>) row_positions(%pos : memref<?x4xi32>) weights(%w : memref<?x4xbf16>) out(%out : memref<?x64xbf16>)
  return
}
func.func @unpermute_bf16_h64_k4_wf32(%y: memref<?x64xbf16>, %pos: memref<?x4xi32>, %w: memref<?x4xf32>, %out: memref<?x64xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x64xbf16>) row_positions(%pos : memref<?x4xi32>) weights(%w : memref<?x4xf32>) out(%out : memref<?x64xbf16>)
  return
}

//===----------------------------------------------------------------------===//
// The attention dispatcher's kernel set (DispatchTest.cpp): f32, 4 query
// heads, 2 KV heads, head dim 64, NHD blocks of 16. It finds them by op and
// shape parameters; the names only document the roles.
//===----------------------------------------------------------------------===//

func.func @dispatch_decode(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x4x64xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x4x64xf32>) layout(nhd) scale(%scale)
  return
}
func.func @dispatch_decode_split(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x4x64xf32>, %lse: memref<?x4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x4x64xf32>) lse(%lse : memref<?x4x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @dispatch_decode_merge(%p: memref<?x?x4x64xf32>, %pl: memref<?x4x?xf32>, %out: memref<?x4x64xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x4x64xf32>, %pl : memref<?x4x?xf32>) out(%out : memref<?x4x64xf32>)
  return
}
func.func @dispatch_prefill(%q: memref<?x4x64xf32>, %k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>, %cu: memref<?xi32>, %out: memref<?x4x64xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x2x64xf32>) v(%v : memref<?x2x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf32>) scale(%scale) {causal}
  return
}
func.func @dispatch_extend_new(%q: memref<?x4x64xf32>, %k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>, %cu: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x2x64xf32>) v(%v : memref<?x2x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}
func.func @dispatch_extend_context(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x?x4x64xf32>, %lse: memref<?x4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x4x64xf32>) lse(%lse : memref<?x4x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @dispatch_unified(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x4x64xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x4x64xf32>) causal layout(nhd) scale(%scale)
  return
}
func.func @dispatch_unified_split(%q: memref<?x4x64xf32>, %kc: memref<?x16x2x64xf32>, %vc: memref<?x16x2x64xf32>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x?x4x64xf32>, %lse: memref<?x4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x2x64xf32>) v_cache(%vc : memref<?x16x2x64xf32>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x4x64xf32>) lse(%lse : memref<?x4x?xf32>) causal layout(nhd) scale(%scale)
  return
}
func.func @dispatch_merge_out(%oa: memref<?x4x64xf32>, %la: memref<4x?xf32>, %ob: memref<?x4x64xf32>, %lb: memref<4x?xf32>, %out: memref<?x4x64xf32>) {
  tessel.lse_merge a(%oa : memref<?x4x64xf32>, %la : memref<4x?xf32>) b(%ob : memref<?x4x64xf32>, %lb : memref<4x?xf32>) out(%out : memref<?x4x64xf32>)
  return
}

// The same configuration in bf16, for the emulated GPUs (no GPU template
// takes f32 attention): the dispatcher tests run on these there
// (DispatchTest.cpp, dispatchDtype()). Written by
// tessel.specs.dispatch_set("dispatch_bf16", 4, 2, 64, 16).
func.func @dispatch_bf16_prefill(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>, %cu: memref<?xi32>, %out: memref<?x4x64xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xbf16>) k(%k : memref<?x2x64xbf16>) v(%v : memref<?x2x64xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xbf16>) scale(%scale) {causal}
  return
}
func.func @dispatch_bf16_extend_new(%q: memref<?x4x64xbf16>, %k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>, %cu: memref<?xi32>, %out: memref<?x4x64xf32>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x4x64xbf16>) k(%k : memref<?x2x64xbf16>) v(%v : memref<?x2x64xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x4x64xf32>) lse(%lse : memref<4x?xf32>) scale(%scale) {causal}
  return
}
func.func @dispatch_bf16_extend_merge_acc(%oa: memref<?x4x64xf32>, %la: memref<4x?xf32>, %ob: memref<?x4x64xf32>, %lb: memref<4x?xf32>, %out: memref<?x4x64xf32>, %lo: memref<4x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x4x64xf32>, %la : memref<4x?xf32>) b(%ob : memref<?x4x64xf32>, %lb : memref<4x?xf32>) out(%out : memref<?x4x64xf32>) lse_out(%lo : memref<4x?xf32>)
  return
}
func.func @dispatch_bf16_extend_merge_out(%oa: memref<?x4x64xf32>, %la: memref<4x?xf32>, %ob: memref<?x4x64xf32>, %lb: memref<4x?xf32>, %out: memref<?x4x64xbf16>) {
  tessel.lse_merge a(%oa : memref<?x4x64xf32>, %la : memref<4x?xf32>) b(%ob : memref<?x4x64xf32>, %lb : memref<4x?xf32>) out(%out : memref<?x4x64xbf16>)
  return
}
func.func @dispatch_bf16_lse_merge_n(%p: memref<?x?x4x64xf32>, %pl: memref<?x4x?xf32>, %out: memref<?x4x64xbf16>) {
  tessel.lse_merge_n partials(%p : memref<?x?x4x64xf32>, %pl : memref<?x4x?xf32>) out(%out : memref<?x4x64xbf16>)
  return
}
func.func @dispatch_bf16_decode(%q: memref<?x4x64xbf16>, %kc: memref<?x16x2x64xbf16>, %vc: memref<?x16x2x64xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x4x64xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x4x64xbf16>) k_cache(%kc : memref<?x16x2x64xbf16>) v_cache(%vc : memref<?x16x2x64xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x4x64xbf16>) layout(nhd) scale(%scale)
  return
}
func.func @dispatch_bf16_decode_split(%q: memref<?x4x64xbf16>, %kc: memref<?x16x2x64xbf16>, %vc: memref<?x16x2x64xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %out: memref<?x?x4x64xf32>, %lse: memref<?x4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xbf16>) k_cache(%kc : memref<?x16x2x64xbf16>) v_cache(%vc : memref<?x16x2x64xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x4x64xf32>) lse(%lse : memref<?x4x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @dispatch_bf16_extend_context(%q: memref<?x4x64xbf16>, %kc: memref<?x16x2x64xbf16>, %vc: memref<?x16x2x64xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x?x4x64xf32>, %lse: memref<?x4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xbf16>) k_cache(%kc : memref<?x16x2x64xbf16>) v_cache(%vc : memref<?x16x2x64xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x?x4x64xf32>) lse(%lse : memref<?x4x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @dispatch_bf16_unified(%q: memref<?x4x64xbf16>, %kc: memref<?x16x2x64xbf16>, %vc: memref<?x16x2x64xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x4x64xbf16>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xbf16>) k_cache(%kc : memref<?x16x2x64xbf16>) v_cache(%vc : memref<?x16x2x64xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x4x64xbf16>) causal layout(nhd) scale(%scale)
  return
}
func.func @dispatch_bf16_unified_split(%q: memref<?x4x64xbf16>, %kc: memref<?x16x2x64xbf16>, %vc: memref<?x16x2x64xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x?x4x64xf32>, %lse: memref<?x4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xbf16>) k_cache(%kc : memref<?x16x2x64xbf16>) v_cache(%vc : memref<?x16x2x64xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x4x64xf32>) lse(%lse : memref<?x4x?xf32>) causal layout(nhd) scale(%scale)
  return
}
func.func @dispatch_bf16_reshape_and_cache(%k: memref<?x2x64xbf16>, %v: memref<?x2x64xbf16>, %kc: memref<?x16x2x64xbf16>, %vc: memref<?x16x2x64xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x2x64xbf16>) v(%v : memref<?x2x64xbf16>) k_cache(%kc : memref<?x16x2x64xbf16>) v_cache(%vc : memref<?x16x2x64xbf16>) slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}


// SwiGLU and its backward (SwigluTest.cpp): gate | up fused as [R, 2I] in
// f32, and apart as [2, R, I] in bf16.
func.func @swiglu_f32_i13(%h: memref<?x26xf32>, %a: memref<?x13xf32>) {
  tessel.swiglu h(%h : memref<?x26xf32>) act(%a : memref<?x13xf32>)
  return
}
func.func @swiglu_backward_f32_i13_k2(%g: memref<?x13xf32>, %h: memref<?x26xf32>, %w: memref<?x2xf32>, %s: memref<?xi32>, %p: memref<?x2xi32>, %dh: memref<?x26xf32>, %aw: memref<?x13xf32>, %dw: memref<?x2xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x13xf32>) h(%h : memref<?x26xf32>) topk_weights(%w : memref<?x2xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x2xi32>) dh(%dh : memref<?x26xf32>) act_weighted(%aw : memref<?x13xf32>) d_topk_weights(%dw : memref<?x2xf32>)
  return
}
func.func @swiglu_bf16_i16_parts(%h: memref<2x?x16xbf16>, %a: memref<?x16xbf16>) {
  tessel.swiglu h(%h : memref<2x?x16xbf16>) act(%a : memref<?x16xbf16>)
  return
}
func.func @swiglu_backward_bf16_i16_k4_parts(%g: memref<?x16xbf16>, %h: memref<2x?x16xbf16>, %w: memref<?x4xf32>, %s: memref<?xi32>, %p: memref<?x4xi32>, %dh: memref<2x?x16xbf16>, %aw: memref<?x16xbf16>, %dw: memref<?x4xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x16xbf16>) h(%h : memref<2x?x16xbf16>) topk_weights(%w : memref<?x4xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x4xi32>) dh(%dh : memref<2x?x16xbf16>) act_weighted(%aw : memref<?x16xbf16>) d_topk_weights(%dw : memref<?x4xf32>)
  return
}

// The unified kernel in bf16 at the default set's head dim, GQA 4, both
// layouts (AttentionTest.cpp's Paged.Bf16CausalSequences*). At the end of
// the file: error messages list a bundle's kernels in this order, and
// DispatchErrors expects the dispatch_* kernels among the first listed.
func.func @paged_causal_bf16_nhd_h8kv2_d128_bs16_cu(%q: memref<?x8x128xbf16>, %kc: memref<?x16x2x128xbf16>, %vc: memref<?x16x2x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x8x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x2x128xbf16>) v_cache(%vc : memref<?x16x2x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x8x128xbf16>) lse(%lse : memref<8x?xf32>) causal layout(nhd) scale(%scale)
  return
}
// Block sizes 128 and 32 at the same shape: a 64-key tile is half a block
// of 128 (its windows start inside the block) or two blocks of 32.
func.func @paged_causal_bf16_nhd_h8kv2_d128_bs128_cu(%q: memref<?x8x128xbf16>, %kc: memref<?x128x2x128xbf16>, %vc: memref<?x128x2x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x8x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x8x128xbf16>) k_cache(%kc : memref<?x128x2x128xbf16>) v_cache(%vc : memref<?x128x2x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x8x128xbf16>) lse(%lse : memref<8x?xf32>) causal layout(nhd) scale(%scale)
  return
}
func.func @paged_causal_bf16_nhd_h8kv2_d128_bs32_cu(%q: memref<?x8x128xbf16>, %kc: memref<?x32x2x128xbf16>, %vc: memref<?x32x2x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x8x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x8x128xbf16>) k_cache(%kc : memref<?x32x2x128xbf16>) v_cache(%vc : memref<?x32x2x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x8x128xbf16>) lse(%lse : memref<8x?xf32>) causal layout(nhd) scale(%scale)
  return
}
func.func @paged_causal_bf16_shuf_h8kv2_d128_bs16_cu(%q: memref<?x8x128xbf16>, %kc: memref<?x2x16x16x8xbf16>, %vc: memref<?x2x2x128x8xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x8x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x8x128xbf16>) k_cache(%kc : memref<?x2x16x16x8xbf16>) v_cache(%vc : memref<?x2x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x8x128xbf16>) lse(%lse : memref<8x?xf32>) causal layout(shuffled) scale(%scale)
  return
}
// GQA 32: every column of CDNA's transposed-score decode a real head (the
// 16-row template of sm80 refuses it).
func.func @decode_bf16_nhd_h32kv1_d128_bs16(%q: memref<?x32x128xbf16>, %kc: memref<?x16x1x128xbf16>, %vc: memref<?x16x1x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x1x128xbf16>) v_cache(%vc : memref<?x16x1x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>) layout(nhd) scale(%scale)
  return
}
// MLA's non-absorbed heads (qk 192, v 128) over a paged context with
// cu_seqlens (extend's context windows): on gfx942 one register-staged
// 64-key stage (two do not fit its LDS).
func.func @paged_bf16_nhd_mla_h4kv2_qk192_v128_bs16_cu(%q: memref<?x4x192xbf16>, %kc: memref<?x16x2x192xbf16>, %vc: memref<?x16x2x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x4x128xbf16>, %lse: memref<4x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x192xbf16>) k_cache(%kc : memref<?x16x2x192xbf16>) v_cache(%vc : memref<?x16x2x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x4x128xbf16>) lse(%lse : memref<4x?xf32>) layout(nhd) scale(%scale)
  return
}
