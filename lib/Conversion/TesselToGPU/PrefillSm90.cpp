//===- PrefillSm90.cpp - Varlen flash attention on wgmma + TMA
//-------------===//
//
// The Hopper (sm_90a) kernel of prefill_attention, a sibling of the
// FlashAttention-2 template in Prefill.cpp that shares its work
// decomposition: 128-row query tiles of every request in one flat list
// found on the device from cu_seqlens (KernelBuilder::findRowTile), walked
// with the grid's stride; a block takes tiles of one query head.
//
// Block: 3 warpgroups, the grouped matmul's roles (GroupedMatmulSm90.cpp).
// Warpgroup 0 is the producer: one elected lane issues the TMA copies of
// the tile's Q (once per tile, on the `qFull` mbarrier, after the
// consumers released the previous Q on `qEmpty`) and of each K/V tile into
// a ring of as many stages as fit, up to 4 (on `full`, after `empty`; K
// and V each on mbarriers of their own where only two stages fit).
// Warpgroups 1 and 2 are consumers, each owning 64 query rows: per K/V
// tile, S = Q K^T on wgmma from shared memory (Q and K K-major), the online
// softmax in fp32 on base-2 scores (scale * log2 e) in the accumulator
// registers, and O += P V on wgmma with P as the A operand straight from
// registers (the accumulator layout of S is the register A layout once
// packed to 16-bit pairs) and V read MN-major (transposed) from the stage.
//
// Scheduling (FlashAttention-3's). Overlapped: a consumer issues S_kt and
// then P_{kt-1} V_{kt-1}, and computes S_kt's softmax while the latter
// runs; that holds tile kt's K and tile kt-1's V, so with two stages the
// producer still runs a tile ahead (O, S and P must fit the consumer's
// registers: up to Dv 256 on 64-key tiles, paged Dv <= 128). The
// prefill and extend's context windows rescale O by tile kt-1's factors
// in the turn, between S_kt's issue and P_{kt-1} V_{kt-1}'s, while S_kt's
// MMAs run (after the P V measured 1-5% slower for the prefill, 1-10% for
// the context windows on the H200); the unified kernel (paged, causal)
// rescales it after its P V (in the turn measured up to 4% slower).
// Ping-pong: the two consumers take turns (named barriers 2 and 3) to
// issue their MMAs, so that one's softmax runs beside the other's MMAs.
// Else, in order per tile: S, softmax, P V.
//
// Tiles come from q [T, Hq, D], k [T, Hkv, D], v [T, Hkv, Dv] through 3-D
// tensor maps, a box of 64 head-dim elements (one 128-byte swizzled row) x
// 1 head x rows: a tile is head-dim chunks of 64, each rows x 128 bytes.
// TMA zero-fills rows past T; rows of a neighbouring request are real
// data: keys past the request are masked to -inf in S, and where the last
// K/V tile reaches past the keys a query may see, the consumers zero
// those V rows in shared memory before P V reads them (P is 0 there, but
// 0 x NaN is NaN, and rows outside every request may hold anything).
//
// Paged keys (paged_attention with cu_seqlens: extend's cached context):
// K/V rows are copied page by page (block ids from the block table clamped
// into the cache), over the request's context window (split p's in the
// split form; it may be empty). NHD: a TMA box per piece of a page, the
// caches seen as rows [NB * BS, Hkv, D]. CDNA pre-shuffled: a page of one
// head is already in wgmma's unswizzled K-major layout (8 x 16-byte core
// matrices: K's 8 keys x 8 head-dim elements, V's 8 value columns x 8
// keys), so the stage keeps it: K by a TMA box per 8 keys, V's piece of a
// page (contiguous) by one bulk copy. An extend may bring a few new
// tokens only: a block takes the query heads of one KV head, packed into
// the tile's rows (row r: token r / g, head r % g), so that 16 tokens at
// GQA 8 still fill the 128-row tile. With causal (the unified mode's
// kernel), the context is the request's sequence and its queries are the
// sequence's last tokens: a row's keys end at its query's position.
//
// Epilogue: O / l per row from registers, predicated on the tile's rows;
// the LSE (natural log) = (m + log2 l) ln 2, -inf for a row that saw no key.
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilder.h"

#include "tessel/Target/WarpgroupMma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <numeric>
#include <optional>

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr int64_t kElemBytes = 2;

struct FlashSm90Config {
  static constexpr int64_t tileRows = 2 * WarpgroupMma::kRows;
  static constexpr int64_t consumers = 2;
  static constexpr int64_t threads =
      (1 + consumers) * WarpgroupMma::kWarpgroupThreads;
  /// Head-dim elements of one 128-byte swizzled row: one TMA box wide.
  static constexpr int64_t chunk = WarpgroupMma::kSwizzleBytes / kElemBytes;
  int64_t headDim = 128, valueDim = 128;
  int64_t tileKeys = 128;
  int64_t stages = 2;
  /// Whether a stage's K and V arrive and are released apart: K once S's
  /// MMAs are done, V once P V's are, so that the overlapped loop, which
  /// holds a tile's K and the previous tile's V, keeps the producer a tile
  /// ahead with two stages. Else a stage is one copy and one release.
  bool separateKV = false;
  /// Whether a consumer's softmax of one tile overlaps its P V of the
  /// previous one (where O, S and P fit the registers; with 3 stages at
  /// least unless separateKV).
  bool overlap = true;
  /// Whether the two consumers take turns to issue MMAs (with overlap).
  bool pingPong = true;

  /// Bytes of one head-dim chunk of a tile of `rows` rows.
  static int64_t chunkBytes(int64_t rows) {
    return rows * WarpgroupMma::kSwizzleBytes;
  }
  int64_t qBytes() const { return tileRows * headDim * kElemBytes; }
  int64_t kBytes() const { return tileKeys * headDim * kElemBytes; }
  int64_t vBytes() const { return tileKeys * valueDim * kElemBytes; }
  int64_t stageBytes() const { return kBytes() + vBytes(); }
  /// The ring's mbarriers a stage: full and empty, for K and V apart
  /// where separateKV.
  int64_t ringBarriers() const { return separateKV ? 4 : 2; }
  /// Q, then the ring (a stage: its K tile, then its V tile), then the
  /// mbarriers (the ring's, stage by stage in each kind, then qFull,
  /// qEmpty: an even count, so the scratch line after them stays 16-byte
  /// aligned), the scratch line and the alignment slack.
  int64_t barrierOffset() const { return qBytes() + stages * stageBytes(); }
  int64_t scratchOffset() const {
    return barrierOffset() + 8 * (ringBarriers() * stages + 2);
  }
  int64_t sharedBytes() const {
    return scratchOffset() + 16 + WarpgroupMma::kSwizzleAlignment;
  }
};

struct FlashSm90Problem {
  Value cuSeqlens, out, lse, mapQ, mapK, mapV, T;
  int64_t qHeads, kvHeads;
  Value scaleLog2;
  bool causal = false;
  /// The keys are a request's cached context in a paged cache
  /// (paged_attention with cu_seqlens), found through the block table and
  /// copied `boxRows` (a divisor of the block size and of tileKeys) rows at
  /// a time: NHD, rows of the caches seen as [NB * BS, Hkv, D], a TMA box
  /// each.
  bool paged = false;
  Value blockTable, contextLens, numBlocks;
  int64_t blockSize = 0, boxRows = 0;
  /// CDNA pre-shuffled caches (K [NB, Hkv, D/8, BS, 8], V [NB, Hkv, BS/8,
  /// Dv, 8]): a page's rows keep their layout in the stage, core matrices
  /// unswizzled (WarpgroupMma::SharedOperand), K as tileKeys / 8 slabs
  /// [D/8, 8 rows, 8] (a TMA box each of the map {BS * 8, D/8, NB * Hkv}),
  /// V as tileKeys / 8 slabs [Dv, 8 rows, 8], contiguous in the cache for
  /// `boxRows` rows (a bulk copy from `vCache`).
  bool shuffled = false;
  Value vCache;
  /// out [P, T, Hq, Dv], lse [P, Hq, T]: partial p is the context window
  /// [p W, (p + 1) W), W = ceil(MB / P) * BS.
  bool split = false;
  /// Query heads per tile row group: a block takes the `packed` query heads
  /// of one KV head for tileRows / packed tokens, row r being token r /
  /// packed, head r % packed (the paged form, whose extends may bring a
  /// few tokens only), or one query head (packed = 1).
  int64_t packed = 1;
  int64_t tileTokens() const {
    return FlashSm90Config::tileRows / packed;
  }
  /// Grid slack past ceil(T / tile), as the sm80 template's: room for the
  /// partial tiles of that many requests before blocks take a second tile.
  static constexpr int64_t slackTiles = 16;
  /// Blocks along x of a persistent grid (0: the grid follows T): the
  /// unified kernel (paged, causal) takes whole batches of decodes, each a
  /// partial tile of a few keys' worth of work, so its blocks walk the
  /// tiles with their rings running from one to the next rather than
  /// paying a block's start and drain per tile.
  int64_t persistentBlocks = 0;
};

