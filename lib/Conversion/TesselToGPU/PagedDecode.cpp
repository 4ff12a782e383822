//===- PagedDecode.cpp - Paged decode attention kernel template ------------===//
//
// One query token per request against a paged KV cache (decode_attention,
// and the split-KV partials of paged_attention), on tensor cores. On CDNA,
// where the shapes allow it, PagedDecodeTransposed.cpp builds the kernel
// instead (transposed scores, no K/V tile in LDS); this template is the
// rest.
//
// Work decomposition. Block (b, g, p) computes the query heads of KV head g
// of request b over split p of its context: the G = Hq / Hkv heads that
// share a KV head are the rows of one MMA tile (padded to the atom's M), so
// every KV byte is read once per request. Splits cut the context into
// windows of ceil(MB / P) blocks (MB = block-table width, a shape): the grid
// depends on shapes only, and a split past a request's length sees no key
// and writes the LSE-merge identity (zeros, LSE -inf).
//
// Tile loop. A tile is W x TW consecutive tokens of the window; warp w owns
// tokens [w TW, (w + 1) TW) of every tile and keeps its own online-softmax
// state (running row max m, partial row sum l, unnormalised O in MMA
// accumulators). K and V tiles are staged in shared memory by 16-byte copies
// (cp.async in a ring of `stages` on sm80, through registers into a double
// buffer on CDNA), zero-filled past the window, and their rows are found
// through the block table one 16-byte chunk at a time (on CDNA, a wave's
// whole cache blocks by buffer loads instead: PagedWindows.cpp). Per tile each
// warp computes S = Q K^T (Q staged once), masks tokens past the window,
// updates m and l, writes P = exp2(S - m) as 16-bit to its own shared-memory
// slice and accumulates O += P V. Scores are scaled by scale * log2(e) so the
// exponentials are exp2 (one instruction on both vendors).
//
// Cache layouts. NHD K and V tiles are token-major [tokens, D]; V feeds the
// MMA as a K-major-rows B operand (ldmatrix .trans / column reads). The CDNA
// pre-shuffled K ([.., D/x, BS, x]) gives the same token-major rows, one
// 16-byte chunk per (token, 8 dims); the shuffled V ([.., BS/x, D, x]) gives
// chunks of 8 tokens of one dim, so its tile is staged [Dv, tokens],
// K-contiguous, and needs no transpose at all.
//
// Epilogue. The warps' states are merged through shared memory (the tile
// ring is reused): M = max_w m_w, O = sum_w 2^(m_w - M) O_w / sum_w 2^(m_w
// - M) l_w, written with 16-byte stores; LSE = (M + log2 L) ln 2.
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

struct DecodeConfig {
  int64_t warps = 4;
  /// Tokens each warp takes of a tile.
  int64_t tokensPerWarp = 16;
  int64_t stages = 3;
  /// Warps that share a token slice, each accumulating 1/colSplit of the
  /// output columns (wide value heads: the O accumulators of a 256-wide
  /// head would not fit one warp's registers next to everything else).
  int64_t colSplit = 1;
  /// Warps with distinct token slices: the partial softmax states.
  int64_t tokenGroups() const { return warps / colSplit; }
  int64_t tileTokens() const { return tokenGroups() * tokensPerWarp; }
};

class PagedDecodeBuilder : public AttentionBuilder {
public:
  PagedDecodeBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                     const MmaAtom &atom, const DecodeConfig &cfg,
                     const DecodeProblem &pb)
      : AttentionBuilder(b, loc, target, atom), cfg(cfg), pb(pb) {}

  LogicalResult build();

