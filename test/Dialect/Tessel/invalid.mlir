// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// Every message of lib/Dialect/Tessel/IR/TesselOps.cpp, each at least once:
//   Checker::rank            "'x' must have rank R, got r"
//   Checker::floatData       "'x' element type must be f32, f16 or bf16"
//   Checker::sameElem        "'x' element type must match 'y'"
//   Checker::outElem         "'x' element type must be f32 or match 'y'"
//   Checker::intElem         "'x' must be a memref of i32"
//   Checker::f32Elem         "'x' must be a memref of f32"
//   Checker::staticDim       "'x' dim d (what) must be static"
//   Checker::sameDim         "'x' dim d (what) is X but 'y' dim e is Y"
//   Checker::dimIs           "'x' dim d (what) must be E, got S"
//   Checker::headDim         "head dim of 'x' is D; supported head dims ..."
//   Checker::headRatio       "num_q_heads (A) must be a multiple of ..."
//   Checker::blockSize       "block size (B) must be a positive multiple of 16"
//   verifyQueryAndOutput     "head dim of 'q' (A) must match the head dim of"
//   verifyCuSeqlens          "'cu_seqlens' must have one more entry than"
//   verifyWindow             "window needs both a start and a length"
//   ExtendAttentionOp        "new 'k'/'v' (...) must match the caches (...)"
//   ReshapeAndCacheOp        "'k'/'v' (...) must match the caches (...)"
//   MLADecodeOp              "MLA head dim of 'q' is D; it must be ..."
//   MLADecodeOp              "latent dim of 'out' (L) must be a positive ..."
//   GroupedMatmulOp          "a rank-1 'b' is a pointer table and must be ..."
//   GroupedMatmulOp          "a pointer-table 'b' needs b_shape = ..."
//   GroupedMatmulOp          "b_shape must be positive"
//   GroupedMatmulOp          "b_shape K (A) must match 'a' dim 1 (B)"
//   GroupedMatmulOp          "b_shape is only allowed when 'b' is a pointer table"
//   GroupedMatmulOp          "a_rows_divisor must be positive"
//   GroupedMatmulOp          "a_rows_divisor is only allowed with 'a_rows'"
//   GroupedMatmulWgradOp     "rows_divisor is only allowed with 'a_rows' or 'b_rows'"
//   GroupedMatmulWgradOp     "rows_divisor must be positive"
//   MoePermuteOp             "topk must be positive"
// and the shared checks again where an op adds its own operands.

//===----------------------------------------------------------------------===//
// prefill_attention
//===----------------------------------------------------------------------===//

