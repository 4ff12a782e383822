// RUN: tessel-opt %s --tessel-to-gpu | FileCheck %s
// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx942 | FileCheck %s --check-prefix=CDNA

// LSE merges: one lane per 16-byte chunk of a (token, head) row (16 lanes of
// a 128-wide bf16 row), 256 lanes a block, a 1-D grid of ceil(T * H / rows
// per block) blocks from T alone, no shared memory.

// The extend merge of the default set: f32 partials, bf16 out, with lse_out.
// Chunks are 8 elements (16 bytes of bf16), so each f32 partial is read as
// two 16-byte loads. Every load is issued before any is used: both
// partials' chunks, then the LSEs (by every lane of the row: lanes past the
// last row read the last row and store nothing).
// CHECK-LABEL: gpu.func @merge_f32_bf16(
// CHECK-SAME:    %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[T:.*]]: i64)
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 256, 1, 1>,
// CHECK-SAME:    tessel.grid = [array<i64: 0, 32, 0, 16>, array<i64: -1, 1, 1, 1>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 0 : i64}
// CHECK:         %[[OA:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x32x128xf32>
// CHECK:         %[[LA:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<32x?xf32>
// CHECK:         %[[OB:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x32x128xf32>
// CHECK:         %[[LB:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<32x?xf32>
// CHECK:         %[[OUT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x32x128xbf16>
// CHECK:         %[[LO:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<32x?xf32>
// CHECK:         gpu.thread_id x
// CHECK:         gpu.block_id x
// CHECK:         %[[ROW_OK:.*]] = arith.cmpi slt
// CHECK:         arith.minui
// CHECK:         scf.if %[[ROW_OK]] -> (vector<8xf32>, vector<8xf32>) {
// CHECK:           vector.load %[[OA]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf32>, vector<4xf32>
// CHECK:           vector.load %[[OA]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf32>, vector<4xf32>
// CHECK:           vector.shuffle
// CHECK:           vector.load %[[OB]]
// CHECK:       } else {
// CHECK:         memref.load %[[LA]]
// CHECK:         memref.load %[[LB]]
// lse_out may alias lse_a: every lane takes the row's first lane's LSEs by
// a shuffle (+inf is an empty partial: -inf), and only that lane stores.
// CHECK:         gpu.shuffle idx
// CHECK:         arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK:         gpu.shuffle idx
// exp through the hardware's exp2; empty partials dropped by select.
// CHECK:         arith.maximumf
// CHECK:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%{{.*}}) : (f32) -> f32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:         arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:         arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:         scf.if %[[ROW_OK]] {
// CHECK-NEXT:      arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK-NEXT:      vector.store %{{.*}}, %[[OUT]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x32x128xbf16>, vector<8xbf16>
// CHECK:         %[[LEADER:.*]] = arith.andi %[[ROW_OK]], %{{.*}} : i1
// CHECK:         scf.if %[[LEADER]] {
// CHECK-NEXT:      llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK:           memref.store %{{.*}}, %[[LO]]
// CHECK-NOT:     gpu.dynamic_shared_memory
// CHECK:         gpu.return

// On CDNA the same kernel takes exp2 and log2 from rocdl (v_exp/v_log_f32).
// CDNA-LABEL:  gpu.func @merge_f32_bf16(
// CDNA-SAME:     tessel.grid = [array<i64: 0, 32, 0, 16>,
// CDNA:          gpu.shuffle idx %{{.*}}, %{{.*}}, %{{.*}} : f32
// CDNA:          rocdl.exp2
// CDNA:          rocdl.log
func.func @merge_f32_bf16(%oa: memref<?x32x128xf32>, %la: memref<32x?xf32>,
                          %ob: memref<?x32x128xf32>, %lb: memref<32x?xf32>,
                          %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x32x128xf32>, %la : memref<32x?xf32>)
      b(%ob : memref<?x32x128xf32>, %lb : memref<32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}

// All f32: chunks of 4, 32 lanes a row (8 rows a block); no lse_out.
// CHECK-LABEL: gpu.func @merge_f32
// CHECK-SAME:    tessel.grid = [array<i64: 0, 8, 0, 8>,
// CHECK:         vector.load %{{.*}} {alignment = 16 : i64} : memref<?x8x128xf32>, vector<4xf32>
// CHECK:         vector.store %{{.*}} {alignment = 16 : i64} : memref<?x8x128xf32>, vector<4xf32>
// CHECK-NOT:     memref.store
// CHECK:         gpu.return
func.func @merge_f32(%oa: memref<?x8x128xf32>, %la: memref<8x?xf32>,
                     %ob: memref<?x8x128xf32>, %lb: memref<8x?xf32>,
                     %out: memref<?x8x128xf32>) {
  tessel.lse_merge a(%oa : memref<?x8x128xf32>, %la : memref<8x?xf32>)
      b(%ob : memref<?x8x128xf32>, %lb : memref<8x?xf32>)
      out(%out : memref<?x8x128xf32>)
  return
}

