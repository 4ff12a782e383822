// RUN: tessel-opt %s --tessel-to-gpu=chip=sm80 -split-input-file -verify-diagnostics
// RUN: not tessel-opt %s --tessel-to-gpu="chip=sm80 stages=40" -split-input-file 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not tessel-opt %s --tessel-to-gpu="chip=gfx950 stages=3" -split-input-file 2>&1 | FileCheck %s --check-prefix=GFX950
// RUN: not tessel-opt %s --tessel-to-gpu="chip=gfx942 stages=3" -split-input-file 2>&1 | FileCheck %s --check-prefix=GFX942

// What the prefill template refuses, each with the constraint named.
// SMEM:   error: 'tessel.prefill_attention' op GPU template: no prefill tile of head dims 128/128 with 40 stages fits the 166912 bytes of shared memory of sm_80
// GFX950: error: 'tessel.prefill_attention' op GPU template: stages must be 2 (tiles are loaded into the stage not being read), got 3
// GFX942: error: 'tessel.prefill_attention' op GPU template: stages must be 2 (tiles go through registers), got 3

func.func @prefill_ok(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>) scale(%scale) {causal}
  return
}

// -----

func.func @prefill_head_dim_80(%q: memref<?x8x80xbf16>, %k: memref<?x8x80xbf16>, %v: memref<?x8x80xbf16>, %cu: memref<?xi32>, %out: memref<?x8x80xbf16>, %scale: f32) {
  // expected-error @below {{GPU template: head dims 80/80 must be multiples of 64 (whole swizzled shared-memory rows)}}
  tessel.prefill_attention q(%q : memref<?x8x80xbf16>) k(%k : memref<?x8x80xbf16>) v(%v : memref<?x8x80xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x80xbf16>) scale(%scale) {causal}
  return
}

// -----

func.func @prefill_f32(%q: memref<?x8x64xf32>, %k: memref<?x8x64xf32>, %v: memref<?x8x64xf32>, %cu: memref<?xi32>, %out: memref<?x8x64xf32>, %scale: f32) {
  // expected-error @below {{GPU template: sm_80 has no MMA for 'f32' operands with f32 accumulation}}
  tessel.prefill_attention q(%q : memref<?x8x64xf32>) k(%k : memref<?x8x64xf32>) v(%v : memref<?x8x64xf32>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x64xf32>) scale(%scale) {causal}
  return
}
