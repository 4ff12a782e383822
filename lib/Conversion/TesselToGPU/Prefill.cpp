//===- Prefill.cpp - Varlen (causal) flash attention kernel template -------===//
//
// prefill_attention on tensor cores, the FlashAttention-2 scheme.
//
// Work decomposition. The query rows of every request are cut into tiles of
// W x M rows (M = the MMA atom's rows, one slice per warp); a block takes a
// tile of one query head. The tiles of all requests form one list, found on
// the device from cu_seqlens by the same warp scan as the grouped matmul's
// group tiles, so a batch of one long prompt and many short ones is one
// flat list of equal-sized work items. The grid is (ceil(T / tile) + slack,
// Hq), a function of shapes only; a block walks the list with a stride of
// the grid width until it runs out, so requests' partial tiles (at most one
// per request) never need more blocks than the grid has. (Causal tiles late
// in a long request see the most keys; walking the list from its end, as
// FlashAttention-2 does, would start them first: a next step.)
//
// Tile loop. K and V tiles (N keys of the request, from its first key up to
// the tile's last query with a causal mask) are staged in shared memory by
// 16-byte copies (cp.async ring on sm80, registers on CDNA: unpaged, by
// buffer loads from a window that ends with the tile's keys, on gfx950
// loaded straight into LDS), zero-filled past the request. Each warp keeps
// its Q fragments in registers (up to head dim 128), computes S = Q K^T for
// its rows, masks (only tiles that reach the diagonal or the request's end
// pay for it), updates the online softmax (row max m, partial row sums l),
// and accumulates O += P V with P taken straight from the S accumulators,
// whose layout is the A operand's (sm80). CDNA, whose C layout is not,
// computes the transposed scores instead (PrefillTransposed.cpp: S^T = K
// Q^T, O^T += V^T P^T, P^T the B operand as it stands). Scores are scaled
// by scale * log2(e) so that exponentials are exp2 instructions.
//
// Epilogue: O / l per row, stored as runs of the accumulator layout; the
// LSE (natural log) = (m + log2 l) ln 2, -inf for a row that saw no key.
//
// Paged keys (paged_attention with cu_seqlens: extend's cached context): the
// same kernel with K/V rows found through the block table (NHD, or the
// shuffled layout whose V chunks are staged dim-major), and in the split
// form partial p of every query over the context window [p W, (p + 1) W),
// W = ceil(MB / P) * BS. A block takes the query heads of one KV head,
// packed into the tile's rows (row r: token r / g, head r % g, where g
// divides the tile), so a request's few new tokens still fill a tile and
// each KV byte is read once per KV head and tile of tokens. With causal
// (the unified mode's kernel: the whole batch, decodes included, in one
// launch), the context is the request's sequence and a row's query sits
// at position token + (sequence length - the request's query end): its
// keys end there.
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

namespace {

/// Grid slack past ceil(T / tile): room for the partial tiles of that many
/// requests before blocks take a second tile. The unified kernel (paged,
/// causal) takes whole batches of decodes, each a partial tile.
int64_t slackTiles(const PrefillProblem &pb) {
  return pb.paged && pb.causal ? 64 : 16;
}

} // namespace

void PrefillBuilder::stageQuery(Value first, Value last) {
  stageRows(sharedQ, pb.q, tileRows(), pb.headDim, cfg.warps * warpSize,
            [&](Value row) {
              Value token = add(first, divu(row, pb.packed));
              return std::make_pair(lt(token, last),
                                    SmallVector<Value>{token, rowHead(row)});
            });
}

SmallVector<Value> PrefillBuilder::stagedIndices(Value stage, Value row,
                                                 Value col, int64_t width) {
  if (!cfg.transposedScores)
    return swizzledIndices({stage}, row, col, width);
  return {stage, divu(col, kChunk), row, remu(col, kChunk)};
}

Value PrefillBuilder::groupSwizzle(bool isKey, Value key) {
  // K: a fragment read takes one chunk of 16 keys (an atom's rows, bits 2
  // and 3 swapped by operandKOfAccumulatorRow): 32-byte groups put keys r
  // and r + 8 on one 16-byte bank slot of 256 bytes, and the XOR with bit 3
  // moves one of them. V: a transposing read takes 32 bytes of 4 keys, k to
  // k + 3: 64-byte groups put k and k + 2 on one 32-byte quarter of a
  // 128-byte line, and the XOR with bit 1 moves one of them.
  if (isKey)
    return remu(divu(key, 8), 2);
  return mul(remu(divu(key, 2), 2), 2);
}

SmallVector<Value> PrefillBuilder::groupedIndices(bool isKey, Value key,
                                                  Value col) {
  int64_t group = groupChunks(isKey);
  Value slot = arith::XOrIOp::create(b, loc, remu(divu(col, kChunk), group),
                                     groupSwizzle(isKey, key));
  return {divu(col, group * kChunk), key,
          add(mul(slot, kChunk), remu(col, kChunk))};
}

Value PrefillBuilder::stageOffset(bool isKey, Value stage) {
  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  int64_t width = isKey ? pb.headDim : pb.valueDim;
  int64_t first = isKey ? 0 : cfg.stages * cfg.tileKeys * pb.headDim * bytes;
  return add(idx(first), mul(stage, cfg.tileKeys * width * bytes));
}

