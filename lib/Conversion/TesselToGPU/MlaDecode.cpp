//===- MlaDecode.cpp - Absorbed MLA decode kernel template ----------------===//
//
// mla_decode on tensor cores: q [B, H, L+R] against one latent KV head
// [NB, BS, L+R] whose first L dims are also the values (DeepSeek-V3: 576 =
// 512 + 64).
//
// Work decomposition. Block (g, b, p) computes a group of 16 heads (the MMA
// rows) of request b over split p of its context (windows of whole cache
// blocks, as paged_attention's split form). Head groups are the fastest
// grid dimension, so the groups of one request run side by side and read
// its cache rows once from memory and then from L2.
//
// Tile loop. A tile is G x n tokens (n: the MMA's N, 8 on sm80; G token
// slices); their 576-wide rows are staged once in shared memory (cp.async
// ring on sm80, registers on CDNA, whose one-stage ring serves where two
// do not fit) and serve as K and, their first L columns, as V. Warp w
// scores slice w % G (S = Q K^T); where there are more warps than slices
// (gfx942's 64 KB holds 32 rows of 576 once, not 64), the W / G warps of a
// slice split the 576 dims and add their partial scores through shared
// memory, so that no MMA is repeated. The warps agree on each row's
// running max through shared memory, write P = exp2(S - m) for their
// tokens to a shared [16, tile] slice, and then each warp accumulates
// O[:, w L / W ...] += P V over all the tile's tokens: the 16 x 512 output
// of a head group is split by columns over the warps (a warp could not
// hold it). Partial row sums stay per warp (every warp rescales by the
// same max) and are added up at the end. V is token-major, so a lane's k
// values of one column lie a row apart: gfx950 reads them by transposing
// reads (and stages P as P^T, read back the same way: a lane's 4 scores
// of one token, 4 heads, are one 8-byte write); on gfx942 a warp's 8
// output atoms take interleaved columns (atom j, column c: output column
// 8 c + j), and a lane reads its 8 atoms' elements of one token as one
// 16-byte run. On CDNA a warp's Q fragments are read once, before the
// tile loop, and stay in registers.
//
// On CDNA this template runs only where MlaDecodeTransposed.cpp (each wave
// its own tokens over all dims, no barrier in the loop) does not take the
// shape, and on sm_90a where MlaDecodeSm90.cpp does not.
//
//===----------------------------------------------------------------------===//

#include "MlaDecode.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::mla;

void MlaBuilderBase::setBlockIds() {
  Value splits =
      pb.split ? memref::DimOp::create(b, loc, pb.out, 0).getResult() : idx(1);
  SmallVector<Value, 3> ids =
      l2LocalBlockIds({idx((pb.heads + atom.m - 1) / atom.m),
                       memref::DimOp::create(b, loc, pb.q, 0), splits});
  group = blockIdOr(ids, gpu::Dimension::x);
  request = blockIdOr(ids, gpu::Dimension::y);
  split = blockIdOr(ids, gpu::Dimension::z);
}

namespace {

struct MlaConfig {
  int64_t warps = 4;
  int64_t stages = 2;
  /// Tokens each warp scores per tile.
  int64_t tokensPerWarp = 16;
  /// Distinct token slices of a tile: warp w scores slice w % tokenGroups
  /// over the head dims' part w / tokenGroups (of kSplits()).
  int64_t tokenGroups = 4;
  int64_t tileTokens() const { return tokenGroups * tokensPerWarp; }
  int64_t kSplits() const { return warps / tokenGroups; }
};

class MlaDecodeBuilder : public MlaBuilderBase {
public:
  MlaDecodeBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                   const MmaAtom &atom, const MlaConfig &cfg,
                   const MlaProblem &pb)
      : MlaBuilderBase(b, loc, target, atom, pb), cfg(cfg) {}

