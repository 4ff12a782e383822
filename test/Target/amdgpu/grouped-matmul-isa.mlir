// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.942.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX942 < %t.942.s
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.950.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX950 < %t.950.s
// RUN: FileCheck %s --check-prefix=TABLE < %t.942.s
// RUN: FileCheck %s --check-prefix=TABLE < %t.950.s
// RUN: FileCheck %s --check-prefix=TRANSPOSED < %t.942.s
// RUN: FileCheck %s --check-prefix=TRANSPOSED < %t.950.s
// RUN: FileCheck %s --check-prefix=BUFFER < %t.942.s
// RUN: FileCheck %s --check-prefix=LDSLOAD < %t.950.s
// RUN: FileCheck %s --check-prefix=SCAN < %t.942.s
// RUN: FileCheck %s --check-prefix=SCAN < %t.950.s

// The AMDGCN of the grouped matmul template on CDNA3 and CDNA4 (not run on
// hardware here; this is how the AMD path is checked): wave64 MFMA of the
// chip's bf16 shape (32x32x8 on gfx942, 32x32x16 on gfx950), A and
// K-contiguous B fragments as one 16-byte LDS read per lane (on gfx942,
// whose MFMA takes 8 bytes a lane, for two k-steps at once), tiles staged
// by 16-byte buffer loads and 16-byte LDS writes on gfx942, by 16-byte
// buffer loads straight to LDS on gfx950 (below; the N-contiguous B of the
// dgrad and both operands of the wgrad: on gfx942 transposed in registers
// on their way to LDS, so that they are read the same way; on gfx950
// stored as they lie and read by ds_read_b64_tr_b16; the 16-bit reads they
// took before are gone), the group search in registers (below), and no
// scratch memory or spills anywhere. After
// each kernel, its code-object metadata: LDS only as dynamic shared memory
// (the launch passes the template's 40 KB), the 256-lane block the
// template asked for, no scratch (private segment), wave64.

// CHECK-LABEL: moe_gate:
// CHECK-DAG:   buffer_load_dwordx4
// GFX942-DAG:  ds_write_b128
// CHECK-DAG:   s_barrier
// CHECK-DAG:   ds_read_b128
// GFX942-DAG:  v_mfma_f32_32x32x8_bf16
// GFX950-DAG:  v_mfma_f32_32x32x16_bf16
// CHECK-DAG:   global_store_short
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64
// GFX942:      amdhsa.target: amdgcn-amd-amdhsa--gfx942
// GFX950:      amdhsa.target: amdgcn-amd-amdhsa--gfx950

// The dgrad's B: on gfx942 a thread's chunks of 2 k rows written as
// 4-byte column pieces (paired by the back end); on gfx950 whole 16-byte
// rows, each lane's 8 k values of a fragment in two transposing reads (no
// v_perm: before 2026-12-03, 32 an iteration transposed 4-row chunks).
// CHECK-LABEL: dgrad_down:
// GFX942-DAG:  ds_write2_b32
// GFX950-DAG:  ds_read_b64_tr_b16
// GFX950-DAG:  ds_read_b128
// GFX942-DAG:  v_mfma_f32_32x32x8_bf16
// GFX950-DAG:  v_mfma_f32_32x32x16_bf16
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64
// GFX942:      amdhsa.target: amdgcn-amd-amdhsa--gfx942
// GFX950:      amdhsa.target: amdgcn-amd-amdhsa--gfx950

// The search for the block's group (KernelBuilder::findRowTile) stays in
// registers: each scan of 64 groups' ends and tile counts in six DPP steps
// (row_shr 1, 2, 4, 8, then row_bcast:15 into rows 1 and 3 and
// row_bcast:31 into rows 2 and 3), the previous group's end by wave_shr:1,
// the owning group by a ballot's popcount and its values by v_readlane
// with that lane in an SGPR. Before 2026-12-04 each chunk of 64 groups
// took ~20 dependent ds_bpermute round trips (51 in this kernel).
// SCAN-LABEL: moe_gate:
// SCAN-NOT:   ds_bpermute
// SCAN:       row_shr:8
// SCAN-NOT:   ds_bpermute
// SCAN:       row_bcast:15 row_mask:0xa
// SCAN-NOT:   ds_bpermute
// SCAN:       row_bcast:31 row_mask:0xc
// SCAN-NOT:   ds_bpermute
// SCAN:       wave_shr:1
// SCAN-NOT:   ds_bpermute
// SCAN:       s_bcnt1_i32_b64
// SCAN-NOT:   ds_bpermute
// SCAN:       v_readlane_b32 s{{[0-9]+}}, v{{[0-9]+}}, s{{[0-9]+}}
// SCAN-NOT:   ds_bpermute
// SCAN:       .end_amdhsa_kernel

