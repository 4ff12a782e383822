// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.942.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX942 < %t.942.s
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.950.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX950 < %t.950.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.942.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.950.s
// RUN: FileCheck %s --check-prefix=NOU16 < %t.942.s
// RUN: FileCheck %s --check-prefix=NOU16 < %t.950.s
// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s \
// RUN:   --tessel-opt tessel-opt --chips gfx942 --explain decode_nhd \
// RUN:   | FileCheck %s --check-prefix=LOOP
// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s \
// RUN:   --tessel-opt tessel-opt --chips gfx950 | FileCheck %s --check-prefix=LOOP

// The AMDGCN of paged decode on CDNA3/CDNA4 (not run on hardware here): the
// GQA heads are the rows of the chip's 16-row bf16 MFMA (16x16x16 on gfx942,
// 16x16x32 on gfx950), K/V tiles by 16-byte loads into an LDS double
// buffer (K by 16-byte LDS writes; NHD V transposed into a [D, tokens]
// tile by 2-byte writes), fragments by LDS vector reads (K-contiguous;
// 8 bytes per lane on gfx942, 16 on gfx950; no 16-bit reads, which NHD V
// took when it was staged token-major), softmax exponentials and the LSE
// logarithm as single v_exp_f32 / v_log_f32 instructions (no ocml calls),
// row reductions by cross-lane moves, out written with
// 16-byte stores, and no scratch. The shuffled V layout ([.., BS/8, D, 8])
// is read by 16-byte loads straight into its [D, tokens] tile.
//
// The tiles come by buffer loads from one window per cache block, whose
// block ids were loaded a tile ahead (PagedWindows.cpp): the main loop
// has no serialized s_waitcnt vmcnt(0) (the last column: 2 an iteration
// before, the block-table round trip and the selects that zeroed the
// chunks past the context). What vmcnt(0) is left waits, before a tile's
// first load, for the block ids loaded during the tile before.
// LOOP:        | decode_nhd | {{.*}} | 0 |{{$}}
// LOOP:        | decode_shuffled | {{.*}} | 0 |{{$}}
// LOOP-NOT:    global_load_dwordx4

// CHECK-LABEL: decode_nhd:
// CHECK-DAG:   buffer_load_dwordx4 {{.*}} offen
// CHECK-DAG:   ds_write_b128
// GFX942-DAG:  ds_read_b64
// GFX950-DAG:  ds_read_b128
// CHECK-DAG:   ds_write_b16
// CHECK-DAG:   s_barrier
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   v_log_f32
// CHECK-DAG:   v_max_f32
// CHECK-DAG:   global_store_dwordx4
// GFX942-DAG:  v_mfma_f32_16x16x16_bf16
// GFX950-DAG:  v_mfma_f32_16x16x32_bf16
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// CHECK-LABEL: decode_shuffled:
// CHECK:       buffer_load_dwordx4 {{.*}} offen
// CHECK:       .end_amdhsa_kernel
// CHECK:       .private_segment_fixed_size: 0

// NOU16-NOT:   ds_read_u16
// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: .uses_dynamic_stack: true
// NOSPILL-NOT: s_swappc
func.func @decode_nhd(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @decode_shuffled(%q: memref<?x32x128xbf16>, %kc: memref<?x8x16x16x8xbf16>, %vc: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>) v_cache(%vc : memref<?x8x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) layout(shuffled) scale(%scale)
  return
}