Value PrefillBuilder::stageView(bool isKey, Value stage) {
  int64_t groupWidth = groupChunks(isKey) * kChunk;
  int64_t width = isKey ? pb.headDim : pb.valueDim;
  return sharedView(smemBytes, stageOffset(isKey, stage),
                    {width / groupWidth, cfg.tileKeys, groupWidth}, elem);
}

Value PrefillBuilder::unpagedWindow(Value src, int64_t width, Value tileStart,
                                    int64_t &rowElements) {
  auto shape = cast<MemRefType>(src.getType()).getShape();
  rowElements = shape[1] * shape[2];
  // Whole rows up to the last valid key's (as nhdWindow's).
  Value elements =
      mul(clampI32(sub(keyEnd, tileStart), 0, cfg.tileKeys), rowElements);
  return bufferWindow(src, add(mul(tileStart, rowElements), mul(kvHead, width)),
                      elements, cfg.tileKeys * rowElements);
}

void PrefillBuilder::forEachChunkToShared(
    Value stage, Value kvTile, function_ref<void(const StagedChunk &)> fn) {
  int64_t threads = cfg.warps * warpSize;
  Value tileStart = add(keyStart, mul(kvTile, cfg.tileKeys));
  // Each stage as 16-byte slots: slot `first` + lane is the lane's, and
  // `place` gives a slot's key, its chunk of the key's row and its indices.
  struct Place {
    Value key, chunk;
    SmallVector<Value> indices;
  };
  // A wave's copies fill runs of 64 slots that share M0 inside one group
  // of keys (`groupSlots` slots: m0Slot); the immediate offset adds to
  // the source offset too, which stays >= 0 less it (a key row holds more
  // than a group's width, and the keys grow with the run).
  auto tileChunks = [&](Value shared, Value src, int64_t width,
                        int64_t groupSlots,
                        function_ref<Place(Value slot)> place) {
    int64_t rowElements;
    Value window = unpagedWindow(src, width, tileStart, rowElements);
    int64_t copies = cfg.tileKeys * width / kChunk / threads;
    for (int64_t i = 0; i < copies; ++i) {
      M0Slot slot = m0Slot(i, copies, cfg.warps, waveIndex, groupSlots);
      Place own = place(add(slot.first, lane));
      Value col = mul(own.chunk, kChunk);
      StagedChunk chunk{shared, own.indices, src, {}, idx(kChunk)};
      chunk.waveDst = place(slot.runStart).indices;
      readFromWindow(chunk, window, add(mul(own.key, rowElements), col));
      moveToImmediateOffset(chunk, slot.immediateBytes);
      fn(chunk);
    }
  };
  // Slot (g keys + key) n + s holds chunk n g + (s ^ groupSwizzle(key)),
  // n = groupChunks.
  auto grouped = [&](bool isKey) {
    return [&, isKey](Value slot) {
      int64_t n = groupChunks(isKey);
      Value group = divu(slot, n * cfg.tileKeys);
      Value key = remu(divu(slot, n), cfg.tileKeys), inGroup = remu(slot, n);
      Value chunk =
          add(mul(group, n),
              arith::XOrIOp::create(b, loc, inGroup, groupSwizzle(isKey, key)));
      return Place{key, chunk, {group, key, mul(inGroup, kChunk)}};
    };
  };
  tileChunks(stageView(true, stage), pb.k, pb.headDim,
             groupChunks(true) * cfg.tileKeys, grouped(true));
  tileChunks(stageView(false, stage), pb.v, pb.valueDim,
             groupChunks(false) * cfg.tileKeys, grouped(false));
}