// gfx942 reads two k-steps' fragments at once (TargetInfo::
// loadJointFragments; before 2026-12-03, 8-byte reads, twice as many).
// RUN: FileCheck %s --check-prefix=JOINT < %t.942.s
// JOINT-NOT: ds_read_b64
// JOINT-NOT: ds_read2_b32
// JOINT:     amdhsa.target: amdgcn-amd-amdhsa--gfx942

// From a pointer table, each block reads its group's 64-bit address first
// (a scalar load: the group, found by v_readlane, is in an SGPR; a global
// load before 2026-12-04), then the group's B by buffer loads: flat loads would
// also count against the LDS wait counter, so every LDS wait would stall on
// the next B tile.
// TABLE-LABEL: table_dgrad:
// TABLE-NOT:   flat_load
// TABLE:       buffer_load_dwordx4
// TABLE-NOT:   flat_load
// TABLE:       .end_amdhsa_kernel
// CHECK-LABEL: table_dgrad:
// CHECK-DAG:   s_load_dwordx2 s[{{[0-9]+:[0-9]+}}], s[{{[0-9]+:[0-9]+}}], s{{[0-9]+}}
// GFX942-DAG:  v_mfma_f32_32x32x8_bf16
// GFX950-DAG:  v_mfma_f32_32x32x16_bf16
// CHECK:       .end_amdhsa_kernel
// CHECK:       .group_segment_fixed_size: 0
// CHECK:       .max_flat_workgroup_size: 256
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64
// GFX942:      amdhsa.target: amdgcn-amd-amdhsa--gfx942
// GFX950:      amdhsa.target: amdgcn-amd-amdhsa--gfx950

// The wgrad: A^T and B both staged transposed on gfx942 (2 k rows a
// thread), read transposed on gfx950; fp32 results stored as dwords. M
// and N are whole 256s, so 256x256 tiles: blocks of 8 waves (before
// 2026-12-04, 4 waves of 128x128), no scratch.
// CHECK-LABEL: wgrad_down:
// GFX942-DAG:  ds_write2_b32
// GFX942-DAG:  ds_read_b128
// GFX950-DAG:  ds_read_b64_tr_b16
// GFX942-DAG:  v_mfma_f32_32x32x8_bf16
// GFX950-DAG:  v_mfma_f32_32x32x16_bf16
// CHECK-DAG:   global_store_dword
// CHECK:       .end_amdhsa_kernel
// CHECK:       .max_flat_workgroup_size: 512
// CHECK:       .private_segment_fixed_size: 0
// CHECK:       .wavefront_size: 64

// A k-step's MFMAs take B's atoms in the reverse order of their reads, so
// the first one's LDS wait covers the step: in gfx942's wgrad K loop (a
// wave's 64x128 block) two joint k-steps' 16 MFMAs follow one wait, the
// next step's 6 reads still in flight (before 2026-12-04, a wait every
// 1-7 MFMAs).
// RUN: FileCheck %s --check-prefix=ONEWAIT < %t.942.s
// ONEWAIT-LABEL: wgrad_down:
// ONEWAIT:       s_waitcnt lgkmcnt(6)
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16
// ONEWAIT-NEXT:  v_mfma_f32_32x32x8_bf16

