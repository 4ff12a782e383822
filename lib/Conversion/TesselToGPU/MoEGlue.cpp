//===- MoEGlue.cpp - MoE routing glue kernel templates --------------------===//
//
// tessel.expert_histogram, tessel.expert_sort, tessel.moe_permute and
// tessel.moe_unpermute: the glue between a router's top-k ids and the
// grouped matmuls. docs/dialect.md defines them; MoEToLoops.cpp (host) is
// the oracle, including what happens to ids outside [0, E), positions
// outside y and group offsets that do not match the ids (clamped like
// grouped_matmul's, so that nothing is written out of bounds).
//
// Work decomposition.
//
// Routing (histogram, sort) is one launch each of blocks of 1024 threads
// (32 warps on NVIDIA, 16 waves of 64 on CDNA) with no grid-wide barrier,
// and nothing is read on the host (CUDA-graph capturable). Every output
// element is written by the kernel whatever the buffers held before (T = 0
// included: the histogram then writes zeros). E is static and at most 1024
// (a thread per expert in the scans).
//
// expert_histogram: ONE block, grid 1 whatever T is (every count needs
// every id). It zeroes a shared-memory histogram [E], adds every id with a
// shared-memory atomic (integer adds: the result does not depend on their
// order) while striding over the R ids in 16-byte loads (four per thread
// in flight; the R % 4 left over one each), then one block-wide scan (warp
// shuffle scans, one total per warp in shared memory) writes counts[e] and
// the inclusive ends group_offsets[e]. One SM's bandwidth: 20 us at R =
// 256K on the H200.
//
// expert_sort: stable, deterministic, O(R) work per block in five phases
// separated by block barriers. Block b owns the rows [8192 b, 8192 (b +
// 1)), cut into one contiguous segment per warp (a multiple of the warp
// width each, in row order).
//  0. The block counts the ids of every row before its own (as the
//     histogram does) into a shared `before` [E]: each block reads the ids
//     in front of it instead of waiting for other blocks (R^2 / 16K reads
//     in all, from L2; the last block reads R ids).
//  1. Each warp counts the ids of its segment per expert into its own row
//     of a shared table [warps, E] (shared atomics).
//  2. Thread e clamps the group ends like the host (end_e = min(R,
//     max(0, offsets[0..e])), a block max-scan; begin_e = end_{e-1}) and
//     turns its column of the table into the exclusive prefix over warps:
//     table[w][e] = begin_e + before[e] + rows of expert e in segments
//     before w.
//  3. Each warp walks its segment warp-width rows at a time, in order. A
//     step ranks its lanes among the lanes with the same expert (a
//     ballot per bit of the expert id gives each lane the mask of lanes
//     that match it; rank = set bits below the lane), the group's first
//     lane takes the group's base with one shared atomic add of the group's
//     size to table[warp][e] and hands it out by a shuffle; position = base
//     + rank. So rows of one expert get consecutive positions in row order
//     (stable), and no order among atomics matters (deterministic). A row
//     whose position is not below end_e (offsets that do not match the ids)
//     or whose id is outside [0, E) gets row_positions -1.
//  4. The last block, whose table now counts every row, writes -1 where no
//     row went: per expert [min(begin_e + count_e, end_e), end_e) (empty
//     when the offsets come from the histogram) and the tail [end_{E-1}, R)
//     (the dropped rows).
// Cost: besides phase 0, the ids are read twice (8 bytes a row),
// row_positions written once and sorted_rows once (scattered 4-byte
// stores). Phase 3 is issue-bound: ceil(log2(E + 1)) ballots (9 at E =
// 256) and ~90 PTX instructions per warp-width step, ~3 a row on NVIDIA,
// now spread over R / 8192 SMs. Measured on the H200
// (docs/performance.md).
//
// moe_permute: a pure copy, one lane per 16-byte chunk of an output row
// (256 lanes a block, grid over the R rows of sorted_rows): a lane reads its
// row's sorted_rows entry (the lanes of a row read the same word) and copies
// its chunk of x[row / topk], or stores zeros for a negative or
// out-of-range entry.
//
// moe_unpermute: one lane per 16-byte chunk of a row of out (256 lanes a
// block, grid over T): the lane reads the token's k positions and weights,
// issues its k chunk loads of y before using any (a position outside y
// reads row 0 instead, which exists whenever any position is valid, and is
// dropped by a select: no branch around the loads, no NaN from whatever row
// 0 holds), then sums weight * chunk in f32 in the order j = 0..k-1. No
// atomics: every out element is one lane's.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Lanes of a block of the copy kernels (permute, unpermute).
constexpr int32_t kCopyThreads = 256;
/// Threads of the single block of the routing kernels (histogram, sort):
/// the most a block may have on both vendors.
constexpr int32_t kRoutingThreads = 1024;
/// The routing kernels' scans give each expert one thread.
constexpr int64_t kMaxExperts = kRoutingThreads;
/// Loads a routing thread keeps in flight while counting.
constexpr int64_t kCountUnroll = 4;
/// Rows of expert_sort's segment per block.
constexpr int64_t kSortBlockRows = 8192;

