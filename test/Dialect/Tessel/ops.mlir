// RUN: tessel-opt %s | tessel-opt | FileCheck %s

// Round trip of every tessel op in every form: optional operands present and
// absent, both KV cache layouts, windows, stacked and pointer-table B.

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @prefill
// CHECK:       tessel.prefill_attention q(%{{.*}} : memref<?x32x128xbf16>) k(%{{.*}} : memref<?x8x128xbf16>) v(%{{.*}} : memref<?x8x128xbf16>) cu_seqlens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xbf16>) scale(%{{.*}}) {causal}
// CHECK:       tessel.prefill_attention q(%{{.*}} : memref<?x32x128xbf16>) k(%{{.*}} : memref<?x8x128xbf16>) v(%{{.*}} : memref<?x8x128xbf16>) cu_seqlens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xf32>) lse(%{{.*}} : memref<32x?xf32>) scale(%{{.*}})
func.func @prefill(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>,
                   %v: memref<?x8x128xbf16>, %cu: memref<?xi32>,
                   %o: memref<?x32x128xbf16>, %o32: memref<?x32x128xf32>,
                   %lse: memref<32x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>)
      k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%o : memref<?x32x128xbf16>)
      scale(%scale) {causal}
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>)
      k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%o32 : memref<?x32x128xf32>)
      lse(%lse : memref<32x?xf32>) scale(%scale)
  return
}

// MLA non-absorbed prefill: q/k head dim 192, v/out head dim 128.
// CHECK-LABEL: func.func @prefill_mla
// CHECK:       tessel.prefill_attention q(%{{.*}} : memref<?x16x192xf16>) k(%{{.*}} : memref<?x16x192xf16>) v(%{{.*}} : memref<?x16x128xf16>) cu_seqlens(%{{.*}} : memref<5xi32>) out(%{{.*}} : memref<?x16x128xf16>) scale(%{{.*}}) {causal}
func.func @prefill_mla(%q: memref<?x16x192xf16>, %k: memref<?x16x192xf16>,
                       %v: memref<?x16x128xf16>, %cu: memref<5xi32>,
                       %o: memref<?x16x128xf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x16x192xf16>)
      k(%k : memref<?x16x192xf16>) v(%v : memref<?x16x128xf16>)
      cu_seqlens(%cu : memref<5xi32>) out(%o : memref<?x16x128xf16>)
      scale(%scale) {causal}
  return
}

// CHECK-LABEL: func.func @decode
// CHECK:       tessel.decode_attention q(%{{.*}} : memref<?x32x128xbf16>) k_cache(%{{.*}} : memref<?x16x8x128xbf16>) v_cache(%{{.*}} : memref<?x16x8x128xbf16>) block_table(%{{.*}} : memref<?x?xi32>) seq_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xbf16>) layout({{ ?}}nhd) scale(%{{.*}})
// CHECK:       tessel.decode_attention q(%{{.*}} : memref<?x32x128xbf16>) k_cache(%{{.*}} : memref<?x8x16x16x8xbf16>) v_cache(%{{.*}} : memref<?x8x2x128x8xbf16>) block_table(%{{.*}} : memref<?x?xi32>) seq_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xbf16>) lse(%{{.*}} : memref<32x?xf32>) layout({{ ?}}shuffled) scale(%{{.*}})
func.func @decode(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>,
                  %vc: memref<?x16x8x128xbf16>,
                  %kcs: memref<?x8x16x16x8xbf16>,
                  %vcs: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>,
                  %sl: memref<?xi32>, %o: memref<?x32x128xbf16>,
                  %lse: memref<32x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>)
      out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  tessel.decode_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kcs : memref<?x8x16x16x8xbf16>)
      v_cache(%vcs : memref<?x8x2x128x8xbf16>)
      block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>)
      out(%o : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>)
      layout(shuffled) scale(%scale)
  return
}