private:
  /// The tile rows: G heads padded to the atom's M.
  int64_t rows() const { return atom.m; }
  /// Whether NHD V is staged transposed, [Dv, tokens], like the shuffled
  /// layout's: where tiles go through registers (no async copy), so that
  /// P.V reads a lane's consecutive tokens as one vector.
  bool vTransposed() const {
    return target.getAsyncCopyBytes() == 0 &&
           pb.layout != KVLayout::Shuffled;
  }

  void stageQuery();
  /// Whether tiles are read by forEachWindowedChunk (CDNA).
  bool windowed() const {
    return pagedWindowsApply(pb.layout, pb.blockSize, cfg.tileTokens(),
                             pb.headDim, pb.valueDim, cfg.warps * warpSize);
  }
  /// `ahead`: the tile's block ids (TilePipeline::lookahead) where
  /// windowed().
  void forEachChunk(Value stage, Value tile, ValueRange ahead,
                    function_ref<void(const StagedChunk &)> fn);
  LogicalResult computeTile(Value stage, Value tile,
                            SmallVector<Value> &state);
  void epilogue(ArrayRef<Value> state);

  DecodeConfig cfg;
  DecodeProblem pb;

  Type elem;
  Value sharedQ, sharedK, sharedV, sharedP, sharedBytes;
  int64_t ringBytes = 0;
  Value tid, lane, warp, request, kvHead, split;
  /// The window [start, end) of this block's split, its tile count, and the
  /// number of cache blocks (block ids are clamped to it).
  Value start, end, numTiles, numBlocks, maxBlocks;
};

void PagedDecodeBuilder::stageQuery() {
  // Q rows r < G are heads g G + r of the request; the padding rows are
  // zeros (their scores are computed and never stored).
  stageRows(sharedQ, pb.q, rows(), pb.headDim, cfg.warps * warpSize,
            [&](Value row) {
              return std::make_pair(
                  lt(row, idx(pb.groupSize)),
                  SmallVector<Value>{request,
                                     add(mul(kvHead, pb.groupSize), row)});
            });
}