func.func @prefill_k_rank(%q: memref<?x32x128xbf16>, %k: memref<?x1024xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k' must have rank 3, got 2}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x1024xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

// q's rank is checked before k's and v's token counts are compared with it.
func.func @prefill_q_rank(%q: memref<bf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'q' must have rank 3, got 0}}
  tessel.prefill_attention q(%q : memref<bf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_q_type(%q: memref<?x32x128xi16>, %k: memref<?x8x128xi16>, %v: memref<?x8x128xi16>, %cu: memref<?xi32>, %o: memref<?x32x128xf32>, %scale: f32) {
  // expected-error @below {{'q' element type must be f32, f16 or bf16, got 'i16'}}
  tessel.prefill_attention q(%q : memref<?x32x128xi16>) k(%k : memref<?x8x128xi16>) v(%v : memref<?x8x128xi16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xf32>) scale(%scale)
  return
}

// -----

func.func @prefill_v_type(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'v' element type must match 'q' ('bf16'), got 'f16'}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_kv_heads_dynamic(%q: memref<?x32x128xbf16>, %k: memref<?x?x128xbf16>, %v: memref<?x?x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k' dim 1 (num_kv_heads) must be static}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x?x128xbf16>) v(%v : memref<?x?x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_v_heads(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x4x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'v' dim 1 (num_kv_heads) must be 8, got 4}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x4x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_k_tokens(%q: memref<12x32x128xbf16>, %k: memref<10x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<12x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k' dim 0 (tokens) is 10 but 'q' dim 0 is 12}}
  tessel.prefill_attention q(%q : memref<12x32x128xbf16>) k(%k : memref<10x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<12x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_cu_seqlens_type(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi64>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'cu_seqlens' must be a memref of i32, got 'i64'}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi64>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_cu_seqlens_rank(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?x2xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'cu_seqlens' must have rank 1, got 2}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?x2xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_qk_head_dim(%q: memref<?x32x64xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{head dim of 'q' (64) must match the head dim of 'k' (128)}}
  tessel.prefill_attention q(%q : memref<?x32x64xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_q_head_dim(%q: memref<?x32x8xbf16>, %k: memref<?x8x8xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{head dim of 'q' is 8; supported head dims are multiples of 16 from 16 to 256}}
  tessel.prefill_attention q(%q : memref<?x32x8xbf16>) k(%k : memref<?x8x8xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_v_head_dim(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x272xbf16>, %cu: memref<?xi32>, %o: memref<?x32x272xbf16>, %scale: f32) {
  // expected-error @below {{head dim of 'v' is 272; supported head dims are multiples of 16 from 16 to 256}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x272xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x272xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_head_ratio(%q: memref<?x12x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x12x128xbf16>, %scale: f32) {
  // expected-error @below {{num_q_heads (12) must be a multiple of num_kv_heads (8)}}
  tessel.prefill_attention q(%q : memref<?x12x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x12x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_out_type(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xf16>, %scale: f32) {
  // expected-error @below {{'out' element type must be f32 or match 'q' ('bf16'), got 'f16'}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xf16>) scale(%scale)
  return
}

// -----

func.func @prefill_out_heads(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x16x128xbf16>, %scale: f32) {
  // expected-error @below {{'out' dim 1 (num_q_heads) must be 32, got 16}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x16x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_out_head_dim(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x64xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'out' dim 2 (v head dim) must be 64, got 128}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x64xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) scale(%scale)
  return
}

// -----

// Specialised dims of outputs must be static, not only equal when static.
func.func @prefill_out_heads_dynamic(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x?x128xbf16>, %scale: f32) {
  // expected-error @below {{'out' dim 1 (num_q_heads) must be static}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x?x128xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_lse_type(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<32x?xbf16>, %scale: f32) {
  // expected-error @below {{'lse' must be a memref of f32, got 'bf16'}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) lse(%lse : memref<32x?xbf16>) scale(%scale)
  return
}

// -----

func.func @prefill_lse_heads(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %o: memref<?x32x128xbf16>, %lse: memref<8x?xf32>, %scale: f32) {
  // expected-error @below {{'lse' dim 0 (num_q_heads) must be 32, got 8}}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>) lse(%lse : memref<8x?xf32>) scale(%scale)
  return
}

// -----

// The LSE is [heads, tokens], not token-major.
func.func @prefill_lse_tokens(%q: memref<7x32x128xbf16>, %k: memref<7x8x128xbf16>, %v: memref<7x8x128xbf16>, %cu: memref<?xi32>, %o: memref<7x32x128xbf16>, %lse: memref<32x32xf32>, %scale: f32) {
  // expected-error @below {{'lse' dim 1 (tokens) is 32 but 'q' dim 0 is 7}}
  tessel.prefill_attention q(%q : memref<7x32x128xbf16>) k(%k : memref<7x8x128xbf16>) v(%v : memref<7x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%o : memref<7x32x128xbf16>) lse(%lse : memref<32x32xf32>) scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// decode_attention and the KV caches
//===----------------------------------------------------------------------===//

// -----

func.func @decode_cache_rank(%q: memref<?x32x128xbf16>, %kc: memref<?x16x1024xbf16>, %vc: memref<?x16x1024xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k_cache' must have rank 4, got 3}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x1024xbf16>) v_cache(%vc : memref<?x16x1024xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_cache_float(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xi8>, %vc: memref<?x16x8x128xi8>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k_cache' element type must be f32, f16 or bf16, got 'i8'}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xi8>) v_cache(%vc : memref<?x16x8x128xi8>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_v_cache_type(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'v_cache' element type must match 'k_cache' ('bf16'), got 'f16'}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_q_type(%q: memref<?x32x128xf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xf16>, %scale: f32) {
  // expected-error @below {{'k_cache' element type must match 'q' ('f16'), got 'bf16'}}
  tessel.decode_attention q(%q : memref<?x32x128xf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_block_size_dynamic(%q: memref<?x32x128xbf16>, %kc: memref<?x?x8x128xbf16>, %vc: memref<?x?x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k_cache' dim 1 (block_size) must be static}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x?x8x128xbf16>) v_cache(%vc : memref<?x?x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_block_size(%q: memref<?x32x128xbf16>, %kc: memref<?x8x8x128xbf16>, %vc: memref<?x8x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{block size (8) must be a positive multiple of 16}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x8x8x128xbf16>) v_cache(%vc : memref<?x8x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_num_blocks(%q: memref<?x32x128xbf16>, %kc: memref<100x16x8x128xbf16>, %vc: memref<50x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'v_cache' dim 0 (num_blocks) is 50 but 'k_cache' dim 0 is 100}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<100x16x8x128xbf16>) v_cache(%vc : memref<50x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_v_cache_heads(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'v_cache' dim 2 (num_kv_heads) must be 8, got 4}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_shuffled_rank(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k_cache' must have rank 5, got 4}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(shuffled) scale(%scale)
  return
}

// -----

// x = 16 bytes / sizeof(bf16) = 8.
func.func @decode_shuffled_x(%q: memref<?x32x128xbf16>, %kc: memref<?x8x32x16x4xbf16>, %vc: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k_cache' dim 4 (x = 16 bytes / element size) must be 8, got 4}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x8x32x16x4xbf16>) v_cache(%vc : memref<?x8x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(shuffled) scale(%scale)
  return
}

// -----

func.func @decode_shuffled_v_blocks(%q: memref<?x32x128xbf16>, %kc: memref<?x8x16x16x8xbf16>, %vc: memref<?x8x4x128x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'v_cache' dim 2 (block_size / x) must be 2, got 4}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>) v_cache(%vc : memref<?x8x4x128x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(shuffled) scale(%scale)
  return
}

// -----

func.func @decode_shuffled_head_dim(%q: memref<?x32x128xbf16>, %kc: memref<?x8x?x16x8xbf16>, %vc: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'k_cache' dim 2 (head_dim / x) must be static}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x8x?x16x8xbf16>) v_cache(%vc : memref<?x8x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(shuffled) scale(%scale)
  return
}

// -----

func.func @decode_cache_head_dim(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x64xbf16>, %vc: memref<?x16x8x64xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x64xbf16>, %scale: f32) {
  // expected-error @below {{head dim of 'q' (128) must match the head dim of 'k_cache' (64)}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x64xbf16>) v_cache(%vc : memref<?x16x8x64xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x64xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_block_table_type(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi64>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'block_table' must be a memref of i32, got 'i64'}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi64>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_seq_lens_requests(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<4x?xi32>, %sl: memref<3xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'seq_lens' dim 0 (requests) is 3 but 'block_table' dim 0 is 4}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<4x?xi32>) seq_lens(%sl : memref<3xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_q_requests(%q: memref<5x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<4xi32>, %o: memref<5x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'q' dim 0 (requests) is 5 but 'seq_lens' dim 0 is 4}}
  tessel.decode_attention q(%q : memref<5x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<4xi32>) out(%o : memref<5x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// extend_attention
//===----------------------------------------------------------------------===//

// -----

func.func @extend_cu_seqlens(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<4xi32>, %cl: memref<4xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'cu_seqlens' must have one more entry than 'context_lens' (4), got 4}}
  tessel.extend_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<4xi32>) context_lens(%cl : memref<4xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @extend_new_kv(%q: memref<?x32x128xbf16>, %k: memref<?x4x128xbf16>, %v: memref<?x4x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{new 'k'/'v' (4 heads, dims 128/128) must match the caches (8 heads, dims 128/128)}}
  tessel.extend_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x4x128xbf16>) v(%v : memref<?x4x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @extend_context_lens_type(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xf32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'context_lens' must be a memref of i32, got 'f32'}}
  tessel.extend_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xf32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// paged_attention
//===----------------------------------------------------------------------===//

// -----

// Only the generic form can give a start without a length.
func.func @paged_half_window(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %o: memref<?x32x128xf32>, %start: index, %scale: f32) {
  // expected-error @below {{window needs both a start and a length}}
  "tessel.paged_attention"(%q, %kc, %vc, %bt, %cl, %o, %start, %scale) <{layout = #tessel<kv_layout nhd>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 1>}> : (memref<?x32x128xbf16>, memref<?x16x8x128xbf16>, memref<?x16x8x128xbf16>, memref<?x?xi32>, memref<?xi32>, memref<?x32x128xf32>, index, f32) -> ()
  return
}

// -----

func.func @paged_split_with_window(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %o: memref<?x?x32x128xf32>, %l: memref<?x32x?xf32>, %s: index, %n: index, %scale: f32) {
  // expected-error @below {{the split form ('out' [P, T, Hq, Dv]) takes no window: partial p covers ceil(MB / P) blocks}}
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x?x32x128xf32>) lse(%l : memref<?x32x?xf32>) window(%s, %n) layout(nhd) scale(%scale)
  return
}

// -----

func.func @paged_split_without_lse(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %o: memref<?x?x32x128xf32>, %scale: f32) {
  // expected-error @below {{the split form ('out' [P, T, Hq, Dv]) needs 'lse' [P, Hq, T]: its partials are merged by it}}
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x?x32x128xf32>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @paged_causal_without_cu_seqlens(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  // expected-error @below {{'causal' needs 'cu_seqlens': it places each request's queries at the end of its sequence}}
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) causal layout(nhd) scale(%scale)
  return
}

// -----

func.func @paged_causal_with_window(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %o: memref<?x32x128xbf16>, %s: index, %n: index, %scale: f32) {
  // expected-error @below {{'causal' takes no window (the split form cuts the sequence into windows)}}
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) window(%s, %n) causal layout(nhd) scale(%scale)
  return
}

// -----

func.func @paged_split_partials_disagree(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %o: memref<4x?x32x128xf32>, %l: memref<3x32x?xf32>, %scale: f32) {
  // expected-error @below {{partials}}
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<4x?x32x128xf32>) lse(%l : memref<3x32x?xf32>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @paged_split_lse_rank(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %o: memref<?x?x32x128xf32>, %l: memref<32x?xf32>, %scale: f32) {
  // expected-error @below {{'lse' must have rank 3, got 2}}
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x?x32x128xf32>) lse(%l : memref<32x?xf32>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @paged_cu_seqlens(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<3xi32>, %cl: memref<3xi32>, %o: memref<?x32x128xf32>, %scale: f32) {
  // expected-error @below {{'cu_seqlens' must have one more entry than 'context_lens' (3), got 3}}
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<3xi32>) context_lens(%cl : memref<3xi32>) out(%o : memref<?x32x128xf32>) layout(nhd) scale(%scale)
  return
}

// -----

// Without cu_seqlens there is one query per request.
func.func @paged_one_query(%q: memref<6x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<3xi32>, %o: memref<6x32x128xf32>, %scale: f32) {
  // expected-error @below {{'q' dim 0 (requests) is 6 but 'context_lens' dim 0 is 3}}
  tessel.paged_attention q(%q : memref<6x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<3xi32>) out(%o : memref<6x32x128xf32>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @paged_out_tokens(%q: memref<6x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<6xi32>, %o: memref<5x32x128xf32>, %scale: f32) {
  // expected-error @below {{'out' dim 0 (tokens) is 5 but 'q' dim 0 is 6}}
  tessel.paged_attention q(%q : memref<6x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<6xi32>) out(%o : memref<5x32x128xf32>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @paged_lse_rank(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %o: memref<?x32x128xf32>, %lse: memref<?xf32>, %scale: f32) {
  // expected-error @below {{'lse' must have rank 2, got 1}}
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x32x128xf32>) lse(%lse : memref<?xf32>) layout(nhd) scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// reshape_and_cache
//===----------------------------------------------------------------------===//

// -----

func.func @reshape_and_cache_dims(%k: memref<?x8x64xbf16>, %v: memref<?x8x64xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %s: memref<?xi32>) {
  // expected-error @below {{'k'/'v' (8 heads, dims 64/64) must match the caches (8 heads, dims 128/128)}}
  tessel.reshape_and_cache k(%k : memref<?x8x64xbf16>) v(%v : memref<?x8x64xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) slot_mapping(%s : memref<?xi32>) layout(nhd)
  return
}

// -----

func.func @reshape_and_cache_slots(%k: memref<4x8x128xbf16>, %v: memref<4x8x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %s: memref<5xi32>) {
  // expected-error @below {{'slot_mapping' dim 0 (tokens) is 5 but 'k' dim 0 is 4}}
  tessel.reshape_and_cache k(%k : memref<4x8x128xbf16>) v(%v : memref<4x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) slot_mapping(%s : memref<5xi32>) layout(nhd)
  return
}

// -----

func.func @reshape_and_cache_type(%k: memref<?x8x128xf16>, %v: memref<?x8x128xf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %s: memref<?xi32>) {
  // expected-error @below {{'k_cache' element type must match 'k' ('f16'), got 'bf16'}}
  tessel.reshape_and_cache k(%k : memref<?x8x128xf16>) v(%v : memref<?x8x128xf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) slot_mapping(%s : memref<?xi32>) layout(nhd)
  return
}

//===----------------------------------------------------------------------===//
// mla_decode
//===----------------------------------------------------------------------===//

// -----

func.func @mla_cache_rank(%q: memref<?x128x576xbf16>, %c: memref<?x16x1x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x512xbf16>, %scale: f32) {
  // expected-error @below {{'kv_cache' must have rank 3, got 4}}
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x16x1x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_heads_dynamic(%q: memref<?x?x576xbf16>, %c: memref<?x16x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x?x512xbf16>, %scale: f32) {
  // expected-error @below {{'q' dim 1 (num_heads) must be static}}
  tessel.mla_decode q(%q : memref<?x?x576xbf16>) kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x?x512xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_block_size(%q: memref<?x128x576xbf16>, %c: memref<?x0x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x512xbf16>, %scale: f32) {
  // expected-error @below {{block size (0) must be a positive multiple of 16}}
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x0x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_head_dim(%q: memref<?x128x1040xbf16>, %c: memref<?x16x1040xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x512xbf16>, %scale: f32) {
  // expected-error @below {{MLA head dim of 'q' is 1040; it must be a multiple of 16 from 16 to 1024}}
  tessel.mla_decode q(%q : memref<?x128x1040xbf16>) kv_cache(%c : memref<?x16x1040xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_latent(%q: memref<?x128x576xbf16>, %c: memref<?x16x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x576xbf16>, %scale: f32) {
  // expected-error @below {{latent dim of 'out' (576) must be a positive multiple of 16 smaller than the head dim of 'q' (576)}}
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x576xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_latent_zero(%q: memref<?x128x576xbf16>, %c: memref<?x16x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x0xbf16>, %scale: f32) {
  // expected-error @below {{latent dim of 'out' (0) must be a positive multiple of 16 smaller than the head dim of 'q' (576)}}
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x0xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_head_dim_zero(%q: memref<?x128x0xbf16>, %c: memref<?x16x0xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x512xbf16>, %scale: f32) {
  // expected-error @below {{MLA head dim of 'q' is 0; it must be a multiple of 16 from 16 to 1024}}
  tessel.mla_decode q(%q : memref<?x128x0xbf16>) kv_cache(%c : memref<?x16x0xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_cache_dim(%q: memref<?x128x576xbf16>, %c: memref<?x16x512xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x512xbf16>, %scale: f32) {
  // expected-error @below {{'kv_cache' dim 2 (latent + rope dim) must be 576, got 512}}
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x16x512xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xbf16>) scale(%scale)
  return
}

// -----

func.func @mla_out_type(%q: memref<?x128x576xbf16>, %c: memref<?x16x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x512xf16>, %scale: f32) {
  // expected-error @below {{'out' element type must be f32 or match 'q' ('bf16'), got 'f16'}}
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xf16>) scale(%scale)
  return
}

// -----

func.func @mla_lse_heads(%q: memref<?x128x576xbf16>, %c: memref<?x16x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x512xbf16>, %lse: memref<16x?xf32>, %scale: f32) {
  // expected-error @below {{'lse' dim 0 (num_heads) must be 128, got 16}}
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xbf16>) lse(%lse : memref<16x?xf32>) scale(%scale)
  return
}

// -----

func.func @mla_half_window(%q: memref<?x128x576xbf16>, %c: memref<?x16x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x128x512xbf16>, %len: index, %scale: f32) {
  // expected-error @below {{window needs both a start and a length}}
  "tessel.mla_decode"(%q, %c, %bt, %sl, %o, %len, %scale) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 1, 1>}> : (memref<?x128x576xbf16>, memref<?x16x576xbf16>, memref<?x?xi32>, memref<?xi32>, memref<?x128x512xbf16>, index, f32) -> ()
  return
}

//===----------------------------------------------------------------------===//
// lse_merge, lse_merge_n
//===----------------------------------------------------------------------===//

// -----

func.func @merge_head_dim(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>, %ob: memref<?x32x64xf32>, %lb: memref<32x?xf32>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'o_b' dim 2 (head_dim) is 64 but 'o_a' dim 2 is 128}}
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>) b(%ob : memref<?x32x64xf32>, %lb : memref<32x?xf32>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_lse_type(%oa: memref<?x32x128xf32>, %la: memref<32x?xf16>, %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'lse_a' must be a memref of f32, got 'f16'}}
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf16>) b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_lse_heads(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>, %ob: memref<?x32x128xf32>, %lb: memref<16x?xf32>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'lse_b' dim 0 (heads) is 16 but 'o_b' dim 1 is 32}}
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>) b(%ob : memref<?x32x128xf32>, %lb : memref<16x?xf32>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_out_type(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>, %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>, %o: memref<?x32x128xi16>) {
  // expected-error @below {{'out' element type must be f32, f16 or bf16, got 'i16'}}
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>) b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>) out(%o : memref<?x32x128xi16>)
  return
}

// -----

func.func @merge_lse_out_tokens(%oa: memref<8x32x128xf32>, %la: memref<32x8xf32>, %ob: memref<8x32x128xf32>, %lb: memref<32x8xf32>, %o: memref<8x32x128xf32>, %lo: memref<32x9xf32>) {
  // expected-error @below {{'lse_out' dim 1 (tokens) is 9 but 'out' dim 0 is 8}}
  tessel.lse_merge a(%oa : memref<8x32x128xf32>, %la : memref<32x8xf32>) b(%ob : memref<8x32x128xf32>, %lb : memref<32x8xf32>) out(%o : memref<8x32x128xf32>) lse_out(%lo : memref<32x9xf32>)
  return
}

// -----

func.func @merge_heads_dynamic(%oa: memref<?x?x128xf32>, %la: memref<32x?xf32>, %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'o_a' dim 1 (heads) must be static}}
  tessel.lse_merge a(%oa : memref<?x?x128xf32>, %la : memref<32x?xf32>) b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_lse_heads_dynamic(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>, %ob: memref<?x32x128xf32>, %lb: memref<?x?xf32>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'lse_b' dim 0 (heads) must be static}}
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>) b(%ob : memref<?x32x128xf32>, %lb : memref<?x?xf32>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_n_rank(%p: memref<?x32x128xf32>, %pl: memref<?x32x?xf32>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'partials' must have rank 4, got 3}}
  tessel.lse_merge_n partials(%p : memref<?x32x128xf32>, %pl : memref<?x32x?xf32>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_n_head_dim_dynamic(%p: memref<?x?x32x?xf32>, %pl: memref<?x32x?xf32>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'partials' dim 3 (head_dim) must be static}}
  tessel.lse_merge_n partials(%p : memref<?x?x32x?xf32>, %pl : memref<?x32x?xf32>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_n_lse_partials(%p: memref<4x?x32x128xf32>, %pl: memref<2x32x?xf32>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'partial_lse' dim 0 (partials) is 2 but 'partials' dim 0 is 4}}
  tessel.lse_merge_n partials(%p : memref<4x?x32x128xf32>, %pl : memref<2x32x?xf32>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_n_lse_type(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xbf16>, %o: memref<?x32x128xbf16>) {
  // expected-error @below {{'partial_lse' must be a memref of f32, got 'bf16'}}
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>, %pl : memref<?x32x?xbf16>) out(%o : memref<?x32x128xbf16>)
  return
}

// -----

func.func @merge_n_out_heads(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xf32>, %o: memref<?x16x128xbf16>) {
  // expected-error @below {{'out' dim 1 (heads) is 16 but 'partials' dim 2 is 32}}
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>, %pl : memref<?x32x?xf32>) out(%o : memref<?x16x128xbf16>)
  return
}

//===----------------------------------------------------------------------===//
// grouped_matmul, grouped_matmul_wgrad
//===----------------------------------------------------------------------===//

// -----

func.func @gmm_table_type(%a: memref<?x64xbf16>, %b: memref<8xi32>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{a rank-1 'b' is a pointer table and must be a memref of i64, got 'i32'}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi32>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {b_shape = array<i64: 64, 32>}
  return
}

// -----

func.func @gmm_table_no_shape(%a: memref<?x64xbf16>, %b: memref<8xi64>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{a pointer-table 'b' needs b_shape = [N, K] (trans_b) or [K, N]}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>)
  return
}

// -----

func.func @gmm_table_shape_rank(%a: memref<?x64xbf16>, %b: memref<8xi64>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{a pointer-table 'b' needs b_shape = [N, K] (trans_b) or [K, N]}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {b_shape = array<i64: 8, 64, 32>}
  return
}

// -----

func.func @gmm_table_shape_positive(%a: memref<?x64xbf16>, %b: memref<8xi64>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{b_shape must be positive, got [64, 0]}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {b_shape = array<i64: 64, 0>}
  return
}

// -----

// With trans_b the table's matrices are [N, K].
func.func @gmm_table_k(%a: memref<?x64xbf16>, %b: memref<8xi64>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{b_shape K (32) must match 'a' dim 1 (64)}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {b_shape = array<i64: 64, 32>, trans_b}
  return
}

// -----

func.func @gmm_table_groups(%a: memref<?x64xbf16>, %b: memref<4xi64>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{'b' dim 0 (groups) is 4 but 'group_offsets' dim 0 is 8}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<4xi64>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {b_shape = array<i64: 64, 32>}
  return
}

// -----

func.func @gmm_table_n(%a: memref<?x64xbf16>, %b: memref<8xi64>, %g: memref<8xi32>, %c: memref<?x16xbf16>) {
  // expected-error @below {{'c' dim 1 (N) must be 32, got 16}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x16xbf16>) {b_shape = array<i64: 64, 32>}
  return
}

// -----

// The fused SwiGLU (act): stacked b with trans_b, gate and up halves.
func.func @gmm_act_no_trans(%a: memref<?x64xbf16>, %b: memref<8x64x32xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>, %act: memref<?x16xbf16>) {
  // expected-error @below {{'act' needs a stacked 'b' with trans_b (each group's gate rows, then its up rows)}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) act(%act : memref<?x16xbf16>)
  return
}

// -----

func.func @gmm_act_table(%a: memref<?x64xbf16>, %b: memref<8xi64>, %g: memref<8xi32>, %c: memref<?x32xbf16>, %act: memref<?x16xbf16>) {
  // expected-error @below {{'act' needs a stacked 'b' with trans_b (each group's gate rows, then its up rows)}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) act(%act : memref<?x16xbf16>) {b_shape = array<i64: 32, 64>, trans_b}
  return
}


// -----

func.func @gmm_act_odd_n(%a: memref<?x64xbf16>, %b: memref<8x31x64xbf16>, %g: memref<8xi32>, %c: memref<?x31xbf16>, %act: memref<?x15xbf16>) {
  // expected-error @below {{'act' needs an even N (gate and up halves), got 31}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x31x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x31xbf16>) act(%act : memref<?x15xbf16>) {trans_b}
  return
}

// -----

func.func @gmm_act_width(%a: memref<?x64xbf16>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>, %act: memref<?x32xbf16>) {
  // expected-error @below {{'act' dim 1 (N / 2) must be 16, got 32}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) act(%act : memref<?x32xbf16>) {trans_b}
  return
}

// -----

func.func @gmm_act_elem(%a: memref<?x64xbf16>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>, %act: memref<?x16xf32>) {
  // expected-error @below {{'act' element type must match 'c' ('bf16'), got 'f32'}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) act(%act : memref<?x16xf32>) {trans_b}
  return
}

// -----

func.func @gmm_act_rows(%a: memref<?x64xbf16>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<16x32xbf16>, %act: memref<8x16xbf16>) {
  // expected-error @below {{'act' dim 0 (rows) is 8 but 'c' dim 0 is 16}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<16x32xbf16>) act(%act : memref<8x16xbf16>) {trans_b}
  return
}

// -----

func.func @gmm_stacked_b_shape(%a: memref<?x64xbf16>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{b_shape is only allowed when 'b' is a pointer table}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {b_shape = array<i64: 32, 64>, trans_b}
  return
}

// -----

func.func @gmm_b_rank(%a: memref<?x64xbf16>, %b: memref<64x32xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{'b' must have rank 3, got 2}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<64x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>)
  return
}

// -----

func.func @gmm_k_dynamic(%a: memref<?x?xbf16>, %b: memref<8x64x32xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{'a' dim 1 (K) must be static}}
  tessel.grouped_matmul a(%a : memref<?x?xbf16>) b(%b : memref<8x64x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>)
  return
}

// -----

func.func @gmm_b_type(%a: memref<?x64xbf16>, %b: memref<8x64x32xf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{'b' element type must match 'a' ('bf16'), got 'f16'}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x32xf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>)
  return
}

