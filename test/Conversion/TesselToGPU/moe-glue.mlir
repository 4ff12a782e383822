// RUN: tessel-opt %s --tessel-to-gpu | FileCheck %s
// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx942 | FileCheck %s --check-prefix=CDNA

// The MoE routing glue. expert_histogram is one block of 1024 threads (32
// warps; 16 waves on CDNA) whatever T is: grid 1; expert_sort one such
// block per 8192 rows; nothing read on the host. moe_permute and moe_unpermute are copies: one lane per
// 16-byte chunk of a row, 256 lanes a block, a 1-D grid from the row count.

// Histogram (E = 128): a shared histogram [E] plus one i32 per warp for
// the scan (512 + 32 * 4 bytes). Zeroed by the first E threads, then every
// id counted with a shared atomic, four 16-byte loads of 4 ids in flight
// per thread (ids outside [0, E) fail one unsigned compare), then the
// R % 4 ids left over one each, then one block scan: counts and the
// inclusive ends, written by the first E threads.
// CHECK-LABEL: gpu.func @histogram(
// CHECK-SAME:    %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[T:.*]]: i64)
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 1024, 1, 1>,
// CHECK-SAME:    tessel.grid = [array<i64: -1, 1, 1, 1>, array<i64: -1, 1, 1, 1>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 640 : i64}
// CHECK:         %[[IDS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8xi32>
// CHECK:         %[[COUNTS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<128xi32>
// CHECK:         %[[ENDS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<128xi32>
// CHECK:         %[[SMEM:.*]] = gpu.dynamic_shared_memory
// CHECK:         %[[HIST:.*]] = memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128xi32, #gpu.address_space<workgroup>>
// CHECK:         %[[SCRATCH:.*]] = memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32xi32, #gpu.address_space<workgroup>>
// CHECK:         memref.store %{{.*}}, %[[HIST]][%{{.*}}]
// CHECK:         gpu.barrier
// CHECK:         %[[FLAT:.*]] = memref.reinterpret_cast %[[IDS]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x8xi32> to memref<?xi32>
// CHECK:         scf.for
// CHECK-COUNT-4:   vector.load %[[FLAT]][%{{.*}}] {alignment = 16 : i64} : memref<?xi32>, vector<4xi32>
// CHECK:           arith.cmpi ult, %{{.*}}, %c128_i32 : i32
// CHECK:           memref.atomic_rmw addi %{{.*}}, %[[HIST]][%{{.*}}] : (i32, memref<128xi32, #gpu.address_space<workgroup>>) -> i32
// CHECK-COUNT-15:  memref.atomic_rmw addi %{{.*}}, %[[HIST]]
// CHECK:         memref.load %[[FLAT]][%{{.*}}] : memref<?xi32>
// CHECK:         memref.atomic_rmw addi %{{.*}}, %[[HIST]]
// CHECK:         gpu.barrier
// CHECK:         memref.load %[[HIST]]
// CHECK:         gpu.shuffle up
// CHECK:         memref.store %{{.*}}, %[[SCRATCH]]
// CHECK:         gpu.barrier
// CHECK:         memref.store %{{.*}}, %[[COUNTS]][%{{.*}}] : memref<128xi32>
// CHECK-NEXT:    memref.store %{{.*}}, %[[ENDS]][%{{.*}}] : memref<128xi32>
// CHECK:         gpu.return
// 16 waves of 64 lanes on CDNA (512 + 16 * 4 bytes); a wave's scan is six
// DPP moves (row_shr 1, 2, 4, 8 = 0x111..0x118; row_bcast:15 = 0x142 into
// rows 1 and 3; row_bcast:31 = 0x143 into rows 2 and 3), lanes without a
// source getting the identity 0.
// CDNA-LABEL:  gpu.func @histogram(
// CDNA-SAME:     tessel.shared_bytes = 576 : i64}
// CDNA-NOT:      gpu.shuffle
// CDNA:          rocdl.update.dpp %[[ZERO:.*]], %{{.*}} with 273, 15, 15, false : i32
// CDNA:          rocdl.update.dpp %[[ZERO]], %{{.*}} with 274, 15, 15, false : i32
// CDNA:          rocdl.update.dpp %[[ZERO]], %{{.*}} with 276, 15, 15, false : i32
// CDNA:          rocdl.update.dpp %[[ZERO]], %{{.*}} with 280, 15, 15, false : i32
// CDNA:          rocdl.update.dpp %[[ZERO]], %{{.*}} with 322, 10, 15, false : i32
// CDNA:          rocdl.update.dpp %[[ZERO]], %{{.*}} with 323, 12, 15, false : i32
// CDNA-NOT:      gpu.shuffle
// CDNA:          gpu.return
func.func @histogram(%ids: memref<?x8xi32>, %counts: memref<128xi32>,
                     %offsets: memref<128xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>)
      counts(%counts : memref<128xi32>) group_offsets(%offsets : memref<128xi32>)
  return
}

