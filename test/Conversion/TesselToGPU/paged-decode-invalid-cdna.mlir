// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx942 -split-input-file -verify-diagnostics
// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx950 -split-input-file -verify-diagnostics 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BLOCK

// The GQA groups CDNA's decode takes: up to 32 heads a KV head on
// transposed scores (the 32x32 MFMA's columns); up to 16 (the 16x16 atom's
// rows) where it cannot take them (an NHD value head whose 16-byte chunks
// do not divide a wave).

// 32 heads a KV head: transposed scores, 4 waves.
// BLOCK-LABEL: gpu.func @decode_group_32
// BLOCK-SAME:  known_block_size = array<i32: 256, 1, 1>
func.func @decode_group_32(%q: memref<?x32x128xbf16>, %kc: memref<?x16x1x128xbf16>, %vc: memref<?x16x1x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x1x128xbf16>) v_cache(%vc : memref<?x16x1x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

func.func @decode_group_64(%q: memref<?x64x128xbf16>, %kc: memref<?x16x1x128xbf16>, %vc: memref<?x16x1x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x64x128xbf16>, %scale: f32) {
  // expected-error @below {{GPU template: 64 query heads per KV head; the decode kernel takes at most 32 (the MMA columns of its transposed scores) on gfx9}}
  tessel.decode_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x16x1x128xbf16>) v_cache(%vc : memref<?x16x1x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x64x128xbf16>) layout(nhd) scale(%scale)
  return
}

// -----

// A 192-wide NHD value head: the staged template, 16 rows.
func.func @decode_group_32_value_192(%q: memref<?x32x128xbf16>, %kc: memref<?x16x1x128xbf16>, %vc: memref<?x16x1x192xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %o: memref<?x32x192xbf16>, %scale: f32) {
  // expected-error @below {{without transposed scores, which take an NHD value head of 64, 128, 256 or 512, not 192}}
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x1x128xbf16>) v_cache(%vc : memref<?x16x1x192xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%o : memref<?x32x192xbf16>) layout(nhd) scale(%scale)
  return
}
