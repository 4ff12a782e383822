//===- LseMerge.cpp - LSE merge kernel templates --------------------------===//
//
// tessel.lse_merge (two partials) and tessel.lse_merge_n (P partials, P a
// shape symbol): out[t, h, :] is the LSE-weighted mean of the partials' rows
// and lse_out[h, t] their combined log-sum-exp. docs/dialect.md gives the
// formulas and the infinity rules; MergeToLoops.cpp is the host oracle.
//
// Work decomposition. Both are bandwidth-bound passes over [T, H, D] rows,
// so every lane moves 16-byte chunks: a chunk is E elements, 16 bytes of
// the narrowest element type involved (8 when a partial or out is bf16 or
// f16, 4 when all are f32; an f32 operand then takes two 16-byte loads per
// chunk, which only adds loads in flight). A (token, head) row of C = D / E
// chunks belongs to L lanes of one warp, L the smallest power of two >= C
// and at most the warp (a lane takes every L-th chunk of longer rows), so
// consecutive lanes access consecutive 16-byte chunks. Rows go token-major,
// head-minor like the tensors, so a block of 256 threads covers one
// contiguous span of each operand. The grid is 1-D, ceil(T * H / (256 /
// L)) blocks from the token count alone: nothing read on the host, so a
// launch can be captured in a CUDA graph, and T = 0 launches nothing. No
// shared memory. Each lane computes its row's weights itself: a few
// exp2/log2 per 16 bytes cost nothing next to the memory traffic.
//
// Loads are issued before any of them is used, so that each lane has all
// of its bytes in flight at once (one memory round trip), and are not
// predicated where that can be avoided: lanes past the last row (or past a
// row's last chunk) read the last row (chunk) and store nothing. (On CDNA a
// branch around a load makes the wait where the branches join cover every
// load in flight.)
//
// lse_merge loads both partials' chunks (in a branch of their own on the
// row's validity: unpredicated, LLVM would sink them into the store's
// branch, behind the LSE arithmetic), then the LSEs. An empty partial's
// chunk is dropped by a select, never multiplied by its weight 0, so
// whatever it holds (NaN) stays out of the result. out may alias o_a
// element by element (each chunk is read and written by one lane), and
// lse_out may alias lse_a: every lane of a row takes the row's LSEs from
// its first lane by a shuffle, which reads every lane's loaded value, and
// only that first lane stores lse_out, after the shuffle; so every lane's
// read of lse_a is complete before it changes.
//
// lse_merge_n folds the P partials of each chunk in one pass in the online
// form (a running max m; the sum of weights and the accumulator are rescaled
// by exp(m_old - m_new) when m grows), so each partial is read exactly once
// whatever P is. A loop step takes 4 partials: it loads their chunks and the
// next step's LSEs, then folds the 4 with one rescale, so a lane has 4
// partials in flight (split-KV decode has few rows and many partials: the
// loop's latency, not the bandwidth, is then the limit). An empty partial
// (LSE -inf or +inf; split-KV decode leaves the splits past a request's
// length empty, and may leave them unwritten) is not read: its loads go to
// partial 0's chunk, which the lane reads anyway (a cache hit after the
// first), and its weight is 0 with its chunk dropped by a select.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr int32_t kBlockThreads = 256;
constexpr double kInf = std::numeric_limits<double>::infinity();
/// Partials lse_merge_n folds per loop step, all their loads in flight at
/// once.
constexpr int64_t kPartsPerStep = 4;

class MergeBuilder : public KernelBuilder {
public:
  /// Rows of `headDim` elements in chunks of `chunk` elements.
  MergeBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
               int64_t heads, int64_t headDim, int64_t chunk)
      : KernelBuilder(b, loc, target), heads(heads), E(chunk),
        C(headDim / chunk),
        L(std::min<int64_t>(llvm::PowerOf2Ceil(C), warpSize)),
        K(llvm::divideCeil(C, L)) {}

  int64_t rowsPerBlock() const { return kBlockThreads / L; }

  /// out = merge of (o_a, lse_a) and (o_b, lse_b); lseOut may be null.
  void buildTwo(Value oA, Value lseA, Value oB, Value lseB, Value out,
                Value lseOut);
  /// out = merge of partials [P, T, H, D] by partialLse [P, H, T].
  void buildN(Value partials, Value partialLse, Value out, Value lseOut);