class FlashSm90Builder : public AttentionBuilder {
public:
  FlashSm90Builder(OpBuilder &b, Location loc, const TargetInfo &target,
                   const MmaAtom &atom, const WarpgroupMma &wg,
                   const FlashSm90Config &cfg, const FlashSm90Problem &pb,
                   Type elem)
      : AttentionBuilder(b, loc, target, atom), wg(wg), cfg(cfg), pb(pb),
        elem(elem) {}

  void build();

private:
  /// A query tile as both roles see it.
  struct Tile {
    Value first, last;      ///< its query rows
    Value keyStart, keyEnd; ///< the keys they may see
    /// Causal: a query token's position minus the token (its keys end
    /// there).
    Value queryOffset;
    Value numK;             ///< K/V tiles over those keys
    Value tilesBefore;      ///< tiles this block ran before it
    Value kvBefore;         ///< K/V tiles it ran before it
  };
  /// Walks the block's tiles, the same ones in the same order in every
  /// role, and calls `fn` on each.
  void forEachTile(function_ref<void(const Tile &)> fn);
  void produce(const Tile &tile, Value lead);
  /// Paged: the context window [start, end) of `request` (this block's
  /// split of it in the split form).
  std::pair<Value, Value> pagedWindow(Value request);
  /// Paged: the length of `request`'s context, as the windows clamp it.
  Value sequenceLength(Value request);
  /// Paged: the cache block (clamped into the cache) and the row in it of
  /// context token `token` of the tile's request.
  std::pair<Value, Value> cachePosition(Value token);
  /// Copies `withK` / `withV` of the `boxRows` rows from cache row `row`
  /// (i32) into the stage at `slot`, `boxOffset` bytes into each of its
  /// 128-byte-swizzled chunks, completing on `arrival`.
  void copyRows(Value slot, int64_t boxOffset, Value row, Value arrival,
                bool withK, bool withV);
  /// Paged: copies `withK` / `withV` of the K/V tile from `tileStart` to
  /// the stage at `slot`, completing on `arrival`.
  void copyPages(Value slot, Value tileStart, Value arrival, bool withK,
                 bool withV);
  void consume(const Tile &tile, Value consumer);
  /// Zeroes rows [valid, tileKeys) of the V tile at byte `vSlot`.
  void zeroValueRows(Value vSlot, Value valid, Value consumer);
  void epilogue(const Tile &tile, Value consumer, ArrayRef<Value> state,
                Value acc);

  Value ptr(Value offset) { return sharedByte(base, offset); }
  /// Indices into out or lse, preceded by the split in the split form.
  SmallVector<Value> outIndices(SmallVector<Value> indices) {
    if (pb.split)
      indices.insert(indices.begin(), splitIndex);
    return indices;
  }
  Value barrier(int64_t index) {
    return ptr(idx(cfg.barrierOffset() + 8 * index));
  }
  /// The ring's mbarriers; without separateKV, K's and V's are one.
  enum class RingBarrier { KFull, KEmpty, VFull, VEmpty };
  int64_t ringBarrierIndex(RingBarrier which) {
    int64_t kind = static_cast<int64_t>(which);
    return (cfg.separateKV ? kind : kind % 2) * cfg.stages;
  }
  Value barrier(RingBarrier which, Value stage) {
    Value index = add(stage, ringBarrierIndex(which));
    return ptr(add(mul(index, 8), cfg.barrierOffset()));
  }
  Value qFull() { return barrier(cfg.ringBarriers() * cfg.stages); }
  Value qEmpty() { return barrier(cfg.ringBarriers() * cfg.stages + 1); }
  /// The descriptor of `operand` at byte `offset` of the aligned base.
  Value descriptor(Value offset, WarpgroupMma::SharedOperand operand) {
    return wg.sharedDescriptor(b, loc, add(address, toI32(offset)), operand);
  }

  const WarpgroupMma &wg;
  FlashSm90Config cfg;
  FlashSm90Problem pb;
  Type elem;
  Value base, address, head, kvHead;
  /// Paged: the tile's request and the block's split.
  Value request, splitIndex;
};

void FlashSm90Builder::forEachTile(function_ref<void(const Tile &)> fn) {
  Value entries = memref::DimOp::create(b, loc, pb.cuSeqlens, 0);
  Value stride =
      pb.persistentBlocks
          ? idx(pb.persistentBlocks)
          : arith::CeilDivUIOp::create(
                b, loc, add(pb.T, pb.slackTiles * pb.tileTokens()),
                idx(pb.tileTokens()))
                .getResult();
  Type indexType = b.getIndexType();
  SmallVector<Type> carried(3, indexType);
  SmallVector<Type> passed(6, indexType);
  // Causal: each round of the grid walks its tiles backwards, so that a
  // request's later (heavier) tiles start first and light ones fill the
  // tail of the grid.
  Value first = blockId(gpu::Dimension::x);
  if (pb.causal)
    first = sub(sub(stride, idx(1)), first);
  auto loop = scf::WhileOp::create(b, loc, passed,
                                   ValueRange{first, idx(0), idx(0)});
  {
    OpBuilder::InsertionGuard guard(b);
    Block *before = b.createBlock(&loop.getBefore(), {}, carried,
                                  SmallVector<Location>(3, loc));
    RowTile found = findRowTile(
        [&](Value g) {
          return memref::LoadOp::create(b, loc, pb.cuSeqlens, g).getResult();
        },
        entries, pb.T, before->getArgument(0), pb.tileTokens(),
        /*tail=*/false);
    SmallVector<Value> args(before->getArguments());
    args.append({found.rowStart, found.rowEnd, found.group});
    scf::ConditionOp::create(b, loc, uniform(found.found), args);
  }
  OpBuilder::InsertionGuard guard(b);
  Block *after = b.createBlock(&loop.getAfter(), {}, passed,
                               SmallVector<Location>(6, loc));
  Value t = after->getArgument(0), tiles = after->getArgument(1),
        kv = after->getArgument(2);
  Value group = uniform(after->getArgument(5));
  // Group 0 ends the rows before the first request (normally none).
  auto isRequest = scf::IfOp::create(
      b, loc, TypeRange{indexType, indexType},
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, group, idx(0)),
      /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(isRequest.thenBlock());
    Tile tile;
    tile.first = uniform(after->getArgument(3));
    tile.last = uniform(after->getArgument(4));
    tile.queryOffset = idx(0);
    auto endOf = [&](Value g) {
      return toIndex(memref::LoadOp::create(b, loc, pb.cuSeqlens, g));
    };
    // The request's rows as findRowTile clamped them (Prefill.cpp).
    Value end = uniform(
        minu(arith::MaxSIOp::create(b, loc, endOf(group), tile.last), pb.T));
    if (pb.paged) {
      request = uniform(sub(group, idx(1)));
      std::tie(tile.keyStart, tile.keyEnd) = pagedWindow(request);
      if (pb.causal) {
        // The queries are the sequence's last tokens; the keys end at the
        // tile's last query's position (none before the window's start).
        tile.queryOffset = uniform(sub(sequenceLength(request), end));
        tile.keyEnd = arith::MaxSIOp::create(
            b, loc,
            arith::MinSIOp::create(b, loc, tile.keyEnd,
                                   add(tile.last, tile.queryOffset)),
            tile.keyStart);
      }
    } else {
      Value start =
          arith::MaxSIOp::create(b, loc, endOf(sub(group, idx(1))), idx(0));
      tile.keyStart = uniform(minu(start, tile.first));
      // Causal: keys up to the tile's last row; else the whole request.
      tile.keyEnd = pb.causal ? tile.last : end;
    }
    tile.numK = arith::CeilDivUIOp::create(
        b, loc, sub(tile.keyEnd, tile.keyStart), idx(cfg.tileKeys));
    tile.tilesBefore = tiles;
    tile.kvBefore = kv;
    fn(tile);
    scf::YieldOp::create(b, loc, ValueRange{add(tiles, 1), add(kv, tile.numK)});
    b.setInsertionPointToStart(isRequest.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{tiles, kv});
  }
  scf::YieldOp::create(b, loc,
                       ValueRange{add(t, stride), isRequest.getResult(0),
                                  isRequest.getResult(1)});
}