class MoEGlueBuilder : public KernelBuilder {
public:
  using KernelBuilder::KernelBuilder;

  int64_t warps() const { return kRoutingThreads / warpSize; }
  /// Shared memory of the sort: the [warps, E] table, the ends [E], the
  /// counts of the rows before the block's segment [E] and the scan's
  /// per-warp scratch.
  int64_t sortSharedBytes(int64_t experts) const {
    return llvm::alignTo((warps() + 2) * experts * 4, 16) + warps() * 4;
  }
  int64_t histogramSharedBytes(int64_t experts) const {
    return llvm::alignTo(experts * 4, 16) + warps() * 4;
  }

  void buildHistogram(Value ids, Value counts, Value offsets, int64_t experts);
  void buildSort(Value ids, Value offsets, Value sorted, Value positions,
                 int64_t experts);
  /// `chunk`: elements of a 16-byte chunk of a row.
  void buildPermute(Value x, Value rows, Value out, int64_t topk,
                    int64_t chunk);
  void buildUnpermute(Value y, Value positions, Value weights, Value out,
                      int64_t chunk);

private:
  Type i32Type() { return b.getI32Type(); }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value ceilDiv(Value x, int64_t d) { return divu(add(x, d - 1), d); }
  Value load(Value memref, ValueRange indices) {
    return memref::LoadOp::create(b, loc, memref, indices);
  }
  void store(Value value, Value memref, ValueRange indices) {
    memref::StoreOp::create(b, loc, value, memref, indices);
  }
  /// memref[indices] += value (i32), as a shared-memory atomic; returns the
  /// old value.
  Value atomicAdd(Value value, Value memref, ValueRange indices) {
    return memref::AtomicRMWOp::create(
        b, loc, value.getType(),
        arith::AtomicRMWKindAttr::get(b.getContext(),
                                      arith::AtomicRMWKind::addi),
        value, memref, indices);
  }
  void barrier() { gpu::BarrierOp::create(b, loc); }
  /// for (iv = lb; iv < ub; iv += step) body(iv).
  void forLoop(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }
  /// `memref` (identity layout) as one dimension of `size` elements.
  Value flatten(Value memref, Value size) {
    auto type = cast<MemRefType>(memref.getType());
    auto flat = MemRefType::get({ShapedType::kDynamic}, type.getElementType());
    return memref::ReinterpretCastOp::create(
        b, loc, flat, memref, OpFoldResult(b.getIndexAttr(0)),
        ArrayRef<OpFoldResult>{size},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }
  /// Elements [0, count) of row `row` of `memref` ([rows, count]) as
  /// scalars: one vector load where the row is aligned for it.
  SmallVector<Value> loadRow(Value memref, Value row, int64_t count);

  /// Inclusive scan of `x` (i32) over the block's threads in thread order,
  /// `combine` having identity 0 on the values scanned; `scratch` holds an
  /// i32 per warp. Every thread of the block must call it.
  Value blockScan(Value x, function_ref<Value(Value, Value)> combine,
                  Value scratch);
  /// The lanes of the warp whose `key` (i32 in [0, 2^bits)) equals this
  /// lane's, as a ballot mask: one ballot per bit. Every lane of the warp
  /// must call it.
  Value matchAny(Value key, int64_t bits);
  /// Counts the id (i32) in `hist` if `valid` and in [0, experts).
  void countId(Value id, Value valid, Value hist, ValueRange outer,
               int64_t experts);
  /// Counts flat[0, count) into `hist` [E] (shared) with every thread of the
  /// block: 4 ids per 16-byte load, kCountUnroll loads per thread in flight.
  void countRows(Value flat, Value count, Value hist, int64_t experts);
};

SmallVector<Value> MoEGlueBuilder::loadRow(Value memref, Value row,
                                           int64_t count) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t bytes = count * type.getElementTypeBitWidth() / 8;
  SmallVector<Value> values;
  // The row starts at row * bytes: aligned to min(bytes, 16) when bytes is
  // a multiple of 16 or a power of two below it.
  if (bytes % 16 == 0 || (bytes < 16 && llvm::isPowerOf2_64(bytes))) {
    Value v = loadVector(memref, {row, idx(0)}, count);
    for (int64_t j = 0; j < count; ++j)
      values.push_back(vector::ExtractOp::create(b, loc, v, j));
    return values;
  }
  for (int64_t j = 0; j < count; ++j)
    values.push_back(load(memref, {row, idx(j)}));
  return values;
}