private:
  /// The lane's row (token, head) among the `tokens` * H rows and its
  /// chunks. Loads are not predicated (a branch around a load makes CDNA
  /// wait for every load in flight where the branches join): lanes past the
  /// last row, or past a row's last chunk, read the last row's or chunk's
  /// data and store nothing. (A block runs only when tokens >= 1.)
  void setRow(Value tokens);
  /// Chunk k of the lane's row of `memref` ([outer..., T, H, D]), as it
  /// lies (convert it with toF32 where it is used, so that the load stays
  /// in flight until then).
  Value loadChunk(Value memref, ValueRange outer, int64_t k) {
    SmallVector<Value> indices(outer);
    indices.append({token, head, cols[k]});
    return loadVector(memref, indices, E);
  }
  Value toF32(Value chunk) { return convertFloat(chunk, b.getF32Type()); }
  /// Stores `value` (f32) as chunk k of the lane's row of `out`.
  void storeChunk(Value value, Value out, int64_t k);
  /// lse[outer..., head, token], as it lies.
  Value loadLse(Value lse, ValueRange outer) {
    SmallVector<Value> indices(outer);
    indices.append({head, token});
    return memref::LoadOp::create(b, loc, lse, indices);
  }
  /// An LSE of +inf (an empty partial) as -inf.
  Value emptyAsNegInf(Value lse) {
    Value posInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                         lse, f32(kInf));
    return select(posInf, f32(-kInf), lse);
  }
  /// Whether this lane is the first of a row (that exists).
  Value rowLeader() {
    return andi(rowValid, arith::CmpIOp::create(b, loc,
                                                arith::CmpIPredicate::eq,
                                                laneInRow, idx(0)));
  }
  Value isNegInf(Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                 f32(-kInf));
  }
  Value positive(Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                 f32(0));
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value splat(Value x) { return vector::BroadcastOp::create(b, loc, vec, x); }
  Value zeros() {
    return arith::ConstantOp::create(b, loc, vec, b.getZeroAttr(vec));
  }

  int64_t heads;
  /// Elements per chunk, chunks per row, lanes per row, chunks per lane.
  int64_t E, C, L, K;
  /// vector<E x f32>: a chunk in registers.
  VectorType vec;
  Value tid, laneInRow, token, head, rowValid;
  /// Per chunk of the lane: its first column and whether it is stored.
  SmallVector<Value> cols, chunkValid;
};

void MergeBuilder::setRow(Value tokens) {
  vec = VectorType::get({E}, b.getF32Type());
  tid = threadId();
  laneInRow = remu(tid, L);
  Value row =
      add(mul(blockId(gpu::Dimension::x), rowsPerBlock()), divu(tid, L));
  Value rows = mul(tokens, heads);
  rowValid = lt(row, rows);
  Value readRow = minu(row, sub(rows, idx(1)));
  token = divu(readRow, heads);
  head = remu(readRow, heads);
  for (int64_t k = 0; k < K; ++k) {
    Value chunk = add(laneInRow, k * L);
    // Lanes past a row's last chunk (C not a multiple of L) idle.
    if (C % L == 0) {
      cols.push_back(mul(chunk, E));
      chunkValid.push_back(rowValid);
      continue;
    }
    cols.push_back(mul(minu(chunk, idx(C - 1)), E));
    chunkValid.push_back(andi(rowValid, lt(chunk, idx(C))));
  }
}

void MergeBuilder::storeChunk(Value value, Value out, int64_t k) {
  ifThen(chunkValid[k], [&] {
    Type elem = cast<MemRefType>(out.getType()).getElementType();
    storeVector(convertFloat(value, elem), out, {token, head, cols[k]});
  });
}