void FlashSm90Builder::produce(const Tile &tile, Value lead) {
  int64_t qChunk = FlashSm90Config::chunkBytes(cfg.tileRows);
  int64_t chunk = FlashSm90Config::chunk;
  ifThen(lead, [&] {
    wg.waitParity(b, loc, qEmpty(), barrierParity(tile.tilesBefore, true));
    wg.arriveExpectBytes(b, loc, qFull(), cfg.qBytes());
    // With separateKV, Q's addresses are made per tile: hoisted out of the
    // tile loop, they held 4 of the producer's 24 registers for good, and
    // the second wait spilled one.
    Value qStart = cfg.separateKV ? toIndex(wg.opaque(b, loc, i32(0))) : idx(0);
    for (int64_t c = 0; c < cfg.headDim / chunk; ++c)
      wg.tmaLoad(b, loc, ptr(add(qStart, c * qChunk)), pb.mapQ, qFull(),
                 {i32(c * chunk), toI32(head), toI32(tile.first)});
    // (Packed, `head` is the group's first: the box spans its heads.)
    auto loop = scf::ForOp::create(b, loc, idx(0), tile.numK, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value use = add(tile.kvBefore, kt);
    Value stage, parity;
    std::tie(stage, parity) = ringUse(use, cfg.stages, /*flip=*/true);
    Value slot = add(mul(stage, cfg.stageBytes()), cfg.qBytes());
    Value tileStart = add(tile.keyStart, mul(kt, cfg.tileKeys));
    // Waits for the stage's K (and V, unless separateKV) to be released,
    // then copies K and/or V (`withK`, `withV`).
    auto copy = [&](RingBarrier empty, RingBarrier full, bool withK,
                    bool withV) {
      wg.waitParity(b, loc, barrier(empty, stage), parity);
      Value arrival = barrier(full, stage);
      wg.arriveExpectBytes(b, loc, arrival,
                           (withK ? cfg.kBytes() : 0) +
                               (withV ? cfg.vBytes() : 0));
      if (pb.paged)
        copyPages(slot, tileStart, arrival, withK, withV);
      else
        copyRows(slot, 0, toI32(tileStart), arrival, withK, withV);
    };
    if (cfg.separateKV) {
      copy(RingBarrier::KEmpty, RingBarrier::KFull, true, false);
      copy(RingBarrier::VEmpty, RingBarrier::VFull, false, true);
    } else {
      copy(RingBarrier::KEmpty, RingBarrier::KFull, true, true);
    }
  });
}

std::pair<Value, Value> FlashSm90Builder::pagedWindow(Value request) {
  Value maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  Value splits =
      pb.split ? memref::DimOp::create(b, loc, pb.out, 0).getResult() : Value();
  auto [start, end] = contextWindow(
      pb.contextLens, request, maxBlocks, pb.blockSize, splitIndex, splits);
  return {pb.split ? uniform(start) : start, uniform(end)};
}

Value FlashSm90Builder::sequenceLength(Value request) {
  Value maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  return contextWindow(pb.contextLens, request, maxBlocks, pb.blockSize)
      .second;
}

std::pair<Value, Value> FlashSm90Builder::cachePosition(Value token) {
  // Past the window the ids are clamped into the cache: every copy reads
  // rows that exist, and the consumers mask them.
  Value maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  Value logical = minu(divu(token, pb.blockSize), sub(maxBlocks, idx(1)));
  Value id = toIndex(memref::LoadOp::create(b, loc, pb.blockTable,
                                            ValueRange{request, logical}));
  return {minu(id, sub(pb.numBlocks, idx(1))), remu(token, pb.blockSize)};
}

void FlashSm90Builder::copyRows(Value slot, int64_t boxOffset, Value row,
                                Value arrival, bool withK, bool withV) {
  int64_t chunk = FlashSm90Config::chunk;
  int64_t kvChunk = FlashSm90Config::chunkBytes(cfg.tileKeys);
  auto chunks = [&](int64_t offset, int64_t dim, Value map) {
    for (int64_t c = 0; c < dim / chunk; ++c)
      wg.tmaLoad(b, loc, ptr(add(slot, offset + c * kvChunk + boxOffset)), map,
                 arrival, {i32(c * chunk), toI32(kvHead), row});
  };
  if (withK)
    chunks(0, cfg.headDim, pb.mapK);
  if (withV)
    chunks(cfg.kBytes(), cfg.valueDim, pb.mapV);
}

void FlashSm90Builder::copyPages(Value slot, Value tileStart, Value arrival,
                                 bool withK, bool withV) {
  // Bytes of a shuffled slab of 8 rows (K's, V's), slabs a box.
  int64_t kSlab = 8 * cfg.headDim * kElemBytes;
  int64_t vSlab = 8 * cfg.valueDim * kElemBytes;
  int64_t slabs = pb.boxRows / 8;
  for (int64_t box = 0; box < cfg.tileKeys / pb.boxRows; ++box) {
    auto [block, inBlock] = cachePosition(add(tileStart, box * pb.boxRows));
    if (pb.shuffled) {
      Value page = add(mul(block, pb.kvHeads), kvHead);
      for (int64_t s = 0; withK && s < slabs; ++s)
        wg.tmaLoad(b, loc, ptr(add(slot, (box * slabs + s) * kSlab)), pb.mapK,
                   arrival,
                   {toI32(mul(add(inBlock, 8 * s), 8)), i32(0), toI32(page)});
      // The box's rows of V, [slabs, Dv, 8], are contiguous in the cache.
      Value first = mul(add(mul(page, pb.blockSize), inBlock), cfg.valueDim);
      if (withV)
        wg.bulkLoad(b, loc, ptr(add(slot, cfg.kBytes() + box * slabs * vSlab)),
                    globalElement(globalMatrix(pb.vCache), elem, first),
                    slabs * vSlab, arrival);
      continue;
    }
    copyRows(slot, box * pb.boxRows * WarpgroupMma::kSwizzleBytes,
             toI32(add(mul(block, pb.blockSize), inBlock)), arrival, withK,
             withV);
  }
}

void FlashSm90Builder::zeroValueRows(Value vSlot, Value valid,
                                     Value consumer) {
  // Whole 128-byte rows of every chunk (the swizzle only permutes 16-byte
  // pieces within a row), split between the two consumers, who then fence
  // their writes into the async proxy and meet before either's P V. Each
  // thread stores every step, pieces of rows that stay to the scratch
  // line: a branch on a thread's own row would serialize the wgmmas.
  int64_t threads = WarpgroupMma::kWarpgroupThreads;
  int64_t piecesPerRow = WarpgroupMma::kSwizzleBytes / 16;
  int64_t pieces = cfg.valueDim / FlashSm90Config::chunk * cfg.tileKeys *
                   piecesPerRow;
  int64_t perConsumer = pieces / cfg.consumers;
  // The prefill's thread index is opaque: LLVM hoisted every step's piece
  // row and offset (64-bit) out of the K/V loop, held across it (16 such
  // at Dv 128; spills with 160-key tiles or Dv 256 overlapped). The paged
  // kernels measured up to 7% slower without the hoisting (H200,
  // 2026-12-04 01:54) and keep it.
  Value thread = remu(threadId(), threads);
  if (!pb.paged)
    thread = toIndex(wg.opaque(b, loc, toI32(thread)));
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(VectorType::get({4}, b.getI32Type()),
                                     b.getI32IntegerAttr(0).getValue()));
  // Shuffled, piece p holds rows 8 (p / Dv) .. + 7 of value column p % Dv:
  // the slabs of 8 rows past the one of row `valid` are zeroed here, that
  // one's Dv pieces below.
  Value partial = pb.shuffled ? divu(valid, 8) : Value();
  for (int64_t step = 0; step < perConsumer; step += threads) {
    Value piece = add(add(thread, step), mul(consumer, perConsumer));
    Value zeroed;
    if (pb.shuffled) {
      zeroed = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                     divu(piece, cfg.valueDim), partial);
    } else {
      Value row = remu(divu(piece, piecesPerRow), cfg.tileKeys);
      zeroed =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, row, valid);
    }
    Value offset = select(zeroed, add(vSlot, mul(piece, 16)),
                          idx(cfg.scratchOffset()));
    LLVM::StoreOp::create(b, loc, zero, ptr(offset), /*alignment=*/16);
  }
  if (pb.shuffled) {
    // The partial slab, a piece per thread (the two consumers' first Dv / 2
    // threads), its rows from `valid` on by 2-byte stores. (Reading the
    // piece to merge it cost the consumers 8-12 bytes of spills.)
    assert(cfg.valueDim / cfg.consumers <= threads && "a piece per thread");
    Value mine = lt(thread, idx(cfg.valueDim / cfg.consumers));
    Value piece = add(mul(partial, cfg.valueDim),
                      add(mul(consumer, cfg.valueDim / cfg.consumers), thread));
    Value first = ptr(add(vSlot, mul(piece, 16)));
    Value zeroElement = arith::ConstantOp::create(b, loc, b.getZeroAttr(elem));
    for (int64_t row = 0; row < 8; ++row) {
      Value zeroed =
          andi(mine, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                           add(mul(partial, 8), row), valid));
      ifThen(zeroed, [&] {
        LLVM::StoreOp::create(b, loc, zeroElement,
                              sharedByte(first, idx(row * kElemBytes)));
      });
    }
  }
  wg.fenceSharedForAsync(b, loc);
  wg.barrier(b, loc, i32(1), cfg.consumers * threads);
}

