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
// RUN: FileCheck %s --check-prefix=BUFFER < %t.950.s

// The AMDGCN of causal prefill on CDNA3/CDNA4 (not run on hardware here):
// the chip's 16-row bf16 MFMA (16x16x16 / 16x16x32), Q by 16-byte global
// loads, K/V tiles by 16-byte buffer loads from a window per tile that ends
// with its last key (checked below: a resource in SGPRs, the lane's offset in a
// VGPR, soffset 0), K by 16-byte LDS writes, Q/K/P fragments by LDS vector
// reads (P goes through a per-wave LDS slice: the MFMA C and A layouts
// differ), V staged transposed (2-byte LDS writes, dim-major) so that its
// fragments are vector reads too: no 16-bit LDS read anywhere (they were
// ds_read_u16 of token-major tiles), v_exp_f32 / v_log_f32 (no ocml calls;
// the grid-stride loop computes its stride from T rather than asking for
// the grid size, which would need the ROCm device library), no scratch.
// The softmax's row maxima and sums run within rows of 16 lanes by DPP,
// folded into the max and add but for the last step, whose max is a
// v_max3 with the running maximum (no ds_swizzle round trips through the
// LDS unit); with the IEEE mode bit off, no `v_max_f32 d, x, x` quiets a
// score or a DPP result before the max.

// CHECK-LABEL: prefill:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   ds_write_b128
// CHECK-DAG:   ds_write_b16
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   v_log_f32
// CHECK-DAG:   v_max_f32_dpp {{.*}} quad_perm:[1,0,3,2]
// CHECK-DAG:   v_max_f32_dpp {{.*}} quad_perm:[2,3,0,1]
// CHECK-DAG:   v_max_f32_dpp {{.*}} row_half_mirror
// CHECK-DAG:   v_add_f32_dpp {{.*}} row_half_mirror
// CHECK-DAG:   v_mov_b32_dpp {{.*}} row_mirror
// GFX942-DAG:  ds_read_b64
// GFX942-DAG:  v_mfma_f32_16x16x16_bf16
// GFX950-DAG:  ds_read_b128
// GFX950-DAG:  v_mfma_f32_16x16x32_bf16
// CHECK:       .end_amdhsa_kernel
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// BUFFER-LABEL: prefill:
// BUFFER:       buffer_load_dwordx4 v[{{[0-9]+:[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen
// BUFFER:       .end_amdhsa_kernel

// NOU16-NOT:   ds_read_u16
// NOCANON-NOT: v_max_f32_e32 v{{[0-9]+}}, [[X:v[0-9]+]], [[X]]{{$}}
// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: s_swappc
func.func @prefill(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>) scale(%scale) {causal}
  return
}
