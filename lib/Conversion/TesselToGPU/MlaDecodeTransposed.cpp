//===- MlaDecodeTransposed.cpp - CDNA MLA decode on transposed scores -----===//
//
// CDNA's absorbed MLA decode (whole context and split form) on transposed
// scores, as PagedDecodeTransposed.cpp runs GQA decode: block (g, b, p)
// takes head group g (16 heads: the columns of the 16x16 MFMA) of request
// b over split p of its context, and each of its 4 waves owns T tokens of
// every 4T-token tile (T = the MFMA's K: 16 on gfx942, 32 on gfx950):
// - S^T = K Q^T on T / 16 score atoms (rows: the wave's tokens, in the
//   order operandKOfAccumulatorRow gives them);
// - P^T, as the accumulators stand, is the B operand of O^T += V^T P^T over
//   all 512 latent dims (32 atoms, 128 accumulators a lane), so no P goes
//   through LDS and no wave waits for another: the waves keep their own
//   online softmax and merge once, at the end (mergeAndStoreColumns). Nothing
//   in the loop is a workgroup barrier.
//
// A lane reads its score rows' tokens straight from the cache into its K
// fragments: row r's 576 dims as 18 16-byte chunks, chunk c of lane
// quarter q (l / 16) at dims 32 c + 8 q, so that a k step's four quarters
// read one 64-byte run (the k order of a step is any, as long as Q^T's
// fragments take the same: they are read the same way). The loads of the
// next tile are issued while this one computes (its block ids two tiles
// ahead), and a load past the window's end reads the window's last token
// (clamped; its score is masked), so the loop has one body.
//
// V is the first 512 dims of the same rows: a lane writes its K chunks
// below 512 to the wave's own slice of LDS ([T][512] token-major,
// swizzled), and the wave reads V^T's fragments back, by transposing reads
// on gfx950 and on gfx942 by one 16-byte read a token for 8 atoms whose
// rows interleave (TargetInfo::loadInterleavedFragments). The slices take
// 64 KB on gfx942 (all of it: one block, one wave a SIMD) and 128 KB on
// gfx950, where Q also stays in LDS (18 KB) and is read every tile: gfx950's
// K chunks of the next tile (two score atoms, 144 VGPRs) leave no room for
// Q's 72; gfx942 holds Q^T's fragments in registers.
//
//===----------------------------------------------------------------------===//

#include "MlaDecode.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::mla;

namespace {

/// Waves of a block; each owns waveTokens() tokens of a tile.
constexpr int64_t kWaves = 4;
/// Tokens of a wave's tile that lie in one cache block.
constexpr int64_t kGroupTokens = 16;
/// Dims of a row that a chunk index c spans over the lane quarters: a
/// quarter's chunk c is dims [32 c + 8 q, + 8).
constexpr int64_t kChunkSpan = 4 * kChunk;
/// Atoms of V^T read together on gfx942 (one 16-byte read a token).
constexpr int64_t kInterleave = 8;

/// Whether Q^T's fragments stay in registers: one score atom a wave (gfx942;
/// gfx950's two atoms' K chunks leave no room).
bool queryInRegisters(const MmaAtom &atom) { return atom.k == atom.m; }
/// Bytes of the waves' V slices.
int64_t valueSliceBytes(const MmaAtom &atom, const MlaProblem &pb) {
  return kWaves * atom.k * pb.latentDim * 2;
}
/// Bytes of the loop's shared memory: the V slices and, after them, Q where
/// it is read from there.
int64_t loopSharedBytes(const MmaAtom &atom, const MlaProblem &pb) {
  return valueSliceBytes(atom, pb) +
         (queryInRegisters(atom) ? 0 : atom.n * pb.headDim * 2);
}

class TransposedMlaBuilder : public MlaBuilderBase {
public:
  TransposedMlaBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                       const MmaAtom &atom, const MlaProblem &pb)
      : MlaBuilderBase(b, loc, target, atom, pb) {}