void PagedDecodeBuilder::forEachChunk(
    Value stage, Value tile, ValueRange ahead,
    function_ref<void(const StagedChunk &)> fn) {
  int64_t threads = cfg.warps * warpSize;
  int64_t tokens = cfg.tileTokens();
  Value tileStart = add(start, mul(tile, tokens));
  if (windowed()) {
    forEachWindowedChunk({pb.kCache, pb.vCache, pb.layout, pb.blockSize, tokens,
                          threads, kvHead, tileStart, end, stage, sharedK,
                          sharedV, vTransposed(), ahead},
                         fn);
    return;
  }
  Value none = idx(0);
  // The cache block of the tile's logical block `logical` (any: ids are
  // clamped, so every address is inside the cache even past the window).
  auto lookup = [&](Value logical) {
    logical = minu(logical, sub(maxBlocks, idx(1)));
    Value id = toIndex(memref::LoadOp::create(b, loc, pb.blockTable,
                                              ValueRange{request, logical}));
    // Negative ids (as unsigned, huge) and ids past the cache clamp to the
    // last block.
    return minu(id, sub(numBlocks, idx(1)));
  };
  // The cache block and offset of tile token i.
  auto locate = [&](Value i) {
    Value token = add(tileStart, i);
    return std::make_tuple(token, lookup(divu(token, pb.blockSize)),
                           remu(token, pb.blockSize));
  };
  // Token-major tiles: chunk i of a thread is row i * rowsPerStep + tid /
  // chunksPerRow. When tiles start on block boundaries and a step's rows
  // never straddle one, the row's block is the tile's block (i *
  // rowsPerStep) / BS, a compile-time index: each of the tile's blocks is
  // looked up once and shared by the K and V chunks, instead of one
  // block-table load (and 64-bit address) per chunk.
  bool blockAligned = tokens % pb.blockSize == 0;
  llvm::DenseMap<int64_t, Value> tileBlocks;
  auto locateRow = [&](int64_t i, int64_t chunksPerRow, Value row) {
    int64_t rowsPerStep = threads / chunksPerRow;
    if (!blockAligned || threads % chunksPerRow ||
        pb.blockSize % rowsPerStep)
      return locate(row);
    int64_t j = i * rowsPerStep / pb.blockSize;
    Value &block = tileBlocks[j];
    if (!block)
      block = lookup(add(divu(tileStart, pb.blockSize), j));
    Value token = add(tileStart, row);
    return std::make_tuple(token, block, remu(row, pb.blockSize));
  };
  auto validCount = [&](Value token) {
    // Tokens [token, token + 8) that are inside the window, in [0, 8].
    Value left = arith::MaxSIOp::create(b, loc, sub(end, token), none);
    return minu(left, idx(kChunk));
  };
  bool shuffled = pb.layout == KVLayout::Shuffled;
  // K: [tokens, D], one chunk per (token, 8 dims); whole chunks are valid
  // or not.
  forEachRowChunk(tokens, pb.headDim, threads,
                  [&](int64_t i, Value row, Value col) {
    auto [token, block, offset] = locateRow(i, kChunk, row);
    Value valid = select(lt(token, end), idx(kChunk), none);
    SmallVector<Value> src =
        shuffled ? SmallVector<Value>{block, kvHead, divu(col, kChunk), offset,
                                      none}
                 : SmallVector<Value>{block, offset, kvHead, col};
    fn({sharedK, swizzledIndices({stage}, row, col, pb.headDim), pb.kCache,
        src, valid});
  });
  if (!shuffled) {
    forEachRowChunk(tokens, pb.valueDim, threads,
                    [&](int64_t i, Value row, Value col) {
      auto [token, block, offset] = locateRow(i, kChunk, row);
      Value valid = select(lt(token, end), idx(kChunk), none);
      StagedChunk chunk{sharedV,
                        swizzledIndices({stage}, row, col, pb.valueDim),
                        pb.vCache,
                        {block, offset, kvHead, col},
                        valid};
      // Register-staged V goes in dim-major, as Prefill.cpp's does.
      if (vTransposed())
        for (int64_t e = 0; e < kChunk; ++e)
          chunk.scatter.push_back(swizzledIndices(
              {stage}, add(col, e), row, tokens, /*rowGroups=*/true));
      fn(chunk);
    });
    return;
  }
  int64_t vChunks = pb.valueDim / kChunk;
  for (int64_t i = 0; i < tokens * vChunks / threads; ++i) {
    Value id = add(tid, i * threads);
    // Shuffled V: [Dv, tokens], one chunk per (dim, 8 tokens); the window
    // may end inside a chunk (the tile starts at a multiple of 8).
    int64_t tokenChunks = tokens / kChunk;
    Value d = divu(id, tokenChunks), col = mul(remu(id, tokenChunks), kChunk);
    auto [token, block, offset] = locate(col);
    fn({sharedV, swizzledIndices({stage}, d, col, tokens), pb.vCache,
        {block, kvHead, divu(offset, kChunk), d, none}, validCount(token),
        /*partial=*/true});
  }
}

