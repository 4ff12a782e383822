// RUN: tessel-opt %s --tessel-to-gpu | FileCheck %s
// RUN: tessel-opt %s --tessel-to-gpu=stages=2 | FileCheck %s --check-prefix=TWO

// The reference MoE gate/up projection: one gpu.module per kernel, the
// runtime's parameters (4 data pointers, then T), A/B rings in dynamic shared
// memory (default tile 64x256x32, 1x4 warps, 4 stages), launch geometry
// grid = (ceil(N/256), ceil((T + 129 * 63) / 64)).

// CHECK:       module attributes {gpu.container_module}
// CHECK-LABEL: gpu.module @moe_gate
// CHECK:       gpu.func @moe_gate(%[[A:.*]]: !llvm.ptr, %[[B:.*]]: !llvm.ptr, %[[G:.*]]: !llvm.ptr, %[[C:.*]]: !llvm.ptr, %[[T:.*]]: i64)
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 128, 1, 1>,
// CHECK-SAME:    tessel.grid = [array<i64: -1, 1, 1024, 256>, array<i64: 0, 1, 8127, 64>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 81920 : i64}
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x2048xbf16>
// CHECK:         %[[SMEM:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK:         %[[SA:.*]] = memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x64x32xbf16, #gpu.address_space<workgroup>>
// CHECK:         %[[SB:.*]] = memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x256x32xbf16, #gpu.address_space<workgroup>>
// The block finds its group on the device: a warp-wide scan of the offsets.
// CHECK:         gpu.block_id  y
// CHECK:         scf.for
// CHECK:           memref.load %{{.*}} : memref<128xi32>
// CHECK:           gpu.shuffle  up
// CHECK:           gpu.shuffle  xor
// CHECK:           gpu.shuffle  idx
// CHECK:         scf.if
// Prologue: stages - 1 tiles of A and B (2 + 8 zero-filling 16-byte copies
// per thread), each its own group.
// CHECK-COUNT-2: nvgpu.device_async_copy %{{.*}}, %[[SA]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2048xbf16> to memref<4x64x32xbf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-8: nvgpu.device_async_copy %{{.*}}, %[[SB]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<128x1024x2048xbf16> to memref<4x256x32xbf16, #gpu.address_space<workgroup>>
// CHECK:         nvvm.cp.async.commit.group
// Main loop: accumulators (4x8 atoms x 4 fp32) carried in registers.
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// CHECK-COUNT-127: %{{[^,]*}} = %{{[^,]*}},
// CHECK-SAME:      %{{[^,]*}} = %{{[^)]*}}) -> (f32,
// One barrier per K-tile: wait for tile kt, then refill the stage of kt-1.
// CHECK:           nvvm.cp.async.wait.group 2
// CHECK-NEXT:      gpu.barrier
// CHECK:           scf.if
// CHECK-COUNT-10:    nvgpu.device_async_copy
// CHECK:           nvvm.cp.async.commit.group
// CHECK:           nvgpu.ldmatrix %[[SA]][{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<4x64x32xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK:           nvgpu.ldmatrix %[[SB]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK:           nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-NOT:       gpu.barrier
// CHECK:           scf.yield
// Predicated epilogue: bf16 pairs, rows below the tile's group end.
// CHECK:         arith.cmpi slt
// CHECK-NEXT:    scf.if
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:           vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<?x1024xbf16>, vector<2xbf16>
// CHECK-NOT:     func.func

// TWO:         tessel.shared_bytes = 40960 : i64
// TWO:         memref<2x64x32xbf16, #gpu.address_space<workgroup>>
// TWO:         nvvm.cp.async.wait.group 0
func.func @moe_gate(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}

// A static T is part of the grid's constant; N below the tile masks columns.
// A kernel may override the tile configuration (here 64x256x64, 2 stages).
// CHECK-LABEL: gpu.func @static_rows
// CHECK-SAME:    tessel.grid = [array<i64: -1, 1, 200, 256>, array<i64: -1, 1, 758, 64>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 81920 : i64
// CHECK:         memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK:         memref<2x256x64xbf16, #gpu.address_space<workgroup>>
// CHECK:         arith.cmpi slt, %{{.*}}, %{{.*}} : index
func.func @static_rows(%a: memref<254x72xbf16>, %b: memref<7x200x72xbf16>,
                       %g: memref<7xi32>, %c: memref<254x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<254x72xbf16>)
      b(%b : memref<7x200x72xbf16>) group_offsets(%g : memref<7xi32>)
      c(%c : memref<254x200xbf16>)
      {trans_b, tessel.gpu_tile = {tile_k = 64, stages = 2}}
  return
}