Value MoEGlueBuilder::blockScan(Value x,
                                function_ref<Value(Value, Value)> combine,
                                Value scratch) {
  Value tid = threadId();
  Value warp = divu(tid, warpSize);
  Value inclusive = warpScan(x, combine, i32(0));
  ifThen(eq(remu(tid, warpSize), idx(warpSize - 1)),
         [&] { store(inclusive, scratch, warp); });
  barrier();
  // The totals of the warps before this one.
  auto loop =
      scf::ForOp::create(b, loc, idx(0), warp, idx(1), ValueRange{i32(0)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value total = load(scratch, loop.getInductionVar());
    scf::YieldOp::create(b, loc,
                         combine(loop.getRegionIterArgs().front(), total));
  }
  Value result = combine(loop.getResult(0), inclusive);
  // The scratch may be reused after this.
  barrier();
  return result;
}

Value MoEGlueBuilder::matchAny(Value key, int64_t bits) {
  Type maskType = b.getIntegerType(warpSize);
  Value mask = arith::ConstantIntOp::create(b, loc, maskType, -1);
  for (int64_t bit = 0; bit < bits; ++bit) {
    // Lanes whose bit agrees with this lane's: the ballot of the bit, or its
    // complement (xor with bit - 1: 0 if set, all ones if not).
    Value value = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, key, i32(bit)), i32(1));
    Value lanes = target.ballot(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value, i32(0)));
    Value flip = sub(value, i32(1));
    if (warpSize != 32)
      flip = arith::ExtSIOp::create(b, loc, maskType, flip);
    mask = arith::AndIOp::create(b, loc, mask,
                                 arith::XOrIOp::create(b, loc, lanes, flip));
  }
  return mask;
}

void MoEGlueBuilder::countId(Value id, Value valid, Value hist,
                             ValueRange outer, int64_t experts) {
  // An unsigned compare drops negative ids too.
  ifThen(andi(valid, ult(id, i32(experts))), [&] {
    SmallVector<Value> at(outer);
    at.push_back(toIndex(id));
    atomicAdd(i32(1), hist, at);
  });
}

