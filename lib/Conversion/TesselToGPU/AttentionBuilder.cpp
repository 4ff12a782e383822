//===- AttentionBuilder.cpp - What the attention templates share ----------===//

#include "AttentionBuilder.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;

FailureOr<MmaAtom> mlir::tessel::chooseAttentionAtom(Operation *op,
                                                     const TargetInfo &target,
                                                     Type elem) {
  FailureOr<SmallVector<MmaAtom>> atoms =
      f32AccumulatorAtoms(op, target, elem);
  if (failed(atoms))
    return failure();
  MmaAtom atom = atoms->front();
  for (const MmaAtom &a : *atoms)
    if (a.m < atom.m)
      atom = a;
  return atom;
}

Value AttentionBuilder::finiteOrZero(Value x) {
  Value negInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                       f32(-INFINITY));
  return select(negInf, f32(0), x);
}

Value AttentionBuilder::rowReduce(Value x, bool isMax) {
  return warpReduce(
      x,
      [&](Value u, Value w) -> Value { return isMax ? fmax(u, w) : fadd(u, w); },
      target.getAccumulatorRowLanes(atom));
}

Value AttentionBuilder::columnReduce(Value x, bool isMax) {
  // A column's lanes are atom.n apart (TargetInfo::getAccumulatorPosition).
  for (int64_t d = atom.n; d < warpSize; d *= 2)
    x = target.butterflyStep(b, loc, x, d, [&](Value u, Value w) -> Value {
      return isMax ? fmax(u, w) : fadd(u, w);
    });
  return x;
}

SharedTile AttentionBuilder::tileOf(Value memref, Value outer, int64_t width,
                                    bool kContig, bool rowGroups) {
  return SharedTile{memref,
                    [this, outer, width, rowGroups](OpBuilder &, Location,
                                                    Value row, Value col) {
                      return swizzledIndices(
                          outer ? ValueRange{outer} : ValueRange{}, row, col,
                          width, rowGroups);
                    },
                    kContig};
}

SmallVector<Value> AttentionBuilder::softmaxStep(
    SmallVector<Value> &s, int64_t atoms, SmallVector<Value> &state,
    int64_t outAtoms, function_ref<Value(int64_t slot, Value localMax)> tileMax,
    int64_t chains, Value multiplier, double rescaleSlack) {
  int64_t nSlots = slots(), acc = accCount(), r = run();
  SmallVector<Value> alpha(nSlots);
  // `chains` interleaved chains of maxes and adds: one chain per row is a
  // dependency chain as long as the row, which the few warps per scheduler
  // of the sm_90a kernels cannot hide; more chains keep more values live
  // (the sm80 templates spill with 4).
  auto reduce = [&](ArrayRef<Value> values,
                    function_ref<Value(Value, Value)> combine) {
    SmallVector<Value> partial;
    for (auto [i, v] : llvm::enumerate(values))
      if (i < static_cast<size_t>(chains))
        partial.push_back(v);
      else
        partial[i % chains] = combine(partial[i % chains], v);
    Value result = partial.front();
    for (Value c : ArrayRef<Value>(partial).drop_front())
      result = combine(result, c);
    return result;
  };
  for (int64_t sl = 0; sl < nSlots; ++sl) {
    SmallVector<Value> row;
    for (int64_t j = 0; j < atoms; ++j)
      for (int64_t e = sl * r; e < (sl + 1) * r; ++e)
        row.push_back(s[j * acc + e]);
    Value localMax =
        reduce(row, [&](Value x, Value y) { return fmax(x, y); });
    Value mOld = state[sl];
    Value mTile = tileMax(sl, localMax);
    if (multiplier)
      mTile = fmul(mTile, multiplier);
    Value mNew = fmax(mOld, mTile);
    if (rescaleSlack > 0)
      mNew = select(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                          mTile, fadd(mOld, f32(rescaleSlack))),
                    mNew, mOld);
    Value mSafe = finiteOrZero(mNew);
    alpha[sl] = exp2(fsub(mOld, mSafe));
    Value negM =
        multiplier ? arith::NegFOp::create(b, loc, mSafe).getResult() : Value();
    row.clear();
    for (int64_t j = 0; j < atoms; ++j)
      for (int64_t e = sl * r; e < (sl + 1) * r; ++e) {
        Value &v = s[j * acc + e];
        v = exp2(
            multiplier
                ? LLVM::FMAOp::create(b, loc, v, multiplier, negM).getResult()
                : fsub(v, mSafe));
        row.push_back(v);
      }
    Value sum = reduce(row, [&](Value x, Value y) { return fadd(x, y); });
    state[sl] = mNew;
    state[nSlots + sl] = fadd(fmul(state[nSlots + sl], alpha[sl]), sum);
  }
  for (int64_t j = 0; j < outAtoms; ++j)
    for (int64_t e = 0; e < acc; ++e) {
      Value &o = state[2 * nSlots + j * acc + e];
      o = fmul(o, alpha[e / r]);
    }
  return alpha;
}

