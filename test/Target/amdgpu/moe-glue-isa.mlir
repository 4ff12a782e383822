// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.942.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX942 < %t.942.s
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.950.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX950 < %t.950.s
// RUN: FileCheck %s --check-prefix=NOPERM < %t.942.s
// RUN: FileCheck %s --check-prefix=NOPERM < %t.950.s

// The AMDGCN of the MoE glue on CDNA3 and CDNA4 (not run on hardware
// here). The routing kernels are one 1024-lane workgroup (16 waves): ids in
// 16-byte loads, counted with LDS atomics (ds_add_u32), scans by DPP moves
// (row_shr, then row_bcast:15 and :31 across rows; before 2026-12-04 six
// ds_bpermute round trips); the sort's ballots are v_cmp into an SGPR pair,
// its ranks v_bcnt, the group's base one returning LDS atomic
// (ds_add_rtn_u32) handed out by ds_bpermute. LDS is dynamic shared memory
// only (the launch passes the template's bytes: 1088 and 18496 here), so
// the group segment in the metadata is 0. The copies are 16-byte global
// loads and stores. No scratch, no calls (no ROCm device library needed).

// NOPERM-LABEL: histogram:
// NOPERM-NOT:   ds_bpermute_b32
// NOPERM:       .end_amdhsa_kernel
// CHECK-LABEL: histogram:
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   ds_add_u32
// CHECK-DAG:   s_barrier
// CHECK-DAG:   row_bcast:31
// CHECK-DAG:   global_store_dword v
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 1024
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64
// GFX942:      amdhsa.target: amdgcn-amd-amdhsa--gfx942
// GFX950:      amdhsa.target: amdgcn-amd-amdhsa--gfx950

// CHECK-LABEL: sort:
// CHECK-DAG:   ds_add_u32
// CHECK-DAG:   v_cmp_ne_u32_e64 s[{{[0-9]+}}:{{[0-9]+}}]
// CHECK-DAG:   v_bcnt_u32_b32
// CHECK-DAG:   ds_add_rtn_u32
// CHECK-DAG:   ds_bpermute_b32
// CHECK-DAG:   row_bcast:31
// CHECK-DAG:   global_store_dword v
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 1024
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// CHECK-LABEL: permute:
// CHECK-DAG:   global_load_dword v
// CHECK-DAG:   global_load_dwordx4
// CHECK-DAG:   global_store_dwordx4
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// CHECK-LABEL: unpermute:
// CHECK-COUNT-8: global_load_dwordx4
// CHECK:       global_store_dwordx4
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// Nothing spilled, no stack, no calls (over the whole file).
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.942.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.950.s
// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: .uses_dynamic_stack: true
// NOSPILL-NOT: s_swappc
// NOSPILL-NOT: scratch_

// The hsaco carries the metadata as an ELF note.
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py -o %t.objects 2>/dev/null
// RUN: llvm-readelf --notes %t.objects/sort.gfx950.hsaco \
// RUN:   | FileCheck %s --check-prefix=NOTES
// NOTES:      NT_AMDGPU_METADATA
// NOTES:      .max_flat_workgroup_size: 1024
// NOTES:      .name: sort
// NOTES:      .private_segment_fixed_size: 0
// NOTES:      .wavefront_size: 64
// NOTES:      amdhsa.target: amdgcn-amd-amdhsa--gfx950

func.func @histogram(%ids: memref<?x8xi32>, %counts: memref<256xi32>,
                     %offsets: memref<256xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>)
      counts(%counts : memref<256xi32>) group_offsets(%offsets : memref<256xi32>)
  return
}

func.func @sort(%ids: memref<?x8xi32>, %offsets: memref<256xi32>,
                %sorted: memref<?xi32>, %pos: memref<?x8xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
      group_offsets(%offsets : memref<256xi32>)
      sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>)
  return
}

func.func @permute(%x: memref<?x7168xbf16>, %sorted: memref<?xi32>,
                   %out: memref<?x7168xbf16>) {
  tessel.moe_permute x(%x : memref<?x7168xbf16>)
      sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x7168xbf16>)
      {topk = 8 : i64}
  return
}

func.func @unpermute(%y: memref<?x7168xbf16>, %pos: memref<?x8xi32>,
                     %w: memref<?x8xf32>, %out: memref<?x7168xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x7168xbf16>)
      row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xf32>)
      out(%out : memref<?x7168xbf16>)
  return
}
