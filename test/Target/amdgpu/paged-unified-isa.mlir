// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx942 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.942.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX942 < %t.942.s
// RUN: tessel-opt %s --tessel-rocdl-pipeline=chip=gfx950 \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.950.s
// RUN: FileCheck %s --check-prefixes=CHECK,GFX950 < %t.950.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.942.s
// RUN: FileCheck %s --check-prefix=VSTORE < %t.942.s
// RUN: FileCheck %s --check-prefix=VSTORE < %t.950.s
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.950.s
// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s \
// RUN:   --tessel-opt tessel-opt | FileCheck %s --check-prefix=LOOP
// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s --chips gfx950 \
// RUN:   --explain unified --explain unified_shuffled --tessel-opt tessel-opt \
// RUN:   > %t.explain
// RUN: FileCheck %s --check-prefix=WAITS < %t.explain
// RUN: FileCheck %s --check-prefix=WAITSNOT < %t.explain

// The unified mode's kernel (paged_attention causal with cu_seqlens) on
// CDNA3/CDNA4, both KV layouts: transposed scores on the chip's 32x32 bf16
// MFMA (as the unpaged prefill), no scratch (not run on hardware here). The
// context's K/V tiles come by buffer loads, their block ids loaded a tile
// ahead: the main loop has no serialized s_waitcnt vmcnt(0) (the report's
// next to last column) and no 2-byte LDS access (the column before: NHD V
// goes to LDS transposed in runs of 4 tokens, 8-byte writes; before, 32
// 2-byte writes a tile), for either layout on either chip. Two 64-key
// stages (64 KB, the block the CU's only one either way): one barrier a
// tile (the report's column after the MFMA share; two on one stage, where
// tile t+1 waits in registers for every wave to be done with tile t, as
// gfx950's forms did until 2026-12-05 12:00, at 61% of the loop's issue
// cycles on MFMAs: a second stage's offsets took 3 scalar instructions
// and 4 vector adds a tile, 59.5%; the offset is now carried and flipped
// by one s_xor_b32, and the block ids come by buffer loads, the window of
// the request's row of the table reading 0 past it, so that a lane's
// offset in it takes no clamp and no 64-bit address: 60%).

// LOOP:        ### gfx942
// LOOP:        | unified | {{[0-9]+}}/0/{{[0-9]+}} | 65536 | 2 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 | {{.*}} | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        | unified_shuffled | {{[0-9]+}}/0/{{[0-9]+}} | 65536 | 2 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 | {{.*}} | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        ### gfx950
// LOOP:        | unified | {{[0-9]+}}/0/{{[0-9]+}} | 65536 | 2 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 | {{.*}} | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        | unified_shuffled | {{[0-9]+}}/0/{{[0-9]+}} | 65536 | 2 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 | {{.*}} | 0 | 0 | {{[0-9.]+}} |{{$}}
// LOOP:        | unified_split | {{[0-9]+}}/0/{{[0-9]+}} | 65536 | 2 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 |

// Every form takes 8 waves of 32 queries and 64-key tiles in two
// register-staged stages (Prefill.cpp's candidates): 2 waves a SIMD on
// both chips, in under 256 registers, no AGPR.

// A wave's share of a tile is 8 tokens of one block: a lane's run of 2
// tokens of V goes to LDS transposed, 8 dims as 8 4-byte writes paired
// into ds_write2_b32 at one address and immediate offsets
// (KernelBuilder::chunkMajorElement: each write's constant part starts its
// view). A lane keeps one K row and takes its next columns at each step
// (PagedWindows.cpp's tokenColumns): its two K chunks go to one address,
// 8 KB apart (by rows, one address register each), stored in the reverse
// order of their loads (KernelBuilder::chunkPipeline: one wait for all).
// VSTORE-LABEL: unified:
// VSTORE:       ds_write_b128 [[K:v[0-9]+]], v[{{[0-9:]+}}] offset:8192
// VSTORE-NEXT:  ds_write_b128 [[K]], v[{{[0-9:]+}}]{{$}}
// VSTORE:       ds_write2_b32 [[V:v[0-9]+]], v{{[0-9]+}}, v{{[0-9]+}} offset1:4
// VSTORE:       ds_write2_b32 [[V]], v{{[0-9]+}}, v{{[0-9]+}} offset0:8 offset1:12
// VSTORE:       ds_write2_b32 [[V]], v{{[0-9]+}}, v{{[0-9]+}} offset0:16 offset1:20
// VSTORE:       ds_write2_b32 [[V]], v{{[0-9]+}}, v{{[0-9]+}} offset0:24 offset1:28

// The main loop's waits: one for K's reads every two k steps
// (PrefillTransposed.cpp's groups), one for V^T's every two, one for the
// stores (issued in reverse: the first waits for the last load), the
// barrier's and the block id's: under 10 (16 before). The loop counts in 32
// bits (no s_addc_u32 or 64-bit compare), and a window's size is whole rows
// (no v_max_u32 for the last row's KV-head part). The shuffled layout's
// tile that a context ends inside, whose V chunks are masked where they
// are stored, is unlikely: its masking (v_cndmask_b32_sdwa) is out of the
// loop, and its chunks' bounds are compared in 32 bits.
// A tile's block ids: one buffer_load_dword (a global_load_dword from a
// clamped 64-bit address before); the stage: one s_xor_b32.
// WAITS-LABEL: gfx950 unified: main-loop instructions by mnemonic
// WAITS-DAG:   {{^ +[1-9] s_waitcnt *$}}
// WAITS-DAG:   {{^ +1 s_cmp_[a-z]+_u32 *$}}
// WAITS-DAG:   {{^ +1 buffer_load_dword *$}}
// WAITS-DAG:   {{^ +1 s_xor_b32 *$}}
// WAITS-LABEL: gfx950 unified_shuffled: main-loop instructions by mnemonic
// WAITS:       {{^ +[1-9] s_waitcnt *$}}
// WAITSNOT-NOT: {{s_addc_u32|s_cmp_[a-z]+_u64|v_max_u32|v_cndmask_b32_sdwa|v_cmp_[a-z]+_i64|global_load}}

// CHECK-LABEL: unified:
// GFX942:      v_mfma_f32_32x32x8_bf16
// GFX950:      v_mfma_f32_32x32x16_bf16
// CHECK-LABEL: unified_shuffled:
// GFX942:      v_mfma_f32_32x32x8_bf16
// GFX950:      v_mfma_f32_32x32x16_bf16
// NOSPILL-NOT: {{(s|v)gpr_spill_count: [1-9]}}
// NOSPILL-NOT: s_swappc
// NOSPILL-NOT: private_segment_fixed_size: [1-9]

func.func @unified(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) causal layout(nhd) scale(%scale)
  return
}
func.func @unified_shuffled(%q: memref<?x32x128xbf16>, %kc: memref<?x8x16x16x8xbf16>, %vc: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>) v_cache(%vc : memref<?x8x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) causal layout(shuffled) scale(%scale)
  return
}
func.func @unified_split(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %sl: memref<?xi32>, %out: memref<?x?x32x128xf32>, %lse: memref<?x32x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>) causal layout(nhd) scale(%scale)
  return
}