// Sort (E = 256), grid ceil(T * 8 / 8192): a table [warps, E] of counters,
// the clamped ends [E], the counts before the block's rows [E] and the
// scan's scratch (34 * 1024 + 32 * 4 bytes). The block counts the ids
// before its rows (16-byte loads), each warp counts its segment into its
// row of the table; thread e max-scans the offsets into
// the clamped ends and makes its column the exclusive prefix over warps;
// then each warp ranks a warp width of rows per step: ceil(log2(E + 1)) = 9
// ballots match lanes of one expert, the group's first lane takes the
// group's base with one atomic add of its size (returning the old value),
// a shuffle hands it to the group, position = base + rank. Rows that are
// not placed get -1; finally -1 where no row went.
// CHECK-LABEL: gpu.func @sort(
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 1024, 1, 1>,
// CHECK-SAME:    tessel.grid = [array<i64: 0, 8, 0, 8192>, array<i64: -1, 1, 1, 1>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 34944 : i64}
// CHECK:         %[[OFFS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<256xi32>
// CHECK:         %[[SORTED:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         %[[TABLE:.*]] = memref.view %{{.*}} to memref<32x256xi32, #gpu.address_space<workgroup>>
// CHECK:         %[[GROUP_END:.*]] = memref.view %{{.*}} to memref<256xi32, #gpu.address_space<workgroup>>
// CHECK:         %[[BEFORE:.*]] = memref.view %{{.*}} to memref<256xi32, #gpu.address_space<workgroup>>
// CHECK:         %[[IDS:.*]] = memref.reinterpret_cast %{{.*}} : memref<?x8xi32> to memref<?xi32>
// CHECK:         %[[POS:.*]] = memref.reinterpret_cast %{{.*}} : memref<?x8xi32> to memref<?xi32>
// CHECK:         gpu.barrier
// Phase 0: the rows before the block's, four 16-byte loads in flight.
// CHECK:         scf.for
// CHECK-COUNT-4:   vector.load %[[IDS]]
// CHECK:           memref.atomic_rmw addi %{{.*}}, %[[BEFORE]][%{{.*}}]
// Phase 1: per-warp counts.
// CHECK:         scf.for
// CHECK-COUNT-4:   memref.load %[[IDS]]
// CHECK:           memref.atomic_rmw addi %{{.*}}, %[[TABLE]][%{{.*}}, %{{.*}}]
// CHECK:         gpu.barrier
// Phase 2: clamped ends (max-scan of max(0, offsets), min R), then the
// per-warp bases.
// CHECK:         memref.load %[[OFFS]]
// CHECK:         arith.maxsi
// CHECK:         gpu.shuffle up
// CHECK:         arith.maxsi
// CHECK:         arith.minsi
// CHECK:         memref.store %{{.*}}, %[[GROUP_END]]
// CHECK:         gpu.barrier
// CHECK:         memref.load %[[BEFORE]]
// CHECK:         scf.for {{.*}} iter_args
// CHECK:           memref.load %[[TABLE]]
// CHECK:           memref.store %{{.*}}, %[[TABLE]]
// CHECK:         gpu.barrier
// Phase 3: ranks by ballots, the group's base from one atomic.
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i32)
// CHECK:           memref.load %[[IDS]]
// CHECK-COUNT-9:   nvvm.vote.sync  ballot %{{.*}}, %{{.*}} -> i32
// CHECK-NOT:       nvvm.vote.sync
// CHECK:           llvm.intr.ctpop
// CHECK:           llvm.intr.ctpop
// CHECK:           llvm.intr.cttz
// CHECK:           scf.if %{{.*}} -> (i32) {
// CHECK-NEXT:        %[[OLD:.*]] = memref.atomic_rmw addi %{{.*}}, %[[TABLE]]
// CHECK-NEXT:        scf.yield %[[OLD]] : i32
// CHECK:           gpu.shuffle idx
// CHECK:           memref.load %[[GROUP_END]]
// CHECK:           arith.cmpi slt
// CHECK:           memref.store %{{.*}}, %[[POS]]
// CHECK:           memref.store %{{.*}}, %[[SORTED]]
// CHECK:         gpu.barrier
// Phase 4: -1 where no row went, by the last block.
// CHECK:         scf.if
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             memref.store %c-1_i32{{.*}}, %[[SORTED]]
// CHECK:         scf.for
// CHECK:           memref.store %c-1_i32{{.*}}, %[[SORTED]]
// CHECK:         gpu.return
// On CDNA, 16 waves of 64 lanes: the table is [16, E], ballots are i64.
// CDNA-LABEL:  gpu.func @sort(
// CDNA-SAME:     tessel.shared_bytes = 18496 : i64}
// CDNA:          memref.view %{{.*}} to memref<16x256xi32, #gpu.address_space<workgroup>>
// CDNA-COUNT-9:  rocdl.ballot %{{.*}} : i64
// CDNA:          llvm.intr.ctpop(%{{.*}}) : (i64) -> i64
func.func @sort(%ids: memref<?x8xi32>, %offsets: memref<256xi32>,
                %sorted: memref<?xi32>, %pos: memref<?x8xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
      group_offsets(%offsets : memref<256xi32>)
      sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>)
  return
}