void FlashSm90Builder::consume(const Tile &tile, Value consumer) {
  int64_t n = cfg.tileKeys, dv = cfg.valueDim;
  int64_t chunk = FlashSm90Config::chunk;
  int64_t kvChunk = FlashSm90Config::chunkBytes(n);
  int64_t nSlots = slots();
  WarpgroupMma::SharedOperand kMajor{true, 0};
  WarpgroupMma::SharedOperand kLayout = kMajor;
  WarpgroupMma::SharedOperand vLayout{false, kvChunk};
  // Shuffled: K's core matrices 16 bytes (8 head-dim elements) apart along
  // the head dim and a slab of 8 keys apart along the keys; V's a slab
  // apart along the keys and 16 bytes (8 value columns) apart along them.
  if (pb.shuffled) {
    kLayout = {true, 0, 128, 8 * cfg.headDim * kElemBytes};
    vLayout = {true, 0, 8 * dv * kElemBytes, 128};
  }
  Value thread = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
  // Causal: the position of the query of this consumer's row `row`, the
  // last key it may see; this thread's two rows' (members 4j + {0, 1} and
  // 4j + {2, 3}) are computed once a tile.
  Value consumerRow = mul(consumer, WarpgroupMma::kRows);
  auto position = [&](Value row) {
    return add(add(tile.first, divu(add(consumerRow, row), pb.packed)),
               tile.queryOffset);
  };
  SmallVector<Value> rowPositions;
  if (pb.causal) {
    for (int64_t i : {0, 2})
      rowPositions.push_back(
          position(wg.accumulatorPosition(b, loc, thread, i).first));
  }
  wg.waitParity(b, loc, qFull(),
                barrierParity(tile.tilesBefore, false));

  // The ring position (stage, parity) of K/V tile kt: ringUse's for the
  // first, then carried through the prefill's loops (nextRingUse; the
  // stage in i32, as measured). The
  // paged kernels (extend's context windows, the unified kernel) keep
  // ringUse's for every tile, and one loop with a branch a tile (below):
  // with both changes they measured up to 7% slower on extend turns and 5%
  // on continuous batching's long-context mix (H200, 2026-12-02 13:17),
  // where the prefill gained 2-6%.
  using RingPosition = std::pair<Value, Value>;
  auto useOf = [&](Value kt) -> RingPosition {
    auto [stage, parity] =
        ringUse(add(tile.kvBefore, kt), cfg.stages, /*flip=*/false);
    return {pb.paged ? stage : toI32(stage), parity};
  };
  auto stageIndex = [&](Value stage) {
    return stage.getType().isIndex() ? stage : toIndex(stage);
  };
  // The position of tile kt, that of tile kt - 1 being `previous`.
  auto nextUse = [&](Value kt, RingPosition previous) {
    return pb.paged ? useOf(kt)
                    : nextRingUse(previous.first, previous.second, cfg.stages);
  };
  // The byte offset of ring stage `stage`.
  auto stageSlot = [&](Value stage) {
    return add(mul(stageIndex(stage), cfg.stageBytes()), cfg.qBytes());
  };
  // (Without separateKV, V came with K: its wait and K's release are
  // none.)
  auto waitFor = [&](RingBarrier full, RingPosition at) {
    if (cfg.separateKV || full == RingBarrier::KFull)
      wg.waitParity(b, loc, barrier(full, stageIndex(at.first)), at.second);
  };
  // K/V tile kt at ring position `at`: waits for its K, and where it reaches
  // past the keys for its V, whose rows past them it zeroes; returns the
  // stage's byte offset and the tile's first key. (Its P V waits for V.)
  auto arrived = [&](Value kt, RingPosition at) {
    waitFor(RingBarrier::KFull, at);
    Value slot = stageSlot(at.first);
    Value tileStart = add(tile.keyStart, mul(kt, n));
    Value valid = sub(tile.keyEnd, tileStart);
    ifThen(lt(valid, idx(n)), [&] {
      waitFor(RingBarrier::VFull, at);
      zeroValueRows(add(slot, cfg.kBytes()), valid, consumer);
    });
    return std::make_pair(slot, tileStart);
  };
  // The descriptors of S = Q K^T's MMAs on the stage at `slot`, (Q, K) per
  // k16 step. Q's rows of this consumer in each 64-column chunk start 64
  // rows (8 KB) in; each k16 step is 32 bytes along the rows. Q's
  // descriptors are made anew per tile from an opaque address: hoisted out
  // of the loop as invariants, they would hold 2 registers each (16 at head
  // dim 128) for good. All descriptors are made before the consumer's turn,
  // so that the turn holds the wgmma issue alone.
  Value qAddress = add(
      address,
      toI32(mul(consumer, FlashSm90Config::chunkBytes(WarpgroupMma::kRows))));
  using Operands = SmallVector<std::pair<Value, Value>>;
  auto scoreDescriptors = [&](Value slot) {
    Value descQ =
        wg.sharedDescriptor(b, loc, wg.opaque(b, loc, qAddress), kMajor);
    Value descK = descriptor(slot, kLayout);
    Operands steps;
    for (int64_t t = 0; t < cfg.headDim / WarpgroupMma::kDepth; ++t) {
      int64_t c = t / (chunk / WarpgroupMma::kDepth);
      int64_t inChunk = (t % (chunk / WarpgroupMma::kDepth)) *
                        WarpgroupMma::kStepBytes(kMajor);
      int64_t kStep = pb.shuffled ? t * WarpgroupMma::kStepBytes(kLayout)
                                  : c * kvChunk + inChunk;
      steps.push_back(
          {wg.advanceDescriptor(b, loc, descQ,
                                c * FlashSm90Config::chunkBytes(cfg.tileRows) +
                                    inChunk),
           wg.advanceDescriptor(b, loc, descK, kStep)});
    }
    return steps;
  };
  // Issues S = Q K^T (uncommitted); the first MMA starts the product.
  auto issueScores = [&](const Operands &steps) {
    Value acc;
    for (auto [descQ, descK] : steps)
      acc = wg.mma(b, loc, elem, n, descQ, kMajor, descK, kLayout, acc);
    return acc;
  };
  // The descriptors of O += P V's MMAs on the V tile of the stage at
  // `slot`: V's k16 step is 16 rows (2 KB) into each chunk (two slabs
  // shuffled).
  auto valueDescriptors = [&](Value slot) {
    Value descV = descriptor(add(slot, cfg.kBytes()), vLayout);
    SmallVector<Value> steps;
    for (int64_t t = 0; t < n / WarpgroupMma::kDepth; ++t)
      steps.push_back(wg.advanceDescriptor(
          b, loc, descV, t * WarpgroupMma::kStepBytes(vLayout)));
    return steps;
  };
  // Issues O += P V (uncommitted): P's members 8t .. 8t + 7 packed in pairs
  // are the A words of k16 step t.
  auto issueValues = [&](ValueRange words, ArrayRef<Value> steps, Value acc) {
    for (auto [t, descV] : llvm::enumerate(steps))
      acc = wg.mmaRegisterA(b, loc, elem, dv, words.slice(4 * t, 4), descV,
                            vLayout, acc);
    return acc;
  };
  // The online softmax of the scores `sAcc` of the tile from key
  // `tileStart`: updates m and l in `state`, returns P (f32) and the
  // factors O must be rescaled by.
  // Tiles that need no mask keep the raw scores, and the softmax folds the
  // scale into exp2's argument (one FFMA a score); that needs a positive
  // scale (the maximum must stay the maximum), so any other takes the
  // masked path, which scales first.
  // The prefill's main loops know which path their tiles take (mainLoops);
  // the first tile's softmax, with no P V in flight, and the paged kernels'
  // branch. (A branch in the
  // loop cost its convergence and, where its sides met before the softmax,
  // ptxas waited there for the P V in flight: the prefill's branch held the
  // whole softmax, each side a copy.)
  Value scaleFirst = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ULE,
                                           pb.scaleLog2, f32(0));
  // Whether the tile from key `tileStart` needs the mask: it reaches keys
  // past those its rows may see (with causal, past its first row's).
  auto needMask = [&](Value tileStart) {
    Value need = lt(tile.keyEnd, add(tileStart, n));
    if (pb.causal)
      need = arith::OrIOp::create(b, loc, need,
                                  lt(position(idx(0)), add(tileStart, n - 1)));
    return uniform(arith::OrIOp::create(b, loc, need, scaleFirst));
  };
  // The first K/V tile that may need it (none before it does): tile kt
  // needs none where (kt + 1) n <= keyEnd - keyStart and, with causal,
  // (kt + 1) n <= position(0) + 1 - keyStart. The main loops run the
  // tiles before it and those from it apart, without a branch per tile.
  auto firstMasked = [&] {
    auto wholeTiles = [&](Value keys) {
      Value clamped = arith::MaxSIOp::create(b, loc, keys, idx(0));
      return divu(clamped, n);
    };
    Value first = wholeTiles(sub(tile.keyEnd, tile.keyStart));
    if (pb.causal)
      first = minu(
          first, wholeTiles(sub(add(position(idx(0)), idx(1)), tile.keyStart)));
    return uniform(select(scaleFirst, idx(0), first));
  };
  // Runs `body` (K/V tile kt, the carried values, whether the tile takes
  // the mask if known; returns the values carried on) over the tiles
  // [from, numK): in the prefill those before firstMasked in one loop, the
  // rest in another; paged, in one loop (a branch decides per tile).
  using LoopBody = function_ref<SmallVector<Value>(Value kt, ValueRange carried,
                                                   std::optional<bool> masked)>;
  auto mainLoops = [&](Value from, ArrayRef<Value> init, LoopBody body) {
    SmallVector<Value> values(init);
    auto run = [&](Value lower, Value upper, std::optional<bool> masked) {
      auto loop = scf::ForOp::create(b, loc, lower, upper, idx(1), values);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      scf::YieldOp::create(
          b, loc,
          body(loop.getInductionVar(), loop.getRegionIterArgs(), masked));
      values.assign(loop.getResults().begin(), loop.getResults().end());
    };
    if (pb.paged) {
      run(from, tile.numK, std::nullopt);
      return values;
    }
    Value split =
        minu(arith::MaxUIOp::create(b, loc, firstMasked(), from), tile.numK);
    run(from, split, false);
    run(split, tile.numK, true);
    return values;
  };
  // `masked`: whether the tile takes the masked path, where the caller
  // knows (the main loops, split at firstMasked); else a branch decides.
  auto softmax = [&](Value sAcc, Value tileStart, SmallVector<Value> &state,
                     std::optional<bool> masked = std::nullopt) {
    SmallVector<Value> s;
    for (int64_t i = 0; i < n / 2; ++i)
      s.push_back(wg.accumulator(b, loc, sAcc, i));
    // The accumulator layout is the m16n8 atom's, repeated along N. P, the
    // factors, then the state.
    auto step = [&](SmallVector<Value> p, Value multiplier) {
      SmallVector<Value> st(state);
      SmallVector<Value> results = softmaxStep(
          p, n / atom.n, st, /*outAtoms=*/0,
          [&](int64_t, Value localMax) {
            return rowReduce(localMax, /*isMax=*/true);
          },
          /*chains=*/4, multiplier, kRescaleSlack);
      results.insert(results.begin(), p.begin(), p.end());
      results.append(st);
      return results;
    };
    auto maskedScores = [&] {
      SmallVector<Value> out;
      for (int64_t i = 0; i < n / 2; ++i) {
        Value col = wg.accumulatorPosition(b, loc, thread, i).second;
        Value key = add(tileStart, col);
        Value ok = lt(key, tile.keyEnd);
        if (pb.causal)
          ok = andi(ok, arith::CmpIOp::create(b, loc,
                                              arith::CmpIPredicate::sle, key,
                                              rowPositions[(i % 4) / 2]));
        out.push_back(select(ok, fmul(s[i], pb.scaleLog2), f32(-INFINITY)));
      }
      return out;
    };
    // The branch (the first tile): paged (the unified and extend kernels),
    // one softmax after it (a copy in each side cost the GQA-16 unified
    // kernel 28 bytes of spills); the prefill, a copy in each side.
    SmallVector<Value> results;
    if (masked) {
      results = *masked ? step(maskedScores(), Value()) : step(s, pb.scaleLog2);
    } else if (pb.paged) {
      SmallVector<Type> types(n / 2 + 1, b.getF32Type());
      auto branch = scf::IfOp::create(b, loc, types, needMask(tileStart), true);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(branch.thenBlock());
        SmallVector<Value> out = maskedScores();
        out.push_back(f32(1));
        scf::YieldOp::create(b, loc, out);
        b.setInsertionPointToStart(branch.elseBlock());
        s.push_back(pb.scaleLog2);
        scf::YieldOp::create(b, loc, s);
      }
      SmallVector<Value> scores(branch.getResults());
      Value multiplier = scores.pop_back_val();
      results = step(scores, multiplier);
    } else {
      SmallVector<Type> types(n / 2 + slots() + state.size(), b.getF32Type());
      auto branch = scf::IfOp::create(b, loc, types, needMask(tileStart), true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(branch.thenBlock());
      scf::YieldOp::create(b, loc, step(maskedScores(), Value()));
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, loc, step(s, pb.scaleLog2));
      results.assign(branch.getResults().begin(), branch.getResults().end());
    }
    SmallVector<Value> p(ArrayRef<Value>(results).take_front(n / 2));
    SmallVector<Value> alpha(ArrayRef<Value>(results).slice(n / 2, slots()));
    state.assign(results.begin() + n / 2 + slots(), results.end());
    return std::make_pair(p, alpha);
  };
  // P (f32) packed into A words, in pairs of 16-bit values.
  auto pack = [&](ArrayRef<Value> p) {
    auto pairType = VectorType::get({2}, elem);
    SmallVector<Value> words;
    for (size_t i = 0; i < p.size(); i += 2) {
      Value pair = vector::FromElementsOp::create(
          b, loc, pairType,
          ValueRange{arith::TruncFOp::create(b, loc, elem, p[i]),
                     arith::TruncFOp::create(b, loc, elem, p[i + 1])});
      words.push_back(LLVM::BitcastOp::create(b, loc, b.getI32Type(), pair));
    }
    return words;
  };
  auto release = [&](RingBarrier empty, RingPosition at) {
    if (cfg.separateKV || empty == RingBarrier::VEmpty)
      wg.arrive(b, loc, barrier(empty, stageIndex(at.first)));
  };
  auto rescale = [&](Value acc, ArrayRef<Value> alpha) {
    return rescaleRows(wg, acc, dv / 2, alpha);
  };
  auto finish = [&](ValueRange state, Value acc) {
    // Every MMA that read Q is done.
    wg.arrive(b, loc, qEmpty());
    epilogue(tile, consumer, SmallVector<Value>(state), acc);
  };
  SmallVector<Value> state(nSlots, f32(-INFINITY));
  state.append(nSlots, f32(0));
  auto scores = [&](const Operands &steps) {
    wg.fence(b, loc);
    Value acc = issueScores(steps);
    wg.commit(b, loc);
    return acc;
  };
  // Ping-pong: the consumers take turns to issue their MMAs, so that one's
  // softmax runs while the other's MMAs do (named barriers 2 and 3).
  Value myTurn = i32(0), theirTurn = i32(0);
  if (cfg.pingPong) {
    myTurn = toI32(add(consumer, 2));
    theirTurn = toI32(sub(idx(3), consumer));
  }
  auto inTurn = [&](function_ref<void()> issue) {
    int64_t threads = cfg.consumers * WarpgroupMma::kWarpgroupThreads;
    if (cfg.pingPong)
      wg.barrier(b, loc, myTurn, threads);
    issue();
    if (cfg.pingPong)
      wg.barrier(b, loc, theirTurn, threads, /*arrive=*/true);
  };

  // Paged, a consumer whose rows are all past the tile's (consumer 1 under
  // a decode, whose few query heads fill part of consumer 0's rows) issues
  // no MMA: it only keeps step with the other consumer (the stage waits,
  // the V-row zeroing, the turns, the stage releases, Q's release) and
  // stores nothing. The branch holds whole loops, so no accumulator
  // crosses it. (Prefill tiles are full but for a request's last.)
  std::optional<OpBuilder::InsertionGuard> activeGuard;
  if (pb.paged) {
    Value active = uniform(
        lt(consumerRow, mul(sub(tile.last, tile.first), pb.packed)));
    auto idle = scf::IfOp::create(b, loc, TypeRange{}, active,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(idle.elseBlock());
      auto loop = scf::ForOp::create(b, loc, idx(0), tile.numK, idx(1));
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(loop.getBody());
        Value kt = loop.getInductionVar();
        RingPosition at = useOf(kt);
        arrived(kt, at);
        inTurn([] {});
        release(RingBarrier::KEmpty, at);
        release(RingBarrier::VEmpty, at);
      }
      // The active consumer's turns: one per K/V tile and the last P V's.
      ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                   tile.numK, idx(0)),
             [&] { inTurn([] {}); });
      wg.arrive(b, loc, qEmpty());
    }
    activeGuard.emplace(b);
    b.setInsertionPointToStart(idle.thenBlock());
  }

  if (!cfg.overlap) {
    // In order, per tile: S, its softmax, P V.
    SmallVector<Value> init(state);
    init.push_back(wg.zeroAccumulators(b, loc, dv));
    auto [stage0, parity0] = useOf(idx(0));
    init.append({stage0, parity0});
    auto body = [&](Value kt, ValueRange carried, std::optional<bool> masked) {
      SmallVector<Value> st(carried.take_front(2 * nSlots));
      RingPosition at = pb.paged ? useOf(kt)
                                 : RingPosition{carried[2 * nSlots + 1],
                                                carried[2 * nSlots + 2]};
      auto [slot, tileStart] = arrived(kt, at);
      Value sAcc = scores(scoreDescriptors(slot));
      wg.wait(b, loc, 0);
      release(RingBarrier::KEmpty, at);
      auto [p, alpha] = softmax(sAcc, tileStart, st, masked);
      Value oAcc = rescale(carried[2 * nSlots], alpha);
      SmallVector<Value> words = pack(p);
      waitFor(RingBarrier::VFull, at);
      wg.fence(b, loc);
      oAcc = issueValues(words, valueDescriptors(slot), oAcc);
      wg.commit(b, loc);
      wg.wait(b, loc, 0);
      release(RingBarrier::VEmpty, at);
      st.push_back(oAcc);
      auto [nextStage, nextParity] =
          nextRingUse(at.first, at.second, cfg.stages);
      st.append({nextStage, nextParity});
      return st;
    };
    SmallVector<Value> results = mainLoops(idx(0), init, body);
    finish(ArrayRef<Value>(results).take_front(2 * nSlots),
           results[2 * nSlots]);
    return;
  }

  // Overlapped: tile 0's scores and P; then per tile kt >= 1, S_kt issued
  // just before P_{kt-1} V_{kt-1}, whose MMAs run during S_kt's softmax;
  // then the last tile's P V. The loop carries m, l, O, tile kt-1's ring
  // position, factors (O is rescaled by them once S_kt is issued, or at the
  // end of the iteration) and P's words. A paged split may have no keys: O
  // stays 0.
  SmallVector<Value> none(state);
  none.push_back(wg.zeroAccumulators(b, loc, dv));
  auto any = scf::IfOp::create(
      b, loc, TypeRange(ValueRange(none)),
      uniform(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                    tile.numK, idx(0))),
      /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard outer(b);
    b.setInsertionPointToStart(any.elseBlock());
    scf::YieldOp::create(b, loc, none);
    b.setInsertionPointToStart(any.thenBlock());
    RingPosition at0 = useOf(idx(0));
    Value slot0, start0;
    std::tie(slot0, start0) = arrived(idx(0), at0);
    Value s0;
    Operands steps0 = scoreDescriptors(slot0);
    inTurn([&] { s0 = scores(steps0); });
    wg.wait(b, loc, 0);
    release(RingBarrier::KEmpty, at0);
    // All but the unified kernel rescale O by the previous tile's factors
    // in the next turn, while that turn's S MMAs run; O starts at 0.
    bool rescaleInTurn = !pb.paged || !pb.causal;
    auto [p0, alpha0] = softmax(s0, start0, state);
    SmallVector<Value> init(state);
    init.push_back(wg.zeroAccumulators(b, loc, dv));
    init.append({at0.first, at0.second});
    init.append(alpha0);
    init.append(pack(p0));
    // The carried values past m and l: O, the ring position, the factors,
    // P's words.
    auto unpack = [&](ArrayRef<Value> carried) {
      ArrayRef<Value> rest = carried.drop_front(2 * nSlots);
      return std::make_tuple(rest[0], RingPosition{rest[1], rest[2]},
                             SmallVector<Value>(rest.slice(3, nSlots)),
                             SmallVector<Value>(rest.drop_front(3 + nSlots)));
    };
    auto body = [&](Value kt, ValueRange carried, std::optional<bool> masked) {
      SmallVector<Value> st(carried.take_front(2 * nSlots));
      // Named references, not a structured binding: the lambdas below
      // capture them (C++17 cannot capture a binding).
      auto unpacked = unpack(SmallVector<Value>(carried));
      auto &oAcc = std::get<0>(unpacked);
      auto &previous = std::get<1>(unpacked);
      auto &factors = std::get<2>(unpacked);
      auto &words = std::get<3>(unpacked);
      RingPosition at = nextUse(kt, previous);
      Value slot, tileStart;
      std::tie(slot, tileStart) = arrived(kt, at);
      waitFor(RingBarrier::VFull, previous);
      Operands scoreSteps = scoreDescriptors(slot);
      SmallVector<Value> valueSteps =
          valueDescriptors(stageSlot(previous.first));
      Value sAcc;
      inTurn([&] {
        sAcc = scores(scoreSteps);
        if (rescaleInTurn) {
          oAcc = rescale(oAcc, factors);
          wg.fence(b, loc);
        }
        oAcc = issueValues(words, valueSteps, oAcc);
        wg.commit(b, loc);
      });
      wg.wait(b, loc, 1);
      release(RingBarrier::KEmpty, at);
      auto [p, alpha] = softmax(sAcc, tileStart, st, masked);
      wg.wait(b, loc, 0);
      release(RingBarrier::VEmpty, previous);
      // P is packed once no MMA is in flight: words written while one runs
      // make ptxas serialize the next P V (C7513).
      SmallVector<Value> yielded(st);
      yielded.append(
          {rescaleInTurn ? oAcc : rescale(oAcc, alpha), at.first, at.second});
      yielded.append(alpha);
      yielded.append(pack(p));
      return yielded;
    };
    SmallVector<Value> results = mainLoops(idx(1), init, body);
    auto unpackedLast = unpack(results);
    auto &oAcc = std::get<0>(unpackedLast);
    auto &last = std::get<1>(unpackedLast);
    auto &factors = std::get<2>(unpackedLast);
    auto &words = std::get<3>(unpackedLast);
    waitFor(RingBarrier::VFull, last);
    SmallVector<Value> lastSteps = valueDescriptors(stageSlot(last.first));
    if (rescaleInTurn)
      oAcc = rescale(oAcc, factors);
    inTurn([&] {
      wg.fence(b, loc);
      oAcc = issueValues(words, lastSteps, oAcc);
      wg.commit(b, loc);
    });
    wg.wait(b, loc, 0);
    release(RingBarrier::VEmpty, last);
    SmallVector<Value> done(ArrayRef<Value>(results).take_front(2 * nSlots));
    done.push_back(oAcc);
    scf::YieldOp::create(b, loc, done);
  }
  ValueRange results = any.getResults();
  finish(results.take_front(2 * nSlots), results.back());
}

