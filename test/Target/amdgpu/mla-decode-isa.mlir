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
// here), on transposed scores (MlaDecodeTransposed.cpp): each of a block's
// four waves (one a SIMD) owns T tokens of a tile (16 on gfx942, 32 on
// gfx950, the MFMA's K) and computes S^T = K Q^T for them over all 576
// dims, then O^T += V^T P^T over all 512 latent dims with P^T the B operand
// as the accumulators stand: 68 MFMAs a wave and tile on both chips (36 +
// 32 16x16x16 on gfx942, 36 + 32 16x16x32 for twice the tokens on gfx950),
// none repeated by another wave. K comes straight from the cache into the
// fragments by 16-byte global loads, issued a tile ahead; V, the same
// rows' first 512 dims, goes through the wave's own LDS slice (16-byte
// writes) and comes back transposed: by ds_read_b64_tr_b16 on gfx950, by a
// 16-byte read a token for 8 interleaved atoms on gfx942. So nothing in the
// loop is a workgroup barrier (the waves merge their states once, after
// it), no P goes through LDS, and no LDS access is 2 bytes. Column maxima
// over the lane quarters by ds_swizzle/ds_bpermute (gfx942) or
// v_permlane16/32_swap (gfx950); O is rescaled out of line, where a
// maximum grew. Before (the template's loop): 4-5 barriers an iteration, P
// through LDS, MFMA share 33% / 34%.

// CHECK-LABEL: mla:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   ds_write_b128
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   v_log_f32
// GFX942-DAG:  v_mfma_f32_16x16x16_bf16
// GFX950-DAG:  v_mfma_f32_16x16x32_bf16
// GFX950-DAG:  ds_read_b64_tr_b16
// GFX950-DAG:  v_permlane32_swap
// CHECK:       .end_amdhsa_kernel
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0

// MFMA-COUNT-68: v_mfma_f32_16x16x
// MFMA-NOT:      v_mfma
// MFMA:          .end_amdhsa_kernel

// The report's row: MFMA share at least 50% (gfx942) / 40% (gfx950), then
// barriers, vmcnt(0), lgkmcnt(0), flat loads, 2-byte LDS accesses and
// serialized vmcnt(0) an iteration.
// LOOP:        ### gfx942
// LOOP:        | mla | {{.*}} | {{5[0-9]}}% | 0 | {{[0-9]+}} | {{[0-9]+}} | 0 | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        gfx942 mla: main-loop instructions
// LOOP-NOT:    {{s_barrier|ds_write_b16|ds_read_u16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}68 v_mfma_f32_16x16x16_bf16
// LOOP-NOT:    {{s_barrier|ds_write_b16|ds_read_u16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}18 global_load_dwordx4
// LOOP-NOT:    {{s_barrier|ds_write_b16|ds_read_u16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}16 ds_write_b128
// LOOP-NOT:    {{s_barrier|ds_write_b16|ds_read_u16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}16 ds_read_b128
// LOOP-NOT:    {{s_barrier|ds_write_b16|ds_read_u16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        ### gfx950
// LOOP:        | mla | {{.*}} | {{4[0-9]}}% | 0 | {{[0-9]+}} | {{[0-9]+}} | 0 | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        gfx950 mla: main-loop instructions
// LOOP-NOT:    {{s_barrier|v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}68 v_mfma_f32_16x16x32_bf16
// LOOP-NOT:    {{s_barrier|v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}64 ds_read_b64_tr_b16
// LOOP-NOT:    {{s_barrier|v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}36 global_load_dwordx4
// LOOP-NOT:    {{s_barrier|v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}32 ds_write_b128
// LOOP-NOT:    {{s_barrier|v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}
// LOOP:        {{^ +}}18 ds_read_b128
// LOOP-NOT:    {{s_barrier|v_perm_b32|ds_write_b16|[0-9][0-9] v_pk_mul_f32}}

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
