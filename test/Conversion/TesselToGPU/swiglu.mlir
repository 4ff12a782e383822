// RUN: tessel-opt %s --tessel-to-gpu | FileCheck %s
// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx942 | FileCheck %s --check-prefix=CDNA

// tessel.swiglu: one lane per 16-byte chunk of act (I = 512 bf16: 64 chunks
// a row), 256 lanes a block, grid ceil(R * 64 / 256); gate and up read as
// the two column halves of h, or h[0] and h[1].
// CHECK-LABEL: gpu.func @swiglu(
// CHECK-SAME:    known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME:    tessel.grid = [array<i64: 0, 64, 0, 256>,
// CHECK:         vector.load %{{.*}}[%[[P:.*]], %[[COL:.*]]] {{.*}} : memref<?x1024xbf16>, vector<8xbf16>
// CHECK:         %[[UP:.*]] = arith.addi %[[COL]], %c512
// CHECK:         vector.load %{{.*}}[%[[P]], %[[UP]]] {{.*}} : memref<?x1024xbf16>, vector<8xbf16>
// CHECK-COUNT-8: arith.divf
// CHECK:         vector.store %{{.*}}[%[[P]], %[[COL]]] {{.*}} : memref<?x512xbf16>, vector<8xbf16>
func.func @swiglu(%h: memref<?x1024xbf16>, %a: memref<?x512xbf16>) {
  tessel.swiglu h(%h : memref<?x1024xbf16>) act(%a : memref<?x512xbf16>)
  return
}

// CHECK-LABEL: gpu.func @swiglu_parts(
// CHECK:         vector.load %{{.*}}[%c0{{.*}}, %[[P:.*]], %[[COL:.*]]] {{.*}} : memref<2x?x128xf32>, vector<4xf32>
// CHECK:         vector.load %{{.*}}[%c1{{.*}}, %[[P]], %[[COL]]] {{.*}} : memref<2x?x128xf32>, vector<4xf32>
func.func @swiglu_parts(%h: memref<2x?x128xf32>, %a: memref<?x128xf32>) {
  tessel.swiglu h(%h : memref<2x?x128xf32>) act(%a : memref<?x128xf32>)
  return
}

// tessel.swiglu_backward: one warp per sorted row (8 a block; 4 waves of
// 64 on CDNA), grid T * k / 8 (R = T * k). The row's weight from its
// sorted_rows entry (made warp-uniform), the chunks walked at a stride of
// a warp of chunks, <grad, act> kept per lane and summed by a shuffle tree
// of log2(warp) steps; lane 0 stores it and zeroes a dropped slot.
// CHECK-LABEL: gpu.func @swiglu_backward(
// CHECK-SAME:    known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME:    tessel.grid = [array<i64: 0, 8, 0, 8>,
// CHECK:         gpu.shuffle  idx
// CHECK:         %[[R:.*]] = memref.load %{{.*}}[%[[P:.*]]] : memref<?xi32>
// CHECK:         memref.load %{{.*}} : memref<?x8xf32>
// CHECK:         scf.for %[[COL:.*]] = %{{.*}} to %c512 step %c256 iter_args
// CHECK-COUNT-3:   vector.load
// CHECK-COUNT-8:   arith.divf
// CHECK-COUNT-3:   vector.store
// CHECK:           scf.yield
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK:         memref.store %{{.*}} : memref<?x8xf32>
// CHECK:         memref.load %{{.*}} : memref<?x8xi32>
// CHECK:         memref.store %{{.*}} : memref<?x8xf32>
// CDNA-LABEL:    gpu.func @swiglu_backward(
// CDNA-SAME:     tessel.grid = [array<i64: 0, 8, 0, 4>,
// CDNA:          scf.for %{{.*}} = %{{.*}} to %c512 step %c512{{.*}} iter_args
// CDNA-COUNT-4:  rocdl.update.dpp
// CDNA-COUNT-2:  gpu.shuffle  xor
func.func @swiglu_backward(%g: memref<?x512xbf16>, %h: memref<?x1024xbf16>, %w: memref<?x8xf32>, %s: memref<?xi32>, %p: memref<?x8xi32>, %dh: memref<?x1024xbf16>, %aw: memref<?x512xbf16>, %dw: memref<?x8xf32>) {
  tessel.swiglu_backward grad(%g : memref<?x512xbf16>) h(%h : memref<?x1024xbf16>) topk_weights(%w : memref<?x8xf32>) sorted_rows(%s : memref<?xi32>) row_positions(%p : memref<?x8xi32>) dh(%dh : memref<?x1024xbf16>) act_weighted(%aw : memref<?x512xbf16>) d_topk_weights(%dw : memref<?x8xf32>)
  return
}