Value AttentionBuilder::anyFactorNotOne(ArrayRef<Value> factors) {
  Value changed;
  for (Value f : factors) {
    Value c =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, f, f32(1));
    changed = changed ? arith::OrIOp::create(b, loc, changed, c) : c;
  }
  return anyLane(changed);
}

Value AttentionBuilder::rescaleRows(const WarpgroupMma &wg, Value acc,
                                    int64_t members, ArrayRef<Value> factors) {
  auto branch = scf::IfOp::create(b, loc, TypeRange{acc.getType()},
                                  anyFactorNotOne(factors),
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  Value scaled = acc;
  for (int64_t i = 0; i < members; ++i)
    scaled = LLVM::InsertValueOp::create(
        b, loc, scaled,
        fmul(wg.accumulator(b, loc, scaled, i), factors[(i % 4) / 2]), i);
  scf::YieldOp::create(b, loc, scaled);
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, loc, acc);
  return branch.getResult(0);
}

void AttentionBuilder::rescaleLazily(MutableArrayRef<Value> o,
                                     ArrayRef<Value> factors) {
  int64_t acc = accCount(), r = run();
  SmallVector<Type> types(o.size(), b.getF32Type());
  auto branch =
      scf::IfOp::create(b, loc, types, unlikely(anyFactorNotOne(factors)),
                        /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    SmallVector<Value> scaled;
    for (auto [i, v] : llvm::enumerate(o))
      scaled.push_back(fmul(v, factors[(i % acc) / r]));
    scf::YieldOp::create(b, loc, scaled);
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, loc, SmallVector<Value>(o));
  }
  llvm::copy(branch.getResults(), o.begin());
}

std::pair<SmallVector<Value>, SmallVector<Value>>
AttentionBuilder::rowNormalizers(ArrayRef<Value> state) {
  int64_t nSlots = slots();
  SmallVector<Value> inv(nSlots), lse(nSlots);
  for (int64_t sl = 0; sl < nSlots; ++sl)
    std::tie(inv[sl], lse[sl]) = rowNormalizer(
        state[sl], rowReduce(state[nSlots + sl], /*isMax=*/false));
  return {inv, lse};
}

