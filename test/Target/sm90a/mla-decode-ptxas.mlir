// REQUIRES: ptxas
// RUN: tessel-opt %s \
// RUN:   --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=sm_90a ptxas-verbose=1" \
// RUN:   -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// ptxas builds the Hopper MLA decode without spilling (consumer 0 holds S,
// P and half of O: 64 x 256 f32) and without serializing a wgmma.

// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'mla_h128' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss
// CHECK:     Compiling entry function 'mla_split_h16_bs16' for 'sm_90a'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: Potential Performance Loss

func.func @mla_h128(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>,
                    %bt: memref<?x?xi32>, %sl: memref<?xi32>,
                    %out: memref<?x128x512xbf16>, %lse: memref<128x?xf32>,
                    %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>)
      kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%out : memref<?x128x512xbf16>)
      lse(%lse : memref<128x?xf32>) scale(%scale)
  return
}
func.func @mla_split_h16_bs16(%q: memref<?x16x576xbf16>,
                              %c: memref<?x16x576xbf16>,
                              %bt: memref<?x?xi32>, %sl: memref<?xi32>,
                              %out: memref<?x?x16x512xf32>,
                              %lse: memref<?x16x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x16x576xbf16>)
      kv_cache(%c : memref<?x16x576xbf16>) block_table(%bt : memref<?x?xi32>)
      seq_lens(%sl : memref<?xi32>) out(%out : memref<?x?x16x512xf32>)
      lse(%lse : memref<?x16x?xf32>) scale(%scale)
  return
}