// CHECK-LABEL: func.func @extend
// CHECK:       tessel.extend_attention q(%{{.*}} : memref<?x32x128xbf16>) k(%{{.*}} : memref<?x8x128xbf16>) v(%{{.*}} : memref<?x8x128xbf16>) k_cache(%{{.*}} : memref<?x16x8x128xbf16>) v_cache(%{{.*}} : memref<?x16x8x128xbf16>) block_table(%{{.*}} : memref<?x?xi32>) cu_seqlens(%{{.*}} : memref<?xi32>) context_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xbf16>) layout({{ ?}}nhd) scale(%{{.*}})
// CHECK:       tessel.extend_attention q(%{{.*}} : memref<?x32x128xbf16>) k(%{{.*}} : memref<?x8x128xbf16>) v(%{{.*}} : memref<?x8x128xbf16>) k_cache(%{{.*}} : memref<?x8x16x16x8xbf16>) v_cache(%{{.*}} : memref<?x8x2x128x8xbf16>) block_table(%{{.*}} : memref<?x?xi32>) cu_seqlens(%{{.*}} : memref<?xi32>) context_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xf32>) lse(%{{.*}} : memref<32x?xf32>) layout({{ ?}}shuffled) scale(%{{.*}})
func.func @extend(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>,
                  %v: memref<?x8x128xbf16>, %kc: memref<?x16x8x128xbf16>,
                  %vc: memref<?x16x8x128xbf16>,
                  %kcs: memref<?x8x16x16x8xbf16>,
                  %vcs: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>,
                  %cu: memref<?xi32>, %cl: memref<?xi32>,
                  %o: memref<?x32x128xbf16>, %o32: memref<?x32x128xf32>,
                  %lse: memref<32x?xf32>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x32x128xbf16>)
      k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>)
      context_lens(%cl : memref<?xi32>) out(%o : memref<?x32x128xbf16>)
      layout(nhd) scale(%scale)
  tessel.extend_attention q(%q : memref<?x32x128xbf16>)
      k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      k_cache(%kcs : memref<?x8x16x16x8xbf16>)
      v_cache(%vcs : memref<?x8x2x128x8xbf16>)
      block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>)
      context_lens(%cl : memref<?xi32>) out(%o32 : memref<?x32x128xf32>)
      lse(%lse : memref<32x?xf32>) layout(shuffled) scale(%scale)
  return
}

// CHECK-LABEL: func.func @paged
// CHECK:       tessel.paged_attention q(%{{.*}} : memref<?x32x128xbf16>) k_cache(%{{.*}} : memref<?x16x8x128xbf16>) v_cache(%{{.*}} : memref<?x16x8x128xbf16>) block_table(%{{.*}} : memref<?x?xi32>) context_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xf32>) lse(%{{.*}} : memref<32x?xf32>) window(%{{.*}}, %{{.*}}) layout({{ ?}}nhd) scale(%{{.*}})
// CHECK:       tessel.paged_attention q(%{{.*}} : memref<?x32x128xbf16>) k_cache(%{{.*}} : memref<?x16x8x128xbf16>) v_cache(%{{.*}} : memref<?x16x8x128xbf16>) block_table(%{{.*}} : memref<?x?xi32>) context_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xbf16>) layout({{ ?}}nhd) scale(%{{.*}})
// CHECK:       tessel.paged_attention q(%{{.*}} : memref<?x32x128xbf16>) k_cache(%{{.*}} : memref<?x8x16x16x8xbf16>) v_cache(%{{.*}} : memref<?x8x2x128x8xbf16>) block_table(%{{.*}} : memref<?x?xi32>) cu_seqlens(%{{.*}} : memref<?xi32>) context_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xf32>) lse(%{{.*}} : memref<32x?xf32>) window(%{{.*}}, %{{.*}}) layout({{ ?}}shuffled) scale(%{{.*}})
// CHECK:       tessel.paged_attention q(%{{.*}} : memref<?x32x128xbf16>) k_cache(%{{.*}} : memref<?x8x16x16x8xbf16>) v_cache(%{{.*}} : memref<?x8x2x128x8xbf16>) block_table(%{{.*}} : memref<?x?xi32>) cu_seqlens(%{{.*}} : memref<?xi32>) context_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xf32>) layout({{ ?}}shuffled) scale(%{{.*}})
// CHECK:       tessel.paged_attention q(%{{.*}} : memref<?x32x128xbf16>) k_cache(%{{.*}} : memref<?x16x8x128xbf16>) v_cache(%{{.*}} : memref<?x16x8x128xbf16>) block_table(%{{.*}} : memref<?x?xi32>) cu_seqlens(%{{.*}} : memref<?xi32>) context_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x32x128xbf16>) causal layout({{ ?}}nhd) scale(%{{.*}})
func.func @paged(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>,
                 %vc: memref<?x16x8x128xbf16>,
                 %kcs: memref<?x8x16x16x8xbf16>,
                 %vcs: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>,
                 %cu: memref<?xi32>, %cl: memref<?xi32>,
                 %o: memref<?x32x128xbf16>, %o32: memref<?x32x128xf32>,
                 %lse: memref<32x?xf32>, %start: index, %len: index, %scale: f32) {
  // Split-KV decode partial: one query per request, a window, f32 partials.
  tessel.paged_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>)
      out(%o32 : memref<?x32x128xf32>) lse(%lse : memref<32x?xf32>)
      window(%start, %len) layout(nhd) scale(%scale)
  tessel.paged_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>)
      out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  // Extend context chunk: ragged queries.
  tessel.paged_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kcs : memref<?x8x16x16x8xbf16>)
      v_cache(%vcs : memref<?x8x2x128x8xbf16>)
      block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>)
      context_lens(%cl : memref<?xi32>) out(%o32 : memref<?x32x128xf32>)
      lse(%lse : memref<32x?xf32>) window(%start, %len) layout(shuffled)
      scale(%scale)
  tessel.paged_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kcs : memref<?x8x16x16x8xbf16>)
      v_cache(%vcs : memref<?x8x2x128x8xbf16>)
      block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>)
      context_lens(%cl : memref<?xi32>) out(%o32 : memref<?x32x128xf32>)
      layout(shuffled) scale(%scale)
  // The unified mode's kernel: causal over each request's sequence.
  tessel.paged_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>)
      context_lens(%cl : memref<?xi32>) out(%o : memref<?x32x128xbf16>)
      causal layout(nhd) scale(%scale)
  return
}