/// State layout: [m (slots), l (slots), O (Dv / n atoms x accCount)].
LogicalResult PagedDecodeBuilder::computeTile(Value stage, Value tile,
                                              SmallVector<Value> &state) {
  int64_t nSlots = slots(), acc = accCount(), r = run();
  int64_t tw = cfg.tokensPerWarp, tokens = cfg.tileTokens();
  int64_t scoreAtoms = tw / atom.n;
  int64_t outAtoms = pb.valueDim / cfg.colSplit / atom.n;
  Value warpTokens = mul(divu(warp, cfg.colSplit), tw);
  Value colBase = mul(remu(warp, cfg.colSplit), pb.valueDim / cfg.colSplit);

  // S = Q K^T over this warp's tokens.
  Value zero = f32(0);
  SmallVector<Value> s(scoreAtoms * acc, zero);
  SharedTile qTile = tileOf(sharedQ, Value(), pb.headDim, true);
  SharedTile kTile = tileOf(sharedK, stage, pb.headDim, true);
  auto qFrag = [&](int64_t ks) { return loadA(qTile, idx(0), ks); };
  if (failed(mmaSteps(s, pb.headDim / atom.k, qFrag, kTile, warpTokens,
                      [&](int64_t ks) { return idx(ks * atom.k); },
                      scoreAtoms, scoreAtoms)))
    return failure();

  // Scale, mask tokens past the window, and update the row state.
  Value tileStart = add(start, mul(tile, tokens));
  Value negInf = f32(-INFINITY);
  for (int64_t j = 0; j < scoreAtoms; ++j) {
    for (int64_t e = 0; e < acc; ++e) {
      auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, e);
      (void)row;
      Value token = add(add(tileStart, warpTokens), add(col, j * atom.n));
      Value &v = s[j * acc + e];
      v = select(lt(token, end), fmul(v, pb.scaleLog2), negInf);
    }
  }
  softmaxStep(s, scoreAtoms, state, outAtoms, [&](int64_t, Value localMax) {
    return rowReduce(localMax, /*isMax=*/true);
  });

  // P to this warp's slice of shared memory, 16-bit, then O += P V.
  auto runType = VectorType::get({r}, elem);
  for (int64_t j = 0; j < scoreAtoms; ++j)
    for (int64_t e = 0; e < acc; e += r) {
      auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, e);
      SmallVector<Value> values;
      for (int64_t v = 0; v < r; ++v)
        values.push_back(
            target.truncateProbability(b, loc, elem, s[j * acc + e + v]));
      Value vec = vector::FromElementsOp::create(b, loc, runType, values);
      vector::StoreOp::create(
          b, loc, vec, sharedP,
          swizzledIndices({warp}, row, add(col, j * atom.n), tw));
    }
  gpu::BarrierOp::create(b, loc);
  SharedTile pTile = tileOf(sharedP, warp, tw, true);
  bool dimMajor = pb.layout == KVLayout::Shuffled || vTransposed();
  SharedTile vTile = tileOf(sharedV, stage, dimMajor ? tokens : pb.valueDim,
                            dimMajor, /*rowGroups=*/vTransposed());
  // B fragments of a few output atoms at a time keep registers in check.
  int64_t group = std::min<int64_t>(outAtoms, 8);
  auto pFrag = [&](int64_t ks) { return loadA(pTile, idx(0), ks); };
  if (failed(mmaSteps(MutableArrayRef<Value>(state).drop_front(2 * nSlots),
                      tw / atom.k, pFrag, vTile, colBase,
                      [&](int64_t ks) { return add(warpTokens, ks * atom.k); },
                      outAtoms, group)))
    return failure();
  return success();
}

