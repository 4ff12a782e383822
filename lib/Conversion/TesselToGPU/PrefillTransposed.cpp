//===- PrefillTransposed.cpp - Flash attention on transposed scores -------===//
//
// CDNA's main loop of the flash-attention template (PrefillConfig::
// transposedScores): MFMA C fragments give each lane one column, so each
// wave computes S^T = K Q^T for 32 queries, one per column, with the 32x32
// atom (or for 2 such atoms, PrefillConfig::queryAtoms, each K and V^T
// fragment serving both). Then
// - P^T is the B operand of O^T += V^T P^T as it stands in the
//   accumulators (TargetInfo::accumulatorsAsOperandB), with K's rows read
//   in the order that makes it so (operandKOfAccumulatorRow): no P through
//   LDS, no barrier for it;
// - a lane's scores are all of one query: its maximum is its own but for
//   one exchange with the lane 32 away, its row sum its own until the
//   epilogue, and O^T's rescale one factor a lane, skipped (by a branch
//   uniform over the wave) unless a lane's maximum moved past the slack
//   (kRescaleSlack);
// - Q^T's B fragments come from global memory once a query tile (no Q in
//   LDS: gfx942's 64 KB holds two 64-key K/V stages instead, or one at
//   MLA's 192 / 128);
// - scores go in pairs through packed FMAs into exp2 and to bf16;
// - the tiles that need a mask run in a loop of their own
//   (TilePipeline::tailFrom), so the main loop has no compare or select.
// The K/V stages are chunk-major (PrefillBuilder::stagedIndices): a lane's
// fragments at successive k steps are a fixed stride apart, immediate
// offsets from one address. Unpaged on gfx950, K and V load straight into
// their stages (PrefillConfig::loadsToShared), V as it lies in memory: its
// V^T fragments are transposing reads, each fragment read of a lane an
// immediate offset from the lane's base (laneFragments).
//
//===----------------------------------------------------------------------===//

#include "PrefillBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::flash;

LogicalResult PrefillBuilder::loadQueryFragments() {
  // Q read as a B tile straight from global memory: tile row r is query
  // row r (rows past the tile's tokens read its first token's, which no
  // output keeps).
  SharedTile queries{pb.q,
                     [this](OpBuilder &, Location, Value row, Value col) {
                       Value token = rowToken(row);
                       token = select(lt(token, rowEnd), token, rowStart);
                       return SmallVector<Value>{token, rowHead(row), col};
                     },
                     /*kContiguous=*/true};
  // qFrags[a * steps + ks]: query atom a's k step ks.
  for (int64_t a = 0; a < cfg.queryAtoms; ++a)
    for (int64_t ks = 0; ks < pb.headDim / atom.k; ++ks) {
      auto fb =
          target.loadFragments(b, loc, atom, MmaOperand::B, queries,
                               queryAtomRow(a), idx(ks * atom.k), lane, 1);
      if (failed(fb))
        return failure();
      qFrags.push_back((*fb)[0]);
    }
  target.waitForGlobalLoads(b, loc);
  return success();
}

Value PrefillBuilder::firstMaskedTile(Value numTiles) {
  // Tile t reaches past the keys at t * N + N > keyEnd - keyStart, and
  // (causal) past the block's first query (its least position p) at t * N
  // + N - 1 > p - keyStart.
  Value keys = sub(keyEnd, keyStart);
  if (pb.causal)
    keys = arith::MinSIOp::create(
        b, loc, keys,
        add(sub(add(rowToken(idx(0)), queryOffset), keyStart), idx(1)));
  Value first = arith::DivSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, keys, idx(0)), idx(cfg.tileKeys));
  // A scale that is not positive takes the masked path everywhere.
  Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                         pb.scaleLog2, f32(0));
  return select(positive, minu(first, numTiles), idx(0));
}

void PrefillBuilder::laneOffsets() {
  // K: the lane's key (in the order operandKOfAccumulatorRow reads them)
  // at its run's first k. V: where the lane's transposing reads start.
  auto run = *target.fragmentRun(b, loc, atom, MmaOperand::A, lane);
  Value key = target.operandKOfAccumulatorRow(b, loc, atom, run.row);
  auto [dim, valueKey] =
      target.transposedReadStart(b, loc, run.row, run.kFirst, lane);
  for (auto [isKey, at, col] :
       {std::tuple<bool, Value, Value>{true, key, run.kFirst},
        {false, valueKey, dim}}) {
    SmallVector<Value> ix = groupedIndices(isKey, at, col);
    int64_t group = groupChunks(isKey) * kChunk;
    laneOffset[isKey] =
        add(add(mul(ix[0], cfg.tileKeys * group), mul(ix[1], group)), ix[2]);
  }
}