  LogicalResult build();

private:
  /// Output columns per warp.
  int64_t warpCols() const { return pb.latentDim / cfg.warps; }
  /// B atoms of P V loaded at a time.
  int64_t outGroup() const {
    return std::min<int64_t>(warpCols() / atom.n, 8);
  }
  /// Whether P V reads V by TargetInfo::loadInterleavedFragments: column c
  /// of atom j in a group of outGroup() is output column outGroup() c + j
  /// of the group's (CDNA: one 16-byte LDS read per k value for 8 atoms
  /// rather than a 2-byte read per element).
  bool interleavedV() const {
    return !target.hasTransposedFragmentReads(atom) &&
           warpCols() % (outGroup() * atom.n) == 0 &&
           target.hasInterleavedFragments(atom, outGroup());
  }

  /// Whether P is staged as P^T, where fragments are read transposed
  /// (gfx950): a lane's accumulators are runs of 4 rows of one column
  /// (CDNA's C layout), so in P^T runs of 4 consecutive elements, one
  /// 8-byte store each rather than a 2-byte store per element.
  bool pTransposed() const { return target.hasTransposedFragmentReads(atom); }

  /// K-steps of the head dims a warp scores over, and the first dim of
  /// its k-step `ks`.
  int64_t partSteps() const { return pb.headDim / atom.k / cfg.kSplits(); }
  Value partK(int64_t ks) {
    return add(mul(divu(warp, cfg.tokenGroups), partSteps() * atom.k),
               idx(ks * atom.k));
  }

  void stageQuery();
  /// Whether tiles are read by forEachWindowedChunk (CDNA).
  bool windowed() const {
    return pagedWindowsApply(KVLayout::NHD, pb.blockSize, cfg.tileTokens(),
                             pb.headDim, 0, cfg.warps * warpSize);
  }
  /// `ahead`: the tile's block ids (TilePipeline::lookahead) where
  /// windowed().
  void forEachChunk(Value stage, Value tile, ValueRange ahead,
                    function_ref<void(const StagedChunk &)> fn);
  LogicalResult computeTile(Value stage, Value tile, SmallVector<Value> &state);
  void epilogue(ArrayRef<Value> state);

  MlaConfig cfg;
  Type elem;
  /// sharedScores: the warps' partial scores [W, lanes x accumulators]
  /// where the warps of a slice split the head dims.
  Value sharedQ, sharedKV, sharedP, sharedStats, sharedScores;
  /// Register-staged targets (CDNA): the warp's Q fragments, read once
  /// (18 LDS reads a tile before).
  SmallVector<Fragment> qFrags;
  Value tid, lane, warp;
  Value start, end, numTiles, numBlocks, maxBlocks;
};

void MlaDecodeBuilder::stageQuery() {
  // Rows r < 16 are heads 16 g + r (zeros past H).
  stageRows(sharedQ, pb.q, atom.m, pb.headDim, cfg.warps * warpSize,
            [&](Value row) {
              Value head = add(mul(group, atom.m), row);
              return std::make_pair(lt(head, idx(pb.heads)),
                                    SmallVector<Value>{request, head});
            });
}

void MlaDecodeBuilder::forEachChunk(
    Value stage, Value tile, ValueRange ahead,
    function_ref<void(const StagedChunk &)> fn) {
  int64_t threads = cfg.warps * warpSize;
  Value tileStart = add(start, mul(tile, cfg.tileTokens()));
  if (windowed()) {
    forEachWindowedChunk({pb.cache, Value(), KVLayout::NHD, pb.blockSize,
                          cfg.tileTokens(), threads, Value(), tileStart, end,
                          stage, sharedKV, Value(), false, ahead},
                         fn);
    return;
  }
  forEachRowChunk(cfg.tileTokens(), pb.headDim, threads,
                  [&](int64_t, Value row, Value col) {
    Value token = add(tileStart, row);
    Value logical = minu(divu(token, pb.blockSize), sub(maxBlocks, idx(1)));
    Value id = toIndex(memref::LoadOp::create(b, loc, pb.blockTable,
                                              ValueRange{request, logical}));
    Value block = minu(id, sub(numBlocks, idx(1)));
    fn({sharedKV, swizzledIndices({stage}, row, col, pb.headDim), pb.cache,
        {block, remu(token, pb.blockSize), col},
        select(lt(token, end), idx(kChunk), idx(0))});
  });
}

