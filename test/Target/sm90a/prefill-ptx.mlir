// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=" \
// RUN:   | FileCheck %s

// On sm_90a, prefill_attention runs the warp-specialised flash-attention
// kernel (PrefillSm90.cpp): q, k and v reach it through three 3-D tensor
// maps (128-byte by-value parameters after the shape symbol T); the
// producer releases registers and copies Q, K and V tiles by TMA onto
// mbarriers; the consumers claim registers, compute S = Q K^T on wgmma from
// shared memory (m64n128k16, both K-major) and O += P V on wgmma with P in
// registers ({4 words}) and V transposed (imm-trans-b 1). At head dim 128
// the producer keeps 24 registers and the consumers take 240; the ring has
// 3 stages, and the consumers overlap P V with the next
// softmax (two groups in flight, wait_group 1) and take turns through
// named barriers (bar.sync / bar.arrive with the consumer's barrier id).
// S's first MMA starts the product (scale-d 0: no accumulators zeroed).
// A tile's wgmma descriptors are made before the consumer's turn, each a
// 32-bit add on the low word beside the constant high word (folded into
// 64-bit adds, ptxas carries into the high word). A tile that needs no
// mask folds the scale into exp2's argument (fma, then ex2). No mma.sync
// anywhere.

// CHECK-LABEL: gpu.binary @causal_gqa
// CHECK-SAME:  .target sm_90a
// CHECK-SAME:  .param .f32 causal_gqa_param_6,
// CHECK-SAME:  .param .align 64 .b8 causal_gqa_param_9[128],
// CHECK-SAME:  .param .align 64 .b8 causal_gqa_param_10[128],
// CHECK-SAME:  .param .align 64 .b8 causal_gqa_param_11[128]
// CHECK-SAME:  .maxntid 384, 1, 1
// CHECK-SAME:  mbarrier.init.shared.b64
// CHECK-SAME:  fence.mbarrier_init.release.cluster
// CHECK-SAME:  setmaxnreg.inc.sync.aligned.u32 \09240;
// CHECK-SAME:  bar.arrive 2, 256;
// CHECK-SAME:  mbarrier.try_wait.parity.shared.b64
// CHECK-NOT:   add.s64 {{[^;]*}}, 4611686
// CHECK-SAME:  add.s32 \09%r{{[0-9]+}}, %r{{[0-9]+}}, 1030;\0A\09cvt.u64.u32 \09%rd{{[0-9]+}}, %r{{[0-9]+}};\0A\09or.b64 \09%rd{{[0-9]+}}, %rd{{[0-9]+}}, 4611686293305294848;
// CHECK-SAME:  bar.sync \09%r{{[0-9]+}}, 256;
// CHECK-SAME:  wgmma.fence.sync.aligned
// CHECK-SAME:  setp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{[^;]*}}, p, 1,  1, 0,  0;
// CHECK-SAME:  wgmma.commit_group.sync.aligned
// CHECK-SAME:  bar.arrive %r{{[0-9]+}}, 256;
// CHECK-SAME:  fma.rn.f32
// CHECK-SAME:  ex2.approx.ftz.f32
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{[{][^}]*[}]}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// CHECK-SAME:  wgmma.wait_group.sync.aligned \091;
// CHECK-SAME:  mbarrier.arrive.shared.b64
// CHECK-SAME:  setmaxnreg.dec.sync.aligned.u32 \0924;
// CHECK-SAME:  elect.sync
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-NOT:   mma.sync
// CHECK-SAME:  ">]

// Head dim 256: 64-key tiles, 2 stages with K and V released apart,
// overlapped like head dim 128 (P V on m64n256 in flight during the next
// softmax: wait_group 1; turns); the consumers take 232 registers, the
// producer 40.
// CHECK-LABEL: gpu.binary @head_dim_256
// CHECK-SAME:  setmaxnreg.inc.sync.aligned.u32 \09232;
// CHECK-SAME:  bar.arrive 2, 256;
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{[{][^}]*[}]}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// CHECK-SAME:  wgmma.wait_group.sync.aligned \091;
// CHECK-SAME:  setmaxnreg.dec.sync.aligned.u32 \0940;
// CHECK-NOT:   mma.sync
// CHECK-SAME:  ">]

// MLA's qk 192 / v 128 in f16, f32 out (extend's new tokens): 2 stages
// fit, a stage's K and V arriving and released on mbarriers of their own
// (8 for the ring, then Q's 2), so the consumers overlap P V with the next
// softmax (wait_group 1) as at head dim 128; the producer copies Q (3
// boxes of 64 columns), then per stage waits for K's release and copies K
// (3 boxes), then waits for V's and copies V (2). O is stored as pairs of
// f32.
// CHECK-LABEL: gpu.binary @mla_f16_f32_out
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}+{{[0-9]+}}]
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}],
// CHECK-SAME:  mbarrier.init.shared.b64 \09[%rd{{[0-9]+}}],
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// CHECK-SAME:  wgmma.wait_group.sync.aligned \091;
// CHECK-SAME:  st.global.v2.b32
// CHECK-SAME:  setmaxnreg.dec.sync.aligned.u32 \0924;
// CHECK-SAME:  mbarrier.try_wait.parity
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor
// CHECK-SAME:  cp.async.bulk.tensor
// CHECK-SAME:  cp.async.bulk.tensor
// CHECK-NOT:   cp.async.bulk.tensor
// CHECK-SAME:  mbarrier.try_wait.parity
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor
// CHECK-SAME:  cp.async.bulk.tensor
// CHECK-SAME:  cp.async.bulk.tensor
// CHECK-NOT:   cp.async.bulk.tensor
// CHECK-SAME:  mbarrier.try_wait.parity
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor
// CHECK-SAME:  cp.async.bulk.tensor
// CHECK-NOT:   cp.async.bulk.tensor
// CHECK-NOT:   mma.sync
// CHECK-SAME:  ">]

func.func @causal_gqa(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>,
                      %v: memref<?x8x128xbf16>, %cu: memref<?xi32>,
                      %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>,
                      %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>)
      k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>)
      lse(%lse : memref<32x?xf32>) scale(%scale) {causal}
  return
}
func.func @head_dim_256(%q: memref<?x16x256xbf16>, %k: memref<?x2x256xbf16>,
                        %v: memref<?x2x256xbf16>, %cu: memref<?xi32>,
                        %out: memref<?x16x256xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x16x256xbf16>)
      k(%k : memref<?x2x256xbf16>) v(%v : memref<?x2x256xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x16x256xbf16>)
      scale(%scale)
  return
}
func.func @mla_f16_f32_out(%q: memref<?x16x192xf16>, %k: memref<?x16x192xf16>,
                           %v: memref<?x16x128xf16>, %cu: memref<?xi32>,
                           %out: memref<?x16x128xf32>, %lse: memref<16x?xf32>,
                           %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x16x192xf16>)
      k(%k : memref<?x16x192xf16>) v(%v : memref<?x16x128xf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x16x128xf32>)
      lse(%lse : memref<16x?xf32>) scale(%scale) {causal}
  return
}