void MoEGlueBuilder::countRows(Value flat, Value count, Value hist,
                               int64_t experts) {
  Value tid = threadId();
  Value quads = divu(count, 4);
  forLoop(idx(0), quads, idx(kRoutingThreads * kCountUnroll), [&](Value q0) {
    SmallVector<Value> valid, quad;
    for (int64_t u = 0; u < kCountUnroll; ++u) {
      Value q = add(add(q0, u * kRoutingThreads), tid);
      valid.push_back(lt(q, quads));
      quad.push_back(
          loadVector(flat, {mul(minu(q, sub(quads, idx(1))), 4)}, 4));
    }
    for (int64_t u = 0; u < kCountUnroll; ++u)
      for (int64_t i = 0; i < 4; ++i)
        countId(vector::ExtractOp::create(b, loc, quad[u], i), valid[u], hist,
                {}, experts);
  });
  // The count % 4 ids left over.
  Value row = add(mul(quads, 4), tid);
  ifThen(lt(row, count), [&] {
    Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    countId(load(flat, row), yes, hist, {}, experts);
  });
}

void MoEGlueBuilder::buildHistogram(Value ids, Value counts, Value offsets,
                                    int64_t experts) {
  Value shared = dynamicSharedBytes();
  Value hist = sharedView(shared, 0, {experts}, i32Type());
  Value scratch =
      sharedView(shared, llvm::alignTo(experts * 4, 16), {warps()}, i32Type());
  Value tid = threadId();
  Value isExpert = lt(tid, idx(experts));
  ifThen(isExpert, [&] { store(i32(0), hist, tid); });
  barrier();

  int64_t topk = cast<MemRefType>(ids.getType()).getDimSize(1);
  Value rows = mul(memref::DimOp::create(b, loc, ids, 0).getResult(), topk);
  countRows(flatten(ids, rows), rows, hist, experts);
  barrier();

  Value count =
      select(isExpert, load(hist, minu(tid, idx(experts - 1))), i32(0));
  Value end = blockScan(
      count, [&](Value x, Value y) { return add(x, y); }, scratch);
  ifThen(isExpert, [&] {
    store(count, counts, tid);
    store(end, offsets, tid);
  });
}