// -----

// Without trans_b, b is [G, K, N].
func.func @gmm_b_k(%a: memref<?x64xbf16>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  // expected-error @below {{'b' dim 1 (K) must be 64, got 32}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>)
  return
}

// -----

func.func @gmm_n_dynamic(%a: memref<?x64xbf16>, %b: memref<8x?x64xbf16>, %g: memref<8xi32>, %c: memref<?x?xbf16>) {
  // expected-error @below {{'b' dim 1 (N) must be static}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x?x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x?xbf16>) {trans_b}
  return
}

// -----

func.func @gmm_c_n_dynamic(%a: memref<?x64xbf16>, %b: memref<8x64x32xbf16>, %g: memref<8xi32>, %c: memref<?x?xbf16>) {
  // expected-error @below {{'c' dim 1 (N) must be static}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x?xbf16>)
  return
}

// -----

func.func @gmm_groups(%a: memref<?x64xbf16>, %b: memref<4x64x32xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{'b' dim 0 (groups) is 4 but 'group_offsets' dim 0 is 8}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<4x64x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>)
  return
}

// -----

func.func @gmm_rows(%a: memref<10x64xbf16>, %b: memref<8x64x32xbf16>, %g: memref<8xi32>, %c: memref<12x32xbf16>) {
  // expected-error @below {{'c' dim 0 (rows) is 12 but 'a' dim 0 is 10}}
  tessel.grouped_matmul a(%a : memref<10x64xbf16>) b(%b : memref<8x64x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<12x32xbf16>)
  return
}