// CHECK-LABEL: func.func @reshape_and_cache
// CHECK:       tessel.reshape_and_cache k(%{{.*}} : memref<?x8x128xbf16>) v(%{{.*}} : memref<?x8x128xbf16>) k_cache(%{{.*}} : memref<?x16x8x128xbf16>) v_cache(%{{.*}} : memref<?x16x8x128xbf16>) slot_mapping(%{{.*}} : memref<?xi32>) layout({{ ?}}nhd)
// CHECK:       tessel.reshape_and_cache k(%{{.*}} : memref<?x8x128xbf16>) v(%{{.*}} : memref<?x8x128xbf16>) k_cache(%{{.*}} : memref<?x8x16x16x8xbf16>) v_cache(%{{.*}} : memref<?x8x2x128x8xbf16>) slot_mapping(%{{.*}} : memref<?xi32>) layout({{ ?}}shuffled)
func.func @reshape_and_cache(%k: memref<?x8x128xbf16>,
                             %v: memref<?x8x128xbf16>,
                             %kc: memref<?x16x8x128xbf16>,
                             %vc: memref<?x16x8x128xbf16>,
                             %kcs: memref<?x8x16x16x8xbf16>,
                             %vcs: memref<?x8x2x128x8xbf16>,
                             %s: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      slot_mapping(%s : memref<?xi32>) layout(nhd)
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kcs : memref<?x8x16x16x8xbf16>)
      v_cache(%vcs : memref<?x8x2x128x8xbf16>)
      slot_mapping(%s : memref<?xi32>) layout(shuffled)
  return
}

//===----------------------------------------------------------------------===//
// MLA
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @mla_decode
// CHECK:       tessel.mla_decode q(%{{.*}} : memref<?x128x576xbf16>) kv_cache(%{{.*}} : memref<?x16x576xbf16>) block_table(%{{.*}} : memref<?x?xi32>) seq_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x128x512xbf16>) scale(%{{.*}})
// CHECK:       tessel.mla_decode q(%{{.*}} : memref<?x128x576xbf16>) kv_cache(%{{.*}} : memref<?x16x576xbf16>) block_table(%{{.*}} : memref<?x?xi32>) seq_lens(%{{.*}} : memref<?xi32>) out(%{{.*}} : memref<?x128x512xf32>) lse(%{{.*}} : memref<128x?xf32>) window(%{{.*}}, %{{.*}}) scale(%{{.*}})
func.func @mla_decode(%q: memref<?x128x576xbf16>, %c: memref<?x16x576xbf16>,
                      %bt: memref<?x?xi32>, %sl: memref<?xi32>,
                      %o: memref<?x128x512xbf16>,
                      %o32: memref<?x128x512xf32>, %lse: memref<128x?xf32>,
                      %start: index, %len: index, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>)
      kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%o : memref<?x128x512xbf16>)
      scale(%scale)
  tessel.mla_decode q(%q : memref<?x128x576xbf16>)
      kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%o32 : memref<?x128x512xf32>)
      lse(%lse : memref<128x?xf32>) window(%start, %len)
      scale(%scale)
  return
}

