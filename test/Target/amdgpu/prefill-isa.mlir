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
// RUN: FileCheck %s --check-prefix=NOCANON < %t.942.s
// RUN: FileCheck %s --check-prefix=NOCANON < %t.950.s
// RUN: FileCheck %s --check-prefix=BUFFER < %t.942.s
// RUN: FileCheck %s --check-prefix=LDSLOAD < %t.950.s
// RUN: FileCheck %s --check-prefix=QWAIT942 < %t.942.s
// RUN: FileCheck %s --check-prefix=QWAIT950 < %t.950.s
// RUN: FileCheck %s --check-prefixes=LAZY,LAZY942 < %t.942.s
// RUN: FileCheck %s --check-prefixes=LAZY,LAZY950 < %t.950.s
// RUN: FileCheck %s --check-prefix=SWAPMAX < %t.950.s
// RUN: FileCheck %s --check-prefix=M0SHARE < %t.950.s

// The AMDGCN of causal prefill on CDNA3/CDNA4 (not run on hardware here),
// on transposed scores: each wave computes S^T = K Q^T for 32 queries with
// the chip's 32x32 bf16 MFMA (32x32x8 / 32x32x16) and O^T += V^T P^T with
// P^T straight from the S^T accumulators (no P through LDS, no 2-byte LDS
// write or read). Q's B fragments come by 8- / 16-byte global loads once a
// query tile, K/V tiles by 16-byte buffer loads from a window per tile that
// ends with its last key (a resource in SGPRs, the lane's offset in a
// VGPR, soffset 0); on gfx942 K goes to LDS by 16-byte writes and V
// transposed by 4-byte writes of 2 keys (register-transposed by v_perm;
// 8-byte writes of 4 keys with 4-wave blocks, before 2026-12-05 13:00),
// both chunk-major so that fragments are vector reads at immediate
// offsets; on gfx950 the buffer loads put K and V straight into LDS, and
// V^T's fragments are transposing reads (ds_read_b64_tr_b16). A lane's scores
// are all of its query: the row maximum is the lane's own but for one
// exchange with the lane 32 away (ds_bpermute on gfx942,
// v_permlane32_swap on gfx950), no DPP row reduction in the K/V loops (the
// four DPP moves are the request scan's). Scores go through packed FMAs
// into v_exp_f32; gfx950 packs P by v_cvt_pk_bf16_f32; O leaves as 8-byte
// runs of 4 dims. v_log_f32 (no ocml calls; the grid-stride loop computes
// its stride from T rather than asking for the grid size, which would need
// the ROCm device library), no scratch.

// gfx950's exchange across the half-waves is one v_permlane32_swap of the
// lane's maximum with a copy of it, whose two results the next instruction
// takes the maximum of (no compare and select of the partner's half).
// SWAPMAX-LABEL: prefill:
// SWAPMAX:       v_permlane32_swap_b32_e32 [[A:v[0-9]+]], [[B:v[0-9]+]]
// SWAPMAX-NEXT:  v_max_f32_e32 {{v[0-9]+}}, [[A]], [[B]]

// CHECK-LABEL: prefill:
// CHECK-DAG:   buffer_load_dwordx4
// GFX942-DAG:  ds_write_b128
// GFX942-DAG:  ds_write2_b32
// GFX942-DAG:  v_perm_b32
// GFX950-DAG:  ds_read_b64_tr_b16
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   v_log_f32
// CHECK-DAG:   v_pk_fma_f32
// CHECK-DAG:   global_store_dwordx2
// GFX942-DAG:  global_load_dwordx2
// GFX942-DAG:  ds_read2st64_b64
// GFX942-DAG:  ds_bpermute_b32
// GFX942-DAG:  v_mfma_f32_32x32x8_bf16
// GFX950-DAG:  global_load_dwordx4
// GFX950-DAG:  ds_read_b128
// GFX950-DAG:  v_permlane32_swap_b32
// GFX950-DAG:  v_cvt_pk_bf16_f32
// GFX950-DAG:  v_mfma_f32_32x32x16_bf16
// CHECK:       .end_amdhsa_kernel
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// BUFFER-LABEL: prefill:
// BUFFER:       buffer_load_dwordx4 v[{{[0-9]+:[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen
// BUFFER:       .end_amdhsa_kernel