void PagedDecodeBuilder::epilogue(ArrayRef<Value> state) {
  int64_t nSlots = slots(), acc = accCount(), r = run();
  int64_t outAtoms = pb.valueDim / cfg.colSplit / atom.n, rowsN = rows();
  int64_t groups = cfg.tokenGroups();
  // The warps of a token group share m and l (identical stores) and each
  // writes its own columns of O.
  Value group = divu(warp, cfg.colSplit);
  Value colBase = mul(remu(warp, cfg.colSplit), pb.valueDim / cfg.colSplit);
  // Each warp's state to shared memory (the ring is free after a barrier):
  // m and l [W, rows], O [W, rows, Dv], all f32.
  gpu::BarrierOp::create(b, loc);
  Type f32Type = b.getF32Type();
  Value mW = sharedView(sharedBytes, 0, {groups, rowsN}, f32Type);
  Value lW = sharedView(sharedBytes, groups * rowsN * 4, {groups, rowsN},
                        f32Type);
  Value oW = sharedView(sharedBytes, 2 * groups * rowsN * 4,
                        {groups, rowsN, pb.valueDim}, f32Type);
  for (int64_t sl = 0; sl < nSlots; ++sl) {
    auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, sl * r);
    (void)col;
    // Every lane of the row holds the same m and, after the sum, the same
    // l; the identical stores are harmless.
    memref::StoreOp::create(b, loc, state[sl], mW, ValueRange{group, row});
    memref::StoreOp::create(b, loc, rowReduce(state[nSlots + sl], /*isMax=*/false), lW,
                            ValueRange{group, row});
  }
  auto runType = VectorType::get({r}, f32Type);
  for (int64_t j = 0; j < outAtoms; ++j)
    for (int64_t e = 0; e < acc; e += r) {
      auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, e);
      SmallVector<Value> values(state.begin() + 2 * nSlots + j * acc + e,
                                state.begin() + 2 * nSlots + j * acc + e + r);
      Value vec = vector::FromElementsOp::create(b, loc, runType, values);
      vector::StoreOp::create(
          b, loc, vec, oW,
          ValueRange{group, row, add(colBase, add(col, j * atom.n))});
    }
  gpu::BarrierOp::create(b, loc);

  // Thread i of the block: rows of G, chunks of 8 output dims.
  Type outElem = cast<MemRefType>(pb.out.getType()).getElementType();
  int64_t chunks = pb.valueDim / kChunk;
  int64_t threads = cfg.warps * warpSize;
  auto vec8 = VectorType::get({kChunk}, f32Type);
  for (int64_t i = 0; i * threads < pb.groupSize * chunks; ++i) {
    Value id = add(tid, i * threads);
    auto ifOp = scf::IfOp::create(b, loc, lt(id, idx(pb.groupSize * chunks)),
                                  false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value row = divu(id, chunks), col = mul(remu(id, chunks), kChunk);
    SmallVector<Value> ms, ls;
    Value mMax = f32(-INFINITY);
    for (int64_t w = 0; w < groups; ++w) {
      ms.push_back(memref::LoadOp::create(b, loc, mW, ValueRange{idx(w), row}));
      ls.push_back(memref::LoadOp::create(b, loc, lW, ValueRange{idx(w), row}));
      mMax = fmax(mMax, ms.back());
    }
    Value mSafe = finiteOrZero(mMax);
    Value total = f32(0);
    Value o = arith::ConstantOp::create(b, loc, vec8, b.getZeroAttr(vec8));
    for (int64_t w = 0; w < groups; ++w) {
      Value a = exp2(fsub(ms[w], mSafe));
      total = fadd(total, fmul(a, ls[w]));
      Value part = vector::LoadOp::create(b, loc, vec8, oW,
                                          ValueRange{idx(w), row, col}, false,
                                          kChunkAlign);
      Value aVec = vector::BroadcastOp::create(b, loc, vec8, a);
      o = vector::FMAOp::create(b, loc, part, aVec, o);
    }
    // An empty window: total == 0, O == 0; write zeros and LSE -inf.
    Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        total, f32(0));
    Value inv = select(empty, f32(0),
                       arith::DivFOp::create(b, loc, f32(1), total));
    o = arith::MulFOp::create(b, loc, o,
                              vector::BroadcastOp::create(b, loc, vec8, inv));
    Value result = o;
    if (outElem != f32Type)
      result = arith::TruncFOp::create(
          b, loc, VectorType::get({kChunk}, outElem), o);
    Value head = add(mul(kvHead, pb.groupSize), row);
    SmallVector<Value> outIndices = {request, head, col};
    if (pb.split)
      outIndices.insert(outIndices.begin(), split);
    vector::StoreOp::create(b, loc, result, pb.out, outIndices, false,
                            kChunkAlign);
    if (!pb.lse)
      continue;
    auto ifFirst = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, col, idx(0)),
        false);
    b.setInsertionPointToStart(ifFirst.thenBlock());
    Value log2Total = target.log2(b, loc, total);
    Value lse = fmul(fadd(mSafe, log2Total), f32(M_LN2));
    lse = select(empty, f32(-INFINITY), lse);
    SmallVector<Value> lseIndices = {head, request};
    if (pb.split)
      lseIndices.insert(lseIndices.begin(), split);
    memref::StoreOp::create(b, loc, lse, pb.lse, lseIndices);
  }
}

