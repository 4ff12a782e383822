// REQUIRES: ptxas
// RUN: tessel-opt %s --tessel-nvvm-pipeline="chip=sm_90a cubin-arch=sm_90a ptxas-verbose=1" \
// RUN:   -mlir-print-op-on-diagnostic=false > %t.log 2>&1
// RUN: FileCheck %s < %t.log
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.log

// ptxas builds the extends' context kernel over pre-shuffled caches
// (llama3_8b's: GQA 32/8, head dim 128, blocks of 16; the producer at 56
// registers, the consumers at 224) without spilling.

// CHECK:       Compiling entry function 'context_shuffled' for 'sm_90a'
// CHECK:       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// NOSPILL-NOT: {{[1-9][0-9]* bytes (stack frame|spill)}}

func.func @context_shuffled(%q: memref<?x32x128xbf16>,
                            %kc: memref<?x8x16x16x8xbf16>,
                            %vc: memref<?x8x2x128x8xbf16>,
                            %bt: memref<?x?xi32>, %cu: memref<?xi32>,
                            %cl: memref<?xi32>,
                            %out: memref<?x?x32x128xf32>,
                            %lse: memref<?x32x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x32x128xbf16>)
      k_cache(%kc : memref<?x8x16x16x8xbf16>)
      v_cache(%vc : memref<?x8x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>)
      cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>)
      out(%out : memref<?x?x32x128xf32>) lse(%lse : memref<?x32x?xf32>)
      layout(shuffled) scale(%scale)
  return
}
