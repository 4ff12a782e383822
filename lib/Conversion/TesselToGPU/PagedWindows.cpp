//===- PagedWindows.cpp - Paged K/V tiles by buffer loads ----------------===//
//
// The register-staged (CDNA) paged tiles of decode and of the paged prefill
// (extend's context, the unified kernel) read their chunks by buffer loads,
// one window per cache block of the tile over its KV head's part of the
// block. A tile starts on a block boundary and covers whole blocks, and each
// step of the threads' chunks lies in one block, so:
// - a chunk's offset in its window is fixed over the loop (only the windows
//   change from tile to tile);
// - tokens past the context read zeros: an NHD window ends with its last
//   valid token's row, a shuffled chunk's offset moves past its window, and
//   the one partial chunk kind (shuffled V, 8 tokens of one dim) is masked
//   where it is stored, after the compute its load overlaps;
// - the block ids are loaded a tile ahead (TilePipeline::lookahead).
// No select waits for a loaded chunk, and no 64-bit address is computed per
// chunk: the loads of a tile issue back to back and overlap the compute of
// the tile before (before, a block-table round trip and the zeroing selects
// put two s_waitcnt vmcnt(0) between them).
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilder.h"

using namespace mlir;
using namespace mlir::tessel;

/// Blocks a tile of `blocks` blocks has per wave of `waves` (a wave's share
/// of one block where there are more waves).
static int64_t blocksPerWave(int64_t blocks, int64_t waves) {
  return std::max<int64_t>(1, blocks / waves);
}

bool AttentionBuilder::pagedWindowsApply(int64_t blockSize, int64_t tokens,
                                         int64_t headDim, int64_t valueDim,
                                         int64_t threads) const {
  if (target.getAsyncCopyBytes() != 0 || !target.hasBufferLoads() ||
      tokens % blockSize || threads % warpSize)
    return false;
  int64_t blocks = tokens / blockSize, waves = threads / warpSize;
  if (blocks % waves && waves % blocks)
    return false;
  // Every wave's share of the tile's chunks is whole steps of the wave.
  for (int64_t width : {headDim, valueDim})
    if ((blocks * blockSize * width / kChunk / waves) % warpSize)
      return false;
  return true;
}

Value AttentionBuilder::firstBlockOfWave(int64_t blocks, int64_t threads) {
  int64_t waves = threads / warpSize;
  Value wave = divu(threadId(), warpSize);
  return blocks >= waves ? mul(wave, blocks / waves)
                         : divu(wave, waves / blocks);
}

void AttentionBuilder::loadBlockIdsAhead(TilePipeline &pipeline,
                                         Value blockTable, Value request,
                                         Value firstBlock, int64_t blocks,
                                         int64_t threads) {
  pipeline.lookahead = [=, this](Value tile) {
    Value last = sub(memref::DimOp::create(b, loc, blockTable, 1), idx(1));
    // The address stays per lane: from one the back end sees is uniform,
    // it moved each id to a scalar register right after its load, waiting
    // for it there.
    Value first = add(add(firstBlock, mul(tile, blocks)),
                      firstBlockOfWave(blocks, threads));
    SmallVector<Value> ids;
    for (int64_t k = 0; k < blocksPerWave(blocks, threads / warpSize); ++k)
      ids.push_back(memref::LoadOp::create(
          b, loc, blockTable, ValueRange{request, minu(add(first, k), last)}));
    return ids;
  };
  pipeline.fetchPastEnd = true;
}

Value AttentionBuilder::clampBlockId(Value id, Value cache) {
  // Negative ids (as unsigned, huge) and ids past the cache clamp to its
  // last block.
  Value blocks = memref::DimOp::create(b, loc, cache, 0);
  return minu(toIndex(id), sub(blocks, idx(1)));
}