void PrefillBuilder::forEachChunk(Value stage, Value kvTile, ValueRange ahead,
                                  function_ref<void(const StagedChunk &)> fn) {
  int64_t threads = cfg.warps * warpSize;
  Value tileStart = add(keyStart, mul(kvTile, cfg.tileKeys));
  if (windowed()) {
    forEachWindowedChunk({pb.k, pb.v, pb.layout, pb.blockSize, cfg.tileKeys,
                          threads, kvHead, tileStart, keyEnd, stage, sharedK,
                          sharedV, vTransposed(), ahead, cfg.transposedScores,
                          vRun()},
                         fn);
    return;
  }
  Value none = idx(0);
  // The cache block and offset of context token `token` (ids clamped into
  // the cache: every address is valid even past the window).
  auto locate = [&](Value token) {
    Value logical = minu(divu(token, pb.blockSize), sub(maxBlocks, idx(1)));
    Value id = toIndex(memref::LoadOp::create(b, loc, pb.blockTable,
                                              ValueRange{request, logical}));
    return std::make_pair(minu(id, sub(numBlocks, idx(1))),
                          remu(token, pb.blockSize));
  };
  bool shuffled = pb.layout == KVLayout::Shuffled;
  // `transposed`: V stored dim-major, a thread's chunks in runs of vRun()
  // consecutive keys whose values of one dim go out as one vector.
  auto tileChunks = [&](Value shared, Value src, int64_t width, bool isK,
                        bool transposed = false) {
    // Unpaged, where the target has buffer loads: the tile's keys of the KV
    // head as one window (rows Hkv x width apart) that ends with the last
    // key the tile may read, so the keys past it read zeros with no select.
    Value window;
    int64_t rowElements = 0;
    if (!pb.paged && target.hasBufferLoads())
      window = unpagedWindow(src, width, tileStart, rowElements);
    auto each = [&](Value row, Value col, int64_t groupRows) {
      Value token = add(tileStart, row);
      Value valid = lt(token, keyEnd);
      // Zero-filled copies still need an in-bounds source address.
      token = select(valid, token, keyStart);
      SmallVector<Value> srcIdx = {token, kvHead, col};
      if (pb.paged) {
        auto [block, offset] = locate(token);
        srcIdx = shuffled && isK
                     ? SmallVector<Value>{block, kvHead, divu(col, kChunk),
                                          offset, none}
                     : SmallVector<Value>{block, offset, kvHead, col};
      }
      StagedChunk chunk{shared, stagedIndices(stage, row, col, width), src,
                        srcIdx, select(valid, idx(kChunk), none)};
      for (int64_t e = 0; transposed && groupRows && e < kChunk; ++e)
        chunk.scatter.push_back(
            stagedIndices(stage, add(col, e), row, cfg.tileKeys));
      chunk.scatterRows = std::max<int64_t>(groupRows, 1);
      if (window)
        readFromWindow(chunk, window, add(mul(row, rowElements), col));
      fn(chunk);
    };
    if (transposed) {
      forEachRowGroupChunk(
          cfg.tileKeys, width, threads, vRun(),
          [&](int64_t, Value row, Value col, int64_t groupRows) {
            each(row, col, groupRows);
          });
      return;
    }
    forEachRowChunk(cfg.tileKeys, width, threads,
                    [&](int64_t, Value row, Value col) { each(row, col, 1); });
  };
  tileChunks(sharedK, pb.k, pb.headDim, /*isK=*/true);
  if (vTransposed()) {
    // Register-staged V ([keys, Dv] rows) stored dim-major, [Dv, keys]:
    // each chunk's 8 dims go to 8 rows, so that a V^T fragment is a lane's
    // consecutive keys, one vector read.
    tileChunks(sharedV, pb.v, pb.valueDim, /*isK=*/false,
               /*transposed=*/true);
    return;
  }
  if (!(pb.paged && shuffled)) {
    tileChunks(sharedV, pb.v, pb.valueDim, /*isK=*/false);
    return;
  }
  // Shuffled V ([.., BS/8, Dv, 8]): chunks of 8 tokens of one dim, staged
  // [Dv, keys] (K-contiguous for P.V); a window may end inside a chunk.
  int64_t tokenChunks = cfg.tileKeys / kChunk;
  for (int64_t i = 0; i < pb.valueDim * tokenChunks / threads; ++i) {
    Value id = add(tid, i * threads);
    Value d = divu(id, tokenChunks), col = mul(remu(id, tokenChunks), kChunk);
    Value token = add(tileStart, col);
    Value left = arith::MaxSIOp::create(b, loc, sub(keyEnd, token), none);
    // The block of the chunk's first token inside the window (any block
    // is in bounds; nothing is read past validElements).
    Value block = locate(minu(token, sub(keyEnd, idx(1)))).first;
    Value offset = remu(token, pb.blockSize);
    fn({sharedV,
        stagedIndices(stage, d, col, cfg.tileKeys),
        pb.v,
        {block, kvHead, divu(offset, kChunk), d, none},
        minu(left, idx(kChunk)),
        /*partial=*/true});
  }
}

/// State: [m (slots), l (slots), O (Dv / n atoms x accCount)].
LogicalResult PrefillBuilder::computeTile(Value stage, Value kvTile,
                                          SmallVector<Value> &state) {
  assert(!cfg.transposedScores && "tiles of transposed scores are split");
  int64_t nSlots = slots(), acc = accCount();
  int64_t scoreAtoms = cfg.tileKeys / atom.n;
  int64_t outAtoms = pb.valueDim / atom.n;
  Value warpRow = mul(warp, atom.m);

  // S = Q K^T for this warp's rows.
  Value zero = f32(0);
  SmallVector<Value> s(scoreAtoms * acc, zero);
  SharedTile qTile = tileOf(sharedQ, Value(), pb.headDim, true);
  SharedTile kTile = tileOf(sharedK, stage, pb.headDim, true);
  auto qFrag = [&](int64_t ks) -> FailureOr<Fragment> {
    if (cfg.qInRegisters)
      return qFrags[ks];
    return loadA(qTile, warpRow, ks);
  };
  if (failed(mmaSteps(s, pb.headDim / atom.k, qFrag, kTile, idx(0),
                      [&](int64_t ks) { return idx(ks * atom.k); },
                      scoreAtoms, scoreAtoms)))
    return failure();

  // Scale; mask keys past the request and, with causal, past the row, but
  // only on tiles that reach the request's end or the diagonal.
  for (Value &v : s)
    v = fmul(v, pb.scaleLog2);
  Value tileStart = add(keyStart, mul(kvTile, cfg.tileKeys));
  Value tileEnd = add(tileStart, cfg.tileKeys);
  Value needMask = lt(keyEnd, tileEnd);
  // The position of the warp's first row's query.
  Value firstPosition = add(rowToken(warpRow), queryOffset);
  if (pb.causal)
    needMask = arith::OrIOp::create(b, loc, needMask,
                                    lt(firstPosition, sub(tileEnd, idx(1))));
  auto masked = scf::IfOp::create(b, loc, TypeRange(ValueRange(s)), needMask,
                                  true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(masked.thenBlock());
    SmallVector<Value> out(s);
    Value negInf = f32(-INFINITY);
    for (int64_t j = 0; j < scoreAtoms; ++j)
      for (int64_t e = 0; e < acc; ++e) {
        auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, e);
        Value key = add(tileStart, add(col, j * atom.n));
        Value ok = lt(key, keyEnd);
        if (pb.causal)
          ok = andi(ok, arith::CmpIOp::create(
                            b, loc, arith::CmpIPredicate::sle, key,
                            add(rowToken(add(warpRow, row)), queryOffset)));
        out[j * acc + e] = select(ok, out[j * acc + e], negInf);
      }
    scf::YieldOp::create(b, loc, out);
    b.setInsertionPointToStart(masked.elseBlock());
    scf::YieldOp::create(b, loc, s);
  }
  s.assign(masked.getResults().begin(), masked.getResults().end());

  softmaxStep(s, scoreAtoms, state, outAtoms, [&](int64_t, Value localMax) {
    return rowReduce(localMax, /*isMax=*/true);
  });

  // P (16-bit) as the A operand of O += P V, from registers (the C and A
  // layouts agree; targets whose do not take transposed scores).
  SmallVector<Value> p16;
  for (Value v : s)
    p16.push_back(target.truncateProbability(b, loc, elem, v));
  int64_t atomsPerStep = atom.k / atom.n;
  SmallVector<Fragment> pFrags;
  for (int64_t ks = 0; ks < cfg.tileKeys / atom.k; ++ks)
    pFrags.push_back(*target.accumulatorsAsOperandA(
        b, loc, atom,
        ArrayRef<Value>(p16).slice(ks * atomsPerStep * acc,
                                   atomsPerStep * acc)));
  // V as it lies in its stage: dim-major from the shuffled layout.
  bool vDimMajor = pb.paged && pb.layout == KVLayout::Shuffled;
  SharedTile vTile =
      tileOf(sharedV, stage, vDimMajor ? cfg.tileKeys : pb.valueDim, vDimMajor);
  return mmaSteps(MutableArrayRef<Value>(state).drop_front(2 * nSlots),
                  cfg.tileKeys / atom.k,
                  [&](int64_t ks) -> FailureOr<Fragment> { return pFrags[ks]; },
                  vTile, idx(0), [&](int64_t ks) { return idx(ks * atom.k); },
                  outAtoms, std::min<int64_t>(outAtoms, 8));
}