void MergeBuilder::buildTwo(Value oA, Value lseA, Value oB, Value lseB,
                            Value out, Value lseOut) {
  setRow(memref::DimOp::create(b, loc, oA, 0));
  // Every load first, so that they are in flight together: the chunks (in
  // a branch of their own, which keeps LLVM from sinking them into the
  // store's, behind the LSE arithmetic), then the LSEs.
  SmallVector<Type> rawTypes;
  for (Value o : {oA, oB})
    rawTypes.append(
        K, VectorType::get({E}, cast<MemRefType>(o.getType()).getElementType()));
  auto ifRow =
      scf::IfOp::create(b, loc, rawTypes, rowValid, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifRow.thenBlock());
    SmallVector<Value> chunks;
    for (Value o : {oA, oB})
      for (int64_t k = 0; k < K; ++k)
        chunks.push_back(loadChunk(o, {}, k));
    scf::YieldOp::create(b, loc, chunks);
    b.setInsertionPointToStart(ifRow.elseBlock());
    SmallVector<Value> none;
    for (Type t : rawTypes)
      none.push_back(
          arith::ConstantOp::create(b, loc, t, b.getZeroAttr(t)));
    scf::YieldOp::create(b, loc, none);
  }
  ValueRange xa = ifRow.getResults().take_front(K);
  ValueRange xb = ifRow.getResults().drop_front(K);
  Value rawA = loadLse(lseA, {}), rawB = loadLse(lseB, {});
  // lse_out may alias lse_a. Only the row's first lane writes lse_out, and
  // every lane uses that lane's LSEs, taken by a shuffle that reads every
  // lane's loaded value: each lane's load of lse_a has completed before
  // the store.
  Value leaderLane = toI32(sub(remu(tid, warpSize), laneInRow));
  Value a = emptyAsNegInf(broadcast(rawA, leaderLane));
  Value bl = emptyAsNegInf(broadcast(rawB, leaderLane));

  // Shift by the max LSE, or by 0 when both are empty (no -inf - -inf).
  Value m = fmax(a, bl);
  Value allEmpty = isNegInf(m);
  Value shift = select(allEmpty, f32(0), m);
  Value wa = exp(fsub(a, shift)), wb = exp(fsub(bl, shift));
  Value sum = fadd(wa, wb);
  Value inv = arith::DivFOp::create(b, loc, f32(1), sum);
  // Both empty: out = o_a (scale 1, and o_b is not taken).
  Value takeA = arith::OrIOp::create(b, loc, positive(wa), allEmpty);
  Value takeB = positive(wb);
  Value sa = splat(select(allEmpty, f32(1), fmul(wa, inv)));
  Value sb = splat(fmul(wb, inv));
  for (int64_t k = 0; k < K; ++k) {
    Value termA = select(takeA, fmul(toF32(xa[k]), sa), zeros());
    Value termB = select(takeB, fmul(toF32(xb[k]), sb), zeros());
    storeChunk(fadd(termA, termB), out, k);
  }
  if (lseOut)
    ifThen(rowLeader(), [&] {
      memref::StoreOp::create(b, loc, fadd(shift, log(sum)), lseOut,
                              ValueRange{head, token});
    });
}

void MergeBuilder::buildN(Value partials, Value partialLse, Value out,
                          Value lseOut) {
  setRow(memref::DimOp::create(b, loc, partials, 1));
  Value numParts = memref::DimOp::create(b, loc, partials, 0);
  // Running max, sum of weights and accumulators (K): the fold's state.
  SmallVector<Value> empty = {f32(-kInf), f32(0)};
  empty.append(K, zeros());
  SmallVector<Type> stateTypes = llvm::to_vector(ValueRange(empty).getTypes());
  // P = 0 reads nothing (there is no partial to clamp a read to).
  auto ifAny = scf::IfOp::create(b, loc, stateTypes, lt(idx(0), numParts),
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifAny.elseBlock());
    scf::YieldOp::create(b, loc, empty);
    b.setInsertionPointToStart(ifAny.thenBlock());
    Value lastPart = sub(numParts, idx(1));
    // The raw LSEs of partials q .. q + U - 1 (-inf past P).
    auto groupLses = [&](Value q0) {
      SmallVector<Value> lses;
      for (int64_t u = 0; u < kPartsPerStep; ++u) {
        Value q = add(q0, u);
        Value raw = loadLse(partialLse, minu(q, lastPart));
        lses.push_back(select(lt(q, numParts), raw, f32(-kInf)));
      }
      return lses;
    };
    // Loop state: the fold's, then the LSEs of the step's partials, loaded
    // one step ahead.
    SmallVector<Value> init = empty;
    llvm::append_range(init, groupLses(idx(0)));
    Value steps = divu(add(numParts, kPartsPerStep - 1), kPartsPerStep);
    auto loop = scf::ForOp::create(b, loc, idx(0), steps, idx(1), init);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(loop.getBody());
      Value p0 = mul(loop.getInductionVar(), kPartsPerStep);
      ValueRange state = loop.getRegionIterArgs();
      Value m = state[0], s = state[1];
      ValueRange acc = state.slice(2, K);
      // The next step's LSEs, then this step's chunks: every load of the
      // step is issued before the fold waits for any. An empty partial (or
      // one past P: LSE -inf) is not read: its loads go to partial 0's
      // chunks instead, which this lane reads anyway (a cache hit after the
      // first), and the fold drops them.
      SmallVector<Value> nextLses = groupLses(add(p0, kPartsPerStep));
      SmallVector<Value> lses;
      SmallVector<SmallVector<Value>> chunks;
      for (int64_t u = 0; u < kPartsPerStep; ++u) {
        lses.push_back(emptyAsNegInf(state[2 + K + u]));
        Value nonEmpty = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OGT, lses.back(), f32(-kInf));
        Value from = select(nonEmpty, add(p0, u), idx(0));
        chunks.emplace_back();
        for (int64_t k = 0; k < K; ++k)
          chunks.back().push_back(loadChunk(partials, from, k));
      }

      // Fold the step: rescale by the new max once, then add each partial
      // with weight exp(lse - max) (0 for an empty one, whose chunks are
      // dropped by a select).
      Value mNew = m;
      for (Value lse : lses)
        mNew = fmax(mNew, lse);
      Value shift = select(isNegInf(mNew), f32(0), mNew);
      Value scale = exp(fsub(m, shift));
      Value sum = fmul(s, scale);
      SmallVector<Value> sums;
      for (int64_t k = 0; k < K; ++k)
        sums.push_back(fmul(acc[k], splat(scale)));
      for (int64_t u = 0; u < kPartsPerStep; ++u) {
        Value w = exp(fsub(lses[u], shift));
        Value take = positive(w);
        sum = fadd(sum, w);
        for (int64_t k = 0; k < K; ++k)
          sums[k] = fadd(sums[k], select(take,
                                          fmul(toF32(chunks[u][k]), splat(w)),
                                          zeros()));
      }
      SmallVector<Value> next = {mNew, sum};
      llvm::append_range(next, sums);
      llvm::append_range(next, nextLses);
      scf::YieldOp::create(b, loc, next);
    }
    scf::YieldOp::create(b, loc, loop.getResults().take_front(2 + K));
  }
  Value m = ifAny.getResult(0), s = ifAny.getResult(1);
  // Every partial empty: out = 0, lse_out = -inf.
  Value allEmpty = isNegInf(m);
  Value inv = splat(arith::DivFOp::create(b, loc, f32(1), s));
  for (int64_t k = 0; k < K; ++k)
    storeChunk(select(allEmpty, zeros(), fmul(ifAny.getResult(2 + k), inv)),
               out, k);
  if (lseOut)
    ifThen(rowLeader(), [&] {
      Value lse = select(allEmpty, f32(-kInf), fadd(m, log(s)));
      memref::StoreOp::create(b, loc, lse, lseOut, ValueRange{head, token});
    });
}

