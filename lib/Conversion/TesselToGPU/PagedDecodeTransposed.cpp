//===- PagedDecodeTransposed.cpp - CDNA paged decode on transposed scores -===//
//
// CDNA's decode (decode_attention, and paged_attention's whole and split
// forms without cu_seqlens) on transposed scores, as PrefillTransposed.cpp
// runs the prefill: each wave computes S^T = K Q^T for 32 tokens of the
// context (rows) and the G query heads of its KV head (columns, padded to
// 32) on the 32x32 MFMA, and O^T += V^T P^T with P^T the B operand as it
// stands in the accumulators (TargetInfo::accumulatorsAsOperandB). Unlike
// the prefill's waves, a decode's share no tile: a block's 4 waves take 32
// tokens each of every 128-token tile and read them straight into their
// fragments (TargetInfo::fragmentRun):
// - K: a lane reads its row's token, the row's dims split between the two
//   lane halves ([0, D/2) and [D/2, D), k step i taking the next run of
//   each half); Q^T, read once, in the same order;
// - V^T: a lane holds 8 consecutive tokens of one dim over the P.V steps of
//   each 16-token group: one 16-byte chunk of the shuffled V ([.., BS/8,
//   Dv, 8]), read from the cache; NHD V goes through the wave's own slice
//   of LDS, transposed in registers (a lane's 4 rows of 8 dims become 8
//   runs of 4 tokens, 8-byte writes), with no workgroup barrier.
// For that, C row r holds token swap(r) of the wave's 32 (bits 2 and 3
// exchanged): with operandKOfAccumulatorRow (the identity on gfx942, that
// same swap on gfx950) a lane half's k values over a group's steps are then
// 8 consecutive tokens.
//
// So no K/V tile is staged in LDS: gfx942's 64 KB hold two blocks of 4
// waves (NHD V's slices are 32 KB a block at Dv 128), and a wave has its
// tile's 16 KB of loads in flight before it waits. A wave's two 16-token
// groups lie in one cache block each (BS a multiple of 16); their ids are
// loaded a tile ahead and used as loaded (a clamp right after the load
// would wait for it there).
//
// The tiles that lie wholly inside the window run in a loop with no mask,
// clamp or select; the last, which the window may end inside, runs after
// it: its reads are clamped into the window's last block (a position past
// the end reads the chunk or row holding the last token), V past the end is
// zeroed and the scores past it masked.
//
// Epilogue: the waves' states merge in LDS, one wave after the other (the
// running sums of 4 waves' O^T would take 50 KB at Dv 128; a running sum
// takes 17), and the last wave writes out and LSE.
//
//===----------------------------------------------------------------------===//

#include "PagedDecode.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::decode;

namespace {

/// Waves of a block; each takes the atom's 32 rows of tokens of a tile.
constexpr int64_t kWaves = 4;
/// Tokens of a wave's tile that lie in one cache block.
constexpr int64_t kGroupTokens = 16;

class TransposedDecodeBuilder : public AttentionBuilder {
public:
  TransposedDecodeBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                          const MmaAtom &atom, const DecodeProblem &pb)
      : AttentionBuilder(b, loc, target, atom), pb(pb) {}

  LogicalResult build(int64_t &sharedBytes);

private:
  /// A wave's tokens of one tile: from `start`, the block-table entries (as
  /// loaded) of its 16-token groups, and whether the window may end inside.
  struct WaveTile {
    Value start;
    ValueRange ids;
    bool masked;
  };
  /// What a wave loads of its tile: K and Q^T as runs of 8 dims (K's row,
  /// the lane half's dims), V as 16-byte chunks [group][out atom] (V^T
  /// runs) or, NHD, as rows of 8 dims [pass][4 tokens] to transpose.
  struct Loaded {
    SmallVector<Value> k, v;
  };
  int64_t outAtoms() const { return pb.valueDim / atom.m; }
  int64_t runLength() const { return atom.k / 2; }
  bool shuffled() const { return pb.layout == KVLayout::Shuffled; }
  /// NHD V's rows: a lane's 8 dims of 4 tokens in each of passes().
  int64_t rowChunks() const { return pb.valueDim / kChunk; }
  int64_t passes() const { return rowChunks() / kChunk; }