//===----------------------------------------------------------------------===//
// LSE merge
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @lse_merge
// CHECK:       tessel.lse_merge a(%{{.*}} : memref<?x32x128xf32>, %{{.*}} : memref<32x?xf32>) b(%{{.*}} : memref<?x32x128xf32>, %{{.*}} : memref<32x?xf32>) out(%{{.*}} : memref<?x32x128xbf16>){{$}}
// CHECK:       tessel.lse_merge a(%[[OA:.*]] : memref<?x32x128xf32>, %[[LA:.*]] : memref<32x?xf32>) b(%{{.*}} : memref<?x32x128xf32>, %{{.*}} : memref<32x?xf32>) out(%[[OA]] : memref<?x32x128xf32>) lse_out(%[[LA]] : memref<32x?xf32>)
func.func @lse_merge(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>,
                     %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>,
                     %o: memref<?x32x128xbf16>) {
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>)
      b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>)
      out(%o : memref<?x32x128xbf16>)
  // In place.
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>)
      b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>)
      out(%oa : memref<?x32x128xf32>) lse_out(%la : memref<32x?xf32>)
  return
}

// CHECK-LABEL: func.func @lse_merge_n
// CHECK:       tessel.lse_merge_n partials(%{{.*}} : memref<?x?x32x128xf32>, %{{.*}} : memref<?x32x?xf32>) out(%{{.*}} : memref<?x32x128xbf16>){{$}}
// CHECK:       tessel.lse_merge_n partials(%{{.*}} : memref<4x?x32x128xbf16>, %{{.*}} : memref<4x32x?xf32>) out(%{{.*}} : memref<?x32x128xbf16>) lse_out(%{{.*}} : memref<32x?xf32>)
func.func @lse_merge_n(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xf32>,
                       %p4: memref<4x?x32x128xbf16>,
                       %pl4: memref<4x32x?xf32>, %o: memref<?x32x128xbf16>,
                       %lo: memref<32x?xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>,
                              %pl : memref<?x32x?xf32>)
      out(%o : memref<?x32x128xbf16>)
  tessel.lse_merge_n partials(%p4 : memref<4x?x32x128xbf16>,
                              %pl4 : memref<4x32x?xf32>)
      out(%o : memref<?x32x128xbf16>) lse_out(%lo : memref<32x?xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Grouped matmul
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @grouped_matmul
// CHECK:       tessel.grouped_matmul a(%{{.*}} : memref<?x2048xbf16>) b(%{{.*}} : memref<128x512x2048xbf16>) group_offsets(%{{.*}} : memref<128xi32>) c(%{{.*}} : memref<?x512xbf16>) {trans_b}
// CHECK:       tessel.grouped_matmul a(%{{.*}} : memref<?x2048xbf16>) b(%{{.*}} : memref<128x2048x512xbf16>) group_offsets(%{{.*}} : memref<128xi32>) c(%{{.*}} : memref<?x512xf32>){{$}}
// CHECK:       tessel.grouped_matmul a(%{{.*}} : memref<?x2048xbf16>) b(%{{.*}} : memref<128xi64>) group_offsets(%{{.*}} : memref<128xi32>) c(%{{.*}} : memref<?x512xbf16>) {b_shape = array<i64: 512, 2048>, trans_b}
// CHECK:       tessel.grouped_matmul a(%{{.*}} : memref<?x2048xbf16>) b(%{{.*}} : memref<?xi64>) group_offsets(%{{.*}} : memref<?xi32>) c(%{{.*}} : memref<?x512xbf16>) {b_shape = array<i64: 2048, 512>}
// CHECK:       tessel.grouped_matmul a(%{{.*}} : memref<?x2048xbf16>) a_rows(%{{.*}} : memref<?xi32>) b(%{{.*}} : memref<128x512x2048xbf16>) group_offsets(%{{.*}} : memref<128xi32>) c(%{{.*}} : memref<?x512xbf16>) {a_rows_divisor = 8 : i64, trans_b}
func.func @grouped_matmul(%a: memref<?x2048xbf16>,
                          %bt: memref<128x512x2048xbf16>,
                          %bn: memref<128x2048x512xbf16>,
                          %table: memref<128xi64>, %dtable: memref<?xi64>,
                          %g: memref<128xi32>, %dg: memref<?xi32>,
                          %c: memref<?x512xbf16>, %c32: memref<?x512xf32>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%bt : memref<128x512x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x512xbf16>) {trans_b}
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%bn : memref<128x2048x512xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c32 : memref<?x512xf32>)
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%table : memref<128xi64>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x512xbf16>) {trans_b, b_shape = array<i64: 512, 2048>}
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%dtable : memref<?xi64>) group_offsets(%dg : memref<?xi32>)
      c(%c : memref<?x512xbf16>) {b_shape = array<i64: 2048, 512>}
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      a_rows(%dg : memref<?xi32>) b(%bt : memref<128x512x2048xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>)
      {trans_b, a_rows_divisor = 8}
  return
}

