// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.942.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX942 < %t.942.s
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.950.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX950 < %t.950.s

// The SwiGLU kernels' AMDGCN on CDNA3 and CDNA4 (not run on hardware
// here): 16-byte global loads and stores, v_exp_f32 for the sigmoid; the
// backward's row sum over a 64-lane wave by DPP adds within each row of 16
// lanes (the mirrors for distances 4 and 8), then ds_swizzle and
// ds_bpermute (gfx942) or v_permlane16/32_swap (gfx950) across rows. No
// scratch, no LDS.

// CHECK-LABEL: swiglu:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   global_store_dwordx4
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64
// CHECK-LABEL: swiglu_backward:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   global_store_dwordx4
// CHECK-DAG:   v_add_f32_dpp {{.*}} quad_perm:[1,0,3,2]
// CHECK-DAG:   v_add_f32_dpp {{.*}} quad_perm:[2,3,0,1]
// CHECK-DAG:   v_add_f32_dpp {{.*}} row_half_mirror
// CHECK-DAG:   v_add_f32_dpp {{.*}} row_mirror
// GFX942-DAG:  ds_swizzle_b32
// GFX942-DAG:  ds_bpermute_b32
// GFX950-DAG:  v_permlane16_swap_b32
// GFX950-DAG:  v_permlane32_swap_b32
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64
// GFX942:      amdhsa.target: amdgcn-amd-amdhsa--gfx942
// GFX950:      amdhsa.target: amdgcn-amd-amdhsa--gfx950
func.func @swiglu(%h: memref<?x1024xbf16>, %a: memref<?x512xbf16>) {
  tessel.swiglu h(%h : memref<?x1024xbf16>) act(%a : memref<?x512xbf16>)
  return
}
func.func @swiglu_backward(%g: memref<?x512xbf16>, %h: memref<?x1024xbf16>, %w: memref<?x8xf32>, %s: memref<?xi32>, %p: memref<?x8xi32>, %dh: memref<?x1024xbf16>, %aw: memref<?x512xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x512xbf16>) h(%h : memref<?x1024xbf16>) topk_weights(%w : memref<?x8xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>) dh(%dh : memref<?x1024xbf16>) act_weighted(%aw : memref<?x512xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}