void MoEGlueBuilder::buildSort(Value ids, Value offsets, Value sorted,
                               Value positions, int64_t experts) {
  int64_t numWarps = warps();
  Value shared = dynamicSharedBytes();
  Value table = sharedView(shared, 0, {numWarps, experts}, i32Type());
  Value ends = sharedView(shared, numWarps * experts * 4, {experts}, i32Type());
  Value before =
      sharedView(shared, (numWarps + 1) * experts * 4, {experts}, i32Type());
  Value scratch =
      sharedView(shared, llvm::alignTo((numWarps + 2) * experts * 4, 16),
                 {numWarps}, i32Type());
  Value tid = threadId();
  Value lane = remu(tid, warpSize), warp = divu(tid, warpSize);
  Value isExpert = lt(tid, idx(experts));
  Value expert = minu(tid, idx(experts - 1));

  int64_t topk = cast<MemRefType>(ids.getType()).getDimSize(1);
  Value rows = mul(memref::DimOp::create(b, loc, ids, 0).getResult(), topk);
  Value rows32 = toI32(rows);
  Value flatIds = flatten(ids, rows), flatPositions = flatten(positions, rows);

  ifThen(isExpert, [&] {
    forLoop(idx(0), idx(numWarps), idx(1), [&](Value w) {
      store(i32(0), table, {w, tid});
    });
    store(i32(0), before, tid);
  });
  barrier();

  // 0. This block's segment of kSortBlockRows rows, and the rows per
  // expert before it.
  Value block = blockId(gpu::Dimension::x);
  // The grid is ceil(R / kSortBlockRows) blocks (gpu.grid_dim would need
  // the ROCm device library on CDNA).
  Value isLastBlock = eq(add(block, 1), ceilDiv(rows, kSortBlockRows));
  Value blockFirst = minu(mul(block, kSortBlockRows), rows);
  Value blockLast = minu(add(blockFirst, kSortBlockRows), rows);
  countRows(flatIds, blockFirst, before, experts);

  // This warp's segment [first, last) of the block's: ceil(rows / warps)
  // rounded up to whole warp-width steps.
  Value segment = mul(
      ceilDiv(ceilDiv(sub(blockLast, blockFirst), numWarps), warpSize),
      warpSize);
  Value first = minu(add(blockFirst, mul(warp, segment)), blockLast);
  Value last = minu(add(blockFirst, mul(add(warp, 1), segment)), blockLast);
  Value steps = ceilDiv(sub(last, first), warpSize);
  // The id of row `row` of the segment, read at the segment's last row past
  // its end (the segment is not empty where this is called).
  auto loadId = [&](Value row) {
    return load(flatIds, minu(row, sub(last, idx(1))));
  };

  // 1. Rows per expert in this warp's segment.
  forLoop(idx(0), steps, idx(kCountUnroll), [&](Value s0) {
    SmallVector<Value> valid, id;
    for (int64_t u = 0; u < kCountUnroll; ++u) {
      Value row = add(add(first, mul(add(s0, u), warpSize)), lane);
      valid.push_back(lt(row, last));
      id.push_back(loadId(row));
    }
    for (int64_t u = 0; u < kCountUnroll; ++u)
      countId(id[u], valid[u], table, {warp}, experts);
  });
  barrier();

  // 2. The clamped group ends (a max-scan of max(0, offsets)), then each
  // warp's base per expert: the group's begin, plus its rows in earlier
  // blocks' segments and in earlier warps'.
  Value zero = i32(0);
  auto maxsi = [&](Value x, Value y) -> Value {
    return arith::MaxSIOp::create(b, loc, x, y);
  };
  Value raw = select(isExpert, maxsi(load(offsets, expert), zero), zero);
  Value end =
      arith::MinSIOp::create(b, loc, blockScan(raw, maxsi, scratch), rows32);
  ifThen(isExpert, [&] { store(end, ends, tid); });
  barrier();
  ifThen(isExpert, [&] {
    Value previous =
        load(ends, sub(arith::MaxUIOp::create(b, loc, tid, idx(1)), idx(1)));
    Value begin = add(select(eq(tid, idx(0)), zero, previous),
                      load(before, tid));
    auto loop = scf::ForOp::create(b, loc, idx(0), idx(numWarps), idx(1),
                                   ValueRange{begin});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value w = loop.getInductionVar();
    Value running = loop.getRegionIterArgs().front();
    Value count = load(table, {w, tid});
    store(running, table, {w, tid});
    scf::YieldOp::create(b, loc, add(running, count));
  });
  barrier();

  // 3. Positions, warp-width rows a step, the next step's ids loaded
  // ahead. The loop is uniform over the warp (its ballots need every lane).
  Type maskType = b.getIntegerType(warpSize);
  int64_t keyBits = llvm::Log2_64_Ceil(experts + 1);
  Value laneMask = toI32(lane);
  Value lanesBelow = arith::SubIOp::create(
      b, loc,
      arith::ShLIOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, maskType, 1),
          warpSize == 32
              ? laneMask
              : arith::ExtUIOp::create(b, loc, maskType, laneMask).getResult()),
      arith::ConstantIntOp::create(b, loc, maskType, 1));
  auto toI32Mask = [&](Value x) -> Value {
    return warpSize == 32
               ? x
               : arith::TruncIOp::create(b, loc, i32Type(), x).getResult();
  };
  ifThen(lt(first, last), [&] {
    Value firstId = loadId(add(first, lane));
    auto loop =
        scf::ForOp::create(b, loc, idx(0), steps, idx(1), ValueRange{firstId});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value row = add(add(first, mul(loop.getInductionVar(), warpSize)), lane);
    Value id = loop.getRegionIterArgs().front();
    Value next = loadId(add(row, warpSize));
    Value inSegment = lt(row, last);
    Value valid = andi(inSegment, ult(id, i32(experts)));
    // Lanes without an expert share the key E, which no expert has.
    Value mask = matchAny(select(valid, id, i32(experts)), keyBits);
    auto popcount = [&](Value x) {
      return toI32Mask(LLVM::CtPopOp::create(b, loc, maskType, x));
    };
    Value rank = popcount(arith::AndIOp::create(b, loc, mask, lanesBelow));
    Value size = popcount(mask);
    // A lane's mask always holds the lane itself: never zero.
    Value leader =
        toI32Mask(LLVM::CountTrailingZerosOp::create(b, loc, maskType, mask,
                                                     /*is_zero_poison=*/true));
    Value expertOf = toIndex(select(valid, id, zero));
    auto take = scf::IfOp::create(b, loc, TypeRange{i32Type()},
                                  andi(valid, eq(rank, zero)),
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(take.thenBlock());
      scf::YieldOp::create(b, loc, atomicAdd(size, table, {warp, expertOf}));
      b.setInsertionPointToStart(take.elseBlock());
      scf::YieldOp::create(b, loc, zero);
    }
    Value position = add(broadcast(take.getResult(0), leader), rank);
    Value placed = andi(valid, lt(position, load(ends, expertOf)));
    ifThen(inSegment, [&] {
      store(select(placed, position, i32(-1)), flatPositions, row);
    });
    ifThen(placed, [&] { store(toI32(row), sorted, toIndex(position)); });
    scf::YieldOp::create(b, loc, next);
  });
  barrier();

  // 4. -1 where no row went, by the last block, whose last warp's bases
  // now count every row: after each expert's rows up to its end (warp per
  // expert), and past the last end.
  ifThen(isLastBlock, [&] {
    forLoop(warp, idx(experts), idx(numWarps), [&](Value e) {
      Value groupEnd = load(ends, e);
      Value filled = arith::MinSIOp::create(
          b, loc, load(table, {idx(numWarps - 1), e}), groupEnd);
      forLoop(add(toIndex(filled), lane), toIndex(groupEnd), idx(warpSize),
              [&](Value p) { store(i32(-1), sorted, p); });
    });
    Value lastEnd = toIndex(load(ends, idx(experts - 1)));
    forLoop(add(lastEnd, tid), rows, idx(kRoutingThreads),
            [&](Value p) { store(i32(-1), sorted, p); });
  });
}