/// State: [m (slots), l (slots; this warp's tokens), O (warpCols / n atoms
/// x accCount)].
LogicalResult MlaDecodeBuilder::computeTile(Value stage, Value tile,
                                            SmallVector<Value> &state) {
  int64_t nSlots = slots(), acc = accCount(), r = run();
  int64_t tw = cfg.tokensPerWarp, tokens = cfg.tileTokens();
  int64_t scoreAtoms = tw / atom.n, outAtoms = warpCols() / atom.n;
  Value warpTokens = mul(remu(warp, cfg.tokenGroups), tw);

  // S = Q K^T for this warp's tokens over its part of the head dims.
  SmallVector<Value> s(scoreAtoms * acc, f32(0));
  SharedTile kTile = tileOf(sharedKV, stage, pb.headDim, true);
  auto kAt = [&](int64_t ks) { return partK(ks); };
  auto qFrag = [&](int64_t ks) -> FailureOr<Fragment> {
    if (!qFrags.empty())
      return qFrags[ks];
    return loadA(tileOf(sharedQ, Value(), pb.headDim, true), idx(0), partK(ks));
  };
  if (failed(mmaSteps(s, partSteps(), qFrag, kTile, warpTokens, kAt, scoreAtoms,
                      scoreAtoms)))
    return failure();
  if (cfg.kSplits() > 1) {
    // The slice's other warps' parts, through shared memory.
    auto runType = VectorType::get({acc}, b.getF32Type());
    for (int64_t j = 0; j < scoreAtoms; ++j)
      vector::StoreOp::create(
          b, loc,
          vector::FromElementsOp::create(
              b, loc, runType, ArrayRef<Value>(s).slice(j * acc, acc)),
          sharedScores,
          ValueRange{warp, mul(add(mul(lane, scoreAtoms), idx(j)), acc)});
    gpu::BarrierOp::create(b, loc);
    for (int64_t part = 1; part < cfg.kSplits(); ++part) {
      Value other = remu(add(warp, part * cfg.tokenGroups), cfg.warps);
      for (int64_t j = 0; j < scoreAtoms; ++j) {
        Value run = vector::LoadOp::create(
            b, loc, runType, sharedScores,
            ValueRange{other, mul(add(mul(lane, scoreAtoms), idx(j)), acc)});
        for (int64_t e = 0; e < acc; ++e)
          s[j * acc + e] =
              fadd(s[j * acc + e], vector::ExtractOp::create(b, loc, run, e));
      }
    }
  }
  Value tileStart = add(start, mul(tile, tokens));
  for (int64_t j = 0; j < scoreAtoms; ++j)
    for (int64_t e = 0; e < acc; ++e) {
      auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, e);
      (void)row;
      Value token = add(add(tileStart, warpTokens), add(col, j * atom.n));
      Value &v = s[j * acc + e];
      v = select(lt(token, end), fmul(v, pb.scaleLog2), f32(-INFINITY));
    }

  // The tile's row max, agreed through shared memory [W, 16].
  for (int64_t sl = 0; sl < nSlots; ++sl) {
    Value localMax = f32(-INFINITY);
    for (int64_t j = 0; j < scoreAtoms; ++j)
      for (int64_t e = sl * r; e < (sl + 1) * r; ++e)
        localMax = fmax(localMax, s[j * acc + e]);
    auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, sl * r);
    (void)col;
    memref::StoreOp::create(b, loc, rowReduce(localMax, true), sharedStats,
                            ValueRange{warp, row});
  }
  gpu::BarrierOp::create(b, loc);
  // Register-staged targets (CDNA) rescale O lazily, in an unlikely
  // branch taken where some lane's factor is not 1, a row's maximum having
  // grown (16 of the 18 v_pk_mul_f32 an iteration before; letting the maximum
  // lag by kRescaleSlack, as the Hopper kernels do, cost more compares and
  // selects than it saved). Every warp takes the same maxima (the tile's,
  // through LDS) and so the same factors.
  bool lazy = target.getAsyncCopyBytes() == 0;
  SmallVector<Value> alpha = softmaxStep(
      s, scoreAtoms, state, lazy ? 0 : outAtoms,
      [&](int64_t sl, Value) {
        auto [row, col] =
            target.getAccumulatorPosition(b, loc, atom, lane, sl * r);
        (void)col;
        Value tileMax = f32(-INFINITY);
        for (int64_t w = 0; w < cfg.warps; ++w)
          tileMax =
              fmax(tileMax, memref::LoadOp::create(b, loc, sharedStats,
                                                   ValueRange{idx(w), row}));
        return tileMax;
      },
      /*chains=*/1);
  if (lazy)
    rescaleLazily(MutableArrayRef<Value>(state).drop_front(2 * nSlots), alpha);
  // P for this warp's tokens into the shared [16, tile] slice (the warps
  // of a slice write the same values), or as P^T, [tile, 16], where P V
  // reads it back by transposing reads: a lane's accumulators (one token,
  // consecutive heads) are then one run.
  bool transposedP = pTransposed();
  int64_t runLength = transposedP ? 4 : r;
  auto runType = VectorType::get({runLength}, elem);
  for (int64_t j = 0; j < scoreAtoms; ++j)
    for (int64_t e = 0; e < acc; e += runLength) {
      auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, e);
      SmallVector<Value> values;
      for (int64_t v = 0; v < runLength; ++v)
        values.push_back(
            target.truncateProbability(b, loc, elem, s[j * acc + e + v]));
      Value token = add(warpTokens, add(col, j * atom.n));
      vector::StoreOp::create(
          b, loc, vector::FromElementsOp::create(b, loc, runType, values),
          sharedP,
          transposedP ? swizzledIndices({}, token, row, atom.m)
                      : swizzledIndices({}, row, token, tokens));
    }
  gpu::BarrierOp::create(b, loc);

  // O[:, this warp's columns] += P V over all the tile's tokens; V is the
  // first L columns of the staged rows (token-major: a K-rows B operand).
  SharedTile pTile = transposedP ? tileOf(sharedP, Value(), atom.m, false)
                                 : tileOf(sharedP, Value(), tokens, true);
  SharedTile vTile = tileOf(sharedKV, stage, pb.headDim, false);
  Value colBase = mul(warp, warpCols());
  auto pFrag = [&](int64_t ks) { return loadA(pTile, idx(0), ks); };
  return mmaSteps(MutableArrayRef<Value>(state).drop_front(2 * nSlots),
                  tokens / atom.k, pFrag, vTile, colBase,
                  [&](int64_t ks) { return idx(ks * atom.k); }, outAtoms,
                  outGroup(), interleavedV());
}

