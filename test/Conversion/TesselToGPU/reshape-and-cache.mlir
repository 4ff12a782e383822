// RUN: tessel-opt %s --tessel-to-gpu | FileCheck %s

// reshape_and_cache: one lane per 16-byte chunk of a new token's K row
// (Hkv * Dk / 8 chunks) then V row; 256 lanes a block; a 1-D grid of
// ceil(T * chunks per token / 256) blocks from T (symbol 0) alone. A lane
// reads its token's slot and skips a negative one or one past the NB * BS
// slots of the cache (one unsigned compare of the sign-extended slot).

// nhd (Llama-3 8B: 8 KV heads of 128, BS 16): 256 chunks a token, 16-byte
// loads and 16-byte stores at [block, offset, head, d].
// CHECK-LABEL: gpu.func @llama3_nhd(
// CHECK-SAME:    %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[T:.*]]: i64, %[[NB:.*]]: i64)
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 256, 1, 1>,
// CHECK-SAME:    tessel.grid = [array<i64: 0, 256, 0, 256>, array<i64: -1, 1, 1, 1>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 0 : i64}
// CHECK:         %[[K:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8x128xbf16>
// CHECK:         %[[V:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8x128xbf16>
// CHECK:         %[[KC:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x16x8x128xbf16>
// CHECK:         %[[VC:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x16x8x128xbf16>
// CHECK:         %[[SLOTS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         %[[TOKEN:.*]] = arith.divui
// CHECK:         %[[TOKENS:.*]] = memref.dim %[[K]]
// CHECK:         %[[IN_T:.*]] = arith.cmpi slt, %[[TOKEN]], %[[TOKENS]] : index
// CHECK:         scf.if %[[IN_T]] {
// CHECK:           %[[SLOT32:.*]] = memref.load %[[SLOTS]][%[[TOKEN]]] : memref<?xi32>
// CHECK:           %[[SLOT:.*]] = arith.index_cast %[[SLOT32]] : i32 to index
// CHECK:           memref.dim %[[KC]]
// CHECK:           %[[IN_CACHE:.*]] = arith.cmpi ult, %[[SLOT]], %{{.*}} : index
// CHECK:           scf.if %[[IN_CACHE]] {
// CHECK:             %[[IS_K:.*]] = arith.cmpi slt, %{{.*}}, %c128 : index
// CHECK:             scf.if %[[IS_K]] {
// CHECK:               %[[KX:.*]] = vector.load %[[K]][%[[TOKEN]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK-NEXT:          vector.store %[[KX]], %[[KC]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x16x8x128xbf16>, vector<8xbf16>
// CHECK-NEXT:        } else {
// CHECK:               %[[VX:.*]] = vector.load %[[V]][%[[TOKEN]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK-NEXT:          vector.store %[[VX]], %[[VC]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x16x8x128xbf16>, vector<8xbf16>
// CHECK-NOT:     gpu.dynamic_shared_memory
// CHECK:         gpu.return
func.func @llama3_nhd(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                      %kc: memref<?x16x8x128xbf16>,
                      %vc: memref<?x16x8x128xbf16>, %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>)
      v_cache(%vc : memref<?x16x8x128xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(nhd)
  return
}

// Shuffled (x = 8): K [NB, Hkv, Dk/8, BS, 8] takes the chunk whole at
// [block, head, chunk, offset, 0]; V [NB, Hkv, BS/8, Dv, 8] takes its 8
// elements one by one at [block, head, offset / 8, d + e, offset % 8].
// CHECK-LABEL: gpu.func @llama3_shuffled(
// CHECK-SAME:    tessel.grid = [array<i64: 0, 256, 0, 256>,
// CHECK:         %[[SK:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8x16x16x8xbf16>
// CHECK:         %[[SV:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8x2x128x8xbf16>
// CHECK:         scf.if %{{.*}} {
// CHECK:           vector.load %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK:           %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      vector.store %{{.*}}, %[[SK]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]]] {alignment = 16 : i64} : memref<?x8x16x16x8xbf16>, vector<8xbf16>
// CHECK-NEXT:    } else {
// CHECK:           %[[SVX:.*]] = vector.load %{{.*}} : memref<?x8x128xbf16>, vector<8xbf16>
// CHECK:           vector.extract %[[SVX]][0] : bf16 from vector<8xbf16>
// CHECK-NEXT:      memref.store %{{.*}}, %[[SV]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x8x2x128x8xbf16>
// CHECK-COUNT-7:   memref.store %{{.*}}, %[[SV]]
func.func @llama3_shuffled(%k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>,
                           %kc: memref<?x8x16x16x8xbf16>,
                           %vc: memref<?x8x2x128x8xbf16>,
                           %slots: memref<?xi32>) {
  tessel.reshape_and_cache k(%k : memref<?x8x128xbf16>)
      v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>)
      v_cache(%vc : memref<?x8x2x128x8xbf16>)
      slot_mapping(%slots : memref<?xi32>) layout(shuffled)
  return
}

// f32 (x = 4) with distinct K and V head dims: 2 * (64 + 32) / 4 = 48
// chunks a token; a static T is part of the grid's constant.
// CHECK-LABEL: gpu.func @f32_static(
// CHECK-SAME:    tessel.grid = [array<i64: -1, 1, 240, 256>,
// CHECK:         vector.store %{{.*}} {alignment = 16 : i64} : memref<?x2x16x32x4xf32>, vector<4xf32>
// CHECK-COUNT-4: memref.store %{{.*}} : memref<?x2x8x32x4xf32>
func.func @f32_static(%k: memref<5x2x64xf32>, %v: memref<5x2x32xf32>,
                      %kc: memref<?x2x16x32x4xf32>,
                      %vc: memref<?x2x8x32x4xf32>, %slots: memref<5xi32>) {
  tessel.reshape_and_cache k(%k : memref<5x2x64xf32>)
      v(%v : memref<5x2x32xf32>) k_cache(%kc : memref<?x2x16x32x4xf32>)
      v_cache(%vc : memref<?x2x8x32x4xf32>)
      slot_mapping(%slots : memref<5xi32>) layout(shuffled)
  return
}