// -----

func.func @gmm_offsets_type(%a: memref<?x64xbf16>, %b: memref<8x64x32xbf16>, %g: memref<8xi64>, %c: memref<?x32xbf16>) {
  // expected-error @below {{'group_offsets' must be a memref of i32, got 'i64'}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x32xbf16>) group_offsets(%g : memref<8xi64>) c(%c : memref<?x32xbf16>)
  return
}

// -----

func.func @gmm_c_type(%a: memref<?x64xbf16>, %b: memref<8x64x32xbf16>, %g: memref<8xi32>, %c: memref<?x32xf16>) {
  // expected-error @below {{'c' element type must be f32 or match 'a' ('bf16'), got 'f16'}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xf16>)
  return
}

// -----

func.func @wgrad_c_rank(%a: memref<?x64xbf16>, %b: memref<?x32xbf16>, %g: memref<8xi32>, %c: memref<64x32xf32>) {
  // expected-error @below {{'c' must have rank 3, got 2}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<64x32xf32>)
  return
}

// -----

func.func @wgrad_m_dynamic(%a: memref<?x?xbf16>, %b: memref<?x32xbf16>, %g: memref<8xi32>, %c: memref<8x64x32xf32>) {
  // expected-error @below {{'a' dim 1 (M) must be static}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x?xbf16>) b(%b : memref<?x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x32xf32>)
  return
}