void MlaDecodeBuilder::epilogue(ArrayRef<Value> state) {
  int64_t nSlots = slots(), acc = accCount(), r = run();
  int64_t outAtoms = warpCols() / atom.n;
  // Row sums: each warp's tokens, added up through shared memory.
  gpu::BarrierOp::create(b, loc);
  for (int64_t sl = 0; sl < nSlots; ++sl) {
    auto [row, col] = target.getAccumulatorPosition(b, loc, atom, lane, sl * r);
    (void)col;
    memref::StoreOp::create(b, loc, rowReduce(state[nSlots + sl], false),
                            sharedStats, ValueRange{warp, row});
  }
  gpu::BarrierOp::create(b, loc);
  Type outElem = cast<MemRefType>(pb.out.getType()).getElementType();
  Value colBase = mul(warp, warpCols());
  for (int64_t sl = 0; sl < nSlots; ++sl) {
    // Slot sl is the run of elements [sl r, (sl + 1) r) of one row.
    int64_t e = sl * r;
    // (Not structured bindings: lambdas below capture them.)
    Value row, col;
    std::tie(row, col) = target.getAccumulatorPosition(b, loc, atom, lane, e);
    // Warps w >= tokenGroups repeat the sums of w % tokenGroups.
    Value total = f32(0);
    for (int64_t w = 0; w < cfg.tokenGroups; ++w)
      total = fadd(total, memref::LoadOp::create(b, loc, sharedStats,
                                                 ValueRange{idx(w), row}));
    Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        total, f32(0));
    Value inv = select(empty, f32(0),
                       arith::DivFOp::create(b, loc, f32(1), total));
    Value head = add(mul(group, atom.m), row);
    ifThen(lt(head, idx(pb.heads)), [&] {
      auto output = [&](int64_t j, int64_t v) {
        Value o = fmul(state[2 * nSlots + j * acc + e + v], inv);
        return outElem == o.getType()
                   ? o
                   : arith::TruncFOp::create(b, loc, outElem, o).getResult();
      };
      auto store = [&](ArrayRef<Value> values, Value column) {
        SmallVector<Value> idxs = {request, head, column};
        if (pb.split)
          idxs.insert(idxs.begin(), split);
        auto type = VectorType::get({int64_t(values.size())}, outElem);
        vector::StoreOp::create(
            b, loc, vector::FromElementsOp::create(b, loc, type, values),
            pb.out, idxs, false,
            llvm::MaybeAlign(std::min<int64_t>(
                16, values.size() * outElem.getIntOrFloatBitWidth() / 8)));
      };
      if (interleavedV()) {
        // Element v of the group's atoms: one run of outGroup() columns.
        int64_t g = outGroup();
        for (int64_t j0 = 0; j0 < outAtoms; j0 += g)
          for (int64_t v = 0; v < r; ++v) {
            SmallVector<Value> values;
            for (int64_t j = j0; j < j0 + g; ++j)
              values.push_back(output(j, v));
            store(values, add(colBase, add(mul(add(col, idx(v)), g),
                                           j0 * atom.n)));
          }
      } else {
        for (int64_t j = 0; j < outAtoms; ++j) {
          SmallVector<Value> values;
          for (int64_t v = 0; v < r; ++v)
            values.push_back(output(j, v));
          store(values, add(colBase, add(col, j * atom.n)));
        }
      }
      if (!pb.lse)
        return;
      // The warp-0 lane at column 0 of the row writes the LSE.
      Value first = andi(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                               col, idx(0)),
                         arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                               warp, idx(0)));
      ifThen(first, [&] {
        Value l = fmul(fadd(finiteOrZero(state[sl]), target.log2(b, loc, total)),
                       f32(M_LN2));
        SmallVector<Value> idxs = {head, request};
        if (pb.split)
          idxs.insert(idxs.begin(), split);
        memref::StoreOp::create(b, loc, select(empty, f32(-INFINITY), l),
                                pb.lse, idxs);
      });
    });
  }
}

