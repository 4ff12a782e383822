// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx942 | FileCheck %s --check-prefix=GFX942
// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx950 | FileCheck %s --check-prefix=GFX950

// P (bf16) on CDNA, converted in pairs: gfx942 has no f32 -> bf16
// conversion instruction, and fptrunc's expansion handles NaN, which a
// probability never is; so P is rounded to nearest on its bits (bits +
// 0x8000, the high half: ties go up). gfx950 converts with its instruction
// (arith.truncf, v_cvt_pk_bf16_f32). The output O keeps arith.truncf on
// both.

// GFX942-LABEL: gpu.func @prefill(
// GFX942:       %[[BITS:.*]] = arith.bitcast %{{.*}} : vector<2xf32> to vector<2xi32>
// GFX942-NEXT:  %[[HALF:.*]] = arith.constant dense<32768> : vector<2xi32>
// GFX942-NEXT:  %[[UP:.*]] = arith.addi %[[BITS]], %[[HALF]] : vector<2xi32>
// GFX942-NEXT:  %[[SIXTEEN:.*]] = arith.constant dense<16> : vector<2xi32>
// GFX942-NEXT:  %[[HIGH:.*]] = arith.shrui %[[UP]], %[[SIXTEEN]] : vector<2xi32>
// GFX942-NEXT:  %[[TOP:.*]] = arith.trunci %[[HIGH]] : vector<2xi32> to vector<2xi16>
// GFX942-NEXT:  arith.bitcast %[[TOP]] : vector<2xi16> to vector<2xbf16>
// GFX942:       arith.truncf %{{.*}} : f32 to bf16

// GFX950-LABEL: gpu.func @prefill(
// GFX950-NOT:   i16> to vector<2xbf16>
// GFX950:       arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// GFX950:       arith.truncf %{{.*}} : f32 to bf16
func.func @prefill(%q: memref<?x8x128xbf16>, %k: memref<?x2x128xbf16>, %v: memref<?x2x128xbf16>, %cu: memref<?xi32>, %out: memref<?x8x128xbf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x8x128xbf16>) k(%k : memref<?x2x128xbf16>) v(%v : memref<?x2x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x128xbf16>) scale(%scale) {causal}
  return
}