void FlashSm90Builder::epilogue(const Tile &tile, Value consumer,
                                ArrayRef<Value> state, Value acc) {
  int64_t nSlots = slots();
  Type outElem = cast<MemRefType>(pb.out.getType()).getElementType();
  Value thread = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
  Value firstRow = add(tile.first, mul(consumer, WarpgroupMma::kRows));
  // (Not structured bindings: lambdas below capture them.)
  SmallVector<Value> inv, lse;
  std::tie(inv, lse) = rowNormalizers(state);
  auto pairType = VectorType::get({2}, outElem);
  int64_t outBytes = outElem.getIntOrFloatBitWidth() / 8;
  // Members 4j + {0, 1} are row r, 4j + {2, 3} row r + 8 (slot 1).
  for (int64_t sl = 0; sl < nSlots; ++sl) {
    Value row, col;
    std::tie(row, col) = wg.accumulatorPosition(b, loc, thread, 2 * sl);
    Value token = add(firstRow, row), rowHead = head;
    if (pb.packed > 1) {
      Value r = add(mul(consumer, WarpgroupMma::kRows), row);
      token = add(tile.first, divu(r, pb.packed));
      rowHead = add(head, remu(r, pb.packed));
    }
    ifThen(lt(token, tile.last), [&] {
      for (int64_t j = 0; j < cfg.valueDim / 8; ++j) {
        SmallVector<Value> pair;
        for (int64_t e = 0; e < 2; ++e) {
          Value o = fmul(wg.accumulator(b, loc, acc, 4 * j + 2 * sl + e),
                         inv[sl]);
          if (outElem != o.getType())
            o = arith::TruncFOp::create(b, loc, outElem, o);
          pair.push_back(o);
        }
        vector::StoreOp::create(
            b, loc, vector::FromElementsOp::create(b, loc, pairType, pair),
            pb.out, outIndices({token, rowHead, add(col, 8 * j)}),
            /*nontemporal=*/false, llvm::MaybeAlign(2 * outBytes));
      }
      if (pb.lse)
        ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, col,
                                     idx(0)),
               [&] {
                 memref::StoreOp::create(b, loc, lse[sl], pb.lse,
                                         outIndices({rowHead, token}));
               });
    });
  }
}