void AttentionBuilder::storeTransposedColumn(ArrayRef<Value> o, Value inv,
                                             Value out, ArrayRef<Value> at,
                                             Value lse, Value lseValue,
                                             ArrayRef<Value> lseAt,
                                             int64_t interleave) {
  int64_t acc = accCount(), atoms = o.size() / acc;
  Type outElem = cast<MemRefType>(out.getType()).getElementType();
  Value lane = remu(threadId(), warpSize);
  auto store = [&](ArrayRef<Value> values, Value dim) {
    auto runType = VectorType::get({int64_t(values.size())}, outElem);
    SmallVector<Value> indices(at);
    indices.push_back(dim);
    vector::StoreOp::create(
        b, loc, vector::FromElementsOp::create(b, loc, runType, values), out,
        indices, false,
        llvm::MaybeAlign(std::min<int64_t>(
            16, values.size() * outElem.getIntOrFloatBitWidth() / 8)));
  };
  auto value = [&](int64_t atomIndex, int64_t e) {
    return convertFloat(fmul(o[atomIndex * acc + e], inv), outElem);
  };
  auto rowOf = [&](int64_t e) {
    return target.getAccumulatorPosition(b, loc, atom, lane, e).first;
  };
  if (interleave == 1) {
    // Runs of 4 accumulator elements are 4 consecutive rows of O^T.
    constexpr int64_t run = 4;
    for (int64_t j = 0; j < atoms; ++j)
      for (int64_t e = 0; e < acc; e += run) {
        SmallVector<Value> values;
        for (int64_t v = 0; v < run; ++v)
          values.push_back(value(j, e + v));
        store(values, add(rowOf(e), j * atom.m));
      }
  } else {
    // Row r of a group's atoms: the group's dims interleave r + [0,
    // interleave), one run.
    for (int64_t g = 0; g < atoms; g += interleave)
      for (int64_t e = 0; e < acc; ++e) {
        SmallVector<Value> values;
        for (int64_t j = g; j < g + interleave; ++j)
          values.push_back(value(j, e));
        store(values, add(mul(rowOf(e), interleave), g * atom.m));
      }
  }
  if (!lse)
    return;
  ifThen(lt(lane, idx(atom.n)), [&] {
    memref::StoreOp::create(b, loc, lseValue, lse, lseAt);
  });
}

SmallVector<Value> AttentionBuilder::loadGroupBlockIds(
    Value blockTable, Value request, Value first, Value end, Value maxBlocks,
    int64_t blockSize, int64_t groups, int64_t groupTokens) {
  // end - 1 is -1 for an empty window: as unsigned past any row, clamped.
  Value last = sub(end, idx(1));
  Value lastRow = sub(maxBlocks, idx(1));
  SmallVector<Value> ids;
  for (int64_t g = 0; g < groups; ++g) {
    Value token =
        arith::MinSIOp::create(b, loc, add(first, g * groupTokens), last);
    Value logical = minu(divu(token, blockSize), lastRow);
    ids.push_back(memref::LoadOp::create(b, loc, blockTable,
                                         ValueRange{request, logical}));
  }
  return ids;
}

int64_t AttentionBuilder::waveColumnsMergeBytes(int64_t waves,
                                                int64_t values) const {
  return (waves * atom.n + values * warpSize) * 4;
}

void AttentionBuilder::mergeAndStoreColumns(ArrayRef<Value> state, Value shared,
                                            int64_t waves, Value head,
                                            Value valid, Value request,
                                            Value split, Value out, Value lse,
                                            int64_t interleave) {
  int64_t values = state.size() - 1;
  Type f32Type = b.getF32Type();
  Value mShared = sharedView(shared, 0, {waves, atom.n}, f32Type);
  Value sums =
      sharedView(shared, waves * atom.n * 4, {values, warpSize}, f32Type);
  Value tid = threadId();
  Value lane = remu(tid, warpSize), wave = divu(tid, warpSize);
  Value column = target.getAccumulatorPosition(b, loc, atom, lane, 0).second;
  gpu::BarrierOp::create(b, loc);
  ifThen(lt(lane, idx(atom.n)), [&] {
    memref::StoreOp::create(b, loc, state[0], mShared,
                            ValueRange{wave, column});
  });
  gpu::BarrierOp::create(b, loc);
  Value m = f32(-INFINITY);
  for (int64_t w = 0; w < waves; ++w)
    m = fmax(
        m, memref::LoadOp::create(b, loc, mShared, ValueRange{idx(w), column}));
  Value alpha = exp2(fsub(state[0], finiteOrZero(m)));
  SmallVector<Value> mine;
  for (Value v : state.drop_front())
    mine.push_back(fmul(v, alpha));

  // [l, O^T] summed over the waves in turn; the last stores.
  for (int64_t w = 0; w < waves; ++w) {
    ifThen(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, wave, idx(w)),
        [&] {
          SmallVector<Value> sum(mine);
          for (int64_t v = 0; w > 0 && v < values; ++v)
            sum[v] = fadd(sum[v], memref::LoadOp::create(
                                      b, loc, sums, ValueRange{idx(v), lane}));
          if (w + 1 < waves) {
            for (int64_t v = 0; v < values; ++v)
              memref::StoreOp::create(b, loc, sum[v], sums,
                                      ValueRange{idx(v), lane});
            return;
          }
          auto [inv, lseValue] =
              rowNormalizer(m, columnReduce(sum[0], /*isMax=*/false));
          SmallVector<Value> at = {request, head}, lseAt = {head, request};
          if (split) {
            at.insert(at.begin(), split);
            lseAt.insert(lseAt.begin(), split);
          }
          ifThen(valid, [&, inv = inv, lseValue = lseValue] {
            storeTransposedColumn(ArrayRef<Value>(sum).drop_front(), inv, out,
                                  at, lse, lseValue, lseAt, interleave);
          });
        });
    if (w + 1 < waves)
      gpu::BarrierOp::create(b, loc);
  }
}

