// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=" \
// RUN:   | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s

// On sm_90a, mla_decode runs the warp-specialised kernel of
// MlaDecodeSm90.cpp: Q [64 heads, 576] by a 3-D tensor map, the latent
// rows page by page by a 2-D one (both 128-byte by-value parameters); S =
// Q K^T on m64n64k16 wgmmas from shared memory; consumer 0's half of O
// from P in registers ({4 words}, V transposed: m64n256k16 ... 1, 1, 1),
// consumer 1's half from P in shared memory (both operands by descriptor,
// V transposed); P handed over through shared memory, fenced into the
// async proxy, with named barriers 2 (P ready) and 3 (P consumed). No
// mma.sync.

// CHECK-LABEL: .visible .entry mla_h128(
// CHECK:       .param .align 64 .b8 mla_h128_param_{{[0-9]+}}[128],
// CHECK-NEXT:  .param .align 64 .b8 mla_h128_param_{{[0-9]+}}[128]
// CHECK-NEXT:  )
// CHECK-NEXT:  .maxntid 384, 1, 1
// CHECK-NOT:   mma.sync
// CHECK-DAG:   setmaxnreg.inc.sync.aligned.u32 232;
// CHECK-DAG:   setmaxnreg.dec.sync.aligned.u32 40;
// CHECK-DAG:   cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-DAG:   cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1,  1, 0,  0;
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// CHECK-DAG:   wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, p, 1,  1, 0,  1;
// CHECK-DAG:   fence.proxy.async.shared::cta
// CHECK-DAG:   bar.arrive 2, 256;
// CHECK-DAG:   bar.sync 2, 256;
// CHECK-DAG:   bar.arrive 3, 256;
// CHECK-DAG:   bar.sync 3, 256;
// CHECK-NOT:   mma.sync

// 16-token pages: four boxes of 16 rows per chunk of a 64-token tile.
// CHECK-LABEL: .visible .entry mla_h8_bs16(
// CHECK-NOT:   mma.sync
// CHECK-COUNT-36: cp.async.bulk.tensor.2d
// CHECK-NOT:   cp.async.bulk.tensor.2d

func.func @mla_h128(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>,
                    %bt: memref<?x?xi32>, %sl: memref<?xi32>,
                    %out: memref<?x128x512xbf16>, %lse: memref<128x?xf32>,
                    %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>)
      kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%out : memref<?x128x512xbf16>)
      lse(%lse : memref<128x?xf32>) scale(%scale)
  return
}
func.func @mla_h8_bs16(%q: memref<?x8x576xbf16>, %c: memref<?x16x576xbf16>,
                       %bt: memref<?x?xi32>, %sl: memref<?xi32>,
                       %out: memref<?x?x8x512xf32>, %lse: memref<?x8x?xf32>,
                       %scale: f32) {
  tessel.mla_decode q(%q : memref<?x8x576xbf16>)
      kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%out : memref<?x?x8x512xf32>)
      lse(%lse : memref<?x8x?xf32>) scale(%scale)
  return
}
