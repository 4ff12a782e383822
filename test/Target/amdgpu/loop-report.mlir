// RUN: %python %tessel_src_root/scripts/amd-loop-report.py --check \
// RUN:   --tessel-opt tessel-opt | FileCheck %s --check-prefix=DEFAULT
// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s --check \
// RUN:   --tessel-opt tessel-opt | FileCheck %s
// RUN: %python %tessel_src_root/scripts/amd-loop-report.py %s --chips gfx942 \
// RUN:   --explain gmm --explain wgrad --tessel-opt tessel-opt > %t.explain
// RUN: FileCheck %s --check-prefix=EXPLAIN < %t.explain
// RUN: FileCheck %s --check-prefix=EXPLAIN-ADDR < %t.explain
// RUN: FileCheck %s --check-prefix=WGRAD < %t.explain
// RUN: not %python %tessel_src_root/scripts/amd-loop-report.py %s --check \
// RUN:   --tessel-opt tessel-opt --chips gfx942 --thresholds \
// RUN:   '{"tessel.grouped_matmul": {"share": 0.99, "waves": 8, "vmcnt0": 0, "lgkmcnt0": 0, "flat": 0, "lds16": 0, "kib_cu": 100}}' \
// RUN:   | FileCheck %s --check-prefix=STRICT

// The static loop report (scripts/amd-loop-report.py, issue 16) over the
// whole default set for both chips holds every threshold: no scratch, and
// per kernel family today's floors on the main loop's MFMA share of issue
// cycles and on waves per SIMD, and ceilings on vmcnt(0) and lgkmcnt(0)
// waits, flat loads and 2-byte LDS accesses, and (paged families) on the KiB
// an iteration loads a CU (a change that makes the AMD code worse fails
// here). Since 2026-12-04 21:00 gfx942's head-dim-128 prefill and paged
// forms take one 64-key stage of 32 KB (two, 64 KB, before: one block and
// 1 wave a SIMD), the MLA context windows (qk 192 / v 128) on both chips
// one 32-key stage of 20 KB for 2 waves a SIMD (gfx942: one 64-key stage
// of 40 KB, 640 MFMA cycles an iteration, before; gfx950: two of 80 KB,
// 282 registers), and gfx950's MLA prefill two query atoms a wave (640
// MFMA cycles an iteration, 320 before). Since 2026-12-05 every paged form
// takes 8 waves of 32 queries and one 64-key stage (the MLA context
// windows 40 KB: 640 MFMA cycles an iteration on gfx942, 320 on
// gfx950); on gfx942 the head-dim-128 ones two stages (64 KB) since
// 06:30, one barrier an iteration (the column after the MFMA share), as
// gfx950's unpaged prefill and MLA prefill, whose loads go straight to
// LDS; since 12:00 gfx950's paged forms too (64 KB, the MLA context
// windows 80 KB: 2 waves a SIMD by registers either way), their stage's
// offset carried and flipped by one XOR a tile (gfx942's MLA context
// windows keep one 40 KB stage: two would not fit its 64 KB); since 13:00
// gfx942's unpaged prefill 8 waves over two 64-key stages (64 KB, 2 waves
// a SIMD: one barrier an iteration; 4 waves over one stage before, two
// blocks a CU). Then one grouped matmul: its row (its 8 16-byte loads an
// iteration x 64 lanes x 8 waves a CU: 64 KiB), and thresholds it cannot
// meet make the check fail, naming each one. Its main loop is the K loop, which
// takes K-tiles in pairs, one from each stage (32 MFMAs, 256 issue cycles,
// about 140 instructions on gfx942, 2 waves a SIMD with its 32 KB of
// LDS), not the
// branch back to the kernel's exit block that LLVM places early (that
// "loop" held the whole kernel, 32 MFMAs and 1500 instructions).