void PrefillBuilder::epilogue(ArrayRef<Value> state) {
  if (cfg.transposedScores)
    return transposedEpilogue(state);
  int64_t nSlots = slots(), acc = accCount(), r = run();
  int64_t outAtoms = pb.valueDim / atom.n;
  Type outElem = cast<MemRefType>(pb.out.getType()).getElementType();
  Value warpRow = mul(warp, atom.m);
  // (Not structured bindings: lambdas below capture them.)
  SmallVector<Value> inv, lse;
  std::tie(inv, lse) = rowNormalizers(state);
  auto runType = VectorType::get({r}, outElem);
  for (int64_t e = 0; e < acc; e += r) {
    // (Not structured bindings: lambdas below capture them.)
    Value row, col;
    std::tie(row, col) = target.getAccumulatorPosition(b, loc, atom, lane, e);
    Value token = rowToken(add(warpRow, row));
    Value tokenHead = rowHead(add(warpRow, row));
    ifThen(lt(token, rowEnd), [&] {
      for (int64_t j = 0; j < outAtoms; ++j) {
        SmallVector<Value> values;
        for (int64_t v = 0; v < r; ++v) {
          Value o = fmul(state[2 * nSlots + j * acc + e + v], inv[e / r]);
          if (outElem != o.getType())
            o = arith::TruncFOp::create(b, loc, outElem, o);
          values.push_back(o);
        }
        SmallVector<Value> outIdx = {token, tokenHead, add(col, j * atom.n)};
        if (pb.split)
          outIdx.insert(outIdx.begin(), split);
        vector::StoreOp::create(
            b, loc, vector::FromElementsOp::create(b, loc, runType, values),
            pb.out, outIdx, false,
            llvm::MaybeAlign(r * outElem.getIntOrFloatBitWidth() / 8));
      }
      if (pb.lse)
        ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, col,
                                     idx(0)),
               [&] {
                 SmallVector<Value> lseIdx = {tokenHead, token};
                 if (pb.split)
                   lseIdx.insert(lseIdx.begin(), split);
                 memref::StoreOp::create(b, loc, lse[e / r], pb.lse, lseIdx);
               });
    });
  }
}