FailureOr<SmallVector<Fragment>> PrefillBuilder::stageFragments(bool isKey,
                                                                Value stage,
                                                                int64_t ks,
                                                                int64_t count) {
  if (cfg.loadsToShared)
    return laneFragments(isKey, stage, ks, count);
  // Register-staged: read from the stage's own view, at a uniform byte
  // offset (indexing the ring OR'd the stage into each lane's address:
  // gfx950's unified kernel 260 -> 254 registers, 2 waves a SIMD). K's
  // rows in the order that makes P^T's accumulators the B fragments of P.V.
  auto shape = cast<MemRefType>((isKey ? sharedK : sharedV).getType());
  Value view = sharedView(smemBytes, stageOffset(isKey, stage),
                          shape.getShape().drop_front(), elem);
  int64_t width = isKey ? pb.headDim : cfg.tileKeys;
  SharedTile tile{view,
                  [this, stage, width, isKey](OpBuilder &ob, Location l,
                                              Value row, Value col) {
                    if (isKey)
                      row = target.operandKOfAccumulatorRow(ob, l, atom, row);
                    return SmallVector<Value>(llvm::drop_begin(
                        stagedIndices(stage, row, col, width)));
                  },
                  /*kContiguous=*/true};
  return target.loadFragments(b, loc, atom, MmaOperand::A, tile, idx(0),
                              idx(ks * atom.k), lane, count);
}

FailureOr<SmallVector<Fragment>> PrefillBuilder::laneFragments(bool isKey,
                                                               Value stage,
                                                               int64_t ks,
                                                               int64_t count) {
  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  int64_t width = isKey ? pb.headDim : pb.valueDim;
  int64_t group = groupChunks(isKey) * kChunk;
  int64_t run = atom.m * atom.k / warpSize;
  // The lane's base in the stage, one add a tile; every read below is an
  // immediate offset from it.
  Value base = add(mul(laneOffset[isKey], bytes), stageOffset(isKey, stage));
  Value view = sharedView(smemBytes, base, {cfg.tileKeys * width}, elem);
  SmallVector<Fragment> frags;
  if (isKey) {
    // Atom j's keys are 32 j on; k step ks is group ks.
    auto type = VectorType::get({run}, elem);
    for (int64_t j = 0; j < count; ++j)
      frags.push_back({vector::LoadOp::create(
          b, loc, type, view,
          ValueRange{idx(ks * cfg.tileKeys * group + j * atom.m * group)})});
    return frags;
  }
  // V^T atom j's dims are group j; piece q of k step ks, keys 16 ks + 4 q
  // on (groupSwizzle sees the same key bits).
  auto piece = VectorType::get({4}, elem);
  for (int64_t j = 0; j < count; ++j) {
    SmallVector<Value> pieces;
    for (int64_t q = 0; q < run / 4; ++q)
      pieces.push_back(target.loadTransposedPiece(
          b, loc, piece, view,
          ValueRange{
              idx(j * cfg.tileKeys * group + (ks * atom.k + 4 * q) * group)}));
    Value joined = pieces[0];
    for (size_t q = 1; q < pieces.size(); ++q)
      joined = vector::ShuffleOp::create(
          b, loc, joined, pieces[q],
          llvm::to_vector(llvm::seq<int64_t>(0, 4 * (q + 1))));
    frags.push_back({joined});
  }
  return frags;
}

