// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.942.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX942 < %t.942.s
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.950.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX950 < %t.950.s

// The AMDGCN of the bandwidth-bound templates (LSE merges, reshape_and_cache)
// on CDNA3 and CDNA4 (not run on hardware here): 16-byte global loads and
// stores (global_load_dwordx4 / global_store_dwordx4), the row leader's LSEs
// handed out by ds_bpermute, exp and log on v_exp_f32 / v_log_f32 (no ocml
// call: the kernels need no ROCm device library), no LDS, no scratch, no
// calls. After each kernel, its code-object metadata: no group (LDS)
// segment, the 256-lane block, no private segment, wave64.

// CHECK-LABEL: merge:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   global_load_dword v
// CHECK-DAG:   ds_bpermute_b32
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   v_log_f32
// CHECK-DAG:   global_store_dwordx4
// CHECK-DAG:   global_store_dword v
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64
// GFX942:      amdhsa.target: amdgcn-amd-amdhsa--gfx942
// GFX950:      amdhsa.target: amdgcn-amd-amdhsa--gfx950

// CHECK-LABEL: merge_n:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   v_exp_f32
// CHECK-DAG:   global_store_dwordx4
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// A token's 256 chunks are one block here, so the slot is a scalar load.
// CHECK-LABEL: rc_nhd:
// CHECK-DAG:   s_load_dword s
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   global_store_dwordx4
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// The shuffled V takes a chunk's 8 bf16 one by one (low and high halves of
// each dword).
// CHECK-LABEL: rc_shuffled:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   global_store_dwordx4
// CHECK-DAG:   global_store_short v
// CHECK-DAG:   global_store_short_d16_hi
// CHECK:       .end_amdhsa_kernel
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// Nothing spilled, no stack, no calls (over the whole file).
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.942.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.950.s
// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: .uses_dynamic_stack: true
// NOSPILL-NOT: s_swappc
// NOSPILL-NOT: scratch_

// The hsaco (what the bundle holds) carries the metadata as an ELF note.
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py -o %t.objects 2>/dev/null
// RUN: llvm-readelf --notes %t.objects/merge.gfx942.hsaco \
// RUN:   | FileCheck %s --check-prefix=NOTES
// NOTES:      NT_AMDGPU_METADATA
// NOTES:      .group_segment_fixed_size: 0
// NOTES:      .name: merge
// NOTES:      .private_segment_fixed_size: 0
// NOTES:      .wavefront_size: 64
// NOTES:      amdhsa.target: amdgcn-amd-amdhsa--gfx942

func.func @merge(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>,
                 %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>,
                 %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>)
      b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}

func.func @merge_n(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xf32>,
                   %out: memref<?x32x128xbf16>) {
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>,
                              %pl : memref<?x32x?xf32>)
      out(%out : memref<?x32x128xbf16>)
  return
}

func.func @rc_nhd(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                  %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>,
                  %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}

func.func @rc_shuffled(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                       %kc: memref<?x8x16x16x8xbf16>,
                       %vc: memref<?x8x2x128x8xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>)
      v_cache(%vc : memref<?x8x2x128x8xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(shuffled)
  return
}
