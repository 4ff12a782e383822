// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.942.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX942 < %t.942.s
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.950.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX950 < %t.950.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.942.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.950.s

// The AMDGCN of absorbed MLA decode on CDNA3/CDNA4 (not run on hardware
// here): the chip's 16-row bf16 MFMA, 576-wide rows by 16-byte global loads
// into an LDS double buffer, v_exp_f32/v_log_f32, two waves (gfx942's 64 KB
// of LDS holds 16 rows of 576 twice: both waves score them and split P.V by
// column), no scratch and no spills.

// CHECK-LABEL: mla:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   ds_write_b128
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   v_log_f32
// GFX942-DAG:  v_mfma_f32_16x16x16_bf16
// GFX950-DAG:  v_mfma_f32_16x16x32_bf16
// CHECK:       .end_amdhsa_kernel
// CHECK:       .max_flat_workgroup_size: 128
// CHECK:       .private_segment_fixed_size: 0

// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: s_swappc
func.func @mla(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x128x512xbf16>, %lse: memref<128x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x128x512xbf16>) lse(%lse : memref<128x?xf32>) scale(%scale)
  return
}