void AttentionBuilder::forEachWindowedChunk(
    const PagedTile &t, function_ref<void(const StagedChunk &)> fn) {
  int64_t bs = t.blockSize;
  Value none = idx(0);
  Value tid = threadId();
  int64_t blocks = t.tokens / bs, waves = t.threads / warpSize;
  // The store's enumeration: windows on block 0, dead code.
  SmallVector<Value> ids(t.blocks);
  if (ids.empty())
    ids.assign(blocksPerWave(blocks, waves), i32(0));
  Value wave = divu(tid, warpSize), lane = remu(tid, warpSize);
  // The tile row of the first token of the wave's k-th block.
  Value firstBlock = firstBlockOfWave(blocks, t.threads);
  auto blockRow = [&](int64_t k) { return mul(add(firstBlock, k), bs); };
  auto shapeOf = [](Value cache) {
    return cast<MemRefType>(cache.getType()).getShape();
  };
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  };
  // The window over `elements` elements of `cache` from element `first` of
  // the wave's block k.
  auto blockWindow = [&](Value cache, int64_t k, Value first, Value elements) {
    int64_t blockElements = product(shapeOf(cache).drop_front());
    return bufferWindow(
        cache, add(mul(clampBlockId(ids[k], cache), blockElements), first),
        elements, blockElements);
  };
  // NHD ([blocks, BS, Hkv, width]): the KV head's rows of block k, up to
  // its last valid token's.
  auto nhdWindow = [&](Value cache, int64_t k) {
    int64_t width = shapeOf(cache)[3];
    int64_t rowElements = shapeOf(cache)[2] * width;
    Value valid =
        minu(arith::MaxSIOp::create(
                 b, loc, sub(t.end, add(t.tileStart, blockRow(k))), none),
             idx(bs));
    Value elements = arith::MaxSIOp::create(
        b, loc, sub(mul(valid, rowElements), idx(rowElements - width)), none);
    return blockWindow(cache, k, mul(t.kvHead, width), elements);
  };
  // Shuffled ([blocks, Hkv, ...]): the KV head's slab of block k.
  auto slabWindow = [&](Value cache, int64_t k) {
    int64_t slab = product(shapeOf(cache).drop_front(2));
    return blockWindow(cache, k, mul(t.kvHead, slab), idx(slab));
  };
  // The wave's chunks of a tensor of `perBlock` chunks a block, a wave's
  // worth a step: step(k, the lane's index in the wave's block k's
  // chunks). A wave reads its own blocks (or its share of one), so that it
  // builds one window per block for K and one for V, and loads only those
  // blocks' ids.
  auto steps = [&](int64_t perBlock, function_ref<void(int64_t, Value)> step) {
    int64_t perWave = blocks * perBlock / waves;
    Value base = blocks >= waves
                     ? lane
                     : add(mul(remu(wave, waves / blocks), perWave), lane);
    for (int64_t s = 0; s * warpSize < perWave; ++s)
      step(s * warpSize / perBlock, add(base, s * warpSize % perBlock));
  };
  bool shuffled = t.layout == KVLayout::Shuffled;
  // Token-major rows ([tokens, width] in shared memory): one chunk per
  // (token, 8 columns), valid or not as a whole.
  auto tokenRows = [&](Value cache, Value shared, int64_t width, bool isK) {
    int64_t rowChunks = width / kChunk;
    llvm::DenseMap<int64_t, Value> windows;
    steps(bs * rowChunks, [&](int64_t j, Value id) {
      Value offset = divu(id, rowChunks);
      Value col = mul(remu(id, rowChunks), kChunk);
      Value row = add(offset, blockRow(j));
      Value valid = lt(add(t.tileStart, row), t.end);
      StagedChunk chunk{shared,
                        swizzledIndices({t.stage}, row, col, width),
                        cache,
                        {},
                        select(valid, idx(kChunk), none)};
      Value &window = windows[j];
      if (shuffled && isK) {
        // [.., D / 8, BS, 8]: chunk (col / 8, offset) of the slab.
        if (!window)
          window = slabWindow(cache, j);
        readFromWindow(chunk, window,
                       mul(add(mul(divu(col, kChunk), bs), offset), kChunk),
                       valid);
      } else {
        if (!window)
          window = nhdWindow(cache, j);
        readFromWindow(chunk, window,
                       add(mul(offset, shapeOf(cache)[2] * width), col));
      }
      // V staged dim-major from token-major rows: each chunk's 8 dims go to
      // 8 rows.
      if (!isK && t.vTransposed)
        for (int64_t e = 0; e < kChunk; ++e)
          chunk.scatter.push_back(swizzledIndices(
              {t.stage}, add(col, e), row, t.tokens, /*rowGroups=*/true));
      fn(chunk);
    });
  };
  int64_t headDim = shuffled ? shapeOf(t.kCache)[2] * shapeOf(t.kCache)[4]
                             : shapeOf(t.kCache)[3];
  tokenRows(t.kCache, t.sharedK, headDim, /*isK=*/true);
  if (!shuffled) {
    tokenRows(t.vCache, t.sharedV, shapeOf(t.vCache)[3], /*isK=*/false);
    return;
  }
  // Shuffled V ([.., BS / 8, Dv, 8]), staged [Dv, tokens]: one chunk per
  // (dim, 8 tokens), which the context may end inside.
  int64_t valueDim = shapeOf(t.vCache)[3];
  int64_t blockTokenChunks = bs / kChunk;
  llvm::DenseMap<int64_t, Value> windows;
  // Only a tile that the context ends inside.
  Value mayBePartial = lt(t.end, add(t.tileStart, t.tokens));
  steps(blockTokenChunks * valueDim, [&](int64_t j, Value id) {
    Value d = divu(id, blockTokenChunks);
    Value chunkInBlock = remu(id, blockTokenChunks);
    Value col = add(mul(chunkInBlock, kChunk), blockRow(j));
    Value left =
        arith::MaxSIOp::create(b, loc, sub(t.end, add(t.tileStart, col)), none);
    Value valid = minu(left, idx(kChunk));
    StagedChunk chunk{t.sharedV,
                      swizzledIndices({t.stage}, d, col, t.tokens),
                      t.vCache,
                      {},
                      valid,
                      /*partial=*/true};
    Value &window = windows[j];
    if (!window)
      window = slabWindow(t.vCache, j);
    readFromWindow(chunk, window,
                   mul(add(mul(chunkInBlock, valueDim), d), kChunk),
                   lt(none, valid));
    chunk.mayBePartial = mayBePartial;
    fn(chunk);
  });
}