// No operand is read from LDS one 16-bit element at a time, and on gfx950
// none is transposed in registers.
// RUN: FileCheck %s --check-prefix=TRREAD < %t.950.s
// TRREAD-LABEL: dgrad_down:
// TRREAD-NOT:   v_perm_b32
// TRREAD:       .end_amdhsa_kernel
// TRREAD-LABEL: wgrad_down:
// TRREAD-NOT:   v_perm_b32
// TRREAD:       .end_amdhsa_kernel
// TRANSPOSED-LABEL: dgrad_down:
// TRANSPOSED-NOT:   ds_read_u16
// TRANSPOSED:       .end_amdhsa_kernel
// TRANSPOSED-LABEL: table_dgrad:
// TRANSPOSED-NOT:   ds_read_u16
// TRANSPOSED:       .end_amdhsa_kernel
// TRANSPOSED-LABEL: wgrad_down:
// TRANSPOSED-NOT:   ds_read_u16
// TRANSPOSED:       .end_amdhsa_kernel

// Every tile is read by buffer loads (TargetInfo::bufferResource; gfx942
// here, gfx950's below): per
// lane an offset that stays the same over the K loop, the K-tile's offset
// in an SGPR (`soffset`; 0 where each K-tile has its own window, the
// wgrad's), the window's end (the M-tile's or K-tile's rows of the group,
// the group's B) giving zeros past it. No 64-bit address arithmetic or
// in-bounds selects are left in the K loop (the loop report's EXPLAIN-ADDR
// in loop-report.mlir), and no tile is read by a global load.
// BUFFER-LABEL: moe_gate:
// BUFFER-NOT:   global_load_dwordx4
// BUFFER:       buffer_load_dwordx4 v[{{[0-9]+:[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], s{{[0-9]+}} offen
// BUFFER-NOT:   global_load_dwordx4
// BUFFER-LABEL: dgrad_down:
// BUFFER-NOT:   global_load_dwordx4
// BUFFER:       buffer_load_dwordx4 v[{{[0-9]+:[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], s{{[0-9]+}} offen
// BUFFER-NOT:   global_load_dwordx4
// BUFFER-LABEL: table_dgrad:
// BUFFER-NOT:   global_load_dwordx4
// BUFFER:       buffer_load_dwordx4 v[{{[0-9]+:[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], s{{[0-9]+}} offen
// BUFFER-NOT:   global_load_dwordx4
// BUFFER-LABEL: wgrad_down:
// BUFFER-NOT:   global_load_dwordx4
// BUFFER:       buffer_load_dwordx4 v[{{[0-9]+:[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen
// BUFFER-NOT:   global_load_dwordx4
// BUFFER:       .end_amdhsa_kernel

// On gfx950 every tile goes to LDS by buffer_load_dwordx4 ... lds (M0 the
// wave's first 16-byte slot, from SGPRs; TargetInfo::bufferLoadToShared):
// no staging registers, no LDS writes, no global loads. Before 2026-12-04
// the tiles came into registers and went on by ds_write_b128.
// LDSLOAD-LABEL: moe_gate:
// LDSLOAD-NOT:   {{global_load_dwordx4|ds_write}}
// LDSLOAD:       s_mov_b32 m0, s{{[0-9]+}}
// LDSLOAD:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], {{s[0-9]+|0}} offen lds
// LDSLOAD-NOT:   {{global_load_dwordx4|ds_write}}
// LDSLOAD-LABEL: dgrad_down:
// LDSLOAD-NOT:   {{global_load_dwordx4|ds_write}}
// LDSLOAD:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], {{s[0-9]+|0}} offen lds
// LDSLOAD-NOT:   {{global_load_dwordx4|ds_write}}
// LDSLOAD-LABEL: table_dgrad:
// LDSLOAD-NOT:   {{global_load_dwordx4|ds_write}}
// LDSLOAD:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], {{s[0-9]+|0}} offen lds
// LDSLOAD-NOT:   {{global_load_dwordx4|ds_write}}
// LDSLOAD-LABEL: wgrad_down:
// LDSLOAD-NOT:   {{global_load_dwordx4|ds_write}}
// LDSLOAD:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], {{s[0-9]+|0}} offen lds
// LDSLOAD-NOT:   {{global_load_dwordx4|ds_write}}
// LDSLOAD:       .end_amdhsa_kernel