LogicalResult PrefillBuilder::tile(Value first, Value last, Value start,
                                   Value end, Value offset) {
  rowStart = first;
  rowEnd = last;
  keyStart = start;
  queryOffset = offset;
  // Causal: keys up to the tile's last query's position (none before
  // start); else the whole request.
  keyEnd = end;
  if (pb.causal)
    keyEnd = arith::MaxSIOp::create(
        b, loc, arith::MinSIOp::create(b, loc, end, add(last, offset)), start);
  // Bounds the back end sees are uniform (they are: the scan that found
  // them ran in every lane alike): scalar loop control and a uniform mask
  // branch rather than exec masks a tile.
  if (cfg.transposedScores)
    for (Value *bound : {&rowStart, &rowEnd, &keyStart, &keyEnd, &queryOffset})
      *bound = uniform(*bound);
  Value numTiles = arith::CeilDivUIOp::create(b, loc, sub(keyEnd, keyStart),
                                              idx(cfg.tileKeys));

  // Every warp is done with the previous tile's Q and rings.
  gpu::BarrierOp::create(b, loc);
  qFrags.clear();
  if (cfg.transposedScores) {
    if (failed(loadQueryFragments()))
      return failure();
  } else {
    stageQuery(first, last);
    gpu::BarrierOp::create(b, loc);
  }
  if (cfg.qInRegisters) {
    SharedTile qTile = tileOf(sharedQ, Value(), pb.headDim, true);
    for (int64_t ks = 0; ks < pb.headDim / atom.k; ++ks) {
      auto fa = target.loadFragments(b, loc, atom, MmaOperand::A, qTile,
                                     mul(warp, atom.m), idx(ks * atom.k),
                                     lane, 1);
      if (failed(fa))
        return failure();
      qFrags.push_back((*fa)[0]);
    }
  }

  // Transposed scores keep each query's exp2 offset, -m (+inf while m is
  // -inf), rather than m (computeTransposedTile).
  int64_t nSlots = cfg.transposedScores ? cfg.queryAtoms : slots();
  SmallVector<Value> state(nSlots,
                           f32(cfg.transposedScores ? INFINITY : -INFINITY));
  state.append(nSlots, f32(0));
  state.append(pb.valueDim / atom.n * accCount() * cfg.queryAtoms, f32(0));

  TilePipeline pipeline = chunkPipeline(
      numTiles, cfg.stages,
      cfg.tileKeys * (pb.headDim + pb.valueDim) / kChunk /
          (cfg.warps * warpSize),
      elem, [this](Value stage, Value t, ValueRange ahead, auto fn) {
        forEachChunk(stage, t, ahead, fn);
      });
  // K's and V's stages alike (stageOffset): the loop carries the offset.
  int64_t stageBytes =
      cfg.tileKeys * pb.headDim * elem.getIntOrFloatBitWidth() / 8;
  if (pb.headDim == pb.valueDim && llvm::isPowerOf2_64(stageBytes))
    pipeline.stageBytes = stageBytes;
  if (windowed())
    loadBlockIdsAhead(pipeline, pb.blockTable, request, keyStart, cfg.tileKeys,
                      pb.blockSize, cfg.warps * warpSize);
  if (cfg.loadsToShared)
    loadChunksToShared(pipeline,
                       [this](Value stage, Value t, ValueRange, auto fn) {
                         forEachChunkToShared(stage, t, fn);
                       });
  // The unpaged tiles' buffer windows end with the keys (and the paged
  // ones', loadBlockIdsAhead): a tile past the last reads zeros.
  if (cfg.transposedScores && (!pb.paged || windowed()))
    pipeline.fetchPastEnd = pipeline.storePastEnd = true;
  pipeline.compute = [&](Value stage, Value t, SmallVector<Value> &st) {
    if (cfg.transposedScores)
      return computeTransposedTile(stage, t, st, /*masked=*/false);
    return computeTile(stage, t, st);
  };
  if (cfg.transposedScores) {
    // The tiles that need the mask run in a loop of their own.
    pipeline.tailFrom = firstMaskedTile(numTiles);
    // Causal: a wave skips a tile past its last query, whose keys it would
    // all mask (the state stays as the tile would leave it). At the
    // diagonal of a block of 8 waves (256 queries), a SIMD's later wave
    // then has its MFMAs alone.
    Value waveLastKey;
    if (pb.causal) {
      Value lastRow = add(queryAtomRow(cfg.queryAtoms - 1), atom.n - 1);
      waveLastKey =
          uniform(add(arith::MinSIOp::create(b, loc, rowToken(lastRow),
                                             sub(rowEnd, idx(1))),
                      queryOffset));
    }
    pipeline.tailCompute = [&, waveLastKey](Value stage, Value t,
                                            SmallVector<Value> &st) {
      if (!waveLastKey)
        return computeTransposedTile(stage, t, st, /*masked=*/true);
      Value tileStart = add(keyStart, mul(t, cfg.tileKeys));
      // (Marked unlikely: the back end keeps the tile's compute and its
      // rescale where they were, out of the way of the skip.)
      Value past = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                         tileStart, waveLastKey);
      auto skip = scf::IfOp::create(b, loc, ValueRange(st).getTypes(),
                                    unlikely(past), /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(skip.thenBlock());
      scf::YieldOp::create(b, loc, st);
      b.setInsertionPointToStart(skip.elseBlock());
      if (failed(computeTransposedTile(stage, t, st, /*masked=*/true)))
        return failure();
      scf::YieldOp::create(b, loc, st);
      st.assign(skip.getResults().begin(), skip.getResults().end());
      return success();
    };
  }
  if (failed(runTilePipeline(pipeline, state)))
    return failure();
  epilogue(state);
  return success();
}

LogicalResult PrefillBuilder::pagedTile(Value first, Value last,
                                        Value requestIndex, Value queryEnd) {
  request = requestIndex;
  // The context window of this split, as paged_attention defines it.
  Value splits =
      pb.split ? memref::DimOp::create(b, loc, pb.out, 0).getResult() : Value();
  auto [start, end] = contextWindow(pb.contextLens, request, maxBlocks,
                                    pb.blockSize, split, splits);
  Value offset = idx(0);
  if (pb.causal) {
    // The queries are the last tokens of the sequence (its length clamped
    // as the windows clamp it).
    Value length = contextWindow(pb.contextLens, request, maxBlocks,
                                 pb.blockSize).second;
    offset = sub(length, queryEnd);
  }
  return tile(first, last, start, end, offset);
}

