// RUN: tessel-opt %s --tessel-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=GRID
// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=" \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

// The unified mode's kernel on sm_90a: the Hopper paged prefill of
// PrefillSm90.cpp, causal. A block takes the 4 query heads of one KV head
// packed into its 128 rows (32 tokens x 4 heads). The whole form runs on a
// persistent grid, 16 blocks (512 / 32: the 32-token tile stays the grid's
// divisor, for the dispatcher) x 8 KV heads, one per SM; the split form's
// grid is 32-token tiles plus 16 of slack x 8 KV heads x the splits. wgmma
// and the TMA page copies as in paged-prefill-ptx.mlir; each row's keys end
// at its query's position (a signed comparison against the key).

// GRID-LABEL: gpu.func @unified(
// GRID:       tessel.grid = [array<i64: -1, 1, 512, 32>, array<i64: -1, 1, 8, 1>, array<i64: -1, 1, 1, 1>]
// GRID-LABEL: gpu.func @unified_split(
// GRID:       tessel.grid = [array<i64: 0, 1, 512, 32>, array<i64: -1, 1, 8, 1>, array<i64: 4, 1, 0, 1>]

// CHECK-LABEL: .visible .entry unified(
// CHECK-NOT:   mma.sync
// CHECK-DAG:   cp.async.bulk.tensor.3d
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-DAG:   setp.le.s64
// CHECK-LABEL: .visible .entry unified_split(
// CHECK:       wgmma.mma_async

func.func @unified(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) causal layout(nhd) scale(%scale)
  return
}
func.func @unified_split(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x?x32x128xf32>, %lse: memref<?x32x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>) causal layout(nhd) scale(%scale)
  return
}
