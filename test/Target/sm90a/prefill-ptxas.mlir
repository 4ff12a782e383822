// REQUIRES: ptxas
// RUN: tessel-opt %s \
// RUN:   --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=sm_90a ptxas-verbose=1" \
// RUN:   -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// ptxas builds the Hopper prefill at every head dim it serves without
// spilling and without serializing a wgmma in its overlapped loop (P V of
// one tile in flight during the next tile's softmax; P packed only once no
// MMA is in flight, else C7513), head dim 256's included, whose O alone
// takes 128 of the consumer's registers. At head dims 192/192 two stages
// of 128-key K/V tiles do not fit in shared memory (246848 bytes): the
// kernel takes 64-key tiles (it was an error before). The two-stage
// kernels (192/128, 192/192, 256) release K and V apart; at 192/128 the
// producer's 24 registers hold its second wait without a spill.

// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'd64' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'd128_causal_gqa' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'd128_f16' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'd192_v128' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'd192_v192' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'd256' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss

func.func @d64(%q: memref<?x32x64xbf16>, %k: memref<?x8x64xbf16>,
               %v: memref<?x8x64xbf16>, %cu: memref<?xi32>,
               %out: memref<?x32x64xbf16>, %lse: memref<32x?xf32>,
               %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x64xbf16>)
      k(%k : memref<?x8x64xbf16>) v(%v : memref<?x8x64xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x64xbf16>)
      lse(%lse : memref<32x?xf32>) scale(%scale) {causal}
  return
}
func.func @d128_causal_gqa(%q: memref<?x64x128xbf16>, %k: memref<?x4x128xbf16>,
                           %v: memref<?x4x128xbf16>, %cu: memref<?xi32>,
                           %out: memref<?x64x128xbf16>, %lse: memref<64x?xf32>,
                           %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x64x128xbf16>)
      k(%k : memref<?x4x128xbf16>) v(%v : memref<?x4x128xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x64x128xbf16>)
      lse(%lse : memref<64x?xf32>) scale(%scale) {causal}
  return
}
func.func @d128_f16(%q: memref<?x8x128xf16>, %k: memref<?x8x128xf16>,
                    %v: memref<?x8x128xf16>, %cu: memref<?xi32>,
                    %out: memref<?x8x128xf16>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x8x128xf16>)
      k(%k : memref<?x8x128xf16>) v(%v : memref<?x8x128xf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x128xf16>)
      scale(%scale)
  return
}
func.func @d192_v128(%q: memref<?x128x192xbf16>, %k: memref<?x128x192xbf16>,
                     %v: memref<?x128x128xbf16>, %cu: memref<?xi32>,
                     %out: memref<?x128x128xf32>, %lse: memref<128x?xf32>,
                     %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x128x192xbf16>)
      k(%k : memref<?x128x192xbf16>) v(%v : memref<?x128x128xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x128x128xf32>)
      lse(%lse : memref<128x?xf32>) scale(%scale) {causal}
  return
}
func.func @d192_v192(%q: memref<?x8x192xbf16>, %k: memref<?x2x192xbf16>,
                     %v: memref<?x2x192xbf16>, %cu: memref<?xi32>,
                     %out: memref<?x8x192xbf16>, %lse: memref<8x?xf32>,
                     %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x8x192xbf16>)
      k(%k : memref<?x2x192xbf16>) v(%v : memref<?x2x192xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x8x192xbf16>)
      lse(%lse : memref<8x?xf32>) scale(%scale) {causal}
  return
}
func.func @d256(%q: memref<?x16x256xbf16>, %k: memref<?x2x256xbf16>,
                %v: memref<?x2x256xbf16>, %cu: memref<?xi32>,
                %out: memref<?x16x256xbf16>, %lse: memref<16x?xf32>,
                %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x16x256xbf16>)
      k(%k : memref<?x2x256xbf16>) v(%v : memref<?x2x256xbf16>)
      cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x16x256xbf16>)
      lse(%lse : memref<16x?xf32>) scale(%scale) {causal}
  return
}