  Value swapBits23(Value u);
  /// The block-table entries of the 16-token groups from `waveStart`,
  /// clamped into the window (the last group reads the last token's block).
  SmallVector<Value> loadBlockIds(Value waveStart);
  /// The cache block (of `ids`' group `group`, or of the group of tile
  /// token `u` where `group` is negative) and the offset in it of token `u`
  /// of the wave's tile, a run of `run` tokens starting there (aligned to
  /// `run`): in a masked tile a run past the end reads the run holding the
  /// window's last token.
  std::pair<Value, Value> locate(const WaveTile &t, Value u, int64_t run,
                                 int64_t group = -1);
  /// Eight elements of a run of `chunks` (vectors of 8) from element `at`.
  Value slice(ArrayRef<Value> chunks, int64_t at, int64_t length);
  Loaded load(const WaveTile &t);
  /// Q^T's B fragments, one a k step.
  void loadQuery();
  LogicalResult compute(const WaveTile &t, const Loaded &in,
                        SmallVector<Value> &state);
  /// NHD: V's rows to the wave's LDS slice transposed; the V^T chunks back.
  SmallVector<Value> transposeV(ArrayRef<Value> rows);
  void epilogue(ArrayRef<Value> state);

  DecodeProblem pb;
  Type elem;
  Value sharedBytes, sharedV;
  Value lane, wave, request, kvHead, split, start, end, maxBlocks;
  /// This lane's A and B fragment runs: row (token or dim; head) and the
  /// lane half (0, 1) whose k values it holds.
  Value aRow, bRow, half;
  SmallVector<Fragment> qFrags;
};

Value TransposedDecodeBuilder::swapBits23(Value u) {
  Value bits = arith::ShRUIOp::create(b, loc, u, idx(2));
  Value d =
      andi(arith::XOrIOp::create(b, loc, bits,
                                 arith::ShRUIOp::create(b, loc, bits, idx(1))),
           idx(1));
  return arith::XOrIOp::create(b, loc, u, mul(d, 12));
}

SmallVector<Value> TransposedDecodeBuilder::loadBlockIds(Value waveStart) {
  return loadGroupBlockIds(pb.blockTable, request, waveStart, end, maxBlocks,
                           pb.blockSize, atom.m / kGroupTokens, kGroupTokens);
}

std::pair<Value, Value> TransposedDecodeBuilder::locate(const WaveTile &t,
                                                        Value u, int64_t run,
                                                        int64_t group) {
  Value token = add(t.start, u);
  if (t.masked) {
    Value last = sub(end, idx(1));
    if (run > 1)
      last = mul(divu(last, run), run);
    token = arith::MinSIOp::create(b, loc, token, last);
  }
  Value id = group >= 0 ? t.ids[group]
                        : select(lt(u, idx(kGroupTokens)), t.ids[0], t.ids[1]);
  return {clampBlockId(id, pb.kCache), remu(token, pb.blockSize)};
}

Value TransposedDecodeBuilder::slice(ArrayRef<Value> chunks, int64_t at,
                                     int64_t length) {
  Value chunk = chunks[at / kChunk];
  if (length == kChunk)
    return chunk;
  // (vector.extract_strided_slice has no lowering in the ROCDL conversion.)
  SmallVector<int64_t> picked;
  for (int64_t i = 0; i < length; ++i)
    picked.push_back(at % kChunk + i);
  return vector::ShuffleOp::create(b, loc, chunk, chunk, picked);
}

void TransposedDecodeBuilder::loadQuery() {
  // Padding columns read the group's last head (never stored).
  Value head =
      add(mul(kvHead, pb.groupSize), minu(bRow, idx(pb.groupSize - 1)));
  Value firstDim = mul(half, pb.headDim / 2);
  SmallVector<Value> chunks;
  for (int64_t c = 0; c < pb.headDim / 2 / kChunk; ++c)
    chunks.push_back(loadVector(
        pb.q, ValueRange{request, head, add(firstDim, c * kChunk)}, kChunk));
  for (int64_t ks = 0; ks < pb.headDim / atom.k; ++ks)
    qFrags.push_back({slice(chunks, ks * runLength(), runLength())});
  target.waitForGlobalLoads(b, loc);
}