// DEFAULT:     ### gfx942: issue cycles per main-loop iteration
// DEFAULT:     | deepseek_v3_mla_extend_context | {{[0-9]+}}/0/{{[0-9]+}} | 40960 | 2 | {{[0-9]+}} | 640 |
// DEFAULT:     | llama3_8b_prefill | {{[0-9]+}}/0/{{[0-9]+}} | 65536 | 2 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 |
// DEFAULT:     | llama3_8b_unified | {{[0-9]+}}/0/{{[0-9]+}} | 65536 | 2 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 |
// DEFAULT:     | moe_ref_gate_up | {{.*}} |
// DEFAULT:     ### gfx950: issue cycles per main-loop iteration
// DEFAULT:     | deepseek_v3_mla_extend_context | {{[0-9]+}}/0/{{[0-9]+}} | 81920 | 2 | {{[0-9]+}} | 320 | {{([0-9]+ \| ){4}[0-9]+}}% | 1 |
// DEFAULT:     | deepseek_v3_mla_prefill | {{[0-9]+}}/{{[0-9]+}}/{{[0-9]+}} | 81920 | 1 | {{[0-9]+}} | 640 | {{([0-9]+ \| ){4}[0-9]+}}% | 1 |
// DEFAULT:     | llama3_8b_prefill | {{[0-9]+}}/{{[0-9]+}}/{{[0-9]+}} | 65536 | 1 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 |
// DEFAULT:     | llama3_8b_unified | {{[0-9]+}}/0/{{[0-9]+}} | 65536 | 2 | {{([0-9]+ \| ){6}[0-9]+}}% | 1 |
// DEFAULT-NOT: thresholds broken
// DEFAULT:     PASS (every threshold holds)

// CHECK:       ### gfx942
// CHECK:       | gmm | {{[0-9]+}}/0/{{[0-9]+}} | 32768 | 2 | {{[0-9][0-9][0-9]?}} | 256 | 0 | {{.*}} | 64 |{{$}}
// CHECK:       ### gfx950
// CHECK:       | gmm |
// CHECK:       PASS

// --explain lists the main loop's instructions by mnemonic: two K-tiles'
// 32 MFMAs (32x32x8), their fragments read 16 bytes at a time (two
// k-steps' each: 32 ds_read_b64 before 2026-12-03 18:00), and what they
// spend beside them. With each tile's
// stage a constant, the LDS addresses are loop-invariant: no shift or XOR
// of the swizzle is left in the loop (12 v_xor_b32 and 15 v_lshlrev_b32 a
// K-tile when the stage was loop-carried). The tiles come by buffer loads
// (8 a pair of K-tiles) whose per-lane offsets do not change over the loop
// and whose windows end with the data: no 64-bit address arithmetic (11
// v_lshl_add_u64 a pair with global loads) and no select keeping an
// address in bounds or zeroing a chunk (16 v_cndmask a pair) is left; no
// VALU instruction at all.
// EXPLAIN:     gfx942 gmm: main-loop instructions by mnemonic
// EXPLAIN-DAG: {{^ +}}32 v_mfma_f32_32x32x8_bf16
// EXPLAIN-DAG: {{^ +}}16 ds_read_b128
// EXPLAIN-DAG: {{^ +}}8 buffer_load_dwordx4
// EXPLAIN-ADDR:     gfx942 gmm: main-loop instructions by mnemonic
// EXPLAIN-ADDR-NOT: {{v_cndmask|v_xor_b32|v_lshlrev_b32|v_lshl_add_u64|global_load}}
// EXPLAIN-ADDR:     gfx942 wgrad: main-loop instructions by mnemonic

// The wgrad's K loop: a pair of K-tiles' 64 MFMAs (a wave's 64x128 block
// of 256x256 tiles; 32 of 64x64 before 2026-12-04 18:30), and each tile's
// rows of the group (the buffer windows' sizes) counted in 32 bits: no
// 64-bit ordering compare (a VALU compare and two selects for each max /
// min of 64-bit indices, 2026-12-04 before 06:45). The K-tile count is
// uniform, so the loop's own branch is scalar.
// WGRAD:     gfx942 wgrad: main-loop instructions by mnemonic
// WGRAD-DAG: {{^ +}}64 v_mfma_f32_32x32x8_bf16
// WGRAD-DAG: {{^ +}}1 s_cbranch_scc1
// WGRAD-NOT: {{v_cmp_(gt|lt|ge|le)_[iu]64}}

// STRICT:      thresholds broken:
// STRICT-NEXT: gfx942 gmm: MFMA share {{[0-9]+}}% < 99%
// STRICT-NEXT: gfx942 gmm: 2 waves/SIMD < 8
// STRICT-NEXT: gfx942 gmm: 64 KiB loaded a CU < 100
// STRICT-NEXT: gfx942 gmm: vmcnt0 {{[1-9][0-9]*}} > 0
// STRICT-NEXT: gfx942 gmm: lgkmcnt0 {{[1-9][0-9]*}} > 0
// STRICT:      FAIL

func.func @gmm(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
               %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}

func.func @wgrad(%a: memref<?x1024xbf16>, %b: memref<?x2048xbf16>,
                 %g: memref<128xi32>, %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>)
      b(%b : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x1024x2048xf32>)
  return
}