LogicalResult PrefillBuilder::computeTransposedTile(Value stage, Value kvTile,
                                                    SmallVector<Value> &state,
                                                    bool masked) {
  int64_t acc = accCount(), queryAtoms = cfg.queryAtoms;
  int64_t scoreAtoms = cfg.tileKeys / atom.m, outAtoms = pb.valueDim / atom.m;
  int64_t kSteps = pb.headDim / atom.k;
  // Query atom a's scores and O^T accumulators.
  auto scoresOf = [&](SmallVector<Value> &s, int64_t a) {
    return MutableArrayRef<Value>(s).slice(a * scoreAtoms * acc,
                                           scoreAtoms * acc);
  };
  auto outOf = [&](int64_t a) {
    return MutableArrayRef<Value>(state).slice(
        2 * queryAtoms + a * outAtoms * acc, outAtoms * acc);
  };

  // S^T = K Q^T; each K fragment serves every query atom.
  SmallVector<Value> s(queryAtoms * scoreAtoms * acc, f32(0));
  // Each k step's K fragments are read before the step ahead's MMAs, so
  // their LDS latency overlaps those (read as used, the back end drained
  // LDS, lgkmcnt(0), at nearly every step: 22 waits an iteration on
  // gfx942, 7 now). A step's MMAs (here and in P.V) take its atoms in the
  // reverse order of their reads: the first one's wait, for the step's
  // last read, covers the others (LDS returns in order), one lgkmcnt wait
  // a step rather than one an atom (gfx950 extend 48 -> 38 SALU cycles an
  // iteration).
  auto loadK = [&](int64_t ks) {
    return stageFragments(/*isKey=*/true, stage, ks, scoreAtoms);
  };
  auto fa = loadK(0);
  for (int64_t ks = 0; ks < kSteps; ++ks) {
    if (failed(fa))
      return failure();
    SmallVector<Fragment> cur = *fa;
    if (ks + 1 < kSteps)
      fa = loadK(ks + 1);
    for (int64_t a = 0; a < queryAtoms; ++a)
      for (int64_t j = scoreAtoms - 1; j >= 0; --j)
        if (failed(mmaInto(scoresOf(s, a).slice(j * acc, acc), cur[j],
                           qFrags[a * kSteps + ks])))
          return failure();
  }

  Value multiplier = pb.scaleLog2;
  if (masked) {
    Value tileStart = add(keyStart, mul(kvTile, cfg.tileKeys));
    for (int64_t a = 0; a < queryAtoms; ++a) {
      // The lane's last key, relative to the tile, in 32 bits.
      Value last = sub(keyEnd, idx(1));
      if (pb.causal)
        last = arith::MinSIOp::create(
            b, loc, last,
            add(rowToken(add(queryAtomRow(a), remu(lane, atom.n))),
                queryOffset));
      last = toI32(sub(last, tileStart));
      for (int64_t j = 0; j < scoreAtoms; ++j)
        for (int64_t e = 0; e < acc; ++e) {
          Value row =
              target.getAccumulatorPosition(b, loc, atom, lane, e).first;
          Value key = toI32(add(
              target.operandKOfAccumulatorRow(b, loc, atom, row), j * atom.m));
          Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                           key, last);
          Value &v = scoresOf(s, a)[j * acc + e];
          v = select(ok, fmul(v, pb.scaleLog2), f32(-INFINITY));
        }
    }
    multiplier = f32(1);
  }

  // Online softmax of the lane's queries (one a query atom): their scores
  // are the lane's and the lane's 32 away.
  // Maxima in threes (each one v_max3_f32), a level's one or two left
  // over carried to the next: (n - 1) / 2 instructions for n values, not
  // one more a level.
  auto maxOf = [&](ArrayRef<Value> values) {
    SmallVector<Value> v(values);
    while (v.size() > 2) {
      SmallVector<Value> next;
      size_t i = 0;
      for (; i + 3 <= v.size(); i += 3)
        next.push_back(fmax(fmax(v[i], v[i + 1]), v[i + 2]));
      next.append(v.begin() + i, v.end());
      v = std::move(next);
    }
    return v.size() == 2 ? fmax(v[0], v[1]) : v.front();
  };
  // Scores in pairs: packed FMAs (v_pk_fma_f32) and conversions.
  auto pairType = VectorType::get({2}, b.getF32Type());
  auto pairOf = [&](Value x, Value y) -> Value {
    return vector::FromElementsOp::create(b, loc, pairType, ValueRange{x, y});
  };
  auto splat = [&](Value x) -> Value {
    return vector::BroadcastOp::create(b, loc, pairType, x);
  };
  auto half = [&](Value pair, int64_t i) -> Value {
    return vector::ExtractOp::create(b, loc, pair, i);
  };
  SmallVector<Value> p16, alphas, tileSums;
  Value grows;
  for (int64_t a = 0; a < queryAtoms; ++a) {
    MutableArrayRef<Value> sa = scoresOf(s, a);
    Value localMax = maxOf(sa);
    Value tileMax = fmul(columnReduce(localMax, /*isMax=*/true), multiplier);
    // Lazy rescaling (kRescaleSlack): m moves only when the tile's maximum
    // passes it by more than the slack (always from -inf), so on most tiles
    // alpha is 1 and O^T's rescale below is skipped.
    Value mOld = state[a];
    Value grown =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, tileMax,
                              fadd(mOld, f32(kRescaleSlack)));
    grows = grows ? arith::OrIOp::create(b, loc, grows, grown) : grown;
    Value mNew = select(grown, tileMax, mOld);
    Value mSafe = finiteOrZero(mNew);
    Value alpha = exp2(fsub(mOld, mSafe));
    Value negM = arith::NegFOp::create(b, loc, mSafe);
    SmallVector<Value> pairs;
    for (size_t i = 0; i < sa.size(); i += 2) {
      Value arg = LLVM::FMAOp::create(b, loc, pairOf(sa[i], sa[i + 1]),
                                      splat(multiplier), splat(negM));
      pairs.push_back(pairOf(exp2(half(arg, 0)), exp2(half(arg, 1))));
      Value p = target.truncateProbability(b, loc, elem, pairs.back());
      p16.append({half(p, 0), half(p, 1)});
    }
    // The probabilities' sum in two chains of pairs, each pair added as it
    // is made: fewer values live than a tree's (gfx950's extend_context
    // 264 -> 250 registers, 2 waves a SIMD).
    Value sums[2] = {pairs[0], pairs[1]};
    for (size_t i = 2; i < pairs.size(); ++i)
      sums[i % 2] = fadd(sums[i % 2], pairs[i]);
    Value sum = fadd(sums[0], sums[1]);
    state[a] = mNew;
    tileSums.push_back(fadd(half(sum, 0), half(sum, 1)));
    alphas.push_back(alpha);
  }
  // The row sums and O^T (in pairs, v_pk_mul_f32) rescaled where a lane of
  // the wave moved its m (alpha is 1 in every other lane): a uniform branch
  // the back end lays out of the loop as unlikely.
  MutableArrayRef<Value> scales =
      MutableArrayRef<Value>(state).drop_front(queryAtoms);
  auto rescale = scf::IfOp::create(b, loc, ValueRange(scales).getTypes(),
                                   unlikely(anyLane(grows)),
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(rescale.thenBlock());
    SmallVector<Value> factors, scaled(scales);
    for (int64_t a = 0; a < queryAtoms; ++a) {
      scaled[a] = fmul(scaled[a], alphas[a]);
      factors.push_back(splat(alphas[a]));
    }
    for (size_t i = queryAtoms; i < scaled.size(); i += 2) {
      Value pair = fmul(pairOf(scaled[i], scaled[i + 1]),
                        factors[(i - queryAtoms) / (outAtoms * acc)]);
      scaled[i] = half(pair, 0);
      scaled[i + 1] = half(pair, 1);
    }
    scf::YieldOp::create(b, loc, scaled);
    b.setInsertionPointToStart(rescale.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange(scales));
  }
  llvm::copy(rescale.getResults(), scales.begin());
  for (int64_t a = 0; a < queryAtoms; ++a)
    state[queryAtoms + a] = fadd(state[queryAtoms + a], tileSums[a]);

  // O^T += V^T P^T; each V^T fragment serves every query atom. Each k
  // step's MMAs stand behind a scheduling fence, so the back end hoists
  // the next step's V^T reads over them but no further: scattered over the
  // step before (LLVM 22), they took a wait an MMA; in order, gfx950's
  // prefill issues 16 fewer waits and 15 fewer VALU an iteration (its row
  // sums' v_pk_add_f32 no longer split), 58% -> 60% MFMA.
  int64_t stepsPerAtom = atom.m / atom.k;
  for (int64_t ks = 0; ks < cfg.tileKeys / atom.k; ++ks) {
    auto fa = stageFragments(/*isKey=*/false, stage, ks, outAtoms);
    if (failed(fa))
      return failure();
    target.fenceScheduling(b, loc);
    for (int64_t a = 0; a < queryAtoms; ++a) {
      Fragment pFrag = target.accumulatorsAsOperandB(
          b, loc, atom,
          ArrayRef<Value>(p16).slice((a * scoreAtoms + ks / stepsPerAtom) * acc,
                                     acc),
          ks % stepsPerAtom);
      for (int64_t j = outAtoms - 1; j >= 0; --j)
        if (failed(mmaInto(outOf(a).slice(j * acc, acc), (*fa)[j], pFrag)))
          return failure();
    }
  }
  return success();
}

void PrefillBuilder::transposedEpilogue(ArrayRef<Value> state) {
  int64_t acc = accCount(), outAtoms = pb.valueDim / atom.m;
  int64_t queryAtoms = cfg.queryAtoms;
  for (int64_t a = 0; a < queryAtoms; ++a) {
    Value l = state[queryAtoms + a];
    // (Not structured bindings: lambdas below capture them.)
    Value inv, lse;
    std::tie(inv, lse) =
        rowNormalizer(state[a], columnReduce(l, /*isMax=*/false));
    Value query = add(queryAtomRow(a), remu(lane, atom.n));
    Value token = rowToken(query), tokenHead = rowHead(query);
    ArrayRef<Value> o =
        state.slice(2 * queryAtoms + a * outAtoms * acc, outAtoms * acc);
    ifThen(lt(token, rowEnd), [&] {
      SmallVector<Value> at = {token, tokenHead}, lseAt = {tokenHead, token};
      if (pb.split) {
        at.insert(at.begin(), split);
        lseAt.insert(lseAt.begin(), split);
      }
      storeTransposedColumn(o, inv, pb.out, at, pb.lse, lse, lseAt);
    });
  }
}