void FlashSm90Builder::build() {
  std::tie(base, address) = alignedSharedBase(WarpgroupMma::kSwizzleAlignment);
  // Packed, blocks go over KV heads; `head` is the first query head.
  head = mul(blockId(gpu::Dimension::y), pb.packed);
  kvHead = divu(head, pb.qHeads / pb.kvHeads);
  splitIndex = blockId(gpu::Dimension::z);
  int64_t consumerThreads = cfg.consumers * WarpgroupMma::kWarpgroupThreads;
  SmallVector<std::pair<Value, int64_t>> barriers;
  // The ring's, a barrier per stage in each kind (full, empty[, full,
  // empty]); a full one counts the producer's arrival, an empty one every
  // consumer thread's.
  for (int64_t kind = 0; kind < cfg.ringBarriers(); ++kind)
    for (int64_t s = 0; s < cfg.stages; ++s)
      barriers.push_back({barrier(kind * cfg.stages + s),
                          kind % 2 ? consumerThreads : 1});
  barriers.push_back({qFull(), 1});
  barriers.push_back({qEmpty(), consumerThreads});
  warpgroupRoles(
      wg, barriers,
      [&] {
        // The first warp walks the tiles (the scans need a whole warp),
        // one elected lane waits and issues the copies (mbarrier waits are
        // per lane).
        ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     divu(threadId(), warpSize), idx(0)),
               [&] {
                 Value lead = wg.electOne(b, loc);
                 forEachTile([&](const Tile &tile) { produce(tile, lead); });
               });
      },
      [&](Value consumer) {
        // Consumer 0 takes the first turn.
        if (cfg.pingPong)
          ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       consumer, idx(1)),
                 [&] {
                   wg.barrier(b, loc, i32(2), consumerThreads,
                              /*arrive=*/true);
                 });
        forEachTile([&](const Tile &tile) { consume(tile, consumer); });
      },
      /*active=*/nullptr,
      pb.shuffled ? WarpgroupMma::kShuffledPagesRegisters
      : pb.paged || !cfg.overlap || cfg.valueDim > 128
          ? WarpgroupMma::kAttentionRegisters
      : cfg.valueDim <= 64 ? WarpgroupMma::kPrefillSmallRegisters
                           : WarpgroupMma::kPrefillRegisters);
}

} // namespace