LogicalResult PagedDecodeBuilder::build() {
  elem = cast<MemRefType>(pb.q.getType()).getElementType();
  tid = threadId();
  lane = remu(tid, warpSize);
  warp = divu(tid, warpSize);
  request = blockId(gpu::Dimension::x);
  kvHead = blockId(gpu::Dimension::y);
  split = blockId(gpu::Dimension::z);

  // Shared memory: the K/V ring (reused by the epilogue), Q, P.
  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  int64_t tokens = cfg.tileTokens();
  sharedBytes = dynamicSharedBytes();
  int64_t kBytes = cfg.stages * tokens * pb.headDim * bytes;
  sharedK = sharedView(sharedBytes, 0, {cfg.stages, tokens, pb.headDim}, elem);
  bool dimMajor = pb.layout == KVLayout::Shuffled || vTransposed();
  SmallVector<int64_t> vShape =
      dimMajor ? SmallVector<int64_t>{cfg.stages, pb.valueDim, tokens}
               : SmallVector<int64_t>{cfg.stages, tokens, pb.valueDim};
  sharedV = sharedView(sharedBytes, kBytes, vShape, elem);
  ringBytes = kBytes + cfg.stages * tokens * pb.valueDim * bytes;
  int64_t mergeBytes = cfg.tokenGroups() * rows() * (pb.valueDim + 2) * 4;
  int64_t qOffset = std::max(ringBytes, mergeBytes);
  sharedQ = sharedView(sharedBytes, qOffset, {rows(), pb.headDim}, elem);
  int64_t pOffset = qOffset + rows() * pb.headDim * bytes;
  sharedP = sharedView(sharedBytes, pOffset,
                       {cfg.warps, rows(), cfg.tokensPerWarp}, elem);

  // The window of this split.
  numBlocks = memref::DimOp::create(b, loc, pb.kCache, 0);
  maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  Value numSplits =
      pb.split ? memref::DimOp::create(b, loc, pb.out, 0).getResult() : idx(1);
  std::tie(start, end) = contextWindow(pb.lens, request, maxBlocks,
                                       pb.blockSize, split, numSplits);
  numTiles = arith::CeilDivUIOp::create(b, loc, sub(end, start), idx(tokens));

  stageQuery();
  gpu::BarrierOp::create(b, loc);

  int64_t nSlots = slots();
  SmallVector<Value> state(nSlots, f32(-INFINITY));
  state.append(nSlots, f32(0));
  state.append(pb.valueDim / cfg.colSplit / atom.n * accCount(), f32(0));
  TilePipeline pipeline = chunkPipeline(
      numTiles, cfg.stages,
      tokens * (pb.headDim + pb.valueDim) / kChunk / (cfg.warps * warpSize),
      elem, [this](Value stage, Value tile, ValueRange ahead, auto fn) {
        forEachChunk(stage, tile, ahead, fn);
      });
  if (windowed())
    loadBlockIdsAhead(pipeline, pb.blockTable, request, start, tokens,
                      pb.blockSize, cfg.warps * warpSize);
  pipeline.compute = [&](Value stage, Value tile, SmallVector<Value> &st) {
    return computeTile(stage, tile, st);
  };
  if (failed(runTilePipeline(pipeline, state)))
    return failure();
  epilogue(state);
  return success();
}

/// Refuses a requested stage count the target's loops cannot take (0: the
/// template's choice).
LogicalResult checkDecodeStages(Operation *op, const TargetInfo &target,
                                int64_t requestedStages) {
  if (requestedStages == 1)
    return op->emitOpError()
           << "GPU template: stages must be at least 2, got 1";
  if (target.getAsyncCopyBytes() == 0 && requestedStages > 0 &&
      requestedStages != 2)
    return op->emitOpError()
           << "GPU template: " << target.getChip()
           << " stages tiles through registers into a double buffer, so "
              "stages must be 2, got "
           << requestedStages;
  return success();
}