// Rows longer than a warp (MLA's 512): on sm80 each lane takes 2 chunks of
// a 32-lane row (8 rows a block); on CDNA a 64-lane wave holds the row's 64
// chunks (4 rows a block).
// CHECK-LABEL: gpu.func @merge_mla
// CHECK-SAME:    tessel.grid = [array<i64: 0, 16, 0, 8>,
// CHECK-COUNT-2: vector.store %{{.*}} : memref<?x16x512xbf16>, vector<8xbf16>
// CDNA-LABEL:  gpu.func @merge_mla
// CDNA-SAME:     tessel.grid = [array<i64: 0, 16, 0, 4>,
// CDNA-COUNT-1:  vector.store %{{.*}} : memref<?x16x512xbf16>, vector<8xbf16>
// CDNA-NOT:      vector.store
// CDNA:          gpu.return
func.func @merge_mla(%oa: memref<?x16x512xbf16>, %la: memref<16x?xf32>,
                     %ob: memref<?x16x512xbf16>, %lb: memref<16x?xf32>,
                     %out: memref<?x16x512xbf16>) {
  tessel.lse_merge a(%oa : memref<?x16x512xbf16>, %la : memref<16x?xf32>)
      b(%ob : memref<?x16x512xbf16>, %lb : memref<16x?xf32>)
      out(%out : memref<?x16x512xbf16>)
  return
}

// A static T is part of the grid's constant (7 * 4 rows); 96 = 12 chunks
// of a 16-lane row: lanes 12-15 idle.
// CHECK-LABEL: gpu.func @merge_static
// CHECK-SAME:    tessel.grid = [array<i64: -1, 1, 28, 16>,
// CHECK:         %[[C12:.*]] = arith.constant 12 : index
// CHECK:         arith.cmpi slt, %{{.*}}, %[[C12]] : index
func.func @merge_static(%oa: memref<7x4x96xf16>, %la: memref<4x7xf32>,
                        %ob: memref<7x4x96xf16>, %lb: memref<4x7xf32>,
                        %out: memref<7x4x96xf16>) {
  tessel.lse_merge a(%oa : memref<7x4x96xf16>, %la : memref<4x7xf32>)
      b(%ob : memref<7x4x96xf16>, %lb : memref<4x7xf32>)
      out(%out : memref<7x4x96xf16>)
  return
}

// Split-KV merge: P (symbol 0) partials folded online in one pass, 4 a
// loop step: the step loads the next step's 4 LSEs and its own 4 chunks
// (an empty partial's loads go to partial 0's chunk), then folds them with
// one rescale. P = 0 reads nothing. The grid depends on T (symbol 1) only.
// CHECK-LABEL: gpu.func @merge_n(
// CHECK-SAME:    %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[P:.*]]: i64, %[[TN:.*]]: i64)
// CHECK-SAME:    tessel.grid = [array<i64: 1, 32, 0, 16>,
// CHECK:         %[[PARTS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x?x32x128xf32>
// CHECK:         %[[PLSE:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x32x?xf32>
// CHECK:         memref.dim %[[PARTS]], %{{.*}} : memref<?x?x32x128xf32>
// CHECK:         %[[NP:.*]] = memref.dim %[[PARTS]], %{{.*}} : memref<?x?x32x128xf32>
// CHECK:         %[[ANY:.*]] = arith.cmpi slt, %{{.*}}, %[[NP]] : index
// CHECK:         scf.if %[[ANY]] -> (f32, f32, vector<8xf32>) {
// CHECK-COUNT-4:   memref.load %[[PLSE]]
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (f32, f32, vector<8xf32>, f32, f32, f32, f32) {
// CHECK-COUNT-4:     memref.load %[[PLSE]]
// CHECK:             arith.cmpf ogt
// CHECK:             %[[FROM:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK:             vector.load %[[PARTS]][%[[FROM]], %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x32x128xf32>, vector<4xf32>
// CHECK-COUNT-7:     vector.load %[[PARTS]]
// CHECK:             arith.maximumf
// CHECK:             llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK-COUNT-4:     llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK:             scf.yield
// Every partial empty: out = 0 and lse_out = -inf.
// CHECK:         arith.divf
// CHECK:         arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:         vector.store %{{.*}} : memref<?x32x128xbf16>, vector<8xbf16>
// CHECK:         llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// CHECK:         memref.store
func.func @merge_n(%p: memref<?x?x32x128xf32>, %pl: memref<?x32x?xf32>,
                   %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>) {
  tessel.lse_merge_n partials(%p : memref<?x?x32x128xf32>,
                              %pl : memref<?x32x?xf32>)
      out(%out : memref<?x32x128xbf16>) lse_out(%lse : memref<32x?xf32>)
  return
}
