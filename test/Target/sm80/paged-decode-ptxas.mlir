// REQUIRES: ptxas
// RUN: tessel-opt %s --tessel-nvvm-pipeline=ptxas-verbose=1 \
// RUN:   -mlir-print-op-on-diagnostic=false > %t.log 2>&1
// RUN: FileCheck %s < %t.log
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.log

// ptxas (sm_90) builds the decode kernels of the widest head dim and the
// largest GQA group without spilling (the modules compile in any order).

// CHECK-DAG:   Compiling entry function 'decode_d256' for 'sm_90'
// CHECK-DAG:   Compiling entry function 'decode_g16' for 'sm_90'
// CHECK-DAG:   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: {{[1-9][0-9]* bytes (stack frame|spill)}}
func.func @decode_d256(%q: memref<?x16x256xbf16>, %kc: memref<?x16x2x256xbf16>, %vc: memref<?x16x2x256xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x16x256xbf16>, %lse: memref<16x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x16x256xbf16>) k_cache(%kc : memref<?x16x2x256xbf16>) v_cache(%vc : memref<?x16x2x256xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x16x256xbf16>) lse(%lse : memref<16x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @decode_g16(%q: memref<?x64x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x64x128xf32>, %lse: memref<?x64x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x64x128xf32>) lse(%lse : memref<?x64x?xf32>) layout(nhd) scale(%scale)
  return
}
