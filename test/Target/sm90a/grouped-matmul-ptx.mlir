// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=" \
// RUN:   | FileCheck %s

// On sm_90a the MoE forward (stacked b, trans_b) runs the warp-specialised
// Hopper main loop: the tensor maps of a and b are 128-byte by-value
// parameters after the pointers and the shape symbol T; the producer
// releases registers and issues TMA copies completing on mbarriers; the
// consumers claim registers, wait on the stage's barrier and issue
// m64n256k16 wgmmas, keeping one group in flight; they stage C in shared
// memory and store it by TMA (c a third map), or, for a part holding
// another group's rows, by 16-byte copies. The dgrad (b [G, K, N])
// runs it too, b's tile copied as 4 MN-major boxes of 64 columns and read
// transposed (imm-trans-b 1); with N not a multiple of 64 it keeps the sm80
// main loop: mma.sync, no wgmma. The wgrad (ragged K) reads both operands
// MN-major (imm-trans-a and -b 1), zeroes the next group's rows of its
// last K-tile in shared memory, fences them into the async proxy and syncs
// the two consumer warpgroups (named barrier 1, 256 threads). It runs on a
// persistent grid: each block walks tiles from %ctaid.x in steps of
// %nctaid.x, and stores C by TMA from a swizzled shared buffer per consumer
// (c [G, M, N] a 3-D map; named barriers 2 and 3 order the buffer's uses).

// CHECK-LABEL: gpu.binary @gate_up
// CHECK-SAME:  chip = "sm_90a"
// CHECK-SAME:  .target sm_90a
// CHECK-SAME:  .param .u64 gate_up_param_4,
// CHECK-SAME:  .param .align 64 .b8 gate_up_param_5[128],
// CHECK-SAME:  .param .align 64 .b8 gate_up_param_6[128],
// CHECK-SAME:  .param .align 64 .b8 gate_up_param_7[128]
// CHECK-SAME:  .maxntid 384, 1, 1
// CHECK-SAME:  mbarrier.init.shared.b64
// CHECK-SAME:  fence.mbarrier_init.release.cluster
// CHECK-SAME:  setmaxnreg.inc.sync.aligned.u32 \09216;
// CHECK-SAME:  mbarrier.try_wait.parity.shared.b64
// CHECK-SAME:  wgmma.fence.sync.aligned
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{[^;]*}}, p, 1,  1, 0,  0;
// CHECK-SAME:  wgmma.commit_group.sync.aligned
// CHECK-SAME:  wgmma.wait_group.sync.aligned \091;
// CHECK-SAME:  mbarrier.arrive.shared.b64
// CHECK-SAME:  wgmma.wait_group.sync.aligned \090;
// CHECK-SAME:  cp.async.bulk.wait_group.read \090;
// CHECK-SAME:  cvt.rn.bf16x2.f32
// CHECK-SAME:  st.shared.b32
// CHECK-SAME:  fence.proxy.async.shared::cta;
// CHECK-SAME:  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// CHECK-SAME:  cp.async.bulk.commit_group;
// CHECK-SAME:  ld.shared.v4.b32
// CHECK-SAME:  st.global.v4.b32
// CHECK-SAME:  setmaxnreg.dec.sync.aligned.u32 \0972;
// CHECK-SAME:  elect.sync
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-SAME:  cp.async.bulk.wait_group \090;
// CHECK-NOT:   mma.sync

// CHECK-LABEL: gpu.binary @dgrad
// CHECK-SAME:  .target sm_90a
// CHECK-SAME:  .param .align 64 .b8 dgrad_param_7[128]
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{[^;]*}}, p, 1,  1, 0,  1;
// CHECK-NOT:   mma.sync
// CHECK-SAME:  cp.async.bulk.tensor.2d
// CHECK-SAME:  cp.async.bulk.tensor.2d
// CHECK-SAME:  cp.async.bulk.tensor.2d
// CHECK-SAME:  cp.async.bulk.tensor.2d
// CHECK-SAME:  cp.async.bulk.tensor.2d