// Without trans_b (the MoE dgrad of down: b [E, K, N]) the B ring is staged
// N-contiguous, [stages, tile_k, tile_n], by 16-byte copies of b's rows, and
// the B fragments come from ldmatrix .trans.
// CHECK-LABEL: gpu.func @moe_down_dgrad
// CHECK-SAME:    tessel.grid = [array<i64: -1, 1, 512, 256>, array<i64: 0, 1, 8127, 64>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 81920 : i64
// CHECK:         %[[DA:.*]] = memref.view %{{.*}} to memref<4x64x32xbf16, #gpu.address_space<workgroup>>
// CHECK:         %[[DB:.*]] = memref.view %{{.*}} to memref<4x32x256xbf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-2: nvgpu.device_async_copy %{{.*}}, %[[DA]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x2048xbf16> to memref<4x64x32xbf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-8: nvgpu.device_async_copy %{{.*}}, %[[DB]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<128x2048x512xbf16> to memref<4x32x256xbf16, #gpu.address_space<workgroup>>
// CHECK:         scf.for
// CHECK:           nvgpu.ldmatrix %[[DA]][{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK:           nvgpu.ldmatrix %[[DB]][{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<4x32x256xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK:           nvvm.mma.sync
func.func @moe_down_dgrad(%a: memref<?x2048xbf16>,
                          %b: memref<128x2048x512xbf16>,
                          %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x2048x512xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x512xbf16>)
  return
}

// A pointer-table b: a block of a real group (not the zero tail) reads its
// group's address and wraps it as a b_shape memref, which the copies read
// like a stacked slice.
// CHECK-LABEL: gpu.func @table_trans_b
// CHECK:         %[[TABLE:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<8xi64>
// CHECK:         %[[TB:.*]] = memref.view %{{.*}} to memref<4x256x32xbf16, #gpu.address_space<workgroup>>
// CHECK:         scf.if
// CHECK:           %[[ADDR:.*]] = memref.load %[[TABLE]][%{{.*}}] : memref<8xi64>
// CHECK-NEXT:      %[[PTR:.*]] = llvm.inttoptr %[[ADDR]] : i64 to !llvm.ptr
// CHECK:           %[[MAT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<200x72xbf16>
// CHECK:           nvgpu.device_async_copy %[[MAT]][%{{.*}}, %{{.*}}], %[[TB]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<200x72xbf16> to memref<4x256x32xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.ldmatrix %[[TB]][{{.*}}] {numTiles = 4 : i32, transpose = false}
func.func @table_trans_b(%a: memref<?x72xbf16>, %b: memref<8xi64>,
                         %g: memref<8xi32>, %c: memref<?x200xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x72xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x200xbf16>)
      {trans_b, b_shape = array<i64: 200, 72>}
  return
}

// A pointer table of [K, N] matrices: both changes at once.
// CHECK-LABEL: gpu.func @table_dgrad
// CHECK:         %[[PB:.*]] = memref.view %{{.*}} to memref<4x32x256xbf16, #gpu.address_space<workgroup>>
// CHECK:           llvm.inttoptr
// CHECK:           %[[PMAT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<64x128xbf16>
// CHECK:           nvgpu.device_async_copy %[[PMAT]][%{{.*}}, %{{.*}}], %[[PB]][{{.*}}], 8, %{{.*}} {bypassL1} : memref<64x128xbf16> to memref<4x32x256xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.ldmatrix %[[PB]][{{.*}}] {numTiles = 4 : i32, transpose = true}
func.func @table_dgrad(%a: memref<?x64xbf16>, %b: memref<8xi64>,
                       %g: memref<8xi32>, %c: memref<?x128xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x64xbf16>) b(%b : memref<8xi64>)
      group_offsets(%g : memref<8xi32>) c(%c : memref<?x128xbf16>)
      {b_shape = array<i64: 64, 128>}
  return
}