// CHECK-LABEL: func.func @grouped_matmul_wgrad
// CHECK:       tessel.grouped_matmul_wgrad a(%{{.*}} : memref<?x512xbf16>) b(%{{.*}} : memref<?x2048xbf16>) group_offsets(%{{.*}} : memref<128xi32>) c(%{{.*}} : memref<128x512x2048xf32>)
// CHECK:       tessel.grouped_matmul_wgrad a(%{{.*}} : memref<?x64xf16>) b(%{{.*}} : memref<?x32xf16>) group_offsets(%{{.*}} : memref<?xi32>) c(%{{.*}} : memref<?x64x32xf16>)
// CHECK:       tessel.grouped_matmul_wgrad a(%{{.*}} : memref<?x512xbf16>) b(%{{.*}} : memref<?x2048xbf16>) b_rows(%{{.*}} : memref<?xi32>) group_offsets(%{{.*}} : memref<128xi32>) c(%{{.*}} : memref<128x512x2048xf32>) {rows_divisor = 8 : i64}
func.func @grouped_matmul_wgrad(%dy: memref<?x512xbf16>,
                                %x: memref<?x2048xbf16>,
                                %g: memref<128xi32>,
                                %dw: memref<128x512x2048xf32>,
                                %a: memref<?x64xf16>, %b: memref<?x32xf16>,
                                %dg: memref<?xi32>, %c: memref<?x64x32xf16>) {
  tessel.grouped_matmul_wgrad a(%dy : memref<?x512xbf16>)
      b(%x : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%dw : memref<128x512x2048xf32>)
  tessel.grouped_matmul_wgrad a(%a : memref<?x64xf16>) b(%b : memref<?x32xf16>)
      group_offsets(%dg : memref<?xi32>) c(%c : memref<?x64x32xf16>)
  tessel.grouped_matmul_wgrad a(%dy : memref<?x512xbf16>)
      b(%x : memref<?x2048xbf16>) b_rows(%dg : memref<?xi32>)
      group_offsets(%g : memref<128xi32>) c(%dw : memref<128x512x2048xf32>)
      {rows_divisor = 8}
  return
}

//===----------------------------------------------------------------------===//
// MoE glue
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @moe
// CHECK:       tessel.expert_histogram topk_ids(%{{.*}} : memref<?x8xi32>) counts(%{{.*}} : memref<128xi32>) group_offsets(%[[G:.*]] : memref<128xi32>)
// CHECK:       tessel.expert_sort topk_ids(%{{.*}} : memref<?x8xi32>) group_offsets(%[[G]] : memref<128xi32>) sorted_rows(%[[S:.*]] : memref<?xi32>) row_positions(%[[P:.*]] : memref<?x8xi32>)
// CHECK:       tessel.moe_permute x(%{{.*}} : memref<?x2048xbf16>) sorted_rows(%[[S]] : memref<?xi32>) out(%{{.*}} : memref<?x2048xbf16>) {topk = 8 : i64}
// CHECK:       tessel.moe_unpermute y(%{{.*}} : memref<?x2048xbf16>) row_positions(%[[P]] : memref<?x8xi32>) weights(%{{.*}} : memref<?x8xf32>) out(%{{.*}} : memref<?x2048xbf16>)
// CHECK:       tessel.moe_unpermute y(%{{.*}} : memref<?x2048xbf16>) row_positions(%[[P]] : memref<?x8xi32>) weights(%{{.*}} : memref<?x8xbf16>) out(%{{.*}} : memref<?x2048xbf16>)
func.func @moe(%ids: memref<?x8xi32>, %n: memref<128xi32>,
               %g: memref<128xi32>, %s: memref<?xi32>, %p: memref<?x8xi32>,
               %x: memref<?x2048xbf16>, %xp: memref<?x2048xbf16>,
               %y: memref<?x2048xbf16>, %w: memref<?x8xf32>,
               %wb: memref<?x8xbf16>, %o: memref<?x2048xbf16>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>)
      counts(%n : memref<128xi32>) group_offsets(%g : memref<128xi32>)
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
      group_offsets(%g : memref<128xi32>)
      sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>)
  tessel.moe_permute x(%x : memref<?x2048xbf16>)
      sorted_rows(%s : memref<?xi32>) out(%xp : memref<?x2048xbf16>)
      {topk = 8 : i64}
  tessel.moe_unpermute y(%y : memref<?x2048xbf16>)
      row_positions(%p : memref<?x8xi32>) weights(%w : memref<?x8xf32>)
      out(%o : memref<?x2048xbf16>)
  tessel.moe_unpermute y(%y : memref<?x2048xbf16>)
      row_positions(%p : memref<?x8xi32>) weights(%wb : memref<?x8xbf16>)
      out(%o : memref<?x2048xbf16>)
  return
}