// CHECK-LABEL: gpu.binary @dgrad_narrow
// CHECK-SAME:  .target sm_90a
// CHECK-NOT:   wgmma
// CHECK-SAME:  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// With b a pointer table the same main loop runs: A by TMA (the only
// tensor map parameter), B copied by the 128 producer threads with
// cp.async.cg in TMA's swizzled layout (whole 16 bytes: N and K are whole tiles here;
// each thread's copies completing on the stage's barrier (arrive.noinc);
// the elected lane waits for the stage and named barrier 4 releases the
// producer warpgroup; consumers fence the generic proxy's writes before
// their wgmmas.
// CHECK-LABEL: gpu.binary @gate_ptrs
// CHECK-SAME:  .param .u64 gate_ptrs_param_4,
// CHECK-SAME:  .param .align 64 .b8 gate_ptrs_param_5[128],
// CHECK-SAME:  .param .align 64 .b8 gate_ptrs_param_6[128]\0A)
// CHECK-SAME:  fence.proxy.async.shared::cta;
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK-SAME:  bar.sync \094, 128;
// CHECK-SAME:  cp.async.cg.shared.global [{{[^]]*}}], [{{[^]]*}}], 16, 16;
// CHECK-SAME:  cp.async.mbarrier.arrive.noinc.shared.b64
// CHECK-SAME:  mbarrier.try_wait.parity.shared.b64
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor.2d.shared::cluster.global
// CHECK-NOT:   mma.sync

// With gathered rows (a_rows: the MoE forward reading x through the
// sorted (token, slot) rows) the producer threads copy A instead: no
// tensor map for a (b's and c's only, after the five pointers and the
// shapes S and T), 8 cp.async.cg of 16 bytes a thread and K-tile, rows
// 16 apart (2048 bytes), their byte counts in registers (0 zero-fills a
// row outside the group or outside x); TMA still copies B.
// CHECK-LABEL: gpu.binary @gate_up_gathered
// CHECK-SAME:  .param .u64 gate_up_gathered_param_6,
// CHECK-SAME:  .param .align 64 .b8 gate_up_gathered_param_7[128],
// CHECK-SAME:  .param .align 64 .b8 gate_up_gathered_param_8[128]\0A)
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK-SAME:  bar.sync \094, 128;
// CHECK-SAME:  cp.async.cg.shared.global [[[DST:%rd[0-9]+]]], [{{[^]]*}}], 16, %r{{[0-9]+}};
// CHECK-SAME:  cp.async.cg.shared.global [[[DST]]+2048], [{{[^]]*}}], 16, %r{{[0-9]+}};
// CHECK-SAME:  cp.async.cg.shared.global [[[DST]]+12288], [{{[^]]*}}], 16, %r{{[0-9]+}};
// CHECK-SAME:  cp.async.mbarrier.arrive.noinc.shared.b64
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor.2d.shared::cluster.global
// CHECK-NOT:   cp.async.bulk.tensor.2d.shared::cluster.global
// CHECK-NOT:   mma.sync

// With act (the fused SwiGLU: w_gate_up's gate rows, then its up rows)
// each K-tile's B is two TMA boxes from one map, the gate rows and the up
// rows I further; the consumers store c's gate and up passes through c's
// map and act (ex2, an approximate reciprocal, rounded pairs) through a
// third map after b's and c's.
// CHECK-LABEL: gpu.binary @gate_up_swiglu
// CHECK-SAME:  .param .align 64 .b8 gate_up_swiglu_param_8[128],
// CHECK-SAME:  .param .align 64 .b8 gate_up_swiglu_param_9[128],
// CHECK-SAME:  .param .align 64 .b8 gate_up_swiglu_param_10[128]\0A)
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK-SAME:  ex2.approx.ftz.f32
// CHECK-SAME:  rcp.approx.f32
// CHECK-SAME:  cvt.rn.bf16x2.f32
// CHECK-SAME:  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [[[B:%rd[0-9]+]], {[[K:%r[0-9]+]], [[GATE:%r[0-9]+]]}], [[[FULL:%rd[0-9]+]]];
// CHECK-SAME:  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{{%rd[0-9]+}}], [[[B]], {[[K]], {{%r[0-9]+}}}], [[[FULL]]];
// CHECK-NOT:   mma.sync