/// The K/V tile rows for head dims D and Dv: 128 where S (n / 2) and O
/// (Dv / 2) accumulators leave the consumers' 232 registers room and two
/// stages fit in `target`'s shared memory, else 64 (D = Dv = 192: 128-key
/// stages need 246848 bytes).
static int64_t flashSm90TileKeys(const TargetInfo &target, int64_t headDim,
                                 int64_t valueDim) {
  FlashSm90Config wide;
  wide.headDim = headDim;
  wide.valueDim = valueDim;
  wide.tileKeys = 128;
  wide.stages = 2;
  return headDim + valueDim <= 384 &&
                 wide.sharedBytes() <= target.getSharedMemoryBytes()
             ? 128
             : 64;
}

/// Whether the kernel takes q [.., D] and out [.., Dv] of `elem`.
static bool flashSm90Serves(const TargetInfo &target, Type elem, int64_t d,
                            int64_t dv) {
  const WarpgroupMma *wg = target.getWarpgroupMma();
  auto fits = [](int64_t dim) {
    return dim % FlashSm90Config::chunk == 0 && dim <= 256;
  };
  return wg && fits(d) && fits(dv) && wg->supports(elem, dv) &&
         wg->supports(elem, flashSm90TileKeys(target, d, dv));
}

/// TMA box rows of a paged cache of `blockSize`-token blocks: a divisor of
/// both the block and the K/V tile, at least one 8-row swizzle atom (0:
/// none).
static int64_t flashSm90BoxRows(int64_t blockSize, int64_t tileKeys) {
  int64_t rows = std::gcd(blockSize, tileKeys);
  return rows % 8 == 0 ? rows : 0;
}

bool mlir::tessel::hasPrefillAttentionSm90(PrefillAttentionOp op,
                                           const TargetInfo &target) {
  auto qType = cast<MemRefType>(op.getQ().getType());
  return flashSm90Serves(
      target, qType.getElementType(), qType.getDimSize(2),
      cast<MemRefType>(op.getOut().getType()).getDimSize(2));
}

bool mlir::tessel::hasPagedQueriesSm90(PagedAttentionOp op,
                                       const TargetInfo &target) {
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  int64_t d = qType.getDimSize(2);
  int64_t dv = outType.getDimSize(outType.getRank() - 1);
  int64_t blockSize = getCacheBlockSize(
      cast<MemRefType>(op.getKCache().getType()), op.getLayout());
  return op.getCuSeqlens() && !op.getWindowStart() &&
         flashSm90Serves(target, qType.getElementType(), d, dv) &&
         flashSm90BoxRows(blockSize, flashSm90TileKeys(target, d, dv)) > 0;
}