LogicalResult AttentionBuilder::mmaInto(MutableArrayRef<Value> c,
                                        const Fragment &a,
                                        const Fragment &bFrag) {
  auto d = target.mma(b, loc, atom, a, bFrag, c);
  if (failed(d))
    return failure();
  llvm::copy(*d, c.begin());
  return success();
}

std::pair<Value, Value> AttentionBuilder::rowNormalizer(Value m, Value total) {
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, total, f32(0));
  Value inv =
      select(empty, f32(0), arith::DivFOp::create(b, loc, f32(1), total));
  Value l = fmul(fadd(finiteOrZero(m), target.log2(b, loc, total)), f32(M_LN2));
  return {inv, select(empty, f32(-INFINITY), l)};
}

std::pair<Value, Value>
AttentionBuilder::contextWindow(Value lens, Value request, Value maxBlocks,
                                int64_t blockSize, Value split,
                                Value numSplits) {
  Value length = toIndex(memref::LoadOp::create(b, loc, lens, request));
  length = minu(arith::MaxSIOp::create(b, loc, length, idx(0)),
                mul(maxBlocks, blockSize));
  if (!numSplits)
    return {idx(0), length};
  Value perSplit = mul(arith::CeilDivUIOp::create(b, loc, maxBlocks, numSplits),
                       blockSize);
  Value start = minu(mul(split, perSplit), length);
  return {start, minu(add(start, perSplit), length)};
}

void AttentionBuilder::stageRows(
    Value shared, Value q, int64_t rows, int64_t width, int64_t threads,
    function_ref<std::pair<Value, SmallVector<Value>>(Value row)> source) {
  int64_t chunksPerRow = width / kChunk, total = rows * chunksPerRow;
  Type elem = cast<MemRefType>(q.getType()).getElementType();
  auto chunkType = VectorType::get({kChunk}, elem);
  Value zeros =
      arith::ConstantOp::create(b, loc, chunkType, b.getZeroAttr(chunkType));
  Value tid = threadId();
  for (int64_t i = 0; i * threads < total; ++i) {
    Value id = add(tid, i * threads);
    Value row = divu(id, chunksPerRow);
    Value col = mul(remu(id, chunksPerRow), kChunk);
    // The last step may have more threads than chunks.
    bool partial = (i + 1) * threads > total;
    auto [exists, indices] = source(row);
    if (partial)
      exists = andi(exists, lt(id, idx(total)));
    indices.push_back(col);
    auto ifOp = scf::IfOp::create(b, loc, chunkType, exists, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      scf::YieldOp::create(b, loc,
                           vector::LoadOp::create(b, loc, chunkType, q,
                                                  indices, false, kChunkAlign)
                               .getResult());
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc, zeros);
    }
    Value chunk = ifOp.getResult(0);
    auto store = [&] {
      vector::StoreOp::create(b, loc, chunk, shared,
                              swizzledIndices({}, row, col, width), false,
                              kChunkAlign);
    };
    if (partial)
      ifThen(lt(id, idx(total)), store);
    else
      store();
  }
}