// Permute (H = 2048 bf16: 256 chunks a row): grid ceil(R * 256 / 256) from R
// (symbol 1). The lane reads its row's entry, copies its chunk of x[row /
// topk] or stores zeros (a negative entry fails the unsigned compare).
// CHECK-LABEL: gpu.func @permute(
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 256, 1, 1>,
// CHECK-SAME:    tessel.grid = [array<i64: 1, 256, 0, 256>, array<i64: -1, 1, 1, 1>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 0 : i64}
// CHECK:         %[[X:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x2048xbf16>
// CHECK:         %[[ROWS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         %[[OUT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x2048xbf16>
// CHECK:         scf.if
// CHECK:           %[[ROW32:.*]] = memref.load %[[ROWS]]
// CHECK:           %[[ROW:.*]] = arith.index_cast %[[ROW32]] : i32 to index
// CHECK:           %[[VALID:.*]] = arith.cmpi ult, %[[ROW]], %{{.*}} : index
// CHECK:           %[[DATA:.*]] = scf.if %[[VALID]] -> (vector<8xbf16>) {
// CHECK:             %[[TOKEN:.*]] = arith.divui %[[ROW]], %c8
// CHECK:             vector.load %[[X]][%[[TOKEN]], %{{.*}}] {alignment = 16 : i64} : memref<?x2048xbf16>, vector<8xbf16>
// CHECK:           } else {
// CHECK:             arith.constant dense<0.000000e+00> : vector<8xbf16>
// CHECK:           vector.store %[[DATA]], %[[OUT]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x2048xbf16>, vector<8xbf16>
// CHECK-NOT:     gpu.dynamic_shared_memory
// CHECK:         gpu.return
func.func @permute(%x: memref<?x2048xbf16>, %sorted: memref<?xi32>,
                   %out: memref<?x2048xbf16>) {
  tessel.moe_permute x(%x : memref<?x2048xbf16>)
      sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x2048xbf16>)
      {topk = 8 : i64}
  return
}