// -----

func.func @wgrad_b_rows(%a: memref<10x64xbf16>, %b: memref<11x32xbf16>, %g: memref<8xi32>, %c: memref<8x64x32xf32>) {
  // expected-error @below {{'b' dim 0 (rows) is 11 but 'a' dim 0 is 10}}
  tessel.grouped_matmul_wgrad a(%a : memref<10x64xbf16>) b(%b : memref<11x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x32xf32>)
  return
}

// -----

func.func @wgrad_groups(%a: memref<?x64xbf16>, %b: memref<?x32xbf16>, %g: memref<8xi32>, %c: memref<4x64x32xf32>) {
  // expected-error @below {{'c' dim 0 (groups) is 4 but 'group_offsets' dim 0 is 8}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<4x64x32xf32>)
  return
}

// -----

func.func @wgrad_m(%a: memref<?x64xbf16>, %b: memref<?x32xbf16>, %g: memref<8xi32>, %c: memref<8x32x32xf32>) {
  // expected-error @below {{'c' dim 1 (M) must be 64, got 32}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x32x32xf32>)
  return
}

// -----

func.func @wgrad_n(%a: memref<?x64xbf16>, %b: memref<?x32xbf16>, %g: memref<8xi32>, %c: memref<8x64x64xf32>) {
  // expected-error @below {{'c' dim 2 (N) must be 32, got 64}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x64xf32>)
  return
}

// -----

