// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.942.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX942 < %t.942.s
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.950.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX950 < %t.950.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.942.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.950.s
// RUN: FileCheck %s --check-prefix=MFMA < %t.942.s
// RUN: FileCheck %s --check-prefix=MFMA < %t.950.s
// RUN: FileCheck %s --check-prefix=NO16 < %t.942.s
// RUN: FileCheck %s --check-prefix=NO16 < %t.950.s
// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s \
// RUN:   --tessel-opt tessel-opt --explain mla | FileCheck %s --check-prefix=LOOP

// The AMDGCN of absorbed MLA decode on CDNA3/CDNA4 (not run on hardware
// here): the chip's 16-row bf16 MFMA, 576-wide rows by 16-byte buffer loads
// into LDS (the tile's part of its cache block as one window, its block id
// loaded a tile ahead: no serialized vmcnt(0) in the loop, 2 before), v_exp_f32/v_log_f32, four waves a block (one a SIMD), no MFMA
// repeated, no scratch and no spills: 34 MFMAs a wave and tile on both
// chips. gfx950 stages 64 tokens once (94 KB of LDS): each wave scores 16
// of them over all 576 dims (18 16x16x32 MFMAs) and takes 128 of O's
// columns (2 k-steps x 8 atoms over the 64 tokens). gfx942's 64 KB holds
// 32 rows of 576 once: two waves score each 16 tokens, each over half the
// dims (18 16x16x16 MFMAs), and add their parts through LDS; P V is again
// 2 x 8. (Before, gfx942's two waves both scored the same 16 tokens over
// all 576 dims: 52 MFMAs a wave, 36 of them repeated by the other.)
// V, the staged rows' first 512 columns token-major, is read for P V on
// gfx942 by one 16-byte LDS read per k value for 8 atoms whose columns
// interleave (TargetInfo::loadInterleavedFragments), transposed in
// registers; on gfx950 by transposing reads (ds_read_b64_tr_b16, no
// v_perm). No 2-byte LDS read (one per element before: 64 a tile on
// gfx942, 128 on gfx950). P goes through LDS (the warps split O's 512
// columns, each needs every token's P): on gfx950 as P^T, a lane's 4
// accumulators one 8-byte write, read back by transposing reads; on
// gfx942, which has no transposing read, by 4 2-byte writes an iteration
// (P^T would take 2-byte reads; a register transpose of a lane quad, more
// VALU than the 3 writes it saves). Row maxima within a 16-lane row by DPP
// (v_max_f32_dpp), across warps through LDS. A warp's Q fragments are read
// once, before the loop (register-staged targets): the loop reads only
// K's 16-byte fragments (18 on gfx950, where Q's were 18 more). O is
// rescaled out of line, where a row's maximum grew (18 v_pk_mul_f32 an
// iteration before, 2 now).

// CHECK-LABEL: mla:
// CHECK-DAG:   buffer_load_dwordx4 {{.*}} offen
// CHECK-DAG:   ds_write_b128
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   v_log_f32
// GFX942-DAG:  v_mfma_f32_16x16x16_bf16
// GFX950-DAG:  v_mfma_f32_16x16x32_bf16
// CHECK:       .end_amdhsa_kernel
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0

// MFMA-COUNT-34: v_mfma_f32_16x16x
// MFMA-NOT:      v_mfma
// MFMA:          .end_amdhsa_kernel

// LOOP:        ### gfx942
// LOOP:        | mla | {{.*}} | 0 | 4 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        gfx942 mla: main-loop instructions
// LOOP-NOT:    {{[0-9][0-9] v_pk_mul_f32}}
// LOOP:        v_max_f32_dpp
// LOOP-NOT:    {{[0-9][0-9] v_pk_mul_f32}}
// LOOP:        ### gfx950
// LOOP:        | mla | {{.*}} | 0 | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        gfx950 mla: main-loop instructions
// LOOP-NOT:    {{v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}36 ds_read_b64_tr_b16
// LOOP-NOT:    {{v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}18 ds_read_b128
// LOOP-NOT:    {{v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}16 v_max_f32_dpp
// LOOP-NOT:    {{v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}1 ds_write_b64
// LOOP-NOT:    ds_write_b16

// NO16-LABEL:  mla:
// NO16-NOT:    ds_read_u16
// NO16-NOT:    ds_read_i16
// NO16:        .end_amdhsa_kernel

// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: s_swappc
func.func @mla(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x128x512xbf16>, %lse: memref<128x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x128x512xbf16>) lse(%lse : memref<128x?xf32>) scale(%scale)
  return
}