TransposedDecodeBuilder::Loaded
TransposedDecodeBuilder::load(const WaveTile &t) {
  Loaded in;
  Value firstDim = mul(half, pb.headDim / 2);
  auto [kBlock, kOffset] = locate(t, swapBits23(aRow), 1);
  for (int64_t c = 0; c < pb.headDim / 2 / kChunk; ++c) {
    Value dim = add(firstDim, c * kChunk);
    SmallVector<Value> at =
        shuffled() ? SmallVector<Value>{kBlock, kvHead, divu(dim, kChunk),
                                        kOffset, idx(0)}
                   : SmallVector<Value>{kBlock, kOffset, kvHead, dim};
    in.k.push_back(loadVector(pb.kCache, at, kChunk));
  }
  if (shuffled()) {
    // Tokens [16 g + 8 half, + 8) of dim 32 o + aRow.
    for (int64_t g = 0; g < atom.m / kGroupTokens; ++g) {
      Value u = add(mul(half, kChunk), g * kGroupTokens);
      auto [block, offset] = locate(t, u, kChunk, g);
      Value valid;
      if (t.masked)
        valid = minu(
            arith::MaxSIOp::create(b, loc, sub(end, add(t.start, u)), idx(0)),
            idx(kChunk));
      for (int64_t o = 0; o < outAtoms(); ++o) {
        Value chunk = loadVector(pb.vCache,
                                 ValueRange{block, kvHead, divu(offset, kChunk),
                                            add(aRow, o * atom.m), idx(0)},
                                 kChunk);
        in.v.push_back(t.masked ? keepFirst(chunk, valid) : chunk);
      }
    }
    return in;
  }
  // NHD rows: lane l takes dims 8 (l % C) of tokens 4 q .. 4 q + 3, q = l /
  // C + (64 / C) pass (C chunks a row).
  Value col = mul(remu(lane, rowChunks()), kChunk);
  Value firstQuad = divu(lane, rowChunks());
  auto chunkType = VectorType::get({kChunk}, elem);
  Value zeros =
      arith::ConstantOp::create(b, loc, chunkType, b.getZeroAttr(chunkType));
  for (int64_t p = 0; p < passes(); ++p)
    for (int64_t i = 0; i < 4; ++i) {
      Value u = add(mul(add(firstQuad, p * (warpSize / rowChunks())), 4), i);
      auto [block, offset] = locate(t, u, 1);
      Value row =
          loadVector(pb.vCache, ValueRange{block, offset, kvHead, col}, kChunk);
      in.v.push_back(t.masked ? select(lt(add(t.start, u), end), row, zeros)
                              : row);
    }
  return in;
}

SmallVector<Value> TransposedDecodeBuilder::transposeV(ArrayRef<Value> rows) {
  // The slice is V^T chunk-major, [32 / 8][Dv][8]: run (d, 4 q) at [q / 2,
  // d, 4 (q % 2)]; a lane's chunk (g, o) at [2 g + half, 32 o + aRow].
  target.waveBarrier(b, loc); // the previous tile's reads are done
  Value col = mul(remu(lane, rowChunks()), kChunk);
  Value firstQuad = divu(lane, rowChunks());
  auto runType = VectorType::get({4}, elem);
  for (int64_t p = 0; p < passes(); ++p) {
    Value q = add(firstQuad, p * (warpSize / rowChunks()));
    for (int64_t e = 0; e < kChunk; ++e) {
      SmallVector<Value> run;
      for (int64_t i = 0; i < 4; ++i)
        run.push_back(vector::ExtractOp::create(b, loc, rows[p * 4 + i], e));
      vector::StoreOp::create(
          b, loc, vector::FromElementsOp::create(b, loc, runType, run), sharedV,
          ValueRange{wave, divu(q, 2), add(col, e), mul(remu(q, 2), 4)}, false,
          llvm::MaybeAlign(8));
    }
  }
  target.waveBarrier(b, loc);
  SmallVector<Value> chunks;
  auto chunkType = VectorType::get({kChunk}, elem);
  for (int64_t g = 0; g < atom.m / kGroupTokens; ++g)
    for (int64_t o = 0; o < outAtoms(); ++o)
      chunks.push_back(vector::LoadOp::create(
          b, loc, chunkType, sharedV,
          ValueRange{wave, add(half, 2 * g), add(aRow, o * atom.m), idx(0)},
          false, kChunkAlign));
  return chunks;
}