LogicalResult PrefillBuilder::build() {
  elem = cast<MemRefType>(pb.q.getType()).getElementType();
  tid = threadId();
  lane = remu(tid, warpSize);
  warp = divu(tid, warpSize);
  // Packed, blocks go over KV heads; `head` is the group's first.
  head = mul(blockId(gpu::Dimension::y), pb.packed);
  kvHead = divu(head, pb.qHeads / pb.kvHeads);

  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  Value smem = dynamicSharedBytes();
  int64_t offset = 0;
  auto carve = [&](ArrayRef<int64_t> shape) {
    Value view = sharedView(smem, offset, shape, elem);
    int64_t n = bytes;
    for (int64_t d : shape)
      n *= d;
    offset += n;
    return view;
  };
  if (!cfg.transposedScores)
    sharedQ = carve({tileRows(), pb.headDim});
  if (cfg.transposedScores)
    smemBytes = smem;
  if (cfg.loadsToShared) {
    // Stages are views made where used (stageView).
    waveIndex = uniform(warp);
    laneOffsets();
  } else if (cfg.transposedScores) {
    sharedK = carve({cfg.stages, pb.headDim / kChunk, cfg.tileKeys, kChunk});
    sharedV = carve({cfg.stages, cfg.tileKeys / kChunk, pb.valueDim, kChunk});
  } else {
    sharedK = carve({cfg.stages, cfg.tileKeys, pb.headDim});
    if (pb.paged && pb.layout == KVLayout::Shuffled)
      sharedV = carve({cfg.stages, pb.valueDim, cfg.tileKeys});
    else
      sharedV = carve({cfg.stages, cfg.tileKeys, pb.valueDim});
  }
  if (pb.paged) {
    split = blockId(gpu::Dimension::z);
    numBlocks = memref::DimOp::create(b, loc, pb.k, 0);
    maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  }

  // The tiles of every request, walked with the grid's stride. Entry 0 of
  // cu_seqlens ends the rows before the first request (normally none):
  // group g >= 1 is request g - 1.
  Value T = memref::DimOp::create(b, loc, pb.q, 0);
  Value entries = memref::DimOp::create(b, loc, pb.cuSeqlens, 0);
  // The grid width, as the launch computes it (gpu.grid_dim would need the
  // ROCm device library on CDNA).
  Value stride = arith::CeilDivUIOp::create(
      b, loc, add(T, slackTiles(pb) * tileTokens()), idx(tileTokens()));
  Type indexType = b.getIndexType();
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange{indexType, indexType, indexType, indexType},
      ValueRange{blockId(gpu::Dimension::x)});
  {
    OpBuilder::InsertionGuard guard(b);
    Block *before = b.createBlock(&loop.getBefore(), {}, {indexType}, {loc});
    Value t = before->getArgument(0);
    RowTile found = findRowTile(
        [&](Value g) {
          return memref::LoadOp::create(b, loc, pb.cuSeqlens, g).getResult();
        },
        entries, T, t, tileTokens(), /*tail=*/false);
    scf::ConditionOp::create(
        b, loc, found.found,
        ValueRange{t, found.rowStart, found.rowEnd, found.group});
  }
  OpBuilder::InsertionGuard guard(b);
  Block *after = b.createBlock(&loop.getAfter(), {},
                               {indexType, indexType, indexType, indexType},
                               {loc, loc, loc, loc});
  Value t = after->getArgument(0), first = after->getArgument(1),
        last = after->getArgument(2), group = after->getArgument(3);
  // The request's rows: the group's [start, end) as the scan clamped them.
  auto isRequest = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                         group, idx(0));
  LogicalResult result = success();
  ifThen(isRequest, [&] {
    auto endOf = [&](Value g) {
      return toIndex(memref::LoadOp::create(b, loc, pb.cuSeqlens, g));
    };
    // [max(cu[0..g-1]), max(that, cu[g])) clamped to T, as findRowTile
    // read them: the tile's own bounds already are; the request's start is
    // at most its first row, and its end is at least its last.
    Value end = arith::MaxSIOp::create(b, loc, endOf(group), last);
    end = minu(end, T);
    if (pb.paged) {
      result = pagedTile(first, last, sub(group, idx(1)), end);
      return;
    }
    Value start = arith::MaxSIOp::create(b, loc, endOf(sub(group, idx(1))),
                                         idx(0));
    start = minu(start, first);
    result = tile(first, last, start, end, idx(0));
  });
  scf::YieldOp::create(b, loc, ValueRange{add(t, stride)});
  return result;
}