void MoEGlueBuilder::buildPermute(Value x, Value rows, Value out, int64_t topk,
                                  int64_t chunk) {
  int64_t chunks = cast<MemRefType>(x.getType()).getDimSize(1) / chunk;
  Value item = add(mul(blockId(gpu::Dimension::x), kCopyThreads), threadId());
  Value p = divu(item, chunks);
  Value col = mul(remu(item, chunks), chunk);
  ifThen(lt(p, memref::DimOp::create(b, loc, out, 0)), [&] {
    // Sign-extended: a negative entry compares as huge.
    Value row = toIndex(load(rows, p));
    Value tokens = memref::DimOp::create(b, loc, x, 0);
    Value valid = ult(row, mul(tokens, topk));
    auto vec = VectorType::get({chunk},
                               cast<MemRefType>(x.getType()).getElementType());
    auto data = scf::IfOp::create(b, loc, TypeRange{vec}, valid,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(data.thenBlock());
      scf::YieldOp::create(b, loc,
                           loadVector(x, {divu(row, topk), col}, chunk));
      b.setInsertionPointToStart(data.elseBlock());
      scf::YieldOp::create(
          b, loc,
          arith::ConstantOp::create(b, loc, vec, b.getZeroAttr(vec))
              .getResult());
    }
    storeVector(data.getResult(0), out, {p, col});
  });
}

