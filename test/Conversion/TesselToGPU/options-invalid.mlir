// Errors that depend on the pass options rather than on the kernel.
// RUN: not tessel-opt %s --tessel-to-gpu=chip=sm70 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not tessel-opt %s --tessel-to-gpu=stages=1 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not tessel-opt %s --tessel-to-gpu=stages=12 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not tessel-opt %s --tessel-to-gpu=chip=gfx942 2>&1 | FileCheck %s --check-prefix=LDS942
// RUN: not tessel-opt %s --tessel-to-gpu="chip=gfx942 stages=2" 2>&1 | FileCheck %s --check-prefix=GFX942
// RUN: not tessel-opt %s --tessel-to-gpu=chip=gfx950 2>&1 | FileCheck %s --check-prefix=GFX950

// CHIP:   error: unknown GPU chip 'sm70'; known chips: sm80 (sm_80), gfx942, gfx950
// ZERO:   error: 'tessel.grouped_matmul' op GPU template: stages must be at least 2, got 1
// SMEM:   error: 'tessel.grouped_matmul' op GPU template: 12 stages need 245760 bytes of shared memory, more than the 166912 a block of sm_80 can use
// The AMD targets are declared (facts for tile sizing: gfx942 has 64 KB of
// LDS, gfx950 160 KB); their lowering is next.
// LDS942: error: 'tessel.grouped_matmul' op GPU template: 4 stages need 81920 bytes of shared memory, more than the 65536 a block of gfx942 can use
// GFX942: error: the ROCDL lowering of global-to-LDS copies for gfx942 is not implemented yet
// GFX950: error: the ROCDL lowering of global-to-LDS copies for gfx950 is not implemented yet

func.func @gm(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
              %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}