namespace {

/// The tile configuration, the kernel body and the launch geometry of a
/// flash-attention problem; `tokens` is q's token dimension, `splits` the
/// split dimension of a split-form output.
FailureOr<LaunchGeometry> buildFlash(OpBuilder &b, Operation *op,
                                     KernelContext &ctx, PrefillProblem pb,
                                     Type elem, const KernelDim &tokens,
                                     const KernelDim *splits) {
  const TargetInfo &target = ctx.target;
  FailureOr<MmaAtom> chosen = chooseAttentionAtom(op, target, elem);
  if (failed(chosen))
    return failure();
  MmaAtom atom = *chosen;
  // CDNA: transposed scores on the 32x32 atom.
  PrefillConfig cfg;
  for (const MmaAtom &a : target.getMmaAtoms(elem, b.getF32Type()))
    if (a.m == 32 && target.hasAccumulatorsAsOperandB(a)) {
      atom = a;
      cfg.transposedScores = true;
    }
  if (pb.headDim % 64 || pb.valueDim % 64)
    return op->emitOpError()
           << "GPU template: head dims " << pb.headDim << "/" << pb.valueDim
           << " must be multiples of 64 (whole swizzled shared-memory rows)";

  // 4 warps and 64-key tiles, Q in registers up to head dim 128; wider
  // heads take 32-key tiles and read Q from shared memory (registers);
  // smaller tiles, then 2 warps, where shared memory is short (gfx942's
  // 64 KB).
  bool async = target.getAsyncCopyBytes() > 0;
  // Unpaged transposed scores on gfx950 load K/V tiles straight into the
  // LDS stage no wave reads (PrefillConfig::loadsToShared), for 16-bit
  // operands (V^T by transposing reads; a k step is one 32-byte K group).
  cfg.loadsToShared = cfg.transposedScores && !pb.paged &&
                      target.hasBufferLoadsToShared() &&
                      target.hasTransposedFragmentReads(atom) && atom.k == 16;
  if (ctx.stages == 1 || (!async && ctx.stages > 0 && ctx.stages != 2))
    return op->emitOpError()
           << "GPU template: stages must be "
           << (async               ? "at least 2"
               : cfg.loadsToShared ? "2 (tiles are loaded into the stage "
                                     "not being read)"
                                   : "2 (tiles go through registers)")
           << ", got " << ctx.stages;
  cfg.stages = ctx.stages > 0 ? ctx.stages : 2;
  // (Transposed scores keep Q's fragments in registers at any head dim,
  // loaded from global memory: loadQueryFragments.)
  cfg.qInRegisters = pb.headDim <= 128 && !cfg.transposedScores;
  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  assert((cfg.transposedScores || target.hasAccumulatorsAsOperandA(atom)) &&
         "P reaches P.V from registers");
  int64_t qRows = cfg.transposedScores ? 0 : 1;
  int64_t sharedBytes = 0;
  bool fits = false;
  // (Transposed scores on gfx950 in 96- and 128-key tiles: 44% and 47% of
  // the loop's issue cycles on MFMAs against 45%, and 128 spilled.)
  // Two query atoms a warp (64 queries) on gfx950, whose 32x32x16 MFMA does
  // twice gfx942's work in the same cycles, so that each K and V^T
  // fragment read from LDS serves two MMAs: its unpaged loop 45% -> 50% of
  // issue cycles on MFMAs; MLA's (192/128) 58% at two waves a SIMD -> 65%
  // at one. Not on gfx942 (it spilled), nor at wider heads (the
  // accumulators would not fit), nor in the paged forms (below; two atoms
  // there took 256 VGPRs and 150-170 AGPRs: 1 wave a SIMD).
  if (cfg.transposedScores && !pb.paged && atom.k == 16 && pb.headDim <= 192)
    cfg.queryAtoms = 2;
  // Register-staged transposed scores (CDNA): the paged forms take 8
  // waves and 64-key stages (two or one, below), a block a CU at 2 waves a
  // SIMD: each
  // thread stages half a 4-wave block's chunks, so the registers fit
  // (static, head dim 128, against two 4-wave blocks: gfx950 55% -> 59%
  // of the loop's issue cycles on MFMAs, gfx942 68% -> 70%; MLA's 192 /
  // 128, against one 32-key stage for two 4-wave blocks: 49% -> 57%, 62%
  // -> 69%, before the softmax without a maximum; 128-key tiles: 61% on
  // gfx950, but 11 VGPRs spilled). gfx942's unpaged prefill at head dim
  // 128 the same (one barrier a tile; 71% either way, 204 registers for
  // 220 against two 4-wave blocks on one 32 KB stage, and a causal
  // block's waves skip the diagonal's tiles past their queries). The rest
  // first take a 64-key tile whose LDS lets two blocks share a CU; head
  // dims past 192 one 32-key stage. One-stage tiles wait in registers
  // (tile t+1) while tile t is computed, and go to LDS after a second
  // barrier (runTileLoop); one 64-key stage rather than two of 32 keys
  // where two do not fit (gfx942's MLA, 192 / 128): twice the MFMAs a
  // tile's loop overhead pays for (74% against 68% of the loop's issue
  // cycles on MFMAs, both two barriers every 64 keys).
  int64_t stagesWanted = cfg.stages;
  bool oneStageFits =
      !async && !cfg.loadsToShared && cfg.transposedScores && ctx.stages <= 0;
  int64_t oneStage = oneStageFits ? 1 : stagesWanted;
  // (warps, keys, stages, blocks a CU)
  SmallVector<std::array<int64_t, 4>> candidates;
  // 8 waves over two stages (one barrier a tile, runTileLoop) where they
  // fit, their offsets 4 adds a tile and one flip
  // (TilePipeline::stageBytes); else, paged, over one.
  if (oneStageFits)
    candidates.push_back({8, 64, stagesWanted, 1});
  if (oneStageFits && pb.paged)
    candidates.push_back({8, 64, 1, 1});
  if (oneStageFits && pb.paged && pb.headDim > 192)
    candidates.push_back({4, 32, 1, 2});
  if (oneStageFits)
    candidates.append({{4, 64, stagesWanted, 2}, {4, 64, 1, 2}});
  candidates.append({{4, 64, stagesWanted, 1},
                     {4, 64, oneStage, 1},
                     {4, 32, stagesWanted, 1},
                     {4, 16, stagesWanted, 1},
                     {2, 32, stagesWanted, 1},
                     {2, 16, stagesWanted, 1}});
  for (auto [warps, keys, stages, blocks] : candidates) {
    if (pb.headDim > 192 && keys > 32)
      continue;
    if (keys % atom.k || keys % atom.n)
      continue;
    cfg.warps = warps;
    cfg.tileKeys = keys;
    cfg.stages = stages;
    int64_t rows = cfg.warps * atom.m * cfg.queryAtoms;
    int64_t threads = cfg.warps * target.getWarpSize();
    if ((keys * kChunk) % threads)
      continue;
    sharedBytes = (qRows * rows * pb.headDim +
                   cfg.stages * keys * (pb.headDim + pb.valueDim)) *
                  bytes;
    if (blocks * sharedBytes <= target.getSharedMemoryBytes()) {
      fits = true;
      break;
    }
  }
  if (!fits)
    return op->emitOpError()
           << "GPU template: no prefill tile of head dims " << pb.headDim
           << "/" << pb.valueDim << " with " << cfg.stages
           << " stages fits the " << target.getSharedMemoryBytes()
           << " bytes of shared memory of " << target.getChip();

  // Paged: the query heads of a KV head share a block where they divide
  // the tile.
  int64_t group = pb.qHeads / pb.kvHeads;
  if (pb.paged && (cfg.warps * atom.m * cfg.queryAtoms) % group == 0)
    pb.packed = group;
  PrefillBuilder builder(b, op->getLoc(), target, atom, cfg, pb);
  if (failed(builder.build()))
    return failure();
  LaunchGeometry geometry;
  int64_t tokensPerTile = cfg.warps * atom.m * cfg.queryAtoms / pb.packed;
  GridDim x = gridOver(tokens, 1, tokensPerTile);
  x.add += slackTiles(pb) * tokensPerTile;
  geometry.grid[0] = x;
  geometry.grid[1] = GridDim{-1, 1, pb.qHeads / pb.packed, 1};
  geometry.grid[2] = splits ? gridOver(*splits, 1, 1) : GridDim{-1, 1, 1, 1};
  geometry.block = {
      static_cast<int32_t>(cfg.warps * target.getWarpSize()), 1, 1};
  geometry.sharedBytes = sharedBytes;
  return geometry;
}

} // namespace

