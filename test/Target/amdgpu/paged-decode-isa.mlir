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

// The AMDGCN of paged decode on CDNA3/CDNA4 (not run on hardware here), on
// transposed scores (PagedDecodeTransposed.cpp): each of a block's 4 waves
// computes S^T = K Q^T for its 32 tokens of a tile on the 32x32 MFMA
// (32x32x8 on gfx942, 32x32x16 on gfx950) and O^T += V^T P^T with P^T
// straight from the accumulators (no P through LDS, no 2-byte LDS access).
// K, Q and the shuffled V ([.., BS/8, D, 8]) come by 16-byte global loads
// straight into fragments, issued together before the compute
// (s_sched_barrier); NHD V goes through the wave's own LDS slice,
// transposed in registers (8-byte writes, 16-byte reads, no s_barrier in
// the loop). No K/V tile sits in LDS, so both chips run 2 waves a SIMD
// (gfx942's NHD slices: 32 KB a block); no scratch.
//
// The block ids of a tile are loaded the tile before: the main loop has no
// serialized s_waitcnt vmcnt(0) (the next to last column). What vmcnt(0)
// is left waits, at the head of a tile, for those ids; the block ids go
// through per-lane loads, not scalar ones that would be waited for at
// once.
// LOOP:        | decode_nhd | {{[0-9]+}}/{{[0-9]+}}/{{[0-9]+}} | 32768 | 2 | {{.*}} | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        | decode_shuffled | {{[0-9]+}}/{{[0-9]+}}/{{[0-9]+}} | 17152 | 2 | {{.*}} | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP-NOT:    s_barrier
// LOOP-NOT:    flat_load

// CHECK-LABEL: decode_nhd:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   ds_write_b64
// CHECK-DAG:   ds_read_b128
// CHECK-DAG:   v_perm_b32
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   v_log_f32
// CHECK-DAG:   global_store_dwordx2
// GFX942-DAG:  v_mfma_f32_32x32x8_bf16
// GFX950-DAG:  v_mfma_f32_32x32x16_bf16
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// CHECK-LABEL: decode_shuffled:
// CHECK:       global_load_dwordx4
// CHECK:       .end_amdhsa_kernel
// CHECK:       .private_segment_fixed_size: 0

// NOU16-NOT:   {{ds_read_u16|ds_write_b16}}
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