// CHECK-LABEL: gpu.binary @wgrad
// CHECK-SAME:  .target sm_90a
// CHECK-SAME:  %ctaid.x;
// CHECK-SAME:  %nctaid.x;
// CHECK-SAME:  cp.async.bulk.wait_group.read \090;
// CHECK-SAME:  st.shared.v2.b32
// CHECK-SAME:  fence.proxy.async.shared::cta
// CHECK-SAME:  cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group
// CHECK-SAME:  cp.async.bulk.commit_group
// CHECK-SAME:  fence.proxy.async.shared::cta
// CHECK-SAME:  bar.sync \091, 256;
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{[^;]*}}, p, 1,  1, 1,  1;
// CHECK-SAME:  cp.async.bulk.wait_group \090;
// CHECK-NOT:   mma.sync

// The gate/up weight gradient reading x through the sorted rows
// (b_rows): b's K-tile rows are copied by the producer threads (16
// cp.async.cg a thread, byte counts in registers), a by TMA; maps for a
// and c only.
// CHECK-LABEL: gpu.binary @up_wgrad_gathered
// CHECK-SAME:  .param .u64 up_wgrad_gathered_param_6,
// CHECK-SAME:  .param .align 64 .b8 up_wgrad_gathered_param_7[128],
// CHECK-SAME:  .param .align 64 .b8 up_wgrad_gathered_param_8[128]\0A)
// CHECK-SAME:  wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{[^;]*}}, p, 1,  1, 1,  1;
// CHECK-SAME:  cp.async.cg.shared.global [{{[^]]*}}], [{{[^]]*}}], 16, %r{{[0-9]+}};
// CHECK-SAME:  cp.async.mbarrier.arrive.noinc.shared.b64
// CHECK-SAME:  mbarrier.arrive.expect_tx.shared.b64
// CHECK-SAME:  cp.async.bulk.tensor.2d.shared::cluster.global
// CHECK-SAME:  bar.sync \094, 128;
// CHECK-NOT:   mma.sync

// Reference MoE (H=2048, I=512, E=128): gate/up forward and its dgrad;
// a dgrad whose N (200) is no multiple of 64.
func.func @gate_up(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                   %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}
func.func @dgrad(%a: memref<?x1024xbf16>, %b: memref<128x1024x2048xbf16>,
                 %g: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x1024xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x2048xbf16>)
  return
}
func.func @dgrad_narrow(%a: memref<?x64xbf16>, %b: memref<8x64x200xbf16>,
                        %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>)
      b(%b : memref<8x64x200xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<?x200xbf16>)
  return
}
func.func @gate_ptrs(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
                     %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>)
      {trans_b, b_shape = array<i64: 512, 2048>}
  return
}
func.func @gate_up_gathered(%x: memref<?x2048xbf16>, %rows: memref<?xi32>,
                            %b: memref<128x1024x2048xbf16>,
                            %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%x : memref<?x2048xbf16>)
      a_rows(%rows : memref<?xi32>) b(%b : memref<128x1024x2048xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x1024xbf16>)
      {trans_b, a_rows_divisor = 8}
  return
}
func.func @gate_up_swiglu(%a: memref<?x2048xbf16>, %rows: memref<?xi32>,
                          %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
                          %c: memref<?x1024xbf16>, %act: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      a_rows(%rows : memref<?xi32>) b(%b : memref<128x1024x2048xbf16>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x1024xbf16>)
      act(%act : memref<?x512xbf16>) {a_rows_divisor = 8, trans_b}
  return
}
func.func @wgrad(%a: memref<?x1024xbf16>, %b: memref<?x2048xbf16>,
                 %g: memref<128xi32>, %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>)
      b(%b : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x1024x2048xf32>)
  return
}
func.func @up_wgrad_gathered(%dh: memref<?x1024xbf16>, %x: memref<?x2048xbf16>,
                             %rows: memref<?xi32>, %g: memref<128xi32>,
                             %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%dh : memref<?x1024xbf16>)
      b(%x : memref<?x2048xbf16>) b_rows(%rows : memref<?xi32>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<128x1024x2048xf32>)
      {rows_divisor = 8}
  return
}
