// RUN: tessel-opt %s --tessel-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=GRID
// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_80 cubin-arch=" \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

// The unified mode's kernel on the sm80 template (paged_attention causal,
// with cu_seqlens): a block takes the 4 query heads of one KV head (GQA
// 32/8) packed into its 64 rows as 16 tokens x 4 heads, so the grid is
// 16-token tiles plus 64 tiles of slack (a batch of decodes is a partial
// tile each) x 8 KV heads (x the splits). Each row's keys end at its
// query's position: token + (the sequence length - the request's query
// end), a signed comparison.

// GRID-LABEL: gpu.func @unified(
// GRID:       tessel.grid = [array<i64: 0, 1, 1024, 16>, array<i64: -1, 1, 8, 1>, array<i64: -1, 1, 1, 1>]
// GRID-LABEL: gpu.func @unified_split(
// GRID:       tessel.grid = [array<i64: 0, 1, 1024, 16>, array<i64: -1, 1, 8, 1>, array<i64: 4, 1, 0, 1>]

// CHECK-LABEL: .visible .entry unified(
// CHECK:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK:       setp.le.s64
// CHECK-LABEL: .visible .entry unified_split(
// CHECK:       mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

func.func @unified(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) causal layout(nhd) scale(%scale)
  return
}
func.func @unified_split(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x?x32x128xf32>, %lse: memref<?x32x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>) causal layout(nhd) scale(%scale)
  return
}
