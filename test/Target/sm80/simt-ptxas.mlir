// REQUIRES: ptxas
// RUN: tessel-opt %s --tessel-nvvm-pipeline=ptxas-verbose=1 \
// RUN:   -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// ptxas (sm_90, the H200) builds the LSE merges and reshape_and_cache
// without local memory; each gpu.binary holds the PTX and the cubin.

// CHECK:     Compiling entry function 'merge' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Compiling entry function 'merge_n' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Compiling entry function 'rc_nhd' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Compiling entry function 'rc_shuffled' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     gpu.binary @merge  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">,
// CHECK-SAME:  #gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">,
// CHECK-SAME:  bin = "

func.func @merge(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>,
                 %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>,
                 %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>)
      b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}

func.func @merge_n(%p: memref<?x?x16x512xbf16>, %pl: memref<?x16x?xf32>,
                   %out: memref<?x16x512xbf16>, %lse: memref<16x?xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x16x512xbf16>,
                              %pl : memref<?x16x?xf32>)
      out(%out : memref<?x16x512xbf16>) lse_out(%lse : memref<16x?xf32>)
  return
}

func.func @rc_nhd(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                  %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>,
                  %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}

func.func @rc_shuffled(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                       %kc: memref<?x8x16x16x8xbf16>,
                       %vc: memref<?x8x2x128x8xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>)
      v_cache(%vc : memref<?x8x2x128x8xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(shuffled)
  return
}