void MoEGlueBuilder::buildUnpermute(Value y, Value positions, Value weights,
                                    Value out, int64_t chunk) {
  int64_t chunks = cast<MemRefType>(y.getType()).getDimSize(1) / chunk;
  int64_t topk = cast<MemRefType>(positions.getType()).getDimSize(1);
  Value item = add(mul(blockId(gpu::Dimension::x), kCopyThreads), threadId());
  Value t = divu(item, chunks);
  Value col = mul(remu(item, chunks), chunk);
  auto acc = VectorType::get({chunk}, b.getF32Type());
  Value zeros = arith::ConstantOp::create(b, loc, acc, b.getZeroAttr(acc));
  ifThen(lt(t, memref::DimOp::create(b, loc, out, 0)), [&] {
    Value numRows = memref::DimOp::create(b, loc, y, 0);
    SmallVector<Value> pos = loadRow(positions, t, topk);
    SmallVector<Value> w = loadRow(weights, t, topk);
    // With no row in y no position is valid and nothing may be read.
    auto sum = scf::IfOp::create(b, loc, TypeRange{acc}, lt(idx(0), numRows),
                                 /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sum.elseBlock());
      scf::YieldOp::create(b, loc, zeros);
      b.setInsertionPointToStart(sum.thenBlock());
      // Every load first (row 0 for a position outside y), then the sum in
      // the order j = 0..k-1.
      SmallVector<Value> valid, data;
      for (int64_t j = 0; j < topk; ++j) {
        Value row = toIndex(pos[j]);
        valid.push_back(ult(row, numRows));
        data.push_back(
            loadVector(y, {select(valid[j], row, idx(0)), col}, chunk));
      }
      Value total = zeros;
      for (int64_t j = 0; j < topk; ++j) {
        Value weight = vector::BroadcastOp::create(
            b, loc, acc, convertFloat(w[j], b.getF32Type()));
        Value term = arith::MulFOp::create(
            b, loc, weight, convertFloat(data[j], b.getF32Type()));
        total =
            select(valid[j], arith::AddFOp::create(b, loc, total, term), total);
      }
      scf::YieldOp::create(b, loc, total);
    }
    Type elem = cast<MemRefType>(out.getType()).getElementType();
    storeVector(convertFloat(sum.getResult(0), elem), out, {t, col});
  });
}

/// A routing kernel (histogram, sort): blocks of kRoutingThreads over
/// `grid` (default: one block) for the static expert count of `experts`
/// (dim 0), at most one per thread; `build` checks what else it needs,
/// writes the body and returns its shared-memory bytes.
FailureOr<LaunchGeometry> buildRouting(
    OpBuilder &b, Operation *op, KernelContext &ctx, Value experts,
    function_ref<FailureOr<int64_t>(MoEGlueBuilder &, int64_t)> build,
    GridDim grid = GridDim{}) {
  int64_t count = cast<MemRefType>(experts.getType()).getDimSize(0);
  if (ShapedType::isDynamic(count))
    return op->emitOpError()
           << "GPU template: the expert count must be static (one block "
              "sizes its shared memory by it)";
  if (count < 1 || count > kMaxExperts)
    return op->emitOpError()
           << "GPU template: " << count << " experts; one block of "
           << kRoutingThreads << " threads routes 1 to " << kMaxExperts
           << " experts";
  MoEGlueBuilder builder(b, op->getLoc(), ctx.target);
  FailureOr<int64_t> sharedBytes = build(builder, count);
  if (failed(sharedBytes))
    return failure();
  LaunchGeometry geometry;
  geometry.grid[0] = grid;
  geometry.block = {kRoutingThreads, 1, 1};
  geometry.sharedBytes = *sharedBytes;
  return geometry;
}