// Four loads to LDS share their M0 (gfx950): a wave's copies fill one
// block of rows, so the LDS slots of the next three are the first one's
// plus the instruction's immediate offset, which the chip adds to the
// source offset too (the template takes it off the lane's offset). Before
// 2026-12-04 every load set M0 (and waited a cycle for it).
// RUN: FileCheck %s --check-prefix=M0SHARE < %t.950.s
// M0SHARE-LABEL: moe_gate:
// M0SHARE:       s_mov_b32 m0, s{{[0-9]+}}
// M0SHARE-NOT:   m0
// M0SHARE:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], {{s[0-9]+|0}} offen lds
// M0SHARE-NEXT:  buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], {{s[0-9]+|0}} offen offset:1024 lds
// M0SHARE-LABEL: wgrad_down:
// M0SHARE:       s_mov_b32 m0, s{{[0-9]+}}
// M0SHARE-NOT:   m0
// M0SHARE:       buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen lds
// M0SHARE-NEXT:  buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen offset:1024 lds
// M0SHARE-NEXT:  buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen offset:2048 lds
// M0SHARE-NEXT:  buffer_load_dwordx4 v{{[0-9]+}}, s[{{[0-9]+:[0-9]+}}], 0 offen offset:3072 lds

// CDNA reads the stages flat, so the constant part of a fragment's LDS
// offset (its stage, its atom past the swizzle's 64 columns, its k-step)
// is the instruction's immediate offset: one address register serves
// stage 1 at 32768, the atom 64 columns on (+128 bytes) and the next
// k-step (16 rows of 512 bytes on). Before 2026-12-04 the 256x256 wgrad
// read through 52 address registers an iteration (8 now), as the
// constants were OR'd into the row term of the memref's linear index.
// RUN: FileCheck %s --check-prefix=FLATREAD < %t.950.s
// FLATREAD-LABEL: wgrad_down:
// FLATREAD:       ds_read_b64_tr_b16 v[{{[0-9]+:[0-9]+}}], [[R:v[0-9]+]] offset:32768
// FLATREAD-NEXT:  ds_read_b64_tr_b16 v[{{[0-9]+:[0-9]+}}], [[R]] offset:32896
// FLATREAD-NEXT:  ds_read_b64_tr_b16 v[{{[0-9]+:[0-9]+}}], [[R]] offset:40960
// FLATREAD-NEXT:  ds_read_b64_tr_b16 v[{{[0-9]+:[0-9]+}}], [[R]] offset:41088

// No spills or dynamic stack (checked over the whole file; scratch is the
// private segment size checked per kernel above).
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.942.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.950.s
// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: .uses_dynamic_stack: true

// The hsaco itself (what the bundle holds) carries the same metadata as an
// ELF note, for the HIP runtime.
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py -o %t.objects 2>/dev/null
// RUN: llvm-readelf --notes %t.objects/moe_gate.gfx950.hsaco \
// RUN:   | FileCheck %s --check-prefix=NOTES
// NOTES:      NT_AMDGPU_METADATA
// NOTES:      .name: moe_gate
// NOTES:      .private_segment_fixed_size: 0
// NOTES:      .vgpr_spill_count: 0
// NOTES:      .wavefront_size: 64
// NOTES:      amdhsa.target: amdgcn-amd-amdhsa--gfx950
// Code object v5 (metadata version 1.2).
// NOTES:      amdhsa.version:
// NOTES-NEXT:   - 1
// NOTES-NEXT:   - 2

func.func @moe_gate(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}

func.func @dgrad_down(%a: memref<?x2048xbf16>, %b: memref<128x2048x512xbf16>,
                      %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x2048x512xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x512xbf16>)
  return
}

func.func @table_dgrad(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
                       %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>)
      {b_shape = array<i64: 2048, 512>}
  return
}

func.func @wgrad_down(%a: memref<?x2048xbf16>, %b: memref<?x512xbf16>,
                      %g: memref<128xi32>, %c: memref<128x2048x512xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x2048xbf16>)
      b(%b : memref<?x512xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x2048x512xf32>)
  return
}