/// The largest tile that fits: 4 warps (2, 1 on small LDS), 3 stages with
/// async copies (2 staged through registers), or the requested stages.
FailureOr<DecodeConfig> chooseDecodeConfig(Operation *op,
                                           const TargetInfo &target,
                                           const MmaAtom &atom,
                                           const DecodeProblem &pb,
                                           int64_t requestedStages,
                                           int64_t &sharedBytes) {
  bool async = target.getAsyncCopyBytes() > 0;
  SmallVector<int64_t> stageChoices =
      requestedStages > 0 ? SmallVector<int64_t>{requestedStages}
      : async             ? SmallVector<int64_t>{3, 2}
                          : SmallVector<int64_t>{2};
  DecodeConfig cfg;
  // A warp's tokens are a whole number of score atoms (N) and of PV k-steps,
  // and a multiple of 16 (the 16-byte chunks of shuffled V hold 8).
  cfg.tokensPerWarp = std::max<int64_t>({16, atom.n, atom.k});
  int64_t bytes = 2;
  for (int64_t warps : {4, 2, 1}) {
    for (int64_t stages : stageChoices) {
      cfg.warps = warps;
      cfg.stages = stages;
      cfg.colSplit = pb.valueDim > 128 && warps > 1 ? 2 : 1;
      int64_t tokens = cfg.tileTokens();
      int64_t ring = stages * tokens * (pb.headDim + pb.valueDim) * bytes;
      int64_t merge = cfg.tokenGroups() * atom.m * (pb.valueDim + 2) * 4;
      int64_t total = std::max(ring, merge) + atom.m * pb.headDim * bytes +
                      warps * atom.m * cfg.tokensPerWarp * bytes;
      // Whole steps of forEachRowChunk (and of the shuffled V's chunks).
      int64_t threads = warps * target.getWarpSize();
      if ((tokens * kChunk) % threads ||
          (tokens * pb.valueDim / kChunk) % threads)
        continue;
      if (total <= target.getSharedMemoryBytes()) {
        sharedBytes = total;
        return cfg;
      }
    }
  }
  return op->emitOpError()
         << "GPU template: no decode tile of head dims " << pb.headDim << "/"
         << pb.valueDim << " with " << stageChoices.back()
         << " stages fits the " << target.getSharedMemoryBytes()
         << " bytes of shared memory of " << target.getChip();
}