func.func @wgrad_b_type(%a: memref<?x64xbf16>, %b: memref<?x32xf32>, %g: memref<8xi32>, %c: memref<8x64x32xf32>) {
  // expected-error @below {{'b' element type must match 'a' ('bf16'), got 'f32'}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x32xf32>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x32xf32>)
  return
}

//===----------------------------------------------------------------------===//
// MoE glue
//===----------------------------------------------------------------------===//

// -----

func.func @histogram_topk_dynamic(%ids: memref<?x?xi32>, %n: memref<8xi32>, %g: memref<8xi32>) {
  // expected-error @below {{'topk_ids' dim 1 (topk) must be static}}
  tessel.expert_histogram topk_ids(%ids : memref<?x?xi32>) counts(%n : memref<8xi32>) group_offsets(%g : memref<8xi32>)
  return
}

// -----

func.func @histogram_ids_type(%ids: memref<?x2xi64>, %n: memref<8xi32>, %g: memref<8xi32>) {
  // expected-error @below {{'topk_ids' must be a memref of i32, got 'i64'}}
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi64>) counts(%n : memref<8xi32>) group_offsets(%g : memref<8xi32>)
  return
}

// -----

func.func @histogram_experts(%ids: memref<?x2xi32>, %n: memref<8xi32>, %g: memref<4xi32>) {
  // expected-error @below {{'group_offsets' dim 0 (experts) is 4 but 'counts' dim 0 is 8}}
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>) counts(%n : memref<8xi32>) group_offsets(%g : memref<4xi32>)
  return
}

// -----

func.func @sort_rows(%ids: memref<16x2xi32>, %g: memref<8xi32>, %s: memref<30xi32>, %p: memref<16x2xi32>) {
  // expected-error @below {{'sorted_rows' dim 0 (tokens * topk) must be 32, got 30}}
  tessel.expert_sort topk_ids(%ids : memref<16x2xi32>) group_offsets(%g : memref<8xi32>) sorted_rows(%s : memref<30xi32>) row_positions(%p : memref<16x2xi32>)
  return
}

// -----

func.func @sort_positions_topk(%ids: memref<?x2xi32>, %g: memref<8xi32>, %s: memref<?xi32>, %p: memref<?x4xi32>) {
  // expected-error @below {{'row_positions' dim 1 (topk) is 4 but 'topk_ids' dim 1 is 2}}
  tessel.expert_sort topk_ids(%ids : memref<?x2xi32>) group_offsets(%g : memref<8xi32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x4xi32>)
  return
}

// -----

func.func @sort_positions_rank(%ids: memref<?x2xi32>, %g: memref<8xi32>, %s: memref<?xi32>, %p: memref<?xi32>) {
  // expected-error @below {{'row_positions' must have rank 2, got 1}}
  tessel.expert_sort topk_ids(%ids : memref<?x2xi32>) group_offsets(%g : memref<8xi32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?xi32>)
  return
}

// -----

func.func @permute_topk(%x: memref<?x64xbf16>, %s: memref<?xi32>, %o: memref<?x64xbf16>) {
  // expected-error @below {{topk must be positive, got 0}}
  tessel.moe_permute x(%x : memref<?x64xbf16>) sorted_rows(%s : memref<?xi32>) out(%o : memref<?x64xbf16>) {topk = 0 : i64}
  return
}

// -----

func.func @permute_out_type(%x: memref<?x64xbf16>, %s: memref<?xi32>, %o: memref<?x64xf32>) {
  // expected-error @below {{'out' element type must match 'x' ('bf16'), got 'f32'}}
  tessel.moe_permute x(%x : memref<?x64xbf16>) sorted_rows(%s : memref<?xi32>) out(%o : memref<?x64xf32>) {topk = 2 : i64}
  return
}

// -----

func.func @permute_hidden_dynamic(%x: memref<?x?xbf16>, %s: memref<?xi32>, %o: memref<?x64xbf16>) {
  // expected-error @below {{'x' dim 1 (hidden) must be static}}
  tessel.moe_permute x(%x : memref<?x?xbf16>) sorted_rows(%s : memref<?xi32>) out(%o : memref<?x64xbf16>) {topk = 2 : i64}
  return
}

// -----

func.func @permute_rows(%x: memref<?x64xbf16>, %s: memref<16xi32>, %o: memref<8x64xbf16>) {
  // expected-error @below {{'out' dim 0 (rows) is 8 but 'sorted_rows' dim 0 is 16}}
  tessel.moe_permute x(%x : memref<?x64xbf16>) sorted_rows(%s : memref<16xi32>) out(%o : memref<8x64xbf16>) {topk = 2 : i64}
  return
}

// -----

func.func @permute_hidden(%x: memref<?x64xbf16>, %s: memref<?xi32>, %o: memref<?x32xbf16>) {
  // expected-error @below {{'out' dim 1 (hidden) must be 64, got 32}}
  tessel.moe_permute x(%x : memref<?x64xbf16>) sorted_rows(%s : memref<?xi32>) out(%o : memref<?x32xbf16>) {topk = 2 : i64}
  return
}

// -----

func.func @unpermute_weights_type(%y: memref<?x64xbf16>, %p: memref<?x2xi32>, %w: memref<?x2xf16>, %o: memref<?x64xbf16>) {
  // expected-error @below {{'weights' element type must be f32 or match 'y' ('bf16'), got 'f16'}}
  tessel.moe_unpermute y(%y : memref<?x64xbf16>) row_positions(%p : memref<?x2xi32>) weights(%w : memref<?x2xf16>) out(%o : memref<?x64xbf16>)
  return
}

// -----

func.func @unpermute_weights_topk(%y: memref<?x64xbf16>, %p: memref<?x2xi32>, %w: memref<?x4xf32>, %o: memref<?x64xbf16>) {
  // expected-error @below {{'weights' dim 1 (topk) is 4 but 'row_positions' dim 1 is 2}}
  tessel.moe_unpermute y(%y : memref<?x64xbf16>) row_positions(%p : memref<?x2xi32>) weights(%w : memref<?x4xf32>) out(%o : memref<?x64xbf16>)
  return
}

// -----

func.func @unpermute_positions_type(%y: memref<?x64xbf16>, %p: memref<?x2xi64>, %w: memref<?x2xf32>, %o: memref<?x64xbf16>) {
  // expected-error @below {{'row_positions' must be a memref of i32, got 'i64'}}
  tessel.moe_unpermute y(%y : memref<?x64xbf16>) row_positions(%p : memref<?x2xi64>) weights(%w : memref<?x2xf32>) out(%o : memref<?x64xbf16>)
  return
}

// -----

func.func @unpermute_out_type(%y: memref<?x64xbf16>, %p: memref<?x2xi32>, %w: memref<?x2xf32>, %o: memref<?x64xf32>) {
  // expected-error @below {{'out' element type must match 'y' ('bf16'), got 'f32'}}
  tessel.moe_unpermute y(%y : memref<?x64xbf16>) row_positions(%p : memref<?x2xi32>) weights(%w : memref<?x2xf32>) out(%o : memref<?x64xf32>)
  return
}