  LogicalResult build(int64_t &sharedBytes);

private:
  /// Tokens a wave scores a tile: one k step of P V.
  int64_t waveTokens() const { return atom.k; }
  int64_t scoreAtoms() const { return waveTokens() / atom.m; }
  int64_t tileTokens() const { return kWaves * waveTokens(); }
  int64_t rowChunks() const { return pb.headDim / kChunkSpan; }
  int64_t valueChunks() const { return pb.latentDim / kChunkSpan; }
  int64_t outAtoms() const { return pb.latentDim / atom.m; }
  /// V^T's atoms read together; 1: by transposing reads.
  int64_t interleave() const {
    return target.hasTransposedFragmentReads(atom) ? 1 : kInterleave;
  }
  /// The wave's V slice, [tokens][latent dims] swizzled. Transposing reads
  /// (gfx950) address it flat, so that an address's constant parts are the
  /// LDS instruction's offset (KernelBuilder::swizzledOffset: the loop's
  /// lgkmcnt(0) and VALU went down); gfx942's interleaved reads, indexed,
  /// take 17 fewer VALU an iteration.
  SharedTile valueTile() {
    if (interleave() > 1)
      return tileOf(sharedV, wave, pb.latentDim, false);
    return SharedTile{sharedVFlat,
                      [this](OpBuilder &, Location, Value row, Value col) {
                        return SmallVector<Value>{swizzledOffset(
                            wave, waveTokens(), row, col, pb.latentDim)};
                      },
                      false};
  }

  /// The wave's token (from its first) whose K row is row `row` of score
  /// atom `a`.
  Value tokenOfRow(int64_t a, Value row) {
    return target.operandKOfAccumulatorRow(b, loc, atom, add(row, a * atom.m));
  }
  /// The fragment of k step `ks` out of a lane's chunks of a row.
  Fragment fragmentOf(ArrayRef<Value> chunks, int64_t ks);
  /// A lane's K chunks of the wave's tokens from `waveStart` (`ids`: the
  /// block ids of its 16-token groups), [score atom][chunk].
  SmallVector<Value> loadKeys(Value waveStart, ValueRange ids);
  SmallVector<Value> loadBlockIds(Value waveStart) {
    return loadGroupBlockIds(pb.blockTable, request, waveStart, end, maxBlocks,
                             pb.blockSize, waveTokens() / kGroupTokens,
                             kGroupTokens);
  }
  /// Q^T's chunk c for this lane's head (registers or LDS).
  Value queryChunk(int64_t c);
  /// The V slice's rows from `keys` and the wave's masked, scaled S^T.
  FailureOr<SmallVector<Value>> scores(Value waveStart, ArrayRef<Value> keys);
  /// The online-softmax step on `s` and O^T += V^T P^T.
  LogicalResult accumulate(SmallVector<Value> &s, SmallVector<Value> &state);
  void epilogue(ArrayRef<Value> state);

  Type elem;
  /// The waves' V slices [W][T][L] and Q [16][D] (gfx950), each also as a
  /// flat view.
  Value shared, sharedV, sharedVFlat, sharedQ, sharedQFlat;
  Value lane, wave, quarter, aRow;
  Value start, end, maxBlocks;
  /// gfx942: Q^T's chunks, read once.
  SmallVector<Value> qChunks;
};

Fragment TransposedMlaBuilder::fragmentOf(ArrayRef<Value> chunks, int64_t ks) {
  int64_t perLane = atom.k / 4, steps = kChunk / perLane;
  Value chunk = chunks[ks / steps];
  if (steps == 1)
    return {chunk};
  SmallVector<int64_t> picked;
  for (int64_t i = 0; i < perLane; ++i)
    picked.push_back(ks % steps * perLane + i);
  return {vector::ShuffleOp::create(b, loc, chunk, chunk, picked)};
}

SmallVector<Value> TransposedMlaBuilder::loadKeys(Value waveStart,
                                                  ValueRange ids) {
  SmallVector<Value> chunks;
  Value last = sub(end, idx(1));
  for (int64_t a = 0; a < scoreAtoms(); ++a) {
    Value u = tokenOfRow(a, aRow);
    Value token = arith::MinSIOp::create(b, loc, add(waveStart, u), last);
    Value id = ids.size() == 1
                   ? ids[0]
                   : select(lt(u, idx(kGroupTokens)), ids[0], ids[1]);
    Value block = clampBlockId(id, pb.cache);
    Value offset = remu(token, pb.blockSize);
    for (int64_t c = 0; c < rowChunks(); ++c)
      chunks.push_back(loadVector(
          pb.cache,
          ValueRange{block, offset, add(mul(quarter, kChunk), c * kChunkSpan)},
          kChunk));
  }
  return chunks;
}

