//===- PagedWindows.cpp - Paged K/V tiles by buffer loads ----------------===//
//
// The register-staged (CDNA) paged tiles of decode, MLA decode and the
// paged prefill (extend's context, the unified kernel) read their chunks by
// buffer loads, one window per piece of the tile (a cache block, or the
// tile where it is a part of one block) over its KV head's part of the
// block. Each wave reads its own pieces (or its share of one), so:
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

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tessel;

/// The ids of a block table's row a buffer window reaches (a row's first
/// 2^28: a context of 2^32 tokens at block size 16); ids past them read 0.
static constexpr int64_t kMaxWindowedColumns = int64_t(1) << 28;

/// A tile's pieces: its cache blocks, or where a tile is shorter than a
/// block, the tile itself (a whole part of one block).
static int64_t pieceTokens(int64_t blockSize, int64_t tokens) {
  return std::min(blockSize, tokens);
}

/// Pieces a wave reads of a tile of `pieces` (a wave's share of one piece
/// where there are more waves).
static int64_t piecesPerWave(int64_t pieces, int64_t waves) {
  return std::max<int64_t>(1, pieces / waves);
}

bool AttentionBuilder::pagedWindowsApply(KVLayout layout, int64_t blockSize,
                                         int64_t tokens, int64_t headDim,
                                         int64_t valueDim,
                                         int64_t threads) const {
  if (target.getAsyncCopyBytes() != 0 || !target.hasBufferLoads() ||
      threads % warpSize)
    return false;
  // A shuffled block's rows are not contiguous: tiles of whole blocks.
  if (tokens % blockSize &&
      (blockSize % tokens || layout == KVLayout::Shuffled))
    return false;
  int64_t span = pieceTokens(blockSize, tokens);
  int64_t pieces = tokens / span, waves = threads / warpSize;
  if (pieces % waves && waves % pieces)
    return false;
  // Every wave's share of the tile's chunks is whole steps of the wave.
  for (int64_t width : {headDim, valueDim})
    if ((tokens * width / kChunk / waves) % warpSize)
      return false;
  return true;
}

Value AttentionBuilder::firstPieceOfWave(int64_t pieces, int64_t threads) {
  int64_t waves = threads / warpSize;
  Value wave = divu(threadId(), warpSize);
  return pieces >= waves ? mul(wave, pieces / waves)
                         : divu(wave, waves / pieces);
}

void AttentionBuilder::loadBlockIdsAhead(TilePipeline &pipeline,
                                         Value blockTable, Value request,
                                         Value start, int64_t tokens,
                                         int64_t blockSize, int64_t threads) {
  int64_t span = pieceTokens(blockSize, tokens), pieces = tokens / span;
  // The request's row of the table as a buffer window: an id past the row
  // reads 0 (such a tile is past the context, and its K/V windows are
  // empty whatever its block), so a lane's offset in the row takes no
  // clamp and moves by a constant a tile (two instructions a tile fewer
  // than a 64-bit address clamped to the row's last id).
  Value columns = memref::DimOp::create(b, loc, blockTable, 1);
  Value row = bufferWindow(blockTable, mul(request, columns),
                           minu(columns, idx(kMaxWindowedColumns)),
                           kMaxWindowedColumns);
  pipeline.lookahead = [this, blockTable, request, start, tokens, blockSize,
                        threads, span, pieces, columns, row](Value tile) {
    // The offset stays per lane: from one the back end sees is uniform,
    // it moved each id to a scalar register right after its load, waiting
    // for it there.
    Value first = add(start, mul(firstPieceOfWave(pieces, threads), span));
    // Tiles of whole blocks: the tile's blocks a constant past the first
    // tile's (the back end kept a quotient of the token a tile, and masked
    // it into the row's offset).
    bool wholeBlocks = tokens % blockSize == 0;
    if (!wholeBlocks)
      first = add(first, mul(tile, tokens));
    SmallVector<Value> ids;
    for (int64_t k = 0; k < piecesPerWave(pieces, threads / warpSize); ++k) {
      Value logical = divu(add(first, k * span), blockSize);
      if (wholeBlocks)
        logical = add(logical, mul(tile, tokens / blockSize));
      if (row) {
        auto word = VectorType::get({1}, b.getI32Type());
        Value id = target.bufferLoad(b, loc, word, row, toI32(mul(logical, 4)),
                                     i32(0));
        ids.push_back(vector::ExtractOp::create(b, loc, id, 0));
      } else {
        Value last = sub(columns, idx(1));
        ids.push_back(memref::LoadOp::create(
            b, loc, blockTable, ValueRange{request, minI32(logical, last)}));
      }
    }
    return ids;
  };
  pipeline.fetchPastEnd = true;
}