LogicalResult AttentionBuilder::mmaSteps(
    MutableArrayRef<Value> acc, int64_t kSteps,
    function_ref<FailureOr<Fragment>(int64_t ks)> a, const SharedTile &bTile,
    Value bRow, function_ref<Value(int64_t ks)> bK, int64_t atoms,
    int64_t group, bool interleaved) {
  int64_t count = accCount();
  Value lane = remu(threadId(), warpSize);
  auto mmaAtom = [&](const Fragment &fa, const Fragment &fb, int64_t j) {
    MutableArrayRef<Value> slice = acc.slice(j * count, count);
    auto d = target.mma(b, loc, atom, fa, fb, slice);
    if (failed(d))
      return failure();
    llvm::copy(*d, slice.begin());
    return success();
  };
  // B's atoms [j0, j0 + group) of step ks (fewer in the last group when
  // `group` does not divide `atoms`: head dim 192 split over two warps, 12
  // atoms, groups of 8).
  auto loadGroup = [&](int64_t ks,
                       int64_t j0) -> FailureOr<SmallVector<Fragment>> {
    int64_t groupAtoms = std::min(group, atoms - j0);
    Value col0 = add(bRow, j0 * atom.n);
    if (interleaved)
      return target.loadInterleavedFragments(b, loc, atom, bTile, col0, bK(ks),
                                             lane, groupAtoms);
    return target.loadFragments(b, loc, atom, MmaOperand::B, bTile, col0,
                                bK(ks), lane, groupAtoms);
  };
  if (target.getAsyncCopyBytes() > 0) {
    for (int64_t ks = 0; ks < kSteps; ++ks) {
      FailureOr<Fragment> fa = a(ks);
      if (failed(fa))
        return failure();
      for (int64_t j0 = 0; j0 < atoms; j0 += group) {
        auto fb = loadGroup(ks, j0);
        if (failed(fb))
          return failure();
        for (auto [j, frag] : llvm::enumerate(*fb))
          if (failed(mmaAtom(*fa, frag, j0 + j)))
            return failure();
      }
    }
    return success();
  }
  // Register-staged targets (CDNA): a k-step's fragments (A's, then B's)
  // are read before the MMAs of the step before, behind a scheduling fence,
  // and the MMAs take them in the reverse order of the reads: the first
  // one's LDS wait (for the last read) covers the step, and the reads'
  // latency overlaps the MMAs before them, as in the grouped matmuls and
  // PrefillTransposed.cpp (gfx950's MLA decode, V by transposing reads:
  // 50 -> 29 s_waitcnt an iteration).
  auto readStep = [&](int64_t ks) -> FailureOr<SmallVector<Fragment>> {
    FailureOr<Fragment> fa = a(ks);
    if (failed(fa))
      return failure();
    SmallVector<Fragment> frags = {*fa};
    for (int64_t j0 = 0; j0 < atoms; j0 += group) {
      auto fb = loadGroup(ks, j0);
      if (failed(fb))
        return failure();
      llvm::append_range(frags, *fb);
    }
    return frags;
  };
  FailureOr<SmallVector<Fragment>> next = readStep(0);
  for (int64_t ks = 0; ks < kSteps; ++ks) {
    if (failed(next))
      return failure();
    SmallVector<Fragment> step = *next;
    if (ks + 1 < kSteps)
      next = readStep(ks + 1);
    target.fenceScheduling(b, loc);
    for (int64_t j = atoms - 1; j >= 0; --j)
      if (failed(mmaAtom(step[0], step[1 + j], j)))
        return failure();
  }
  target.fenceScheduling(b, loc);
  return success();
}

FailureOr<Fragment> AttentionBuilder::loadA(const SharedTile &tile, Value row0,
                                            int64_t ks) {
  return loadA(tile, row0, idx(ks * atom.k));
}

FailureOr<Fragment> AttentionBuilder::loadA(const SharedTile &tile, Value row0,
                                            Value k) {
  auto fa = target.loadFragments(b, loc, atom, MmaOperand::A, tile, row0, k,
                                 remu(threadId(), warpSize), 1);
  if (failed(fa))
    return failure();
  return (*fa)[0];
}
