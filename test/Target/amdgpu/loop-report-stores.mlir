// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s --chips gfx942 \
// RUN:   --explain prefill --tessel-opt tessel-opt | FileCheck %s

// The prefill's K/V loop branches back to its head from two places: after
// the MMAs when there is no next tile, and from the out-of-line block that
// stores the next tile into LDS. The report's loop ends at the last branch
// back, so those stores count: K's 16-byte writes and V's 2-byte
// transposed ones (before 2026-12-02 15:55 the loop ended at the first
// branch and showed only P's 2-byte writes, 8 ds_write_b16_d16_hi).

// CHECK:     gfx942 prefill: main-loop instructions by mnemonic
// CHECK-DAG: {{^ +}}32 v_mfma_f32_16x16x16_bf16
// CHECK-DAG: {{^ +}}2 ds_write_b128
// CHECK-DAG: {{^ +}}8 ds_write_b16{{$}}
// CHECK-DAG: {{^ +}}16 ds_write_b16_d16_hi

func.func @prefill(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>,
                   %v: memref<?x8x128xbf16>, %cu: memref<?xi32>,
                   %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>)
      k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>)
      scale(%scale) {causal}
  return
}
