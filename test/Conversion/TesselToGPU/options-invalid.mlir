// Errors that depend on the pass options rather than on the kernel.
// RUN: not tessel-opt %s --tessel-to-gpu=chip=sm70 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not tessel-opt %s --tessel-to-gpu=stages=1 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not tessel-opt %s --tessel-to-gpu=stages=12 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not tessel-opt %s --tessel-to-gpu="chip=gfx942 stages=4" 2>&1 | FileCheck %s --check-prefix=GFX942

// CHIP:   error: unknown GPU chip 'sm70'; known chips: sm80 (sm_80), sm90a (sm_90a), gfx942, gfx950
// ZERO:   error: 'tessel.grouped_matmul' op GPU template: stages must be at least 2, got 1
// SMEM:   error: 'tessel.grouped_matmul' op GPU template: 12 stages need 245760 bytes of shared memory, more than the 166912 a block of sm_80 can use
// The AMD targets have no async global-to-LDS copies in use: tiles go
// through registers into two LDS buffers.
// GFX942: error: 'tessel.grouped_matmul' op GPU template: gfx942 stages tiles through registers into a double buffer, so stages must be 2, got 4

func.func @gm(%a: memref<?x64xbf16>, %b: memref<8x64x64xbf16>,
              %g: memref<8xi32>, %c: memref<?x64xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8x64x64xbf16>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x64xbf16>) {trans_b}
  return
}
