// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=" \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm \
// RUN:   | FileCheck %s

// The Hopper wgrad stores C by TMA in boxes of 64 rows x 128 bytes, at
// most 4 boxes a pass from a consumer's shared buffer. With N = 192 a tile
// is 192 columns: bf16 C is 3 boxes of 64 columns in one pass; f32 C is 6
// boxes of 32 columns in two passes (4, then 2), each behind a wait for
// the previous pass's stores to have read the buffer. Every column is
// stored.

// CHECK-LABEL: .visible .entry wgrad_bf16_n192(
// CHECK-COUNT-3: cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group
// CHECK-NOT:     cp.async.bulk.tensor.3d.global.shared::cta
// CHECK:         ret;
// CHECK-LABEL: .visible .entry wgrad_f32_n192(
// CHECK:         cp.async.bulk.wait_group.read 0;
// CHECK-COUNT-4: cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group
// CHECK:         cp.async.bulk.commit_group;
// CHECK:         cp.async.bulk.wait_group.read 0;
// CHECK-COUNT-2: cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group
// CHECK-NOT:     cp.async.bulk.tensor.3d.global.shared::cta
// CHECK:         ret;
func.func @wgrad_bf16_n192(%a: memref<?x128xbf16>, %b: memref<?x192xbf16>,
                           %g: memref<8xi32>, %c: memref<8x128x192xbf16>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x128xbf16>)
      b(%b : memref<?x192xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<8x128x192xbf16>)
  return
}
func.func @wgrad_f32_n192(%a: memref<?x128xbf16>, %b: memref<?x192xbf16>,
                          %g: memref<8xi32>, %c: memref<8x128x192xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x128xbf16>)
      b(%b : memref<?x192xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<8x128x192xf32>)
  return
}