/// State: [m, l, O^T (outAtoms x accumulators)].
LogicalResult TransposedDecodeBuilder::compute(const WaveTile &t,
                                               const Loaded &in,
                                               SmallVector<Value> &state) {
  int64_t acc = accCount(), kl = runLength();
  SmallVector<Value> s(acc, f32(0));
  for (int64_t ks = 0; ks < pb.headDim / atom.k; ++ks)
    if (failed(mmaInto(s, {slice(in.k, ks * kl, kl)}, qFrags[ks])))
      return failure();
  for (int64_t e = 0; e < acc; ++e) {
    Value scaled = fmul(s[e], pb.scaleLog2);
    if (t.masked) {
      Value row = target.getAccumulatorPosition(b, loc, atom, lane, e).first;
      scaled = select(lt(add(t.start, swapBits23(row)), end), scaled,
                      f32(-INFINITY));
    }
    s[e] = scaled;
  }

  // Online softmax of the lane's column: its scores are the lane's and the
  // lane's 32 away.
  auto reduceAll = [&](ArrayRef<Value> values, bool isMax) {
    Value r = values.front();
    for (Value v : values.drop_front())
      r = isMax ? fmax(r, v) : fadd(r, v);
    return r;
  };
  Value localMax = reduceAll(s, /*isMax=*/true);
  Value tileMax = columnReduce(localMax, /*isMax=*/true);
  Value mNew = fmax(state[0], tileMax);
  Value mSafe = finiteOrZero(mNew);
  Value alpha = exp2(fsub(state[0], mSafe));
  auto pairType = VectorType::get({2}, b.getF32Type());
  SmallVector<Value> p16;
  for (int64_t e = 0; e < acc; e += 2) {
    s[e] = exp2(fsub(s[e], mSafe));
    s[e + 1] = exp2(fsub(s[e + 1], mSafe));
    Value p = target.truncateProbability(
        b, loc, elem,
        vector::FromElementsOp::create(b, loc, pairType,
                                       ValueRange{s[e], s[e + 1]}));
    p16.push_back(vector::ExtractOp::create(b, loc, p, 0));
    p16.push_back(vector::ExtractOp::create(b, loc, p, 1));
  }
  state[0] = mNew;
  state[1] = fadd(fmul(state[1], alpha), reduceAll(s, /*isMax=*/false));
  for (Value &o : MutableArrayRef<Value>(state).drop_front(2))
    o = fmul(o, alpha);

  // O^T += V^T P^T: step st of 16-token group g = st k / 16 takes run st %
  // (16 / k) of the lane's chunk of the group.
  SmallVector<Value> vChunks(in.v);
  if (!shuffled())
    vChunks = transposeV(in.v);
  int64_t stepsPerGroup = kGroupTokens / atom.k;
  for (int64_t st = 0; st < atom.m / atom.k; ++st) {
    Fragment pFrag = target.accumulatorsAsOperandB(b, loc, atom, p16, st);
    int64_t g = st / stepsPerGroup, at = st % stepsPerGroup * kl;
    for (int64_t o = 0; o < outAtoms(); ++o)
      if (failed(mmaInto(
              MutableArrayRef<Value>(state).slice(2 + o * acc, acc),
              {slice(ArrayRef<Value>(vChunks).slice(g * outAtoms() + o, 1), at,
                     kl)},
              pFrag)))
        return failure();
  }
  return success();
}

void TransposedDecodeBuilder::epilogue(ArrayRef<Value> state) {
  Value column = target.getAccumulatorPosition(b, loc, atom, lane, 0).second;
  // (The merge's first barrier also frees the V^T slices.)
  mergeAndStoreColumns(state, sharedBytes, kWaves,
                       add(mul(kvHead, pb.groupSize), column),
                       lt(column, idx(pb.groupSize)), request,
                       pb.split ? split : Value(), pb.out, pb.lse);
}