LogicalResult MlaDecodeBuilder::build() {
  elem = cast<MemRefType>(pb.q.getType()).getElementType();
  tid = threadId();
  lane = remu(tid, warpSize);
  warp = divu(tid, warpSize);
  setBlockIds();

  int64_t tokens = cfg.tileTokens();
  Value smem = dynamicSharedBytes();
  int64_t offset = 0;
  auto carve = [&](ArrayRef<int64_t> shape, Type type) {
    Value view = sharedView(smem, offset, shape, type);
    int64_t n = type.getIntOrFloatBitWidth() / 8;
    for (int64_t d : shape)
      n *= d;
    offset += n;
    return view;
  };
  sharedKV = carve({cfg.stages, tokens, pb.headDim}, elem);
  sharedQ = carve({atom.m, pb.headDim}, elem);
  sharedP = pTransposed() ? carve({tokens, atom.m}, elem)
                          : carve({atom.m, tokens}, elem);
  sharedStats = carve({cfg.warps, atom.m}, b.getF32Type());
  if (cfg.kSplits() > 1)
    sharedScores =
        carve({cfg.warps, warpSize * cfg.tokensPerWarp / atom.n * accCount()},
              b.getF32Type());

  numBlocks = memref::DimOp::create(b, loc, pb.cache, 0);
  maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  Value numSplits =
      pb.split ? memref::DimOp::create(b, loc, pb.out, 0).getResult() : idx(1);
  std::tie(start, end) = contextWindow(pb.lens, request, maxBlocks,
                                       pb.blockSize, split, numSplits);
  numTiles = arith::CeilDivUIOp::create(b, loc, sub(end, start), idx(tokens));

  stageQuery();
  gpu::BarrierOp::create(b, loc);
  if (target.getAsyncCopyBytes() == 0) {
    SharedTile qTile = tileOf(sharedQ, Value(), pb.headDim, true);
    for (int64_t ks = 0; ks < partSteps(); ++ks) {
      auto frag = loadA(qTile, idx(0), partK(ks));
      if (failed(frag))
        return failure();
      qFrags.push_back(*frag);
    }
  }

  int64_t nSlots = slots();
  SmallVector<Value> state(nSlots, f32(-INFINITY));
  state.append(nSlots, f32(0));
  state.append(warpCols() / atom.n * accCount(), f32(0));

  TilePipeline pipeline =
      chunkPipeline(numTiles, cfg.stages,
                    tokens * pb.headDim / kChunk / (cfg.warps * warpSize), elem,
                    [this](Value stage, Value t, ValueRange ahead, auto fn) {
                      forEachChunk(stage, t, ahead, fn);
                    });
  if (windowed())
    loadBlockIdsAhead(pipeline, pb.blockTable, request, start, tokens,
                      pb.blockSize, cfg.warps * warpSize);
  pipeline.compute = [&](Value stage, Value t, SmallVector<Value> &st) {
    return computeTile(stage, t, st);
  };
  if (failed(runTilePipeline(pipeline, state)))
    return failure();
  epilogue(state);
  return success();
}

} // namespace