/// The configuration, the kernel body and the launch geometry of both
/// forms; `pb` has the problem's operands, the tensor maps are added here.
static FailureOr<LaunchGeometry>
buildFlashSm90(OpBuilder &b, Operation *op, KernelContext &ctx,
               FlashSm90Problem pb, Value q, Value k, Value v, int64_t d,
               int64_t dv, const KernelDim *splits) {
  const TargetInfo &target = ctx.target;
  Type elem = cast<MemRefType>(q.getType()).getElementType();
  FailureOr<MmaAtom> atom = chooseAttentionAtom(op, target, elem);
  if (failed(atom))
    return failure();
  FlashSm90Config cfg;
  cfg.headDim = d;
  cfg.valueDim = dv;
  cfg.tileKeys = flashSm90TileKeys(target, d, dv);
  // As many stages as fit, up to 4. The overlapped loop holds one tile's
  // K and the previous one's V: it needs a third stage to prefetch into,
  // or, with two, K and V released apart (separateKV: the prefill at head
  // dims 192 / 128, 1.07-1.10x its in-order loop on the H200; measured
  // 0.97-1.04x where a third stage fits; the paged kernels' producer
  // spilled with its second wait and its pages looked up twice).
  if (ctx.stages > 0) {
    cfg.stages = ctx.stages;
  } else {
    for (cfg.stages = 4; cfg.stages > 2; --cfg.stages)
      if (cfg.sharedBytes() <= target.getSharedMemoryBytes())
        break;
  }
  // The overlap holds O, S and P (f32, and P's words) at once: up to 176
  // of a consumer's registers measured without spills (Dv 256, 64-key
  // tiles); the paged kernels keep Dv <= 128.
  int64_t held = cfg.valueDim / 2 + cfg.tileKeys / 2 + cfg.tileKeys / 4;
  bool registersAllow = pb.paged ? cfg.valueDim <= 128 : held <= 176;
  cfg.separateKV = registersAllow && cfg.stages < 3 && !pb.paged;
  if (cfg.sharedBytes() > target.getSharedMemoryBytes())
    cfg.separateKV = false; // (its mbarriers did not fit)
  cfg.overlap = registersAllow && (cfg.separateKV || cfg.stages >= 3);
  cfg.pingPong = cfg.overlap;
  // The softmax walks S in the m16n8 atom's accumulator order, which the
  // wgmma accumulators repeat along N.
  assert(atom->m == 16 && atom->n == 8 &&
         target.getAccumulatorCount(*atom) == 4 &&
         "NVIDIA's attention atom is mma.sync m16n8k16");
  if (cfg.stages < 2)
    return op->emitOpError()
           << "GPU template: stages must be at least 2, got " << cfg.stages;
  if (cfg.sharedBytes() > target.getSharedMemoryBytes())
    return op->emitOpError()
           << "GPU template: " << cfg.stages << " stages of " << cfg.tileKeys
           << "-key K/V tiles of head dims " << cfg.headDim << "/"
           << cfg.valueDim << " need " << cfg.sharedBytes()
           << " bytes of shared memory, more than the "
           << target.getSharedMemoryBytes() << " a block of "
           << target.getChip() << " can use";

  // q [T, Hq, D] as {D, Hq, T}; k, v [T, Hkv, D] likewise or, paged, the
  // caches [NB, BS, Hkv, D] as {D, Hkv, NB * BS}: boxes of one 128-byte
  // swizzled row of one head, tileRows, tileKeys or boxRows rows.
  constexpr int64_t kSwizzle128 = 3;
  auto map = [&](Value operand, int64_t rows) {
    SmallVector<std::pair<unsigned, unsigned>> dims = {{2, 3}, {1, 2}, {0, 1}};
    if (pb.paged)
      dims = {{3, 4}, {2, 3}, {0, 2}};
    return ctx.addTensorMap({cast<BlockArgument>(operand).getArgNumber(),
                             dims,
                             {FlashSm90Config::chunk, 1, rows},
                             kSwizzle128});
  };
  pb.mapQ = ctx.addTensorMap({cast<BlockArgument>(q).getArgNumber(),
                              {{2, 3}, {1, 2}, {0, 1}},
                              {FlashSm90Config::chunk, pb.packed,
                               pb.tileTokens()},
                              kSwizzle128});
  if (pb.paged)
    pb.boxRows = flashSm90BoxRows(pb.blockSize, cfg.tileKeys);
  if (pb.shuffled) {
    // k [NB, Hkv, D/8, BS, 8] as {BS * 8, D/8, NB * Hkv}: a box is 8 rows
    // (128-byte lines) of every head-dim group of one page, unswizzled.
    pb.mapK = ctx.addTensorMap({cast<BlockArgument>(k).getArgNumber(),
                                {{3, 5}, {2, 3}, {0, 2}},
                                {64, d / 8, 1},
                                /*swizzle=*/0});
    pb.vCache = ctx.arg(v);
  } else {
    pb.mapK = map(k, pb.paged ? pb.boxRows : cfg.tileKeys);
    pb.mapV = map(v, pb.paged ? pb.boxRows : cfg.tileKeys);
  }
  FlashSm90Builder(b, op->getLoc(), target, *atom, *target.getWarpgroupMma(),
                   cfg, pb, elem)
      .build();

  LaunchGeometry geometry;
  GridDim x = gridOver(ctx.dim(q, 0), 1, pb.tileTokens());
  x.add += pb.slackTiles * pb.tileTokens();
  // (A persistent grid keeps the tile as its divisor: the dispatcher
  // counts a batch's tiles by it.)
  if (pb.persistentBlocks)
    x = GridDim{-1, 1, pb.persistentBlocks * pb.tileTokens(), pb.tileTokens()};
  geometry.grid[0] = x;
  geometry.grid[1] = GridDim{-1, 1, pb.qHeads / pb.packed, 1};
  geometry.grid[2] = splits ? gridOver(*splits, 1, 1) : GridDim{-1, 1, 1, 1};
  geometry.block = {static_cast<int32_t>(FlashSm90Config::threads), 1, 1};
  geometry.sharedBytes = cfg.sharedBytes();
  return geometry;
}

/// What prefill_attention and paged_attention with cu_seqlens share: the
/// query side (q [T, Hq, D]), out, lse and the scale.
template <typename OpT>
FlashSm90Problem queryProblem(OpBuilder &b, OpT op, KernelContext &ctx) {
  FlashSm90Problem pb;
  pb.cuSeqlens = ctx.arg(op.getCuSeqlens());
  pb.out = ctx.arg(op.getOut());
  pb.lse = ctx.arg(op.getLse());
  pb.T = ctx.dimValue(b, op.getQ(), 0);
  pb.qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  pb.scaleLog2 = ctx.scaleLog2(b, op.getScale());
  return pb;
}

FailureOr<LaunchGeometry>
mlir::tessel::buildPrefillAttentionSm90(OpBuilder &b, PrefillAttentionOp op,
                                        KernelContext &ctx) {
  auto qType = cast<MemRefType>(op.getQ().getType());
  FlashSm90Problem pb = queryProblem(b, op, ctx);
  pb.kvHeads = cast<MemRefType>(op.getK().getType()).getDimSize(1);
  pb.causal = op.getCausal();
  return buildFlashSm90(b, op, ctx, pb, op.getQ(), op.getK(), op.getV(),
                        qType.getDimSize(2),
                        cast<MemRefType>(op.getOut().getType()).getDimSize(2),
                        nullptr);
}

FailureOr<LaunchGeometry>
mlir::tessel::buildPagedQueriesSm90(OpBuilder &b, PagedAttentionOp op,
                                    KernelContext &ctx) {
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto kType = cast<MemRefType>(op.getKCache().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  FlashSm90Problem pb = queryProblem(b, op, ctx);
  pb.kvHeads = getCacheKVHeads(kType, op.getLayout());
  pb.paged = true;
  pb.blockTable = ctx.arg(op.getBlockTable());
  pb.contextLens = ctx.arg(op.getContextLens());
  pb.numBlocks = ctx.dimValue(b, op.getKCache(), 0);
  pb.blockSize = getCacheBlockSize(kType, op.getLayout());
  pb.shuffled = op.getLayout() == KVLayout::Shuffled;
  pb.split = op.isSplit();
  pb.causal = op.getCausal();
  int64_t group = pb.qHeads / pb.kvHeads;
  if (FlashSm90Config::tileRows % group == 0)
    pb.packed = group;
  // The unified kernel's whole form runs persistent, a block per SM over
  // the grid's y (split, its windows already give the blocks work).
  if (pb.causal && !pb.split)
    pb.persistentBlocks = std::max<int64_t>(
        1, WarpgroupMma::kPersistentBlocks / (pb.qHeads / pb.packed));
  return buildFlashSm90(b, op, ctx, pb, op.getQ(), op.getKCache(),
                        op.getVCache(), qType.getDimSize(2),
                        outType.getDimSize(outType.getRank() - 1),
                        pb.split ? &ctx.dim(op.getOut(), 0) : nullptr);
}