FailureOr<LaunchGeometry>
mlir::tessel::buildPrefillAttention(OpBuilder &b, PrefillAttentionOp op,
                                    KernelContext &ctx) {
  if (hasPrefillAttentionSm90(op, ctx.target))
    return buildPrefillAttentionSm90(b, op, ctx);
  auto qType = cast<MemRefType>(op.getQ().getType());
  PrefillProblem pb;
  pb.q = ctx.arg(op.getQ());
  pb.k = ctx.arg(op.getK());
  pb.v = ctx.arg(op.getV());
  pb.cuSeqlens = ctx.arg(op.getCuSeqlens());
  pb.out = ctx.arg(op.getOut());
  pb.lse = ctx.arg(op.getLse());
  pb.qHeads = qType.getDimSize(1);
  pb.kvHeads = cast<MemRefType>(op.getK().getType()).getDimSize(1);
  pb.headDim = qType.getDimSize(2);
  pb.valueDim = cast<MemRefType>(op.getOut().getType()).getDimSize(2);
  pb.scaleLog2 = ctx.scaleLog2(b, op.getScale());
  pb.causal = op.getCausal();
  return buildFlash(b, op, ctx, pb, qType.getElementType(),
                    ctx.dim(op.getQ(), 0), nullptr);
}

FailureOr<LaunchGeometry>
mlir::tessel::buildPagedQueries(OpBuilder &b, PagedAttentionOp op,
                                KernelContext &ctx) {
  if (hasPagedQueriesSm90(op, ctx.target))
    return buildPagedQueriesSm90(b, op, ctx);
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto kType = cast<MemRefType>(op.getKCache().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  PrefillProblem pb;
  pb.q = ctx.arg(op.getQ());
  pb.k = ctx.arg(op.getKCache());
  pb.v = ctx.arg(op.getVCache());
  pb.cuSeqlens = ctx.arg(op.getCuSeqlens());
  pb.out = ctx.arg(op.getOut());
  pb.lse = ctx.arg(op.getLse());
  pb.blockTable = ctx.arg(op.getBlockTable());
  pb.contextLens = ctx.arg(op.getContextLens());
  pb.paged = true;
  pb.layout = op.getLayout();
  pb.blockSize = getCacheBlockSize(kType, pb.layout);
  pb.split = op.isSplit();
  pb.qHeads = qType.getDimSize(1);
  pb.kvHeads = getCacheKVHeads(kType, pb.layout);
  pb.headDim = qType.getDimSize(2);
  pb.valueDim = outType.getDimSize(outType.getRank() - 1);
  pb.scaleLog2 = ctx.scaleLog2(b, op.getScale());
  pb.causal = op.getCausal();
  return buildFlash(b, op, ctx, pb, qType.getElementType(),
                    ctx.dim(op.getQ(), 0),
                    pb.split ? &ctx.dim(op.getOut(), 0) : nullptr);
}