/// The narrowest element type of `values`: chunks are 16 bytes of it.
Type narrowest(ArrayRef<Value> values) {
  Type best;
  for (Value v : values) {
    Type t = cast<MemRefType>(v.getType()).getElementType();
    if (!best || t.getIntOrFloatBitWidth() < best.getIntOrFloatBitWidth())
      best = t;
  }
  return best;
}

/// A merge kernel: rows of `out` ([T, H, D]) in 16-byte chunks of the
/// narrowest of `data`'s element types; `build` writes the body.
FailureOr<LaunchGeometry>
buildMerge(OpBuilder &b, Operation *op, const KernelContext &ctx, Value out,
           ArrayRef<Value> data, function_ref<void(MergeBuilder &)> build) {
  auto outType = cast<MemRefType>(out.getType());
  int64_t heads = outType.getDimSize(1), headDim = outType.getDimSize(2);
  Type elem = narrowest(data);
  if (failed(checkChunkRows(op, "head dim", headDim, elem)))
    return failure();
  MergeBuilder builder(b, op->getLoc(), ctx.target, heads, headDim,
                       128 / elem.getIntOrFloatBitWidth());
  build(builder);
  LaunchGeometry geometry;
  geometry.grid[0] =
      gridOver(ctx.dim(out, 0), heads, builder.rowsPerBlock());
  geometry.block = {kBlockThreads, 1, 1};
  return geometry;
}

} // namespace

FailureOr<LaunchGeometry> mlir::tessel::buildLseMerge(OpBuilder &b,
                                                      LseMergeOp op,
                                                      KernelContext &ctx) {
  Value lseOut = op.getLseOut() ? ctx.arg(op.getLseOut()) : Value();
  return buildMerge(b, op, ctx, op.getOut(),
                    {op.getOA(), op.getOB(), op.getOut()},
                    [&](MergeBuilder &builder) {
                      builder.buildTwo(ctx.arg(op.getOA()),
                                       ctx.arg(op.getLseA()),
                                       ctx.arg(op.getOB()),
                                       ctx.arg(op.getLseB()),
                                       ctx.arg(op.getOut()), lseOut);
                    });
}

FailureOr<LaunchGeometry> mlir::tessel::buildLseMergeN(OpBuilder &b,
                                                       LseMergeNOp op,
                                                       KernelContext &ctx) {
  Value lseOut = op.getLseOut() ? ctx.arg(op.getLseOut()) : Value();
  return buildMerge(b, op, ctx, op.getOut(), {op.getPartials(), op.getOut()},
                    [&](MergeBuilder &builder) {
                      builder.buildN(ctx.arg(op.getPartials()),
                                     ctx.arg(op.getPartialLse()),
                                     ctx.arg(op.getOut()), lseOut);
                    });
}