// -----

func.func @unpermute_out_hidden_dynamic(%y: memref<?x64xbf16>, %p: memref<?x2xi32>, %w: memref<?x2xf32>, %o: memref<?x?xbf16>) {
  // expected-error @below {{'out' dim 1 (hidden) must be static}}
  tessel.moe_unpermute y(%y : memref<?x64xbf16>) row_positions(%p : memref<?x2xi32>) weights(%w : memref<?x2xf32>) out(%o : memref<?x?xbf16>)
  return
}

// -----

func.func @unpermute_tokens(%y: memref<?x64xbf16>, %p: memref<8x2xi32>, %w: memref<8x2xf32>, %o: memref<4x64xbf16>) {
  // expected-error @below {{'out' dim 0 (tokens) is 4 but 'row_positions' dim 0 is 8}}
  tessel.moe_unpermute y(%y : memref<?x64xbf16>) row_positions(%p : memref<8x2xi32>) weights(%w : memref<8x2xf32>) out(%o : memref<4x64xbf16>)
  return
}

// -----

func.func @histogram_zero_topk(%ids: memref<?x0xi32>, %n: memref<8xi32>, %g: memref<8xi32>) {
  // expected-error @below {{'topk_ids' dim 1 (topk) must be positive, got 0}}
  tessel.expert_histogram topk_ids(%ids : memref<?x0xi32>) counts(%n : memref<8xi32>) group_offsets(%g : memref<8xi32>)
  return
}

// -----

func.func @prefill_empty_cu_seqlens(%q: memref<?x4x64xf32>, %k: memref<?x4x64xf32>, %v: memref<?x4x64xf32>, %cu: memref<0xi32>, %o: memref<?x4x64xf32>, %scale: f32) {
  // expected-error @below {{'cu_seqlens' must have at least one entry}}
  tessel.prefill_attention q(%q : memref<?x4x64xf32>) k(%k : memref<?x4x64xf32>) v(%v : memref<?x4x64xf32>) cu_seqlens(%cu : memref<0xi32>) out(%o : memref<?x4x64xf32>) scale(%scale)
  return
}

// -----

func.func @unpermute_dynamic_topk(%y: memref<?x64xf32>, %p: memref<?x?xi32>, %w: memref<?x?xf32>, %o: memref<?x64xf32>) {
  // expected-error @below {{'row_positions' dim 1 (topk) must be static}}
  tessel.moe_unpermute y(%y : memref<?x64xf32>) row_positions(%p : memref<?x?xi32>) weights(%w : memref<?x?xf32>) out(%o : memref<?x64xf32>)
  return
}

// -----

func.func @mla_split_with_window(%q: memref<?x16x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x?x16x512xf32>, %l: memref<?x16x?xf32>, %s: index, %n: index, %scale: f32) {
  // expected-error @below {{the split form ('out' [P, B, H, L]) takes no window: partial p covers ceil(MB / P) blocks}}
  tessel.mla_decode q(%q : memref<?x16x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x?x16x512xf32>) lse(%l : memref<?x16x?xf32>) window(%s, %n) scale(%scale)
  return
}

// -----

func.func @mla_split_without_lse(%q: memref<?x16x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x?x16x512xf32>, %scale: f32) {
  // expected-error @below {{the split form ('out' [P, B, H, L]) needs 'lse' [P, H, B]: its partials are merged by it}}
  tessel.mla_decode q(%q : memref<?x16x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x?x16x512xf32>) scale(%scale)
  return
}

// -----

func.func @swiglu_odd_width(%h: memref<?x1023xbf16>, %a: memref<?x511xbf16>) {
  // expected-error @below {{'h' [R, 2I] must have an even, nonzero column count (gate then up), got 1023}}
  tessel.swiglu h(%h : memref<?x1023xbf16>) act(%a : memref<?x511xbf16>)
  return
}

// -----

func.func @swiglu_h_rank(%h: memref<?xbf16>, %a: memref<?x64xbf16>) {
  // expected-error @below {{'h' must be [R, 2I] (gate | up) or [2, R, I] (gate, up), got rank 1}}
  tessel.swiglu h(%h : memref<?xbf16>) act(%a : memref<?x64xbf16>)
  return
}

// -----

func.func @swiglu_three_parts(%h: memref<3x?x64xbf16>, %a: memref<?x64xbf16>) {
  // expected-error @below {{'h' dim 0 (gate and up) must be 2, got 3}}
  tessel.swiglu h(%h : memref<3x?x64xbf16>) act(%a : memref<?x64xbf16>)
  return
}

// -----

func.func @swiglu_empty_parts(%h: memref<2x?x0xbf16>, %a: memref<?x0xbf16>) {
  // expected-error @below {{'h' has an intermediate size of 0}}
  tessel.swiglu h(%h : memref<2x?x0xbf16>) act(%a : memref<?x0xbf16>)
  return
}

// -----

func.func @swiglu_act_width(%h: memref<?x128xbf16>, %a: memref<?x128xbf16>) {
  // expected-error @below {{'act' dim 1 (intermediate) must be 64, got 128}}
  tessel.swiglu h(%h : memref<?x128xbf16>) act(%a : memref<?x128xbf16>)
  return
}

// -----

func.func @swiglu_act_rows(%h: memref<2x5x64xbf16>, %a: memref<6x64xbf16>) {
  // expected-error @below {{'act' dim 0 (rows) is 6 but 'h' dim 1 is 5}}
  tessel.swiglu h(%h : memref<2x5x64xbf16>) act(%a : memref<6x64xbf16>)
  return
}

// -----

func.func @swiglu_backward_dh_type(%g: memref<?x64xbf16>, %h: memref<?x128xbf16>, %w: memref<?x2xf32>, %s: memref<?xi32>, %p: memref<?x2xi32>, %dh: memref<2x?x64xbf16>, %aw: memref<?x64xbf16>, %dw: memref<?x2xf32>) {
  // expected-error @below {{'dh' must have the type of 'h' ('memref<?x128xbf16>'), got 'memref<2x?x64xbf16>'}}
  tessel.swiglu_backward grad(%g : memref<?x64xbf16>) h(%h : memref<?x128xbf16>) topk_weights(%w : memref<?x2xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x2xi32>) dh(%dh : memref<2x?x64xbf16>) act_weighted(%aw : memref<?x64xbf16>) d_topk_weights(%dw : memref<?x2xf32>)
  return
}

// -----