// Unpermute (H = 2048 bf16, k = 8, f32 weights): grid from T (symbol 1).
// The token's positions and weights as two 16-byte loads each; with rows
// in y, all 8 chunk loads first (a position outside y reads row 0), then
// the f32 sum in slot order, each term dropped by a select where its
// position is outside y.
// CHECK-LABEL: gpu.func @unpermute(
// CHECK-SAME:    kernel attributes {known_block_size = array<i32: 256, 1, 1>,
// CHECK-SAME:    tessel.grid = [array<i64: 1, 256, 0, 256>, array<i64: -1, 1, 1, 1>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 0 : i64}
// CHECK:         %[[Y:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x2048xbf16>
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8xi32>
// CHECK:         %[[W:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8xf32>
// CHECK:         %[[OUT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x2048xbf16>
// CHECK:         scf.if
// CHECK-COUNT-2:   vector.load %[[P]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x8xi32>, vector<4xi32>
// CHECK-COUNT-2:   vector.load %[[W]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x8xf32>, vector<4xf32>
// CHECK:           %[[SUM:.*]] = scf.if %{{.*}} -> (vector<8xf32>) {
// CHECK-COUNT-8:     vector.load %[[Y]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x2048xbf16>, vector<8xbf16>
// CHECK-NOT:         vector.load
// CHECK:             arith.mulf
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        arith.select
// CHECK-COUNT-7:     arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:           } else {
// CHECK:           %[[OUT_BF16:.*]] = arith.truncf %[[SUM]] : vector<8xf32> to vector<8xbf16>
// CHECK:           vector.store %[[OUT_BF16]], %[[OUT]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x2048xbf16>, vector<8xbf16>
// CHECK-NOT:     memref.atomic_rmw
// CHECK:         gpu.return
func.func @unpermute(%y: memref<?x2048xbf16>, %pos: memref<?x8xi32>,
                     %w: memref<?x8xf32>, %out: memref<?x2048xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x2048xbf16>)
      row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xf32>)
      out(%out : memref<?x2048xbf16>)
  return
}

// f32 rows (4-element chunks), k = 6: 24-byte rows of positions and
// weights, read one element at a time.
// CHECK-LABEL: gpu.func @unpermute_f32_k6(
// CHECK-SAME:    tessel.grid = [array<i64: 1, 16, 0, 256>,
// CHECK:         scf.if
// CHECK-COUNT-6:   memref.load %{{.*}} : memref<?x6xi32>
// CHECK-COUNT-6:   memref.load %{{.*}} : memref<?x6xf32>
// CHECK:           scf.if %{{.*}} -> (vector<4xf32>) {
// CHECK-COUNT-6:     vector.load %{{.*}} {alignment = 16 : i64} : memref<?x64xf32>, vector<4xf32>
// CHECK:           vector.store %{{.*}} {alignment = 16 : i64} : memref<?x64xf32>, vector<4xf32>
func.func @unpermute_f32_k6(%y: memref<?x64xf32>, %pos: memref<?x6xi32>,
                            %w: memref<?x6xf32>, %out: memref<?x64xf32>) {
  tessel.moe_unpermute y(%y : memref<?x64xf32>)
      row_positions(%pos : memref<?x6xi32>) weights(%w : memref<?x6xf32>)
      out(%out : memref<?x64xf32>)
  return
}

// Weights of y's element type (bf16, k = 8: one 16-byte load), widened to
// f32 for the sum.
// CHECK-LABEL: gpu.func @unpermute_bf16_weights(
// CHECK:         vector.load %{{.*}} {alignment = 16 : i64} : memref<?x8xbf16>, vector<8xbf16>
// CHECK:         arith.extf %{{.*}} : bf16 to f32
func.func @unpermute_bf16_weights(%y: memref<?x128xbf16>, %pos: memref<?x8xi32>,
                                  %w: memref<?x8xbf16>, %out: memref<?x128xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x128xbf16>)
      row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xbf16>)
      out(%out : memref<?x128xbf16>)
  return
}