Value TransposedMlaBuilder::queryChunk(int64_t c) {
  if (queryInRegisters(atom))
    return qChunks[c];
  auto chunkType = VectorType::get({kChunk}, elem);
  Value col = add(mul(quarter, kChunk), c * kChunkSpan);
  Value flat = swizzledOffset(idx(0), atom.n, aRow, col, pb.headDim);
  return vector::LoadOp::create(b, loc, chunkType, sharedQFlat, flat, false,
                                kChunkAlign);
}

FailureOr<SmallVector<Value>>
TransposedMlaBuilder::scores(Value waveStart, ArrayRef<Value> keys) {
  int64_t acc = accCount(), atoms = scoreAtoms(), rc = rowChunks();
  // The rows' first 512 dims to the wave's V slice (its previous tile's
  // reads are done: a wave's LDS accesses run in order).
  SharedTile vTile = valueTile();
  target.waveBarrier(b, loc);
  for (int64_t a = 0; a < atoms; ++a) {
    Value u = tokenOfRow(a, aRow);
    for (int64_t c = 0; c < valueChunks(); ++c)
      vector::StoreOp::create(
          b, loc, keys[a * rc + c], vTile.memref,
          vTile.indices(b, loc, u, add(mul(quarter, kChunk), c * kChunkSpan)),
          false, kChunkAlign);
  }

  // S^T = K Q^T, chunk by chunk (Q^T's shared by the atoms). From LDS, Q's
  // chunks are read kQueryAhead chunks ahead of their MMAs, in order (the
  // back end, short of VGPRs, read each right before its MMAs and waited
  // for it there: 21 lgkmcnt(0) an iteration on gfx950, 4 now).
  constexpr int64_t kQueryAhead = 2;
  SmallVector<Value> s(atoms * acc, f32(0));
  int64_t stepsPerChunk = kChunk / (atom.k / 4);
  SmallVector<Value> query;
  for (int64_t c = 0; c < rc; ++c) {
    while (int64_t(query.size()) <= std::min(c + kQueryAhead, rc - 1))
      query.push_back(queryChunk(query.size()));
    if (!queryInRegisters(atom))
      target.fenceScheduling(b, loc);
    for (int64_t ks = c * stepsPerChunk; ks < (c + 1) * stepsPerChunk; ++ks) {
      Fragment qFrag = fragmentOf({query[c]}, ks % stepsPerChunk);
      for (int64_t a = 0; a < atoms; ++a)
        if (failed(mmaInto(MutableArrayRef<Value>(s).slice(a * acc, acc),
                           fragmentOf(keys.slice(a * rc, rc), ks), qFrag)))
          return failure();
    }
  }
  for (int64_t a = 0; a < atoms; ++a)
    for (int64_t e = 0; e < acc; ++e) {
      Value row = target.getAccumulatorPosition(b, loc, atom, lane, e).first;
      Value token = add(waveStart, tokenOfRow(a, row));
      Value &v = s[a * acc + e];
      v = select(lt(token, end), fmul(v, pb.scaleLog2), f32(-INFINITY));
    }
  return s;
}