// Static token counts: sorted_rows has exactly T * topk entries.
// CHECK-LABEL: func.func @moe_static
// CHECK:       tessel.expert_sort topk_ids(%{{.*}} : memref<16x2xi32>) group_offsets(%{{.*}} : memref<4xi32>) sorted_rows(%{{.*}} : memref<32xi32>) row_positions(%{{.*}} : memref<16x2xi32>)
func.func @moe_static(%ids: memref<16x2xi32>, %g: memref<4xi32>,
                      %s: memref<32xi32>, %p: memref<16x2xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<16x2xi32>)
      group_offsets(%g : memref<4xi32>)
      sorted_rows(%s : memref<32xi32>) row_positions(%p : memref<16x2xi32>)
  return
}

// CHECK-LABEL: func.func @swiglu
// CHECK:       tessel.swiglu h(%{{.*}} : memref<?x1024xbf16>) act(%{{.*}} : memref<?x512xbf16>)
// CHECK:       tessel.swiglu h(%{{.*}} : memref<2x?x512xbf16>) act(%{{.*}} : memref<?x512xbf16>)
// CHECK:       tessel.swiglu_backward grad(%{{.*}} : memref<?x512xbf16>) h(%{{.*}} : memref<?x1024xbf16>) topk_weights(%{{.*}} : memref<?x8xf32>) sorted_rows(%{{.*}} : memref<?xi32>) row_positions(%{{.*}} : memref<?x8xi32>) dh(%{{.*}} : memref<?x1024xbf16>) act_weighted(%{{.*}} : memref<?x512xbf16>) d_topk_weights(%{{.*}} : memref<?x8xf32>)
// CHECK:       tessel.swiglu_backward grad(%{{.*}} : memref<?x512xbf16>) h(%{{.*}} : memref<2x?x512xbf16>) topk_weights(%{{.*}} : memref<?x8xbf16>)
func.func @swiglu(%h: memref<?x1024xbf16>, %h2: memref<2x?x512xbf16>,
                  %a: memref<?x512xbf16>, %w: memref<?x8xf32>,
                  %wb: memref<?x8xbf16>, %s: memref<?xi32>,
                  %p: memref<?x8xi32>, %dh: memref<?x1024xbf16>,
                  %dh2: memref<2x?x512xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu h(%h : memref<?x1024xbf16>) act(%a : memref<?x512xbf16>)
  tessel.swiglu h(%h2 : memref<2x?x512xbf16>) act(%a : memref<?x512xbf16>)
  tessel.swiglu_backward grad(%a : memref<?x512xbf16>)
      h(%h : memref<?x1024xbf16>) topk_weights(%w : memref<?x8xf32>)
      sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>)
      dh(%dh : memref<?x1024xbf16>) act_weighted(%a : memref<?x512xbf16>)
      d_topk_weights(%dw : memref<?x8xf32>)
  tessel.swiglu_backward grad(%a : memref<?x512xbf16>)
      h(%h2 : memref<2x?x512xbf16>) topk_weights(%wb : memref<?x8xbf16>)
      sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>)
      dh(%dh2 : memref<2x?x512xbf16>) act_weighted(%a : memref<?x512xbf16>)
      d_topk_weights(%dw : memref<?x8xf32>)
  return
}