// gfx950: K/V tiles by loads to LDS (M0 the wave's first slot), no LDS
// write and no v_perm anywhere in the kernel; a tile's loads are waited
// for (vmcnt(0)) before the barrier that publishes it, the next tile's
// issued right after it, and the back end does not wait for those before
// the tile's first fragment read (the alias scope of
// tessel-loads-to-shared-scopes: without it a vmcnt(0) came between).
// LDSLOAD-LABEL: prefill:
// LDSLOAD-NOT:   {{ds_write|v_perm_b32}}
// LDSLOAD:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen lds
// LDSLOAD-NOT:   {{ds_write|v_perm_b32}}
// LDSLOAD:       s_waitcnt vmcnt(0)
// LDSLOAD-NEXT:  s_barrier
// LDSLOAD-NEXT:  buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen lds
// LDSLOAD-NOT:   s_waitcnt vmcnt
// LDSLOAD:       ds_read_b128
// LDSLOAD-NOT:   {{ds_write|v_perm_b32}}
// LDSLOAD:       .end_amdhsa_kernel

// A wave's loads to LDS share M0 by runs of 64 slots in one group of keys
// (K's groups hold two runs, V's four): the instruction's immediate offset
// tells them apart, added to the slot and the source offset alike (before
// 2026-12-04 each load set M0 and waited a cycle for it).
// M0SHARE-LABEL: prefill:
// M0SHARE:       s_mov_b32 m0, s{{[0-9]+}}
// M0SHARE:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen lds
// M0SHARE-NEXT:  buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen offset:1024 lds
// M0SHARE:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen offset:2048 lds
// M0SHARE-NEXT:  buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen offset:3072 lds

// The Q fragments' loads (one per k step) are waited for before the
// first tile's: without that wait the back end moved them below the loop's
// prologue and waited for them inside the loop, each wait (vmcnt(15) ...
// vmcnt(2)) holding up the next tile's loads too. (On gfx950 a register
// move may come between the wait and the first tile load.)
// QWAIT942:      global_load_dwordx2 {{.*}} offset:240
// QWAIT942-NOT:  buffer_load
// QWAIT942:      s_waitcnt vmcnt(0)
// QWAIT942-NEXT: buffer_load_dwordx4
// QWAIT950:      global_load_dwordx4 {{.*}} offset:224
// QWAIT950-NOT:  buffer_load
// QWAIT950:      s_waitcnt vmcnt(0)
// QWAIT950-NOT:  {{s_waitcnt|v_mfma}}
// QWAIT950:      buffer_load_dwordx4

// Lazy rescaling: the unmasked K/V loop rescales O^T (v_pk_mul_f32) and
// its row sums only where a lane's maximum passed its m by more than the
// slack, in a block the back end placed after the loop (llvm.expect false)
// that branches back into it; the loop itself has no v_pk_mul_f32.
// (gfx950's waves hold two query atoms: 64 pairs of O^T.) The first MFMA is
// the loop's (the request search before it branches too).
// LAZY-LABEL:   prefill:
// LAZY:         v_mfma_f32_32x32
// LAZY:         s_cbranch_vccnz [[RESCALE:.LBB0_[0-9]+]]
// LAZY-NEXT:    [[JOIN:.LBB0_[0-9]+]]:
// LAZY-NOT:     v_pk_mul_f32
// LAZY:         s_cbranch_scc{{[01]}}
// LAZY-NEXT:    s_branch
// LAZY-NEXT:    [[RESCALE]]:
// LAZY942-COUNT-32: v_pk_mul_f32
// LAZY950-COUNT-64: v_pk_mul_f32
// LAZY:         s_branch [[JOIN]]

// NOU16-NOT:   ds_read_u16
// NOU16-NOT:   ds_write_b16
// NOU16-NOT:   v_mfma_f32_16x16
// NOCANON-NOT: v_max_f32_e32 v{{[0-9]+}}, [[X:v[0-9]+]], [[X]]{{$}}
// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: s_swappc
func.func @prefill(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>) scale(%scale) {causal}
  return
}