FailureOr<LaunchGeometry> buildDecode(OpBuilder &b, Operation *op,
                                      KernelContext &ctx, Value qArg,
                                      Value kCache, Value vCache,
                                      Value blockTable, Value lens, Value outArg,
                                      Value lse, KVLayout layout,
                                      Value scale) {
  Value q = ctx.arg(qArg), out = ctx.arg(outArg);
  auto qType = cast<MemRefType>(q.getType());
  auto outType = cast<MemRefType>(out.getType());
  auto kType = cast<MemRefType>(kCache.getType());
  DecodeProblem pb;
  pb.q = q;
  pb.kCache = ctx.arg(kCache);
  pb.vCache = ctx.arg(vCache);
  pb.blockTable = ctx.arg(blockTable);
  pb.lens = ctx.arg(lens);
  pb.out = out;
  pb.lse = ctx.arg(lse);
  pb.layout = layout;
  pb.scaleLog2 = ctx.scaleLog2(b, scale);
  pb.split = outType.getRank() == 4;
  pb.kvHeads = getCacheKVHeads(kType, layout);
  pb.blockSize = getCacheBlockSize(kType, layout);
  int64_t qHeads = qType.getDimSize(1);
  pb.groupSize = qHeads / pb.kvHeads;
  pb.headDim = qType.getDimSize(2);
  pb.valueDim = outType.getDimSize(outType.getRank() - 1);

  Type elem = qType.getElementType();
  FailureOr<MmaAtom> chosen = chooseAttentionAtom(op, ctx.target, elem);
  if (failed(chosen))
    return failure();
  if (pb.headDim % 64 || pb.valueDim % 64)
    return op->emitOpError()
           << "GPU template: head dims " << pb.headDim << "/" << pb.valueDim
           << " must be multiples of 64 (whole swizzled shared-memory rows)";
  if (failed(checkDecodeStages(op, ctx.target, ctx.stages)))
    return failure();

  int64_t sharedBytes = 0, threads = 0;
  if (std::optional<MmaAtom> transposed =
          transposedDecodeAtom(ctx.target, elem, pb)) {
    FailureOr<int64_t> built = buildTransposedDecode(
        b, op->getLoc(), ctx.target, *transposed, pb, sharedBytes);
    if (failed(built))
      return failure();
    threads = *built;
  } else {
    // The G heads of a KV head are the MMA rows.
    MmaAtom atom = *chosen;
    if (pb.groupSize > atom.m) {
      InFlightDiagnostic error = op->emitOpError()
                                 << "GPU template: " << pb.groupSize
                                 << " query heads per KV head; the decode "
                                    "kernel takes at most ";
      bool transposable = llvm::any_of(
          ctx.target.getMmaAtoms(elem, b.getF32Type()), [&](const MmaAtom &a) {
            return ctx.target.hasAccumulatorsAsOperandB(a);
          });
      if (!transposable)
        return error << atom.m << " (the MMA rows) on " << ctx.target.getChip();
      if (pb.groupSize > 32)
        return error << "32 (the MMA columns of its transposed scores) on "
                     << ctx.target.getChip();
      return error << atom.m << " (the MMA rows) on " << ctx.target.getChip()
                   << " without transposed scores, which take an NHD value "
                      "head of 64, 128, 256 or 512, not "
                   << pb.valueDim;
    }
    FailureOr<DecodeConfig> cfg =
        chooseDecodeConfig(op, ctx.target, atom, pb, ctx.stages, sharedBytes);
    if (failed(cfg))
      return failure();
    PagedDecodeBuilder builder(b, op->getLoc(), ctx.target, atom, *cfg, pb);
    if (failed(builder.build()))
      return failure();
    threads = cfg->warps * ctx.target.getWarpSize();
  }

  // Grid: (requests, KV heads, splits); all from shapes.
  LaunchGeometry geometry;
  geometry.grid[0] = gridOver(ctx.dim(qArg, 0), 1, 1);
  geometry.grid[1] = GridDim{-1, 1, pb.kvHeads, 1};
  geometry.grid[2] =
      pb.split ? gridOver(ctx.dim(outArg, 0), 1, 1) : GridDim{-1, 1, 1, 1};
  geometry.block = {static_cast<int32_t>(threads), 1, 1};
  geometry.sharedBytes = sharedBytes;
  return geometry;
}

} // namespace

FailureOr<LaunchGeometry> mlir::tessel::buildPagedDecode(OpBuilder &b,
                                                         DecodeAttentionOp op,
                                                         KernelContext &ctx) {
  return buildDecode(b, op, ctx, op.getQ(), op.getKCache(), op.getVCache(),
                     op.getBlockTable(), op.getSeqLens(), op.getOut(),
                     op.getLse(), op.getLayout(), op.getScale());
}

FailureOr<LaunchGeometry> mlir::tessel::buildPagedDecode(OpBuilder &b,
                                                         PagedAttentionOp op,
                                                         KernelContext &ctx) {
  if (op.getCuSeqlens())
    return buildPagedQueries(b, op, ctx);
  return buildDecode(b, op, ctx, op.getQ(), op.getKCache(), op.getVCache(),
                     op.getBlockTable(), op.getContextLens(), op.getOut(),
                     op.getLse(), op.getLayout(), op.getScale());
}
