// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s --chips gfx942 \
// RUN:   --explain prefill --tessel-opt tessel-opt > %t
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --check-prefix=NOT < %t

// The prefill's K/V loops (transposed scores): one for the tiles that need
// no mask, then one for those that do, inside the loop over query tiles. The
// report's main loop is the first (the query-tile loop holds loops with
// MFMAs; of the two, equal in MFMAs, the smaller): no mask compare or per-
// score select in it. Each iteration stores the next tile with no branch
// around the store (a branch made the back end sink the tile's loads into
// it and wait for them there): K's 16-byte writes and V's 4-byte transposed
// ones (3 ds_write2_b32 and 2 ds_write_b32: 8 a lane), none of 2 bytes
// (before: 8 ds_write_b16 and 16 ds_write_b16_d16_hi a tile, V's and P's).
// Since 2026-12-05 13:00 a block is 8 waves over two 64-key stages (4
// waves over one before, 8-byte V writes of 4 keys, twice the chunks a
// lane): one barrier a tile, a lane's 2 K and 2 V chunks.
// No maximum on the usual tile: one compare of a lane's sum of
// probabilities decides the unlikely rescale, which scores the tile again
// (before 2026-12-05, v_max3_f32 trees and an exchange of maxima a tile).

// CHECK:     gfx942 prefill: main-loop instructions by mnemonic
// CHECK-DAG: {{^ +}}64 v_mfma_f32_32x32x8_bf16
// CHECK-DAG: {{^ +}}4 buffer_load_dwordx4
// CHECK-DAG: {{^ +}}2 ds_write_b128
// CHECK-DAG: {{^ +}}3 ds_write2_b32
// CHECK-DAG: {{^ +}}2 ds_write_b32
// CHECK-DAG: {{^ +}}1 s_barrier
// CHECK-DAG: {{^ +}}1 v_cmp_nge_f32_e32
// NOT-NOT:   v_max3_f32
// NOT-NOT:   ds_bpermute_b32
// NOT-NOT:   ds_write_b16
// NOT-NOT:   v_cmp_le_i32
// NOT-NOT:   {{^ +[0-9][0-9]+ v_cndmask}}
func.func @prefill(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>,
                   %v: memref<?x8x128xbf16>, %cu: memref<?xi32>,
                   %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>)
      k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>)
      scale(%scale) {causal}
  return
}