func.func @swiglu_backward_grad_type(%g: memref<?x64xf16>, %h: memref<?x128xbf16>, %w: memref<?x2xf32>, %s: memref<?xi32>, %p: memref<?x2xi32>, %dh: memref<?x128xbf16>, %aw: memref<?x64xbf16>, %dw: memref<?x2xf32>) {
  // expected-error @below {{'grad' element type must match 'h' ('bf16'), got 'f16'}}
  tessel.swiglu_backward grad(%g : memref<?x64xf16>) h(%h : memref<?x128xbf16>) topk_weights(%w : memref<?x2xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x2xi32>) dh(%dh : memref<?x128xbf16>) act_weighted(%aw : memref<?x64xbf16>) d_topk_weights(%dw : memref<?x2xf32>)
  return
}

// -----

func.func @swiglu_backward_dweights_type(%g: memref<?x64xbf16>, %h: memref<?x128xbf16>, %w: memref<?x2xf32>, %s: memref<?xi32>, %p: memref<?x2xi32>, %dh: memref<?x128xbf16>, %aw: memref<?x64xbf16>, %dw: memref<?x2xbf16>) {
  // expected-error @below {{'d_topk_weights' must be a memref of f32, got 'bf16'}}
  tessel.swiglu_backward grad(%g : memref<?x64xbf16>) h(%h : memref<?x128xbf16>) topk_weights(%w : memref<?x2xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x2xi32>) dh(%dh : memref<?x128xbf16>) act_weighted(%aw : memref<?x64xbf16>) d_topk_weights(%dw : memref<?x2xbf16>)
  return
}

// -----

func.func @swiglu_backward_weights_topk(%g: memref<?x64xbf16>, %h: memref<?x128xbf16>, %w: memref<?x4xf32>, %s: memref<?xi32>, %p: memref<?x2xi32>, %dh: memref<?x128xbf16>, %aw: memref<?x64xbf16>, %dw: memref<?x2xf32>) {
  // expected-error @below {{'topk_weights' dim 1 (topk) is 4 but 'row_positions' dim 1 is 2}}
  tessel.swiglu_backward grad(%g : memref<?x64xbf16>) h(%h : memref<?x128xbf16>) topk_weights(%w : memref<?x4xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x2xi32>) dh(%dh : memref<?x128xbf16>) act_weighted(%aw : memref<?x64xbf16>) d_topk_weights(%dw : memref<?x2xf32>)
  return
}

// -----

func.func @swiglu_backward_sorted_rows(%g: memref<5x64xbf16>, %h: memref<5x128xbf16>, %w: memref<?x2xf32>, %s: memref<6xi32>, %p: memref<?x2xi32>, %dh: memref<5x128xbf16>, %aw: memref<5x64xbf16>, %dw: memref<?x2xf32>) {
  // expected-error @below {{'sorted_rows' dim 0 (rows) is 6 but 'h' dim 0 is 5}}
  tessel.swiglu_backward grad(%g : memref<5x64xbf16>) h(%h : memref<5x128xbf16>) topk_weights(%w : memref<?x2xf32>) sorted_rows(%s : memref<6xi32>) row_positions(%p : memref<?x2xi32>) dh(%dh : memref<5x128xbf16>) act_weighted(%aw : memref<5x64xbf16>) d_topk_weights(%dw : memref<?x2xf32>)
  return
}

// -----

func.func @swiglu_backward_rows_per_slot(%g: memref<?x64xbf16>, %h: memref<?x128xbf16>, %w: memref<3x2xf32>, %s: memref<5xi32>, %p: memref<3x2xi32>, %dh: memref<?x128xbf16>, %aw: memref<?x64xbf16>, %dw: memref<3x2xf32>) {
  // expected-error @below {{'sorted_rows' dim 0 (tokens x topk) must be 6, got 5}}
  tessel.swiglu_backward grad(%g : memref<?x64xbf16>) h(%h : memref<?x128xbf16>) topk_weights(%w : memref<3x2xf32>) sorted_rows(%s : memref<5xi32>) row_positions(%p : memref<3x2xi32>) dh(%dh : memref<?x128xbf16>) act_weighted(%aw : memref<?x64xbf16>) d_topk_weights(%dw : memref<3x2xf32>)
  return
}

// -----

func.func @gmm_rows_divisor(%a: memref<?x64xbf16>, %r: memref<?xi32>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{a_rows_divisor must be positive, got 0}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) a_rows(%r : memref<?xi32>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {trans_b, a_rows_divisor = 0}
  return
}

// -----

func.func @gmm_divisor_without_rows(%a: memref<?x64xbf16>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{a_rows_divisor is only allowed with 'a_rows'}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {trans_b, a_rows_divisor = 8}
  return
}

// -----

func.func @gmm_rows_type(%a: memref<?x64xbf16>, %r: memref<?xi64>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<?x32xbf16>) {
  // expected-error @below {{'a_rows' must be a memref of i32, got 'i64'}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) a_rows(%r : memref<?xi64>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<?x32xbf16>) {trans_b, a_rows_divisor = 8}
  return
}

// -----

func.func @gmm_rows_count(%a: memref<?x64xbf16>, %r: memref<12xi32>, %b: memref<8x32x64xbf16>, %g: memref<8xi32>, %c: memref<10x32xbf16>) {
  // expected-error @below {{'c' dim 0 (rows) is 10 but 'a_rows' dim 0 is 12}}
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) a_rows(%r : memref<12xi32>) b(%b : memref<8x32x64xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<10x32xbf16>) {trans_b}
  return
}

// -----

func.func @wgrad_divisor_without_rows(%a: memref<?x64xbf16>, %b: memref<?x32xbf16>, %g: memref<8xi32>, %c: memref<8x64x32xf32>) {
  // expected-error @below {{rows_divisor is only allowed with 'a_rows' or 'b_rows'}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x32xf32>) {rows_divisor = 8}
  return
}

// -----

func.func @wgrad_rows_divisor(%a: memref<?x64xbf16>, %r: memref<?xi32>, %b: memref<?x32xbf16>, %g: memref<8xi32>, %c: memref<8x64x32xf32>) {
  // expected-error @below {{rows_divisor must be positive, got -2}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) a_rows(%r : memref<?xi32>) b(%b : memref<?x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x32xf32>) {rows_divisor = -2}
  return
}

// -----

func.func @wgrad_rows_type(%a: memref<?x64xbf16>, %b: memref<?x32xbf16>, %r: memref<?x2xi32>, %g: memref<8xi32>, %c: memref<8x64x32xf32>) {
  // expected-error @below {{'b_rows' must have rank 1}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) b(%b : memref<?x32xbf16>) b_rows(%r : memref<?x2xi32>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x32xf32>) {rows_divisor = 8}
  return
}

// -----

func.func @wgrad_rows_count(%a: memref<?x64xbf16>, %r: memref<12xi32>, %b: memref<10x32xbf16>, %g: memref<8xi32>, %c: memref<8x64x32xf32>) {
  // expected-error @below {{'b' dim 0 (rows) is 10 but 'a_rows' dim 0 is 12}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xbf16>) a_rows(%r : memref<12xi32>) b(%b : memref<10x32xbf16>) group_offsets(%g : memref<8xi32>) c(%c : memref<8x64x32xf32>) {rows_divisor = 8}
  return
}