FailureOr<LaunchGeometry> mlir::tessel::buildMlaDecode(OpBuilder &b,
                                                       MLADecodeOp op,
                                                       KernelContext &ctx) {
  if (op.getWindowStart())
    return op.emitOpError() << "GPU template: a windowed mla_decode is not "
                               "a kernel; use the split form";
  if (hasMlaDecodeSm90(op, ctx.target))
    return buildMlaDecodeSm90(b, op, ctx);
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  MlaProblem pb;
  pb.q = ctx.arg(op.getQ());
  pb.cache = ctx.arg(op.getKvCache());
  pb.blockTable = ctx.arg(op.getBlockTable());
  pb.lens = ctx.arg(op.getSeqLens());
  pb.out = ctx.arg(op.getOut());
  pb.lse = ctx.arg(op.getLse());
  pb.heads = qType.getDimSize(1);
  pb.headDim = qType.getDimSize(2);
  pb.latentDim = outType.getDimSize(outType.getRank() - 1);
  pb.blockSize = cast<MemRefType>(op.getKvCache().getType()).getDimSize(1);
  pb.scaleLog2 = ctx.scaleLog2(b, op.getScale());
  pb.split = op.isSplit();

  const TargetInfo &target = ctx.target;
  Type elem = qType.getElementType();
  FailureOr<MmaAtom> chosen = chooseAttentionAtom(op, target, elem);
  if (failed(chosen))
    return failure();
  MmaAtom atom = *chosen;
  if (pb.headDim % 64)
    return op.emitOpError() << "GPU template: the MLA head dim " << pb.headDim
                            << " must be a multiple of 64 (whole swizzled "
                               "shared-memory rows)";
  bool async = target.getAsyncCopyBytes() > 0;
  if (ctx.stages == 1 || (!async && ctx.stages > 0 && ctx.stages != 2))
    return op.emitOpError()
           << "GPU template: stages must be "
           << (async ? "at least 2" : "2 (tiles go through registers)")
           << ", got " << ctx.stages;
  LaunchGeometry geometry;
  geometry.grid[0] = GridDim{-1, 1, pb.heads, atom.m};
  geometry.grid[1] = gridOver(ctx.dim(op.getQ(), 0), 1, 1);
  geometry.grid[2] =
      pb.split ? gridOver(ctx.dim(op.getOut(), 0), 1, 1) : GridDim{-1, 1, 1, 1};
  if (std::optional<MmaAtom> transposed = transposedMlaAtom(target, elem, pb)) {
    FailureOr<int64_t> threads = buildTransposedMlaDecode(
        b, op.getLoc(), target, *transposed, pb, geometry.sharedBytes);
    if (failed(threads))
      return failure();
    geometry.block = {static_cast<int32_t>(*threads), 1, 1};
    return geometry;
  }
  MlaConfig cfg;
  // One score atom of tokens per warp (8 on sm80: a 32-token tile of
  // 576-wide rows double-buffered fits with 4 warps).
  cfg.tokensPerWarp = atom.n;
  int64_t sharedBytes = 0;
  bool fits = false;
  // Candidates (warps, token slices), the most warps and the fewest head
  // dim splits first, each with two stages, then (register-staged targets,
  // unless the spec sets them) one.
  SmallVector<int64_t> stageChoices = {ctx.stages > 0 ? ctx.stages : 2};
  if (!async && ctx.stages == 0)
    stageChoices.push_back(1);
  const std::pair<int64_t, int64_t> shapes[] = {{4, 4}, {4, 2}, {2, 2},
                                                {2, 1}, {4, 1}, {1, 1}};
  for (auto [warps, groups] : shapes) {
    cfg.warps = warps;
    cfg.tokenGroups = groups;
    int64_t threads = warps * target.getWarpSize();
    int64_t tokens = cfg.tileTokens();
    if (pb.latentDim % (warps * atom.n) || (tokens * kChunk) % threads ||
        tokens % atom.k || tokens % 16 || (pb.headDim / atom.k) % cfg.kSplits())
      continue;
    for (int64_t stages : stageChoices) {
      cfg.stages = stages;
      sharedBytes = (stages * tokens * pb.headDim + atom.m * pb.headDim +
                     atom.m * tokens) *
                        2 +
                    warps * atom.m * 4;
      if (cfg.kSplits() > 1)
        sharedBytes +=
            warps * target.getWarpSize() * target.getAccumulatorCount(atom) * 4;
      if (sharedBytes <= target.getSharedMemoryBytes()) {
        fits = true;
        break;
      }
    }
    if (fits)
      break;
  }
  if (!fits)
    return op.emitOpError()
           << "GPU template: no MLA decode tile of head dim " << pb.headDim
           << " with " << stageChoices.front() << " stages fits the "
           << target.getSharedMemoryBytes() << " bytes of shared memory of "
           << target.getChip();
  MlaDecodeBuilder builder(b, op.getLoc(), target, atom, cfg, pb);
  if (failed(builder.build()))
    return failure();
  geometry.block = {static_cast<int32_t>(cfg.warps * target.getWarpSize()), 1,
                    1};
  geometry.sharedBytes = sharedBytes;
  return geometry;
}