LogicalResult TransposedDecodeBuilder::build(int64_t &sharedTotal) {
  elem = cast<MemRefType>(pb.q.getType()).getElementType();
  Value tid = threadId();
  lane = remu(tid, warpSize);
  wave = divu(tid, warpSize);
  request = blockId(gpu::Dimension::x);
  kvHead = blockId(gpu::Dimension::y);
  split = blockId(gpu::Dimension::z);
  auto aRun = *target.fragmentRun(b, loc, atom, MmaOperand::A, lane);
  auto bRun = *target.fragmentRun(b, loc, atom, MmaOperand::B, lane);
  aRow = aRun.row;
  bRow = bRun.row;
  half = divu(aRun.kFirst, runLength());

  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  int64_t vSlices = shuffled() ? 0 : kWaves * atom.m * pb.valueDim * bytes;
  int64_t merge = waveColumnsMergeBytes(kWaves, 1 + outAtoms() * accCount());
  sharedTotal = std::max(vSlices, merge);
  sharedBytes = dynamicSharedBytes();
  if (!shuffled())
    sharedV = sharedView(sharedBytes, 0,
                         {kWaves, atom.m / kChunk, pb.valueDim, kChunk}, elem);

  maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  Value numSplits =
      pb.split ? memref::DimOp::create(b, loc, pb.out, 0).getResult() : idx(1);
  std::tie(start, end) = contextWindow(pb.lens, request, maxBlocks,
                                       pb.blockSize, split, numSplits);
  int64_t tileTokens = kWaves * atom.m;
  Value length = sub(end, start);
  Value wholeTiles = uniform(divu(length, tileTokens));
  Value numTiles =
      uniform(arith::CeilDivUIOp::create(b, loc, length, idx(tileTokens)));
  Value waveOffset = mul(wave, atom.m);

  loadQuery();
  SmallVector<Value> state = {f32(-INFINITY), f32(0)};
  state.append(outAtoms() * accCount(), f32(0));
  size_t stateSize = state.size();
  SmallVector<Value> carried(state);
  llvm::append_range(carried, loadBlockIds(add(start, waveOffset)));

  // The tiles inside the window.
  auto loop = scf::ForOp::create(b, loc, idx(0), wholeTiles, idx(1), carried);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange args = loop.getRegionIterArgs();
    Value waveStart =
        add(add(start, mul(loop.getInductionVar(), tileTokens)), waveOffset);
    WaveTile t{waveStart, args.drop_front(stateSize), /*masked=*/false};
    Loaded in = load(t);
    SmallVector<Value> next = loadBlockIds(add(waveStart, tileTokens));
    target.fenceScheduling(b, loc);
    SmallVector<Value> st(args.take_front(stateSize));
    if (failed(compute(t, in, st)))
      return failure();
    llvm::append_range(st, next);
    scf::YieldOp::create(b, loc, st);
  }
  ValueRange results = loop.getResults();

  // The last tile, where the window ends inside it.
  auto tail =
      scf::IfOp::create(b, loc, TypeRange(results.take_front(stateSize)),
                        ult(wholeTiles, numTiles), true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(tail.thenBlock());
    Value waveStart = add(add(start, mul(wholeTiles, tileTokens)), waveOffset);
    WaveTile t{waveStart, results.drop_front(stateSize), /*masked=*/true};
    Loaded in = load(t);
    SmallVector<Value> st(results.take_front(stateSize));
    if (failed(compute(t, in, st)))
      return failure();
    scf::YieldOp::create(b, loc, st);
    b.setInsertionPointToStart(tail.elseBlock());
    scf::YieldOp::create(b, loc, results.take_front(stateSize));
  }
  epilogue(SmallVector<Value>(tail.getResults()));
  return success();
}

} // namespace

std::optional<MmaAtom>
mlir::tessel::decode::transposedDecodeAtom(const TargetInfo &target, Type elem,
                                           const DecodeProblem &pb) {
  Builder builder(elem.getContext());
  for (const MmaAtom &atom : target.getMmaAtoms(elem, builder.getF32Type())) {
    if (!target.hasAccumulatorsAsOperandB(atom) || atom.m != 32 || atom.k % 2 ||
        kGroupTokens % atom.k)
      continue;
    int64_t rowChunks = pb.valueDim / kChunk;
    bool vRows = pb.layout == KVLayout::Shuffled ||
                 (rowChunks >= kChunk && target.getWarpSize() % rowChunks == 0);
    // (Cache blocks are multiples of 16 tokens: the op's verifier.)
    if (pb.groupSize <= atom.n && pb.blockSize % kGroupTokens == 0 &&
        pb.headDim % (2 * kChunk) == 0 && pb.headDim % atom.k == 0 &&
        pb.valueDim % atom.m == 0 && vRows)
      return atom;
  }
  return std::nullopt;
}

FailureOr<int64_t> mlir::tessel::decode::buildTransposedDecode(
    OpBuilder &b, Location loc, const TargetInfo &target, const MmaAtom &atom,
    const DecodeProblem &pb, int64_t &sharedBytes) {
  TransposedDecodeBuilder builder(b, loc, target, atom, pb);
  if (failed(builder.build(sharedBytes)))
    return failure();
  return kWaves * target.getWarpSize();
}