/// State: [m, l, O^T (outAtoms x accumulators)].
LogicalResult TransposedMlaBuilder::accumulate(SmallVector<Value> &s,
                                               SmallVector<Value> &state) {
  int64_t acc = accCount(), atoms = scoreAtoms();
  // Online softmax of the lane's column (one head): its rows are spread
  // over the lane quarters.
  Value localMax = s.front();
  for (Value v : ArrayRef<Value>(s).drop_front())
    localMax = fmax(localMax, v);
  Value mNew = fmax(state[0], columnReduce(localMax, /*isMax=*/true));
  Value mSafe = finiteOrZero(mNew);
  Value alpha = exp2(fsub(state[0], mSafe));
  auto pairType = VectorType::get({2}, b.getF32Type());
  SmallVector<Value> p16;
  Value sum = f32(0);
  for (int64_t e = 0; e < atoms * acc; e += 2) {
    Value p0 = exp2(fsub(s[e], mSafe)), p1 = exp2(fsub(s[e + 1], mSafe));
    sum = fadd(fadd(sum, p0), p1);
    Value pair = target.truncateProbability(
        b, loc, elem,
        vector::FromElementsOp::create(b, loc, pairType, ValueRange{p0, p1}));
    p16.push_back(vector::ExtractOp::create(b, loc, pair, 0));
    p16.push_back(vector::ExtractOp::create(b, loc, pair, 1));
  }
  state[0] = mNew;
  state[1] = fadd(fmul(state[1], alpha), sum);
  // O^T is rescaled only where some lane's maximum grew.
  rescaleLazily(MutableArrayRef<Value>(state).drop_front(2),
                SmallVector<Value>(slots(), alpha));

  // O^T += V^T P^T over the wave's tokens (k: the slice's rows in order).
  SharedTile vTile = valueTile();
  target.waveBarrier(b, loc);
  Fragment pFrag = target.accumulatorsAsOperandB(b, loc, atom, p16, 0);
  for (int64_t o0 = 0; o0 < outAtoms(); o0 += kInterleave) {
    SmallVector<Fragment> vFrags;
    if (interleave() > 1) {
      vFrags = target.loadInterleavedFragments(
          b, loc, atom, vTile, idx(o0 * atom.m), idx(0), lane, kInterleave);
    } else {
      auto frags =
          target.loadFragments(b, loc, atom, MmaOperand::A, vTile,
                               idx(o0 * atom.m), idx(0), lane, kInterleave);
      if (failed(frags))
        return failure();
      vFrags = *frags;
    }
    for (int64_t j = 0; j < kInterleave; ++j)
      if (failed(mmaInto(
              MutableArrayRef<Value>(state).slice(2 + (o0 + j) * acc, acc),
              vFrags[j], pFrag)))
        return failure();
  }
  return success();
}

void TransposedMlaBuilder::epilogue(ArrayRef<Value> state) {
  Value column = target.getAccumulatorPosition(b, loc, atom, lane, 0).second;
  Value head = add(mul(group, atom.n), column);
  // (The merge's first barrier also frees the V slices and Q.)
  mergeAndStoreColumns(state, shared, kWaves, head, lt(head, idx(pb.heads)),
                       request, pb.split ? split : Value(), pb.out, pb.lse,
                       interleave());
}