/// A copy kernel (permute, unpermute): rows of `data`'s hidden size in
/// 16-byte chunks, one lane each, over the rows of `out` (dim 0); `build`
/// writes the body given the chunk's elements.
FailureOr<LaunchGeometry>
buildCopy(OpBuilder &b, Operation *op, KernelContext &ctx, Value data,
          Value out, function_ref<void(MoEGlueBuilder &, int64_t)> build) {
  auto type = cast<MemRefType>(data.getType());
  int64_t hidden = type.getDimSize(1);
  if (failed(checkChunkRows(op, "hidden size", hidden, type.getElementType())))
    return failure();
  int64_t chunk = 128 / type.getElementTypeBitWidth();
  MoEGlueBuilder builder(b, op->getLoc(), ctx.target);
  build(builder, chunk);
  LaunchGeometry geometry;
  geometry.grid[0] = gridOver(ctx.dim(out, 0), hidden / chunk, kCopyThreads);
  geometry.block = {kCopyThreads, 1, 1};
  return geometry;
}

} // namespace

FailureOr<LaunchGeometry>
mlir::tessel::buildMoEGlue(OpBuilder &b, Operation *op, KernelContext &ctx) {
  if (auto histogram = dyn_cast<ExpertHistogramOp>(op))
    return buildRouting(
        b, op, ctx, histogram.getCounts(),
        [&](MoEGlueBuilder &builder, int64_t experts) -> FailureOr<int64_t> {
          builder.buildHistogram(ctx.arg(histogram.getTopkIds()),
                                 ctx.arg(histogram.getCounts()),
                                 ctx.arg(histogram.getGroupOffsets()), experts);
          return builder.histogramSharedBytes(experts);
        });
  if (auto sort = dyn_cast<ExpertSortOp>(op))
    return buildRouting(
        b, op, ctx, sort.getGroupOffsets(),
        [&](MoEGlueBuilder &builder, int64_t experts) -> FailureOr<int64_t> {
          int64_t bytes = builder.sortSharedBytes(experts);
          int64_t limit = ctx.target.getSharedMemoryBytes();
          if (bytes > limit)
            return op->emitOpError()
                   << "GPU template: sorting over " << experts
                   << " experts needs " << bytes
                   << " bytes of shared memory (a counter per warp and "
                      "expert, two more per expert), more than the "
                   << limit << " of " << ctx.target.getChip();
          builder.buildSort(ctx.arg(sort.getTopkIds()),
                            ctx.arg(sort.getGroupOffsets()),
                            ctx.arg(sort.getSortedRows()),
                            ctx.arg(sort.getRowPositions()), experts);
          return bytes;
        },
        gridOver(ctx.dim(sort.getTopkIds(), 0),
                 cast<MemRefType>(sort.getTopkIds().getType()).getDimSize(1),
                 kSortBlockRows));
  if (auto permute = dyn_cast<MoePermuteOp>(op))
    return buildCopy(b, op, ctx, permute.getX(), permute.getOut(),
                     [&](MoEGlueBuilder &builder, int64_t chunk) {
                       builder.buildPermute(ctx.arg(permute.getX()),
                                            ctx.arg(permute.getSortedRows()),
                                            ctx.arg(permute.getOut()),
                                            permute.getTopk(), chunk);
                     });
  auto unpermute = cast<MoeUnpermuteOp>(op);
  return buildCopy(b, op, ctx, unpermute.getY(), unpermute.getOut(),
                   [&](MoEGlueBuilder &builder, int64_t chunk) {
                     builder.buildUnpermute(
                         ctx.arg(unpermute.getY()),
                         ctx.arg(unpermute.getRowPositions()),
                         ctx.arg(unpermute.getWeights()),
                         ctx.arg(unpermute.getOut()), chunk);
                   });
}