Value AttentionBuilder::clampBlockId(Value id, Value cache) {
  // Negative ids (as unsigned, huge) and ids past the cache clamp to its
  // last block.
  Value blocks = memref::DimOp::create(b, loc, cache, 0);
  return minI32(id, sub(blocks, idx(1)));
}

void AttentionBuilder::forEachWindowedChunk(
    const PagedTile &t, function_ref<void(const StagedChunk &)> fn) {
  int64_t bs = t.blockSize, span = pieceTokens(bs, t.tokens);
  Value none = idx(0);
  Value tid = threadId();
  int64_t pieces = t.tokens / span, waves = t.threads / warpSize;
  // The store's enumeration: windows on block 0, dead code.
  SmallVector<Value> ids(t.blocks);
  if (ids.empty())
    ids.assign(piecesPerWave(pieces, waves), i32(0));
  Value wave = divu(tid, warpSize), lane = remu(tid, warpSize);
  // The tile row of the first token of the wave's k-th piece.
  Value firstPiece = firstPieceOfWave(pieces, t.threads);
  auto pieceRow = [&](int64_t k) { return mul(add(firstPiece, k), span); };
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
  // the block of the wave's piece k.
  // `head`: the KV head's offset in a block, the same every tile.
  auto blockWindow = [&](Value cache, int64_t k, Value first, Value elements,
                         Value head) {
    int64_t blockElements = product(shapeOf(cache).drop_front());
    return bufferWindow(
        cache, add(mul(clampBlockId(ids[k], cache), blockElements), first),
        elements, blockElements, head);
  };
  // Token-major ([blocks, BS, Hkv, width], or MLA's [blocks, BS, width]):
  // the KV head's rows of piece k, up to its last valid token's.
  auto rowElementsOf = [&](Value cache) {
    auto shape = shapeOf(cache);
    return shape.size() == 4 ? shape[2] * shape[3] : shape[2];
  };
  auto nhdWindow = [&](Value cache, int64_t k) {
    int64_t width = shapeOf(cache).back(), rowElements = rowElementsOf(cache);
    Value first = add(t.tileStart, pieceRow(k));
    // Whole rows up to the last valid one: a valid row's reads end inside
    // it, and a later row's start past it.
    Value elements = mul(clampI32(sub(t.end, first), 0, span), rowElements);
    Value head = t.kvHead ? mul(t.kvHead, width) : none;
    // A piece shorter than a block starts inside it.
    Value rowInBlock = span == bs ? none : remu(first, bs);
    return blockWindow(cache, k, mul(rowInBlock, rowElements), elements, head);
  };
  // Shuffled ([blocks, Hkv, ...]): the KV head's slab of block k.
  auto slabWindow = [&](Value cache, int64_t k) {
    int64_t slab = product(shapeOf(cache).drop_front(2));
    return blockWindow(cache, k, none, idx(slab), mul(t.kvHead, slab));
  };
  // The wave's chunks of a tensor of `perPiece` chunks a piece, a wave's
  // worth a step: step(k, the lane's index in the wave's piece k's
  // chunks). A wave reads its own pieces (or its share of one), so that it
  // builds one window per piece for K and one for V, and loads only those
  // pieces' block ids.
  auto steps = [&](int64_t perPiece, function_ref<void(int64_t, Value)> step) {
    int64_t perWave = pieces * perPiece / waves;
    Value base = pieces >= waves
                     ? lane
                     : add(mul(remu(wave, waves / pieces), perWave), lane);
    for (int64_t s = 0; s * warpSize < perWave; ++s)
      step(s * warpSize / perPiece, add(base, s * warpSize % perPiece));
  };
  bool shuffled = t.layout == KVLayout::Shuffled;
  // Element (row, col) of a stage of [rows, width] of `ring`; chunk-major,
  // of the view that replaces `ring` (chunkMajorElement).
  auto staged = [&](Value &ring, Value row, Value col, int64_t width,
                    bool rowGroups = false) -> SmallVector<Value> {
    if (!t.chunkMajor)
      return swizzledIndices({t.stage}, row, col, width, rowGroups);
    auto [view, offset] = chunkMajorElement(ring, t.stage, row, col);
    ring = view;
    return {offset};
  };
  // The chunk of token `offset` of the wave's piece j at columns [col, col
  // + 8) of a [tokens, width] stage, read through the piece's window (in
  // `windows`, made on first use): the KV head's slab of a shuffled K
  // block, else its token-major rows. With `transposedRun` (token-major V
  // stored dim-major), the chunk's 8 dims go to 8 rows, as vectors of that
  // many tokens, this one's and the chunks' enumerated right after it.
  // `scalarCol` more columns (token-major only) are the load's scalar
  // offset, which the bounds check leaves out: the row's own offset,
  // checked, already reads zeros past the window, and the columns stay
  // inside the row's KV head.
  auto rowChunk = [&](llvm::DenseMap<int64_t, Value> &windows, Value cache,
                      Value shared, int64_t width, int64_t j, Value offset,
                      Value col, bool slab, int64_t transposedRun,
                      int64_t scalarCol = 0) {
    Value row = add(offset, pieceRow(j));
    // The row against the tile's count of valid rows, one uniform
    // subtraction a tile: compared as tileStart + row < end, each chunk
    // took an add of its own.
    Value valid = ltI32(row, sub(t.end, t.tileStart));
    Value ring = shared;
    SmallVector<Value> dst = staged(ring, row, add(col, scalarCol), width);
    StagedChunk chunk{ring, dst, cache, {}, select(valid, idx(kChunk), none)};
    Value &window = windows[j];
    if (slab) {
      // [.., D / 8, BS, 8]: chunk (col / 8, offset) of the slab.
      if (!window)
        window = slabWindow(cache, j);
      readFromWindow(chunk, window,
                     mul(add(mul(divu(col, kChunk), bs), offset), kChunk),
                     valid);
    } else {
      if (!window)
        window = nhdWindow(cache, j);
      readFromWindow(chunk, window, add(mul(offset, rowElementsOf(cache)), col),
                     /*valid=*/{}, scalarCol ? idx(scalarCol) : Value());
    }
    for (int64_t e = 0; transposedRun && e < kChunk; ++e) {
      ring = shared;
      chunk.scatter.push_back(
          staged(ring, add(col, e), row, t.tokens, /*rowGroups=*/true));
      chunk.scatterViews.push_back(ring);
    }
    chunk.scatterRows = std::max<int64_t>(transposedRun, 1);
    return chunk;
  };
  // Token-major rows ([tokens, width] in shared memory): one chunk per
  // (token, 8 columns), valid or not as a whole.
  auto tokenRows = [&](Value cache, Value shared, int64_t width, bool isK) {
    int64_t rowChunks = width / kChunk;
    llvm::DenseMap<int64_t, Value> windows;
    steps(span * rowChunks, [&](int64_t j, Value id) {
      fn(rowChunk(windows, cache, shared, width, j, divu(id, rowChunks),
                  mul(remu(id, rowChunks), kChunk), shuffled && isK,
                  !isK && t.vTransposed ? 1 : 0));
    });
  };
  // Token-major K rows: a lane keeps one row of the wave's share of a
  // piece and takes its next columns at each step, so that a lane's chunks
  // are a constant apart, in the window and in the chunk-major stage (one
  // load offset and one store address a lane, immediate offsets; by rows,
  // a step's lanes each needed their own, and a step's 16 lanes of one row
  // wrote 16 chunks one stage column apart, on the same LDS banks).
  int64_t shareRows = pieces >= waves ? span : span * pieces / waves;
  auto tokenColumns = [&](Value cache, Value shared, int64_t width) {
    int64_t rowChunks = width / kChunk;
    int64_t rowLanes = warpSize / shareRows;
    Value shareStart =
        pieces >= waves ? none : mul(remu(wave, waves / pieces), shareRows);
    Value row = add(shareStart, divu(lane, rowLanes));
    Value firstCol = mul(remu(lane, rowLanes), kChunk);
    llvm::DenseMap<int64_t, Value> windows;
    for (int64_t j = 0; j < piecesPerWave(pieces, waves); ++j)
      for (int64_t c = 0; c < rowChunks; c += rowLanes)
        fn(rowChunk(windows, cache, shared, width, j, row, firstCol,
                    /*slab=*/false, 0, c * kChunk));
  };
  // Token-major V stored transposed in runs of `run` tokens: at each step
  // the wave takes the next 64 / rowChunks * run tokens of its share (all
  // in one piece), lane l the `run` of them from (l / rowChunks) run at
  // dims 8 (l % rowChunks) .. + 8, stored as one vector a dim.
  auto tokenRuns = [&](Value cache, Value shared, int64_t width, int64_t run) {
    int64_t rowChunks = width / kChunk;
    int64_t shareTokens = pieces * span / waves;
    int64_t stepTokens = warpSize / rowChunks * run;
    Value shareStart =
        pieces >= waves ? none : mul(remu(wave, waves / pieces), shareTokens);
    llvm::DenseMap<int64_t, Value> windows;
    for (int64_t first = 0; first < shareTokens; first += stepTokens) {
      int64_t j = first / span;
      Value col = mul(remu(lane, rowChunks), kChunk);
      Value firstOffset = add(add(shareStart, first - j * span),
                              mul(divu(lane, rowChunks), run));
      for (int64_t r = 0; r < run; ++r)
        fn(rowChunk(windows, cache, shared, width, j, add(firstOffset, r), col,
                    /*slab=*/false, r == 0 ? run : 0));
    }
  };
  int64_t headDim = shuffled ? shapeOf(t.kCache)[2] * shapeOf(t.kCache)[4]
                             : shapeOf(t.kCache).back();
  if (!shuffled && warpSize % shareRows == 0 &&
      (headDim / kChunk) % (warpSize / shareRows) == 0)
    tokenColumns(t.kCache, t.sharedK, headDim);
  else
    tokenRows(t.kCache, t.sharedK, headDim, /*isK=*/true);
  if (!t.vCache)
    return;
  if (!shuffled) {
    int64_t valueDim = shapeOf(t.vCache)[3], rowChunks = valueDim / kChunk;
    int64_t shareTokens = pieces * span / waves;
    // The longest run up to vRun whose steps fit the pieces.
    for (int64_t run = t.vRun; t.vTransposed && run > 1; run /= 2) {
      int64_t stepTokens = warpSize / rowChunks * run;
      if (warpSize % rowChunks == 0 && span % stepTokens == 0 &&
          shareTokens % stepTokens == 0) {
        tokenRuns(t.vCache, t.sharedV, valueDim, run);
        return;
      }
    }
    tokenRows(t.vCache, t.sharedV, valueDim, /*isK=*/false);
    return;
  }
  // Shuffled V ([.., BS / 8, Dv, 8]), staged [Dv, tokens]: one chunk per
  // (dim, 8 tokens), which the context may end inside.
  int64_t valueDim = shapeOf(t.vCache)[3];
  int64_t blockTokenChunks = bs / kChunk;
  llvm::DenseMap<int64_t, Value> windows;
  // Only a tile that the context ends inside.
  Value mayBePartial = ltI32(t.end, add(t.tileStart, t.tokens));
  steps(blockTokenChunks * valueDim, [&](int64_t j, Value id) {
    Value d = divu(id, blockTokenChunks);
    Value chunkInBlock = remu(id, blockTokenChunks);
    Value col = add(mul(chunkInBlock, kChunk), pieceRow(j));
    Value valid = clampI32(sub(t.end, add(t.tileStart, col)), 0, kChunk);
    Value ring = t.sharedV;
    SmallVector<Value> dst = staged(ring, d, col, t.tokens);
    StagedChunk chunk{ring, dst, t.vCache, {}, valid, /*partial=*/true};
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
