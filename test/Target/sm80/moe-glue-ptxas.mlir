// REQUIRES: ptxas
// RUN: tessel-opt %s --tessel-nvvm-pipeline=ptxas-verbose=1 \
// RUN:   -mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// ptxas (sm_90, the H200) builds the MoE glue without local memory: the
// 1024-thread routing blocks stay within their 64 registers a thread.

// CHECK:     Compiling entry function 'histogram' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Compiling entry function 'sort' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Compiling entry function 'permute' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK:     Compiling entry function 'unpermute' for 'sm_90'
// CHECK:     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @histogram(%ids: memref<?x8xi32>, %counts: memref<256xi32>,
                     %offsets: memref<256xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>)
      counts(%counts : memref<256xi32>) group_offsets(%offsets : memref<256xi32>)
  return
}

func.func @sort(%ids: memref<?x8xi32>, %offsets: memref<256xi32>,
                %sorted: memref<?xi32>, %pos: memref<?x8xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
      group_offsets(%offsets : memref<256xi32>)
      sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>)
  return
}

func.func @permute(%x: memref<?x7168xbf16>, %sorted: memref<?xi32>,
                   %out: memref<?x7168xbf16>) {
  tessel.moe_permute x(%x : memref<?x7168xbf16>)
      sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x7168xbf16>)
      {topk = 8 : i64}
  return
}

func.func @unpermute(%y: memref<?x7168xbf16>, %pos: memref<?x8xi32>,
                     %w: memref<?x8xf32>, %out: memref<?x7168xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x7168xbf16>)
      row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xf32>)
      out(%out : memref<?x7168xbf16>)
  return
}
