// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx942 | FileCheck %s --check-prefix=GFX942
// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx950 | FileCheck %s --check-prefix=GFX950

// P (bf16) on CDNA: gfx942 has no f32 -> bf16 conversion instruction, and
// fptrunc's expansion handles NaN, which a probability never is; so P is
// rounded to nearest even on its bits (bits + 0x7fff + bit 16, the high
// half). gfx950 converts with its instruction (arith.truncf). The output O
// keeps arith.truncf on both.

// GFX942-LABEL: gpu.func @prefill(
// GFX942:       %[[LSB:.*]] = arith.andi %{{.*}}, %c1_i32 : i32
// GFX942-NEXT:  %c32767_i32 = arith.constant 32767 : i32
// GFX942-NEXT:  %[[UP:.*]] = arith.addi %{{.*}}, %c32767_i32 : i32
// GFX942-NEXT:  %[[RNE:.*]] = arith.addi %[[UP]], %[[LSB]] : i32
// GFX942-NEXT:  %[[SIXTEEN:.*]] = arith.constant 16 : i32
// GFX942-NEXT:  %[[HIGH:.*]] = arith.shrui %[[RNE]], %[[SIXTEEN]] : i32
// GFX942-NEXT:  %[[HALF:.*]] = arith.trunci %[[HIGH]] : i32 to i16
// GFX942-NEXT:  arith.bitcast %[[HALF]] : i16 to bf16
// GFX942:       arith.truncf %{{.*}} : f32 to bf16

// GFX950-LABEL: gpu.func @prefill(
// GFX950-NOT:   i16 to bf16
// GFX950:       arith.truncf %{{.*}} : f32 to bf16
func.func @prefill(%q: memref<?x8x128xbf16>, %k: memref<?x2x128xbf16>, %v: memref<?x2x128xbf16>, %cu: memref<?xi32>, %out: memref<?x8x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x8x128xbf16>) k(%k : memref<?x2x128xbf16>) v(%v : memref<?x2x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x128xbf16>) scale(%scale) {causal}
  return
}
