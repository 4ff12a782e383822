// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=" \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
// RUN: tessel-opt %s --tessel-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=PACKED

// On sm_90a, paged_attention with cu_seqlens (extend's cached context)
// runs the Hopper flash-attention kernel of PrefillSm90.cpp with K/V rows
// copied page by page: the NHD caches as 3-D tensor maps {D, Hkv, NB * BS},
// a box of 16 rows per 16-token page, 8 pages of a 128-key tile for each
// of K's and V's two 64-column chunks (32 copies per tile, Q's 2 besides).
// The CDNA pre-shuffled layout runs it too, a page's rows kept in their
// layout, unswizzled: K as a 3-D map {BS * 8, D/8, NB * Hkv}, a box of 8
// rows (16 a tile), each V page one contiguous bulk copy (8 a tile); K's
// descriptors have core matrices 128 bytes apart along the head dim (LBO
// 8 << 16) and 2048 along the keys (SBO 128 << 32), V's 2048 along the
// keys (LBO 128 << 16) and 128 along the value columns (SBO 8 << 32).
//
// A block takes the 4 query heads of one KV head (GQA 32/8), packed into
// the 128 tile rows as 32 tokens x 4 heads: q's box is {64, 4 heads, 32
// tokens}, the caches' {64, 1, 16 rows}; the grid is 32-token tiles (plus
// 16 tiles of slack) x 8 KV heads x the splits.

// PACKED-LABEL: gpu.func @context_nhd(
// PACKED:       tessel.grid = [array<i64: 0, 1, 512, 32>, array<i64: -1, 1, 8, 1>, array<i64: 4, 1, 0, 1>]
// PACKED-SAME:  tessel.tensor_maps = [array<i64: 0, 3, 3, 2, 3, 1, 2, 0, 1, 64, 4, 32>, array<i64: 1, 3, 3, 3, 4, 2, 3, 0, 2, 64, 1, 16>, array<i64: 2, 3, 3, 3, 4, 2, 3, 0, 2, 64, 1, 16>]
// PACKED-LABEL: gpu.func @context_shuffled(
// PACKED-SAME:  tessel.tensor_maps = [array<i64: 0, 3, 3, 2, 3, 1, 2, 0, 1, 64, 4, 32>, array<i64: 1, 0, 3, 3, 5, 2, 3, 0, 2, 64, 16, 1>]

// CHECK-LABEL: .visible .entry context_nhd(
// CHECK-NOT:   mma.sync
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1,  1, 0,  0;
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// CHECK-COUNT-34: cp.async.bulk.tensor.3d
// CHECK-NOT:   cp.async.bulk.tensor
// CHECK-NOT:   mma.sync

// CHECK-LABEL: .visible .entry context_shuffled(
// CHECK-NOT:   mma.sync
// CHECK-DAG:   or.b32 {{.*}}, 524288;
// CHECK-DAG:   or.b64 {{.*}}, 549755813888;
// CHECK-DAG:   or.b32 {{.*}}, 8388608;
// CHECK-DAG:   or.b64 {{.*}}, 34359738368;
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1,  1, 0,  0;
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 0;
// Q's two boxes, then per page K's two boxes and V's bulk copy.
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK-COUNT-2: cp.async.bulk.tensor.3d
// CHECK:       cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}], %r{{[0-9]+}}, [%rd{{[0-9]+}}+{{[0-9]+}}];
// CHECK-NOT:   cp.async.bulk
// CHECK-NOT:   mma.sync

func.func @context_nhd(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>,
                       %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>,
                       %cu: memref<?xi32>, %cl: memref<?xi32>,
                       %out: memref<?x?x32x128xf32>, %lse: memref<?x32x?xf32>,
                       %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>)
      cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>)
      out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>)
      layout(nhd) scale(%scale)
  return
}
func.func @context_shuffled(%q: memref<?x32x128xbf16>,
                            %kc: memref<?x8x16x16x8xbf16>,
                            %vc: memref<?x8x2x128x8xbf16>,
                            %bt: memref<?x?xi32>, %cu: memref<?xi32>,
                            %cl: memref<?xi32>,
                            %out: memref<?x?x32x128xf32>,
                            %lse: memref<?x32x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kc : memref<?x8x16x16x8xbf16>)
      v_cache(%vc : memref<?x8x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>)
      cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>)
      out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>)
      layout(shuffled) scale(%scale)
  return
}
