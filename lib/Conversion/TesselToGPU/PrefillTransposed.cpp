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
// - a lane's scores are all of one query (the lane 32 away holds the
//   rest), its row sum its own until the epilogue; the usual tile takes no
//   maximum: its probabilities are made at the offset of the tiles before,
//   and a wave rescores the tile, takes m from its maximum and rescales
//   O^T, in a block it branches to uniformly, only where a lane's sum of
//   them passes 2^kRescaleSlack (computeTransposedTile);
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
  // Register-staged, chunk-major ([width / 8, rows, 8]): each read through
  // a view of the stage that starts at the read's constant part (its k
  // step's chunks, its atom's rows), so that every read of a lane has the
  // same index, one address and an immediate offset. (Through one view of
  // the stage, LLVM kept K's constant parts OR'd inside the swapped row's
  // arithmetic: an address register a read, 16 at head dim 128.) K's rows
  // in the order that makes P^T's accumulators the B fragments of P.V.
  auto shape = cast<MemRefType>((isKey ? sharedK : sharedV).getType())
                   .getShape()
                   .drop_front();
  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  int64_t rows = shape[1], width = isKey ? pb.headDim : cfg.tileKeys;
  SmallVector<Fragment> frags;
  for (int64_t i = 0; i < count; ++i) {
    int64_t start = (ks * atom.k / kChunk * rows + i * atom.m) * kChunk;
    Value view = sharedView(smemBytes,
                            add(stageOffset(isKey, stage), idx(start * bytes)),
                            shape, elem);
    SharedTile tile{view,
                    [this, stage, width, isKey](OpBuilder &ob, Location l,
                                                Value row, Value col) {
                      if (isKey)
                        row = target.operandKOfAccumulatorRow(ob, l, atom, row);
                      return SmallVector<Value>(llvm::drop_begin(
                          stagedIndices(stage, row, col, width)));
                    },
                    /*kContiguous=*/true};
    auto read = target.loadFragments(b, loc, atom, MmaOperand::A, tile, idx(0),
                                     idx(0), lane, 1);
    if (failed(read))
      return failure();
    frags.push_back((*read)[0]);
  }
  return frags;
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

  // K's (isKey: scoreAtoms a step) or V^T's (outAtoms) fragments of the
  // `group` k steps of group g, step by step. A group's reads go together
  // and its MMAs take them in the reverse order of the reads (here and in
  // P.V): the first one's wait, for the group's last read, covers the
  // others (LDS returns in order), one lgkmcnt wait a group rather than
  // one an atom or a step (gfx950's paged forms 16 -> 9 waits an
  // iteration with two steps a group).
  auto groupFragments = [&](bool isKey, int64_t g,
                            int64_t group) -> FailureOr<SmallVector<Fragment>> {
    SmallVector<Fragment> frags;
    for (int64_t ks = g * group; ks < (g + 1) * group; ++ks) {
      auto step =
          stageFragments(isKey, stage, ks, isKey ? scoreAtoms : outAtoms);
      if (failed(step))
        return failure();
      llvm::append_range(frags, *step);
    }
    return frags;
  };
  // S^T = K Q^T; each K fragment serves every query atom. Each group's K
  // fragments are read before the group ahead's MMAs, so their LDS latency
  // overlaps those (read as used, the back end drained LDS, lgkmcnt(0), at
  // nearly every step: 22 waits an iteration on gfx942). `masked`: scaled,
  // and -inf past the lane's keys.
  Value multiplier = masked ? f32(1) : pb.scaleLog2;
  auto scores = [&](bool again) -> FailureOr<SmallVector<Value>> {
    SmallVector<Value> s(queryAtoms * scoreAtoms * acc, f32(0));
    int64_t group = kSteps % 2 ? 1 : 2;
    auto loadK = [&](int64_t g) {
      return groupFragments(/*isKey=*/true, g, group);
    };
    auto fa = loadK(0);
    for (int64_t g = 0; g < kSteps / group; ++g) {
      if (failed(fa))
        return failure();
      SmallVector<Fragment> cur = *fa;
      if (g + 1 < kSteps / group)
        fa = loadK(g + 1);
      // The group ahead's reads stay together, before this group's MMAs:
      // one wait a group (the back end put a read between two MMAs, each
      // behind a wait: gfx950's paged forms 31 -> 24 SALU cycles an
      // iteration).
      target.fenceScheduling(b, loc);
      for (int64_t i = group - 1; i >= 0; --i)
        for (int64_t a = 0; a < queryAtoms; ++a)
          for (int64_t j = scoreAtoms - 1; j >= 0; --j)
            if (failed(mmaInto(scoresOf(s, a).slice(j * acc, acc),
                               cur[i * scoreAtoms + j],
                               qFrags[a * kSteps + g * group + i])))
              return failure();
    }
    // The last group's MMAs in order too (one wait for its reads).
    target.fenceScheduling(b, loc);
    if (!masked)
      return s;
    Value tileStart = add(keyStart, mul(kvTile, cfg.tileKeys));
    // The key of a lane's accumulator element e, in its score atom.
    auto keyOf = [&](Value l, int64_t e) {
      return target.operandKOfAccumulatorRow(
          b, loc, atom,
          target.getAccumulatorPosition(b, loc, atom, l, e).first);
    };
    // Where every lane's keys are lane 0's plus the lane's first (the 32x32
    // atom: 8 more in lanes 32-63), each element's key is a constant
    // compared with one bound a lane (keys a lane and element were 16
    // values held over the loop: the 128-key tiles' masked loop spilled).
    SmallVector<int64_t> laneZeroKeys;
    for (int64_t e = 0; e < acc; ++e) {
      std::optional<int64_t> key = getConstantIntValue(keyOf(idx(0), e));
      for (int64_t l : {1, 31, 32, 63}) {
        std::optional<int64_t> first = getConstantIntValue(keyOf(idx(l), 0));
        std::optional<int64_t> own = getConstantIntValue(keyOf(idx(l), e));
        if (!key || !first || !own || *own != *key + *first)
          key.reset();
      }
      if (!key) {
        laneZeroKeys.clear();
        break;
      }
      laneZeroKeys.push_back(*key);
    }
    for (int64_t a = 0; a < queryAtoms; ++a) {
      // The lane's last key, relative to the tile, in 32 bits.
      Value last = sub(keyEnd, idx(1));
      if (pb.causal)
        last = arith::MinSIOp::create(
            b, loc, last,
            add(rowToken(add(queryAtomRow(a), remu(lane, atom.n))),
                queryOffset));
      last = sub(last, tileStart);
      if (!laneZeroKeys.empty())
        last = sub(last, keyOf(lane, 0));
      last = toI32(last);
      // Scoring again (the rescale), its own masks: LLVM took the tile's,
      // held over the loop in 32 SGPR pairs (spilled).
      if (again)
        last = target.opaqueCopy(b, loc, last);
      for (int64_t j = 0; j < scoreAtoms; ++j) {
        // Score atom j's keys compared as constants below 32 with its own
        // bound: inline operands (the larger ones took an SGPR each, held
        // over the loop: 24 at 128-key tiles, spilled).
        Value atomLast =
            laneZeroKeys.empty()
                ? last
                : arith::SubIOp::create(b, loc, last, i32(j * atom.m));
        for (int64_t e = 0; e < acc; ++e) {
          Value key = laneZeroKeys.empty()
                          ? toI32(add(keyOf(lane, e), j * atom.m))
                          : i32(laneZeroKeys[e]);
          Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                           key, atomLast);
          Value &v = scoresOf(s, a)[j * acc + e];
          v = select(ok, fmul(v, pb.scaleLog2), f32(-INFINITY));
        }
      }
    }
    return s;
  };

  // Online softmax of the lane's queries (one a query atom), whose scores
  // are the lane's and the lane's 32 away. state[a] is the exp2 offset of
  // query atom a's probabilities, -m (+inf while m is -inf), m moving
  // lazily: the probabilities are made at the offset of the tiles before,
  // and only where a lane's sum of them passes 2^kRescaleSlack (which every
  // probability past 2^kRescaleSlack makes it do; +inf or NaN at a query's
  // first tile) does the wave, in an unlikely block, score the tile again
  // and take m from its maximum, rescaling O^T and the row sums. No
  // maximum on the usual tile: (n - 1) / 2 v_max3_f32, an exchange with
  // the lane 32 away and a compare and 4 selects a query atom fewer
  // (static: the prefill's loop 66% -> 70% of its issue cycles on MFMAs
  // on gfx942, 61% -> 64% on gfx950).
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
  // Query atom a's probabilities at `offset`, as truncated pairs (appended
  // to `p`), and the lane's sum of them: scores in pairs through packed
  // FMAs into exp2, summed in two chains of pairs, each pair added as it is
  // made (fewer values live than a tree's: gfx950's extend_context 264 ->
  // 250 registers, 2 waves a SIMD).
  auto probabilities = [&](ArrayRef<Value> sa, Value offset,
                           SmallVector<Value> &p) {
    SmallVector<Value> pairs;
    for (size_t i = 0; i < sa.size(); i += 2) {
      Value arg = LLVM::FMAOp::create(b, loc, pairOf(sa[i], sa[i + 1]),
                                      splat(multiplier), splat(offset));
      pairs.push_back(pairOf(exp2(half(arg, 0)), exp2(half(arg, 1))));
      p.push_back(target.truncateProbability(b, loc, elem, pairs.back()));
    }
    Value sums[2] = {pairs[0], pairs[1]};
    for (size_t i = 2; i < pairs.size(); ++i)
      sums[i % 2] = fadd(sums[i % 2], pairs[i]);
    Value sum = fadd(sums[0], sums[1]);
    return fadd(half(sum, 0), half(sum, 1));
  };
  auto s = scores(/*again=*/false);
  if (failed(s))
    return failure();
  SmallVector<Value> p, tileSums;
  Value passed;
  for (int64_t a = 0; a < queryAtoms; ++a) {
    tileSums.push_back(probabilities(scoresOf(*s, a), state[a], p));
    // Unordered: a NaN sum (a query's first tile) passes too.
    Value over =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGT,
                              tileSums.back(), f32(std::exp2(kRescaleSlack)));
    passed = passed ? arith::OrIOp::create(b, loc, passed, over) : over;
  }
  // [p..., tile sums, offsets, row sums, O^T]
  auto carried = [&](ArrayRef<Value> probs, ArrayRef<Value> sums,
                     ArrayRef<Value> st) {
    SmallVector<Value> v(probs);
    llvm::append_range(v, sums);
    llvm::append_range(v, st);
    return v;
  };
  // The probabilities stay truncated before the branch (LLVM sank the
  // truncation past it, to merge it with the rescale's: 64 floats live
  // over the branch for 32 pairs, and spills).
  for (Value &v : p)
    v = target.opaqueCopy(b, loc, v);
  SmallVector<Value> usual = carried(p, tileSums, state);
  auto rescale = scf::IfOp::create(b, loc, ValueRange(usual).getTypes(),
                                   unlikely(anyLane(passed)),
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(rescale.thenBlock());
    auto again = scores(/*again=*/true);
    if (failed(again))
      return failure();
    // Maxima in threes (each one v_max3_f32), a level's one or two left
    // over carried to the next: (n - 1) / 2 instructions for n values.
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
    SmallVector<Value> scaled(state), probs, sums;
    for (int64_t a = 0; a < queryAtoms; ++a) {
      MutableArrayRef<Value> sa = scoresOf(*again, a);
      Value tileMax = fmul(columnReduce(maxOf(sa), /*isMax=*/true), multiplier);
      Value mOld = arith::NegFOp::create(b, loc, state[a]);
      Value mNew = select(arith::CmpFOp::create(
                              b, loc, arith::CmpFPredicate::OGT, tileMax, mOld),
                          tileMax, mOld);
      Value mSafe = finiteOrZero(mNew);
      Value alpha = exp2(fsub(mOld, mSafe));
      Value offset = arith::NegFOp::create(b, loc, mSafe);
      sums.push_back(probabilities(sa, offset, probs));
      Value finite =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mSafe, mNew);
      scaled[a] = select(finite, offset, f32(INFINITY));
      scaled[queryAtoms + a] = fmul(scaled[queryAtoms + a], alpha);
      // O^T in pairs (v_pk_mul_f32).
      MutableArrayRef<Value> o = MutableArrayRef<Value>(scaled).slice(
          2 * queryAtoms + a * outAtoms * acc, outAtoms * acc);
      for (size_t i = 0; i < o.size(); i += 2) {
        Value pair = fmul(pairOf(o[i], o[i + 1]), splat(alpha));
        o[i] = half(pair, 0);
        o[i + 1] = half(pair, 1);
      }
    }
    scf::YieldOp::create(b, loc, carried(probs, sums, scaled));
    b.setInsertionPointToStart(rescale.elseBlock());
    scf::YieldOp::create(b, loc, usual);
  }
  ValueRange results = rescale.getResults();
  SmallVector<Value> p16;
  for (Value pair : results.take_front(p.size()))
    p16.append({half(pair, 0), half(pair, 1)});
  results = results.drop_front(p.size());
  llvm::copy(results.drop_front(queryAtoms), state.begin());
  for (int64_t a = 0; a < queryAtoms; ++a)
    state[queryAtoms + a] = fadd(state[queryAtoms + a], results[a]);

  // O^T += V^T P^T; each V^T fragment serves every query atom. Each
  // group's MMAs stand behind a scheduling fence, so the back end hoists
  // the next group's V^T reads over them but no further: scattered over
  // the step before (LLVM 22), they took a wait an MMA; in order, gfx950's
  // prefill issued 16 fewer waits and 15 fewer VALU an iteration (its row
  // sums' v_pk_add_f32 no longer split), 58% -> 60% MFMA.
  int64_t stepsPerAtom = atom.m / atom.k;
  int64_t vSteps = cfg.tileKeys / atom.k, vGroup = vSteps % 2 ? 1 : 2;
  for (int64_t g = 0; g < vSteps / vGroup; ++g) {
    auto read = groupFragments(/*isKey=*/false, g, vGroup);
    if (failed(read))
      return failure();
    SmallVector<Fragment> fa = *read;
    target.fenceScheduling(b, loc);
    for (int64_t i = vGroup - 1; i >= 0; --i) {
      int64_t ks = g * vGroup + i;
      for (int64_t a = 0; a < queryAtoms; ++a) {
        Fragment pFrag = target.accumulatorsAsOperandB(
            b, loc, atom,
            ArrayRef<Value>(p16).slice(
                (a * scoreAtoms + ks / stepsPerAtom) * acc, acc),
            ks % stepsPerAtom);
        for (int64_t j = outAtoms - 1; j >= 0; --j)
          if (failed(mmaInto(outOf(a).slice(j * acc, acc), fa[i * outAtoms + j],
                             pFrag)))
            return failure();
      }
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
    std::tie(inv, lse) = rowNormalizer(arith::NegFOp::create(b, loc, state[a]),
                                       columnReduce(l, /*isMax=*/false));
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