LogicalResult TransposedMlaBuilder::build(int64_t &sharedBytes) {
  elem = cast<MemRefType>(pb.q.getType()).getElementType();
  setBlockIds();
  Value tid = threadId();
  lane = remu(tid, warpSize);
  wave = divu(tid, warpSize);
  auto run = *target.fragmentRun(b, loc, atom, MmaOperand::A, lane);
  aRow = run.row;
  quarter = divu(run.kFirst, atom.k / 4);

  sharedBytes =
      std::max(loopSharedBytes(atom, pb),
               waveColumnsMergeBytes(kWaves, 1 + outAtoms() * accCount()));
  shared = dynamicSharedBytes();
  sharedV = sharedView(shared, 0, {kWaves, waveTokens(), pb.latentDim}, elem);
  sharedVFlat =
      sharedView(shared, 0, {kWaves * waveTokens() * pb.latentDim}, elem);

  maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  Value numSplits =
      pb.split ? memref::DimOp::create(b, loc, pb.out, 0).getResult() : idx(1);
  std::tie(start, end) = contextWindow(pb.lens, request, maxBlocks,
                                       pb.blockSize, split, numSplits);
  Value numTiles = uniform(
      arith::CeilDivUIOp::create(b, loc, sub(end, start), idx(tileTokens())));

  // Q^T: column aRow is head 16 g + aRow (past the heads: zeros in LDS, the
  // last head in registers; never stored).
  if (queryInRegisters(atom)) {
    Value head = minu(add(mul(group, atom.n), aRow), idx(pb.heads - 1));
    for (int64_t c = 0; c < rowChunks(); ++c)
      qChunks.push_back(loadVector(
          pb.q,
          ValueRange{request, head, add(mul(quarter, kChunk), c * kChunkSpan)},
          kChunk));
  } else {
    sharedQ = sharedView(shared, valueSliceBytes(atom, pb),
                         {atom.n, pb.headDim}, elem);
    sharedQFlat = sharedView(shared, valueSliceBytes(atom, pb),
                             {atom.n * pb.headDim}, elem);
    stageRows(sharedQ, pb.q, atom.n, pb.headDim, kWaves * warpSize,
              [&](Value row) {
                Value head = add(mul(group, atom.n), row);
                return std::make_pair(lt(head, idx(pb.heads)),
                                      SmallVector<Value>{request, head});
              });
    gpu::BarrierOp::create(b, loc);
  }

  // Carried: the state, the tile's K chunks, the next tile's block ids.
  Value waveStart0 = add(start, mul(wave, waveTokens()));
  SmallVector<Value> state = {f32(-INFINITY), f32(0)};
  state.append(outAtoms() * accCount(), f32(0));
  int64_t stateSize = state.size();
  SmallVector<Value> ids = loadBlockIds(waveStart0);
  SmallVector<Value> carried(state);
  llvm::append_range(carried, loadKeys(waveStart0, ids));
  int64_t keyCount = carried.size() - stateSize;
  llvm::append_range(carried, loadBlockIds(add(waveStart0, tileTokens())));

  auto loop = scf::ForOp::create(b, loc, idx(0), numTiles, idx(1), carried);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange args = loop.getRegionIterArgs();
    Value waveStart =
        add(waveStart0, mul(loop.getInductionVar(), tileTokens()));
    SmallVector<Value> st(args.take_front(stateSize));
    SmallVector<Value> keys(args.slice(stateSize, keyCount));
    Value nextStart = add(waveStart, tileTokens());
    // The next tile's loads go out once this tile's K chunks are used (two
    // tiles' would not fit gfx950's VGPRs).
    FailureOr<SmallVector<Value>> s = scores(waveStart, keys);
    if (failed(s))
      return failure();
    target.fenceScheduling(b, loc);
    SmallVector<Value> nextKeys =
        loadKeys(nextStart, args.drop_front(stateSize + keyCount));
    SmallVector<Value> nextIds = loadBlockIds(add(nextStart, tileTokens()));
    target.fenceScheduling(b, loc);
    if (failed(accumulate(*s, st)))
      return failure();
    llvm::append_range(st, nextKeys);
    llvm::append_range(st, nextIds);
    scf::YieldOp::create(b, loc, st);
  }
  epilogue(SmallVector<Value>(loop.getResults().take_front(stateSize)));
  return success();
}

} // namespace

std::optional<MmaAtom>
mlir::tessel::mla::transposedMlaAtom(const TargetInfo &target, Type elem,
                                     const MlaProblem &pb) {
  Builder builder(elem.getContext());
  for (const MmaAtom &atom : target.getMmaAtoms(elem, builder.getF32Type())) {
    if (atom.m != 16 || !target.hasAccumulatorsAsOperandB(atom) ||
        elem.getIntOrFloatBitWidth() != 16 || atom.k % atom.m ||
        kGroupTokens * 2 < atom.k)
      continue;
    // (Cache blocks are multiples of 16 tokens: the op's verifier.)
    if (pb.blockSize % kGroupTokens == 0 && pb.headDim % kChunkSpan == 0 &&
        pb.latentDim % (atom.m * kInterleave) == 0 &&
        pb.latentDim <= pb.headDim &&
        loopSharedBytes(atom, pb) <= target.getSharedMemoryBytes())
      return atom;
  }
  return std::nullopt;
}

FailureOr<int64_t> mlir::tessel::mla::buildTransposedMlaDecode(
    OpBuilder &b, Location loc, const TargetInfo &target, const MmaAtom &atom,
    const MlaProblem &pb, int64_t &sharedBytes) {
  TransposedMlaBuilder builder(b, loc, target, atom, pb);
  if (failed(builder.build(sharedBytes)))
    return failure();
  return kWaves * target.getWarpSize();
}
