//===- GroupedMatmulSm90.cpp - Grouped matmuls on wgmma + TMA -------------===//
//
// The Hopper main loops of tessel.grouped_matmul with stacked b (trans_b:
// the MoE forward; without: the dgrad) or a pointer table of per-group
// matrices (B then copied by the producer threads: a tensor map names one
// tensor), and of tessel.grouped_matmul_wgrad,
// siblings of the sm80 templates in GroupedMatmul.cpp that share their work
// decomposition: ragged-M group tiles found on the device from
// group_offsets (KernelBuilder::findRowTile), the zero tail past the last
// group, rows of a neighbouring group masked at the store; ragged K one
// tile per (N-tile, M-tile, group), an empty group storing zeros. Both walk
// their tiles on a persistent grid (one block an SM) whose ring runs on
// across tiles, so the producer loads the next tile while C is stored.
//
// Block: 3 warpgroups. Warpgroup 0 is the producer: one elected lane of its
// first warp issues, per K-tile, the TMA copies of the A and B tiles into a
// `stages`-deep ring of 128-byte-swizzled stages, each completing on its
// `full` mbarrier; it first waits on the stage's `empty` mbarrier. (With a
// pointer table, all 128 producer threads copy B by cp.async instead; with
// gathered rows (a_rows), A: TMA copies boxes, not rows picked one by one.)
// Warpgroups 1 and 2 are consumers, each owning 64 rows of the 128-row C
// tile: they wait on `full`, issue 4 wgmma m64n<tileN>k16 from shared
// memory (accumulators in registers), keep one group of MMAs in flight and
// release the previous stage. setmaxnreg moves registers from the producer
// (72) to the consumers (216): WarpgroupMma::kGemmRegisters.
//
// Operand tiles. Ragged M: A is 128 rows of a from the tile's first row,
// K-major. B with trans_b is tileN rows of b[group] seen as [G * N, K],
// K-major; without, 64 rows of b[group] seen as [G * K, N] in tileN / 64
// boxes of 64 columns, MN-major (wgmma reads it transposed). TMA zero-fills
// what lies past a's rows, past b's last row and past K (or N), so K needs
// no tail loop; rows of the next group and columns past N are computed and
// never stored. Without trans_b a partial K-tile would read the next
// group's rows of b: K must be whole K-tiles there. Ragged K: both tiles
// are the group's next 64 rows of a [T, M] and b [T, N], MN-major in boxes
// of 64 columns; the group's last K-tile reads the next group's rows, which
// the consumers zero in shared memory before their MMAs read them.
//
// Epilogue. Each consumer writes its 64 x tileN part of C into its own
// 128-byte-swizzled buffer after the ring, in passes of 256 bytes of
// columns, and one thread issues TMA stores of each pass (whole lines,
// clipped at C's edges), which drain while the next tile's MMAs run. Ragged
// M: a part whose 64 rows are not all its group's (a group's last tile) is
// copied out by its 128 threads instead, 16 bytes each, predicated on the
// rows and columns C has: a TMA store would write the next group's rows.
//
// Fused SwiGLU (grouped_matmul with `act`, I = N / 2 a multiple of 128): a
// tile covers 128 columns of act; its B tile is two TMA boxes, the 128 gate
// rows and the 128 up rows I further, so accumulator i (a gate column) and
// i + 64 (its up column) sit in the same thread. The epilogue stages and
// stores the gate pass, the up pass (at column I + its own) and an act
// pass of silu(gate) * up computed from the rounded values.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "tessel/Target/WarpgroupMma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

int64_t tilesOf(int64_t size, int64_t tile) { return (size + tile - 1) / tile; }

/// 128 x tileN x 64 tiles: 64 16-bit elements are one 128-byte swizzled
/// row; 128 C rows are the two consumers' m64 MMAs. tileN 256 (the widest
/// wgmma) measured 10-15% ahead of 128 on the H200 (docs/sm90a.md).
struct Sm90Config {
  static constexpr int64_t tileM = 2 * WarpgroupMma::kRows;
  static constexpr int64_t tileK = 64;
  static constexpr int64_t consumers = 2;
  static constexpr int64_t threads =
      (1 + consumers) * WarpgroupMma::kWarpgroupThreads;
  /// An MN-major tile is chunks of 64 M or N indices, one TMA box each.
  static constexpr int64_t chunk = 64;
  int64_t tileN = 256;
  int64_t stages = 4;
  /// Blocks of a persistent grid (WarpgroupMma::kPersistentBlocks).
  static constexpr int64_t persistentBlocks = WarpgroupMma::kPersistentBlocks;

  static int64_t chunkBytes(int64_t elemBytes) {
    return tileK * chunk * elemBytes;
  }
  int64_t aBytes(int64_t elemBytes) const { return tileM * tileK * elemBytes; }
  int64_t stageBytes(int64_t elemBytes) const {
    return (tileM + tileN) * tileK * elemBytes;
  }
  /// Bytes from the ring's start to a 16-byte scratch line after the ring
  /// and its 2 * stages mbarriers.
  int64_t scratchOffset(int64_t elemBytes) const {
    return stages * stageBytes(elemBytes) + 16 * stages;
  }
  /// Bytes of shared memory the epilogue stages C in (stagedBytes).
  int64_t epilogueBytes = 0;
  /// Bytes from the ring's start to the epilogue's buffer: after the
  /// scratch line, at a swizzle atom.
  int64_t epilogueOffset(int64_t elemBytes) const {
    return llvm::alignTo(scratchOffset(elemBytes) + 16,
                         WarpgroupMma::kSwizzleAlignment);
  }
  /// C is staged in 128-byte-swizzled boxes of 64 rows x 128 bytes, each
  /// consumer's 64 x tileN part in its own buffer of kBoxesPerPass boxes,
  /// in passes (128 bf16 or 64 f32 columns each), so that the ring keeps 4
  /// stages. Measured on the H200: 4 stages and passes of 2 boxes beat 3
  /// stages and a whole bf16 part at once (4 boxes) on every wgrad and on
  /// 18 of 20 forward and dgrad shapes (docs/sm90a.md).
  static constexpr int64_t kBoxesPerPass = 2;
  static int64_t boxColumns(Type cElem) {
    return WarpgroupMma::kSwizzleBytes / (cElem.getIntOrFloatBitWidth() / 8);
  }
  int64_t passColumns(Type cElem) const {
    return std::min(tileN, kBoxesPerPass * boxColumns(cElem));
  }
  int64_t stagedBytes(Type cElem) const {
    return consumers * tilesOf(passColumns(cElem), boxColumns(cElem)) *
           WarpgroupMma::kRows * WarpgroupMma::kSwizzleBytes;
  }
  /// The ring, its barriers, the scratch line, the epilogue's buffer and
  /// the slack that lets the kernel align the ring to the swizzle atom.
  int64_t sharedBytes(int64_t elemBytes) const {
    return epilogueOffset(elemBytes) + epilogueBytes +
           WarpgroupMma::kSwizzleAlignment;
  }
};

/// The warp-specialised main loop both grouped matmuls run; a subclass
/// says what a block computes (its tile, the K-tiles, how a stage is
/// loaded) and where C goes.
class WarpgroupGemm : public KernelBuilder {
public:
  WarpgroupGemm(OpBuilder &b, Location loc, const TargetInfo &target,
                const WarpgroupMma &wg, const Sm90Config &cfg, Type elem,
                WarpgroupMma::SharedOperand aOperand,
                WarpgroupMma::SharedOperand bOperand)
      : KernelBuilder(b, loc, target), wg(wg), cfg(cfg), elem(elem),
        elemBytes(elem.getIntOrFloatBitWidth() / 8),
        stageBytes(cfg.stageBytes(elemBytes)), aOperand(aOperand),
        bOperand(bOperand) {}
  virtual ~WarpgroupGemm() = default;

protected:
  /// Sets up the ring and its barriers; then every role walks tiles
  /// blockIdx.x, + gridDim.x, ... below `tiles`, `selectTile` setting each
  /// one's fields and numK. The ring runs on across tiles: the producer
  /// loads the next tile's K-tiles while the consumers store this one's C.
  void runPersistent(Value tiles, function_ref<void(Value tile)> selectTile);
  /// Issues the TMA copies of K-tile `kt` into the stage at byte `slot` of
  /// the ring, completing on `full`.
  virtual void loadStage(Value slot, Value kt, Value full) = 0;
  /// With aByCopies or bByCopies: once per tile, before its K-tiles, what
  /// the producer threads' copies of every K-tile share.
  virtual void prepareCopies() {}
  /// With aByCopies or bByCopies, every producer thread's cp.async copies
  /// of K-tile `kt`'s A or B tile into the stage at byte `slot`.
  virtual void copyStage(Value slot, Value kt) {}
  /// Runs in the consumers once K-tile `kt` is in the stage at `slot`.
  virtual void prepareStage(Value slot, Value kt) {}
  /// Stores consumer `consumer`'s (0 or 1) accumulators of the tile.
  virtual void epilogue(Value consumer, Value acc) = 0;

  /// Writes a 64 x `width` matrix of cElem in the consumer's accumulator
  /// layout (pairAt(i): the values of accumulators i and i + 1's places,
  /// i < width / 2) into its swizzled buffer pass by pass; after each
  /// pass, once the buffer is written and fenced for the async proxy, all
  /// 128 threads of the consumer call store(firstColumn, buffer, boxes):
  /// the pass's first column in the matrix, the buffer's byte offset in the
  /// ring, its boxes of 64 rows x 128 bytes. Named barrier 2 + consumer
  /// orders the buffer's uses: the previous pass's TMA stores (committed by
  /// storeLeader) and copies have read it before it is written again.
  void stageC(Value consumer, int64_t width,
              function_ref<std::pair<Value, Value>(int64_t)> pairAt,
              function_ref<void(int64_t, Value, int64_t)> store);
  /// stageC of the accumulators `acc` themselves, tileN columns.
  void stageC(Value consumer, Value acc,
              function_ref<void(int64_t, Value, int64_t)> store) {
    stageC(
        consumer, cfg.tileN,
        [&](int64_t i) {
          return std::make_pair(narrowC(wg.accumulator(b, loc, acc, i)),
                                narrowC(wg.accumulator(b, loc, acc, i + 1)));
        },
        store);
  }
  /// An f32 accumulator rounded to cElem.
  Value narrowC(Value v) {
    return cElem == v.getType() ? v : arith::TruncFOp::create(b, loc, cElem, v);
  }
  /// The consumer's first thread, which issues its TMA stores.
  Value storeLeader();
  /// Issues TMA stores of `boxes` boxes at `buffer` to `map` at `coords`,
  /// the first advanced one box of columns per box, and commits them.
  void storeBoxes(Value map, Value buffer, int64_t boxes,
                  SmallVector<Value> coords);

  /// Byte `offset` (index) of the aligned ring as !llvm.ptr<3>.
  Value sharedPointer(Value offset);
  /// A gathered row's copies: the first element of row index[r] / divisor
  /// of an operand `width` elements wide, and the bytes each copy moves (0
  /// unless r is `inside` and the entry one of the operand's `limit`).
  std::pair<Value, Value> gatheredCopy(Value index, Value r, Value inside,
                                       Value limit, int64_t divisor,
                                       int64_t width) {
    auto [entry, valid] = gatherEntry(index, r, inside, limit);
    return {select(valid, mul(divu(entry, divisor), width), idx(0)),
            select(valid, i32(16), i32(0))};
  }
  /// Element `element` (index) of the global `matrix` (!llvm.ptr<1>), the
  /// source of a producer thread's cp.async.
  Value globalElement(Value matrix, Value element) {
    return KernelBuilder::globalElement(matrix, elem, element);
  }

  const WarpgroupMma &wg;
  Sm90Config cfg;
  Type elem;
  int64_t elemBytes, stageBytes;
  WarpgroupMma::SharedOperand aOperand, bOperand;
  /// A or B reaches the ring by the producer threads' cp.async copies (in
  /// the TMA layout) rather than by TMA: a stage's `full` barrier then
  /// counts the elected lane's expect_tx arrival (the other operand's TMA
  /// bytes) and one arrival per producer thread.
  bool aByCopies = false, bByCopies = false;
  bool byCopies() const { return aByCopies || bByCopies; }
  /// K-tiles of the block's tile.
  Value numK;
  /// C's element type.
  Type cElem;

private:
  /// Barrier `index` (index): full barriers first, then empty ones.
  Value barrier(Value index) {
    return sharedPointer(add(mul(index, 8), cfg.stages * stageBytes));
  }
  /// The parity of the ring's `i`-th K-tile (counted over the block's
  /// tiles): its stage's use count, flipped for the producer's `empty`
  /// wait (KernelBuilder::barrierParity).
  Value parity(Value i, bool flip);
  /// The ring's mbarriers and their arrival counts.
  SmallVector<std::pair<Value, int64_t>> ringBarriers();
  /// The producer's and the consumers' K loops over the tile's numK
  /// K-tiles, the ring's `base`-th to (base + numK - 1)-th.
  void produce(Value base);
  /// Returns the accumulator struct.
  Value consume(Value consumer, Value base);
  /// for (tile = blockIdx.x; tile < tiles; tile += gridDim.x) with the
  /// ring's count of K-tiles carried: body(tile, base) returns base + numK.
  void forEachTile(Value tiles, function_ref<Value(Value, Value)> body);

  /// The ring's base as a shared pointer and as a 32-bit shared address.
  Value ringBase, ringAddress;
};

Value WarpgroupGemm::sharedPointer(Value offset) {
  return sharedByte(ringBase, offset);
}

Value WarpgroupGemm::parity(Value i, bool flip) {
  return barrierParity(divu(i, cfg.stages), flip);
}

void WarpgroupGemm::produce(Value base) {
  Value warp = divu(threadId(), warpSize);
  Value lead = andi(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          warp, idx(0)),
                    wg.electOne(b, loc));
  // The elected lane waits for each stage and issues its TMA copies. With
  // copies every producer thread also copies A or B, but still only the
  // elected lane waits on the mbarrier (the wait loop is not safe for
  // lanes leaving it apart): named barrier 4 then frees the stage for the
  // others.
  int64_t tmaBytes = stageBytes;
  if (aByCopies)
    tmaBytes -= cfg.aBytes(elemBytes);
  if (bByCopies)
    tmaBytes -= stageBytes - cfg.aBytes(elemBytes);
  auto loopOverK = [&] {
    auto loop = scf::ForOp::create(b, loc, idx(0), numK, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar(), i = add(base, kt);
    Value stage = remu(i, cfg.stages), slot = mul(stage, stageBytes);
    Value full = barrier(stage);
    auto waitAndLoad = [&] {
      wg.waitParity(b, loc, barrier(add(stage, cfg.stages)), parity(i, true));
      wg.arriveExpectBytes(b, loc, full, tmaBytes);
      loadStage(slot, kt, full);
    };
    if (!byCopies()) {
      waitAndLoad();
      return;
    }
    ifThen(lead, waitAndLoad);
    wg.barrier(b, loc, i32(4), WarpgroupMma::kWarpgroupThreads);
    copyStage(slot, kt);
    wg.asyncCopiesArrive(b, loc, full);
  };
  if (byCopies()) {
    prepareCopies();
    loopOverK();
  } else {
    ifThen(lead, loopOverK);
  }
}

Value WarpgroupGemm::consume(Value consumer, Value base) {
  Value zero = wg.zeroAccumulators(b, loc, cfg.tileN);
  // This consumer's 64 rows of C read the A tile's rows (K-major) or
  // chunk (MN-major) that start 64 x 64 elements in.
  Value aOffset = mul(consumer, Sm90Config::chunkBytes(elemBytes));
  auto loop = scf::ForOp::create(b, loc, idx(0), numK, idx(1), zero);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar(), i = add(base, kt);
    Value stage = remu(i, cfg.stages);
    wg.waitParity(b, loc, barrier(stage), parity(i, false));
    // cp.async writes are the generic proxy's; wgmma reads the async one.
    if (byCopies())
      wg.fenceSharedForAsync(b, loc);
    Value slot = mul(stage, stageBytes);
    prepareStage(slot, kt);
    Value address = add(ringAddress, toI32(slot));
    Value descA = wg.sharedDescriptor(b, loc, add(address, toI32(aOffset)),
                                      aOperand);
    Value descB = wg.sharedDescriptor(
        b, loc, add(address, i32(cfg.aBytes(elemBytes))), bOperand);
    Value acc = loop.getRegionIterArgs().front();
    wg.fence(b, loc);
    // Each MMA's 16-element K slice is kStepBytes further into the tile.
    auto step = [&](Value desc, WarpgroupMma::SharedOperand operand,
                    int64_t s) {
      return wg.advanceDescriptor(b, loc, desc,
                                  s * WarpgroupMma::kStepBytes(operand));
    };
    for (int64_t s = 0; s < cfg.tileK / WarpgroupMma::kDepth; ++s)
      acc = wg.mma(b, loc, elem, cfg.tileN, step(descA, aOperand, s),
                   aOperand, step(descB, bOperand, s), bOperand, acc);
    wg.commit(b, loc);
    // Keep this K-tile's MMAs in flight; the previous tile's are done, so
    // its stage goes back to the producer.
    wg.wait(b, loc, 1);
    Value previous = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                           kt, idx(0));
    ifThen(previous, [&] {
      Value before = remu(add(i, cfg.stages - 1), cfg.stages);
      wg.arrive(b, loc, barrier(add(before, cfg.stages)));
    });
    scf::YieldOp::create(b, loc, acc);
  }
  wg.wait(b, loc, 0);
  // The last stage goes back too, for the next tile's K-tiles.
  ifThen(lt(idx(0), numK), [&] {
    Value last = remu(add(base, sub(numK, idx(1))), cfg.stages);
    wg.arrive(b, loc, barrier(add(last, cfg.stages)));
  });
  return loop.getResult(0);
}

SmallVector<std::pair<Value, int64_t>> WarpgroupGemm::ringBarriers() {
  std::tie(ringBase, ringAddress) =
      alignedSharedBase(WarpgroupMma::kSwizzleAlignment);
  SmallVector<std::pair<Value, int64_t>> barriers;
  int64_t fullArrivals = 1 + (byCopies() ? WarpgroupMma::kWarpgroupThreads : 0);
  for (int64_t s = 0; s < cfg.stages; ++s)
    barriers.push_back({barrier(idx(s)), fullArrivals});
  for (int64_t s = 0; s < cfg.stages; ++s)
    barriers.push_back({barrier(idx(cfg.stages + s)),
                        cfg.consumers * WarpgroupMma::kWarpgroupThreads});
  return barriers;
}

void WarpgroupGemm::forEachTile(Value tiles,
                                function_ref<Value(Value, Value)> body) {
  auto loop = scf::ForOp::create(
      b, loc, blockId(gpu::Dimension::x), tiles,
      gpu::GridDimOp::create(b, loc, gpu::Dimension::x), ValueRange{idx(0)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  scf::YieldOp::create(
      b, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()[0]));
}

void WarpgroupGemm::runPersistent(Value tiles,
                                  function_ref<void(Value)> selectTile) {
  warpgroupRoles(
      wg, ringBarriers(),
      [&] {
        forEachTile(tiles, [&](Value tile, Value base) {
          selectTile(tile);
          produce(base);
          return add(base, numK);
        });
      },
      [&](Value consumer) {
        forEachTile(tiles, [&](Value tile, Value base) {
          selectTile(tile);
          epilogue(consumer, consume(consumer, base));
          return add(base, numK);
        });
        // The buffer must outlive the last TMA stores' reads of it.
        ifThen(storeLeader(),
               [&] { wg.bulkWait(b, loc, 0, /*read=*/false); });
      },
      /*active=*/nullptr, WarpgroupMma::kGemmRegisters);
}

Value WarpgroupGemm::storeLeader() {
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      remu(threadId(), WarpgroupMma::kWarpgroupThreads), idx(0));
}

void WarpgroupGemm::stageC(
    Value consumer, int64_t width,
    function_ref<std::pair<Value, Value>(int64_t)> pairAt,
    function_ref<void(int64_t, Value, int64_t)> store) {
  int64_t cBytes = cElem.getIntOrFloatBitWidth() / 8;
  int64_t columns = Sm90Config::boxColumns(cElem);
  int64_t passCols = cfg.passColumns(cElem);
  int64_t boxBytes = WarpgroupMma::kRows * WarpgroupMma::kSwizzleBytes;
  // The buffer's addresses (one per accumulator pair) are the same for
  // every tile; computed once outside the tile loop they would hold 64
  // registers through the MMAs.
  Value buffer = arith::IndexCastUIOp::create(
      b, loc, b.getIndexType(),
      wg.opaque(b, loc,
                toI32(add(idx(cfg.epilogueOffset(elemBytes)),
                          mul(consumer,
                              tilesOf(passCols, columns) * boxBytes)))));
  Value id = toI32(add(consumer, 2));
  Value thread = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
  auto pairType = VectorType::get({2}, cElem);
  // The last pass, and the last box, may hold fewer columns than the
  // others (an f32 tile of 192 columns: 128 + 64; a tile of 200 columns:
  // its last box's 8 columns lie past C and are clipped or masked).
  for (int64_t pass = 0; pass < tilesOf(width, passCols); ++pass) {
    int64_t boxes =
        tilesOf(std::min(passCols, width - pass * passCols), columns);
    ifThen(storeLeader(), [&] { wg.bulkWait(b, loc, 0, /*read=*/true); });
    wg.barrier(b, loc, id, WarpgroupMma::kWarpgroupThreads);
    for (int64_t i = 0; i < width / 2; i += 2) {
      if (WarpgroupMma::accumulatorColumnBlock(i) / passCols != pass)
        continue;
      auto [row, tileCol] = wg.accumulatorPosition(b, loc, thread, i);
      Value col = sub(tileCol, idx(pass * passCols));
      Value byte = mul(remu(col, columns), cBytes);
      // The 16-byte piece `byte / 16` of a 128-byte line sits at piece
      // (byte / 16) ^ (row % 8): the 128-byte swizzle TMA reads back.
      Value piece =
          arith::XOrIOp::create(b, loc, divu(byte, 16), remu(row, 8));
      Value offset = add(add(buffer, mul(divu(col, columns), boxBytes)),
                         add(mul(row, WarpgroupMma::kSwizzleBytes),
                             add(mul(piece, 16), remu(byte, 16))));
      auto [first, second] = pairAt(i);
      Value pair = vector::FromElementsOp::create(b, loc, pairType,
                                                  ValueRange{first, second});
      LLVM::StoreOp::create(b, loc, pair, sharedPointer(offset), 2 * cBytes);
    }
    wg.fenceSharedForAsync(b, loc);
    wg.barrier(b, loc, id, WarpgroupMma::kWarpgroupThreads);
    store(pass * passCols, buffer, boxes);
  }
}

void WarpgroupGemm::storeBoxes(Value map, Value buffer, int64_t boxes,
                               SmallVector<Value> coords) {
  int64_t boxBytes = WarpgroupMma::kRows * WarpgroupMma::kSwizzleBytes;
  Value column = coords.front();
  for (int64_t j = 0; j < boxes; ++j) {
    coords.front() =
        toI32(add(column, j * Sm90Config::boxColumns(cElem)));
    wg.tmaStore(b, loc, map, sharedPointer(add(buffer, j * boxBytes)),
                coords);
  }
  wg.bulkCommit(b, loc);
}

/// Ragged M: c[rows_g] = a[rows_g] . op(b[g]), tiles (M-tile, N-tile), N
/// fastest: the blocks running at once share the rows of a in L2.
class RaggedMGemm : public WarpgroupGemm {
public:
  RaggedMGemm(OpBuilder &b, Location loc, const TargetInfo &target,
              const WarpgroupMma &wg, const Sm90Config &cfg, Type elem,
              bool transB, bool pointerTable, bool gather, bool fusedSwiglu)
      : WarpgroupGemm(
            b, loc, target, wg, cfg, elem, {true, 0},
            {transB, Sm90Config::chunkBytes(elem.getIntOrFloatBitWidth() / 8)}),
        transB(transB), fusedSwiglu(fusedSwiglu) {
    aByCopies = gather;
    bByCopies = pointerTable;
  }

  /// `bArg`: the stacked b (read through `mapB`) or the pointer table.
  /// The grid has `mTiles` M-tiles (findRowTile's count for the largest
  /// T); `mapC` is c [T, N] as {N, T}. With gathered rows, `aArg` is a
  /// [S, K] and `aRows` [T] its rows with their divisor (no mapA). With
  /// the fused SwiGLU, `act` [T, N / 2] is written through `mapAct` too.
  void build(Value offsets, Value c, Value T, Value mTiles, Value mapA,
             Value mapB, Value mapC, Value bArg, int64_t groups, int64_t n,
             int64_t k, Value aArg, Value aRows, int64_t divisor, Value act,
             Value mapAct);

private:
  void loadStage(Value slot, Value kt, Value full) override;
  void prepareCopies() override;
  void copyStage(Value slot, Value kt) override {
    if (aByCopies)
      copyStageA(slot, kt);
    if (bByCopies)
      copyStageB(slot, kt);
  }
  /// The gathered A tile: 128 rows of 64 K-elements, 16-byte piece p of
  /// row r at piece p ^ (r % 8), as TMA would write it.
  void copyStageA(Value slot, Value kt);
  void copyStageB(Value slot, Value kt);
  void epilogue(Value consumer, Value acc) override;
  /// 16-byte copies of the staged part's rows below rowEnd (and columns
  /// below `columnLimit`, if given), from `buffer` to `dest` at (row,
  /// firstColumn).
  void copyOut(Value dest, std::optional<int64_t> columnLimit, Value buffer,
               int64_t boxes, Value row, Value firstColumn);

  bool transB, fusedSwiglu;
  int64_t n = 0, k = 0;
  Value c, mapA, mapB, mapC, act, mapAct;
  /// Whether the walk's tile exists (the grid's last M-tiles need not).
  Value found;
  Value rowStart, rowEnd, group, colStart;
  /// With a pointer table: the group's matrix (!llvm.ptr<1>).
  Value bMatrix;
  /// With gathered rows: a (!llvm.ptr<1>), its row count S, a_rows and
  /// the divisor; per A copy of a producer thread (prepareCopies), the
  /// first element of its row in a and the bytes it copies (16, or 0 for
  /// a row outside the group or outside a).
  Value aMatrix, sourceRows, aRows;
  int64_t divisor = 1;
  SmallVector<Value> aRowElements, aRowBytes;
};

void RaggedMGemm::loadStage(Value slot, Value kt, Value full) {
  Value k0 = mul(kt, cfg.tileK);
  Value bSlot = add(slot, cfg.aBytes(elemBytes));
  if (!aByCopies)
    wg.tmaLoad(b, loc, sharedPointer(slot), mapA, full,
               {toI32(k0), toI32(rowStart)});
  if (bByCopies)
    return;
  if (fusedSwiglu) {
    // The gate rows, then the up rows I further: two boxes of tileN / 2.
    Value gateRow = add(mul(group, n), colStart);
    int64_t upBytes = cfg.tileN / 2 * WarpgroupMma::kSwizzleBytes;
    wg.tmaLoad(b, loc, sharedPointer(bSlot), mapB, full,
               {toI32(k0), toI32(gateRow)});
    wg.tmaLoad(b, loc, sharedPointer(add(bSlot, upBytes)), mapB, full,
               {toI32(k0), toI32(add(gateRow, n / 2))});
    return;
  }
  if (transB) {
    wg.tmaLoad(b, loc, sharedPointer(bSlot), mapB, full,
               {toI32(k0), toI32(add(mul(group, n), colStart))});
    return;
  }
  Value bRow = toI32(add(mul(group, k), k0));
  for (int64_t j = 0; j < cfg.tileN / Sm90Config::chunk; ++j)
    wg.tmaLoad(b, loc,
               sharedPointer(add(bSlot, j * Sm90Config::chunkBytes(elemBytes))),
               mapB, full, {toI32(add(colStart, j * Sm90Config::chunk)), bRow});
}

/// Copies of a gathered tile (128-byte lines of 16-byte pieces): producer
/// thread t copies piece t % 8 of lines t / 8 + 16 i.
constexpr int64_t kPiecesPerLine = WarpgroupMma::kSwizzleBytes / 16;
constexpr int64_t kLinesPerRound =
    WarpgroupMma::kWarpgroupThreads / kPiecesPerLine;

void RaggedMGemm::prepareCopies() {
  if (!aByCopies)
    return;
  aRowElements.clear();
  aRowBytes.clear();
  Value thread = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
  Value limit = mul(sourceRows, divisor);
  for (int64_t line = 0; line < Sm90Config::tileM; line += kLinesPerRound) {
    Value r = add(rowStart, add(divu(thread, kPiecesPerLine), line));
    // Rows past the tile's group (or any row of a block without a tile)
    // read nothing.
    auto [element, bytes] =
        gatheredCopy(aRows, r, andi(found, lt(r, rowEnd)), limit, divisor, k);
    aRowElements.push_back(element);
    aRowBytes.push_back(bytes);
  }
}

void RaggedMGemm::copyStageA(Value slot, Value kt) {
  Value thread = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
  Value piece = remu(thread, kPiecesPerLine);
  Value firstLine = divu(thread, kPiecesPerLine);
  // Every line of the thread has the same line % 8.
  Value swizzled =
      mul(arith::XOrIOp::create(b, loc, piece, remu(firstLine, 8)), 16);
  Value column = add(mul(kt, cfg.tileK), mul(piece, 8));
  Value columnInside = lt(column, idx(k));
  for (auto [i, element] : llvm::enumerate(aRowElements)) {
    Value line = add(firstLine, static_cast<int64_t>(i) * kLinesPerRound);
    Value bytes = aRowBytes[i];
    Value offset = add(element, column);
    // Pieces past K (a partial last K-tile) are zero-filled.
    if (k % cfg.tileK) {
      bytes = select(columnInside, bytes, i32(0));
      offset = select(columnInside, offset, idx(0));
    }
    Value src = globalElement(aMatrix, offset);
    Value dst = sharedPointer(
        add(slot, add(mul(line, WarpgroupMma::kSwizzleBytes), swizzled)));
    wg.asyncCopy16(b, loc, dst, src, bytes);
  }
}

void RaggedMGemm::copyStageB(Value slot, Value kt) {
  // The layout TMA would write: 128-byte rows (64 K-elements of an N-row
  // with trans_b; 64 N-columns of a K-row, one 8 KB chunk per 64 columns,
  // without), 16-byte piece p of row r at piece p ^ (r % 8). Pieces past N
  // or K are zero-filled.
  int64_t pieces = WarpgroupMma::kSwizzleBytes / 16;
  int64_t rowsPerChunk = transB ? cfg.tileN : Sm90Config::tileK;
  int64_t total = cfg.tileN * Sm90Config::tileK / 8;
  Value k0 = mul(kt, cfg.tileK);
  Value bSlot = add(slot, cfg.aBytes(elemBytes));
  Value thread = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
  // Unrolled: the copies of a thread are independent, and issuing them
  // back to back keeps more of them in flight.
  for (int64_t first = 0; first < total;
       first += WarpgroupMma::kWarpgroupThreads) {
    Value q = add(thread, first);
    // A tile of tileN % 16 != 0 rows ends inside the last round.
    std::optional<OpBuilder::InsertionGuard> partial;
    if (first + WarpgroupMma::kWarpgroupThreads > total) {
      partial.emplace(b);
      auto inside = scf::IfOp::create(b, loc, lt(q, idx(total)));
      b.setInsertionPoint(inside.thenBlock()->getTerminator());
    }
    Value piece = remu(q, pieces), line = divu(q, pieces);
    Value row = remu(line, rowsPerChunk), chunk = divu(line, rowsPerChunk);
    // (row of b's matrix, its first element), and whether it exists.
    Value matrixRow, column, valid;
    if (transB) {
      matrixRow = add(colStart, row);
      column = add(k0, mul(piece, 8));
      valid = andi(lt(matrixRow, idx(n)), lt(column, idx(k)));
    } else {
      matrixRow = add(k0, row);
      column =
          add(add(colStart, mul(chunk, Sm90Config::chunk)), mul(piece, 8));
      valid = andi(lt(matrixRow, idx(k)), lt(column, idx(n)));
    }
    // With whole tiles every piece exists: no select to keep live (the
    // producer's registers are few).
    bool whole = n % cfg.tileN == 0 && k % cfg.tileK == 0;
    Value element = add(mul(matrixRow, transB ? k : n), column);
    if (!whole)
      element = select(valid, element, idx(0));
    Value src = globalElement(bMatrix, element);
    Value dst = sharedPointer(
        add(add(bSlot, mul(chunk, Sm90Config::chunkBytes(elemBytes))),
            add(mul(row, WarpgroupMma::kSwizzleBytes),
                mul(arith::XOrIOp::create(b, loc, piece, remu(row, 8)), 16))));
    wg.asyncCopy16(b, loc, dst, src,
                   whole ? i32(16) : select(valid, i32(16), i32(0)));
  }
}

void RaggedMGemm::epilogue(Value consumer, Value acc) {
  Value row = add(rowStart, mul(consumer, WarpgroupMma::kRows));
  // Consumer 1 of a tile of at most 64 rows has nothing to store.
  ifThen(andi(found, lt(row, rowEnd)), [&] {
    Value whole = uniform(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                              add(row, WarpgroupMma::kRows), rowEnd));
    // A pass to `dest` at `column`: TMA stores of whole parts, copies of
    // the group's rows otherwise.
    auto storePass = [&](Value map, Value dest,
                         std::optional<int64_t> columnLimit, Value column,
                         Value buffer, int64_t boxes) {
      ifThen(andi(whole, storeLeader()), [&] {
        storeBoxes(map, buffer, boxes, {column, toI32(row)});
      });
      ifThen(arith::XOrIOp::create(
                 b, loc, whole,
                 arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1)),
             [&] { copyOut(dest, columnLimit, buffer, boxes, row, column); });
    };
    if (!fusedSwiglu) {
      // Columns past N: those of the last N-tile, or of a tile's last box
      // (a 200-column tile stages 256).
      std::optional<int64_t> limit;
      if (n % cfg.tileN || cfg.tileN % Sm90Config::boxColumns(cElem))
        limit = n;
      stageC(consumer, acc,
             [&](int64_t firstColumn, Value buffer, int64_t boxes) {
               storePass(mapC, c, limit, add(colStart, firstColumn), buffer,
                         boxes);
             });
      return;
    }
    // Gate and up passes (each inside one half: I % 128 == 0), then act.
    int64_t half = cfg.tileN / 2;
    stageC(consumer, acc,
           [&](int64_t firstColumn, Value buffer, int64_t boxes) {
             int64_t skip = firstColumn < half ? 0 : n / 2 - half;
             storePass(mapC, c, std::nullopt, add(colStart, firstColumn + skip),
                       buffer, boxes);
           });
    auto rounded = [&](int64_t i) {
      return convertFloat(narrowC(wg.accumulator(b, loc, acc, i)),
                          b.getF32Type());
    };
    auto activated = [&](int64_t i) {
      return narrowC(swiglu(rounded(i), rounded(i + half / 2)));
    };
    stageC(
        consumer, half,
        [&](int64_t i) {
          return std::make_pair(activated(i), activated(i + 1));
        },
        [&](int64_t firstColumn, Value buffer, int64_t boxes) {
          storePass(mapAct, act, std::nullopt, add(colStart, firstColumn),
                    buffer, boxes);
        });
  });
}

void RaggedMGemm::copyOut(Value dest, std::optional<int64_t> columnLimit,
                          Value buffer, int64_t boxes, Value partRow,
                          Value firstColumn) {
  int64_t cBytes = cElem.getIntOrFloatBitWidth() / 8;
  int64_t piecesPerLine = WarpgroupMma::kSwizzleBytes / 16;
  int64_t piecesPerBox = WarpgroupMma::kRows * piecesPerLine;
  int64_t threads = WarpgroupMma::kWarpgroupThreads;
  auto pieceType = VectorType::get({16 / cBytes}, cElem);
  Value thread = remu(threadId(), threads);
  for (int64_t first = 0; first < boxes * piecesPerBox; first += threads) {
    Value q = add(thread, first);
    Value box = divu(q, piecesPerBox), line = remu(divu(q, piecesPerLine),
                                                   WarpgroupMma::kRows);
    Value piece = remu(q, piecesPerLine);
    Value row = add(partRow, line);
    Value column = add(firstColumn, add(mul(box, Sm90Config::boxColumns(cElem)),
                                        mul(piece, 16 / cBytes)));
    Value inside = lt(row, rowEnd);
    if (columnLimit)
      inside = andi(inside, lt(column, idx(*columnLimit)));
    ifThen(inside, [&] {
      Value offset = add(
          add(buffer, mul(box, WarpgroupMma::kRows *
                                   WarpgroupMma::kSwizzleBytes)),
          add(mul(line, WarpgroupMma::kSwizzleBytes),
              mul(arith::XOrIOp::create(b, loc, piece, remu(line, 8)), 16)));
      Value values = LLVM::LoadOp::create(b, loc, pieceType,
                                          sharedPointer(offset), 16);
      vector::StoreOp::create(b, loc, values, dest, ValueRange{row, column},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    });
  }
}

void RaggedMGemm::build(Value offsets, Value cArg, Value T, Value mTiles,
                        Value mapAArg, Value mapBArg, Value mapCArg, Value bArg,
                        int64_t groups, int64_t nCols, int64_t kDepth,
                        Value aArg, Value aRowsArg, int64_t rowsDivisor,
                        Value actArg, Value mapActArg) {
  c = cArg;
  act = actArg;
  mapAct = mapActArg;
  if (aByCopies) {
    aRows = aRowsArg;
    divisor = rowsDivisor;
    sourceRows = memref::DimOp::create(b, loc, aArg, 0);
    aMatrix = globalMatrix(aArg);
  }
  cElem = cast<MemRefType>(c.getType()).getElementType();
  mapA = mapAArg;
  mapB = mapBArg;
  mapC = mapCArg;
  n = nCols;
  k = kDepth;
  // With the fused SwiGLU a tile covers tileN / 2 columns of act (and
  // colStart is its first).
  int64_t tileColumns = fusedSwiglu ? cfg.tileN / 2 : cfg.tileN;
  int64_t nTiles = tilesOf(fusedSwiglu ? n / 2 : n, tileColumns);
  runPersistent(mul(mTiles, nTiles), [&](Value tile) {
    colStart = mul(remu(tile, nTiles), tileColumns);
    // Groups 0..G-1 and the zero tail [end_{G-1}, T) (entry G); every warp
    // finds the same tile.
    RowTile rows = findRowTile(
        [&](Value g) { return memref::LoadOp::create(b, loc, offsets, g); },
        idx(groups), T, divu(tile, nTiles), cfg.tileM, /*tail=*/true);
    found = uniform(rows.found);
    rowStart = uniform(rows.rowStart);
    rowEnd = uniform(rows.rowEnd);
    group = uniform(rows.group);
    // The tail group runs no K-tile: its accumulators stay zero.
    numK = select(andi(found, lt(group, idx(groups))),
                  idx((kDepth + cfg.tileK - 1) / cfg.tileK), idx(0));
    if (bByCopies) {
      // The tail (group == G) reads no B: any entry will do.
      bMatrix = globalPointer(memref::LoadOp::create(
          b, loc, bArg, minu(group, idx(groups - 1))));
    }
  });
}

/// Ragged K: c[g] = a[rows_g]^T . b[rows_g] for each (N-tile, M-tile,
/// group), on a persistent grid: with the few K-tiles of a group of an MoE
/// (two at 128 rows), storing C takes as long as the MMAs, and loading the
/// next tile while it is stored hides the ring's fill.
class RaggedKGemm : public WarpgroupGemm {
public:
  RaggedKGemm(OpBuilder &b, Location loc, const TargetInfo &target,
              const WarpgroupMma &wg, const Sm90Config &cfg, Type elem,
              bool gatherA, bool gatherB)
      : WarpgroupGemm(
            b, loc, target, wg, cfg, elem,
            {false, Sm90Config::chunkBytes(elem.getIntOrFloatBitWidth() / 8)},
            {false, Sm90Config::chunkBytes(elem.getIntOrFloatBitWidth() / 8)}) {
    aByCopies = gatherA;
    bByCopies = gatherB;
  }

  /// A gathered operand (aRows / bRows given) has no tensor map: its rows
  /// (of `aArg` / `bArg`) are copied by the producer threads.
  void build(Value offsets, Value c, Value T, Value mapA, Value mapB,
             Value mapC, int64_t groups, int64_t m, int64_t n, Value aArg,
             Value bArg, Value aRows, Value bRows, int64_t divisor);

private:
  void loadStage(Value slot, Value kt, Value full) override;
  void prepareStage(Value slot, Value kt) override;
  void copyStage(Value slot, Value kt) override;
  /// One gathered operand of the producer's copies.
  struct Gathered {
    /// The operand's rows (!llvm.ptr<1>), their count and width.
    Value matrix, sources;
    int64_t width;
    /// The row index and the tile's columns [first, first + tile) in the
    /// stage at byte `offset` of a slot.
    Value index;
    int64_t tile, offset;
  };
  /// How many K-rows a thread's copies of a K-tile of `g` cover: its
  /// copies' rows repeat every that many copies.
  int64_t rowsPerThread(const Gathered &g) const;
  /// The K-rows of K-tile `kt` that this thread copies of `g`: (first
  /// element in the operand, bytes) each; rows past the group and entries
  /// outside the operand copy 0 bytes.
  SmallVector<std::pair<Value, Value>> gatheredRows(const Gathered &g,
                                                    Value kt);
  /// K-tile `kt`'s `rows` of `g` into the stage at `slot`, in TMA's
  /// layout: chunks of 64 columns, 128-byte rows (one K-index each),
  /// 16-byte piece p of row r at p ^ (r % 8); columns past the operand's
  /// width zero-filled.
  void copyGathered(const Gathered &g, ArrayRef<std::pair<Value, Value>> rows,
                    Value first, Value slot);
  std::optional<Gathered> gatheredA, gatheredB;
  int64_t divisor = 1;
  /// Stores the consumer's part by TMA: c [G, M, N] is dense, and TMA
  /// clips the boxes at M and N.
  void epilogue(Value consumer, Value acc) override {
    stageC(consumer, acc, [&](int64_t firstColumn, Value buffer,
                              int64_t boxes) {
      ifThen(storeLeader(), [&] {
        storeBoxes(mapC, buffer, boxes,
                   {add(colStart, firstColumn),
                    toI32(add(mStart, mul(consumer, WarpgroupMma::kRows))),
                    toI32(group)});
      });
    });
  }

  int64_t scratchOffset() const { return cfg.scratchOffset(elemBytes); }

  int64_t m = 0, n = 0;
  Value c, mapA, mapB, mapC;
  Value rowStart, rowEnd, group, mStart, colStart;
};

void RaggedKGemm::loadStage(Value slot, Value kt, Value full) {
  Value row = toI32(add(rowStart, mul(kt, cfg.tileK)));
  int64_t chunkBytes = Sm90Config::chunkBytes(elemBytes);
  for (int64_t j = 0; !aByCopies && j < cfg.tileM / Sm90Config::chunk; ++j)
    wg.tmaLoad(b, loc, sharedPointer(add(slot, j * chunkBytes)), mapA, full,
               {toI32(add(mStart, j * Sm90Config::chunk)), row});
  Value bSlot = add(slot, cfg.aBytes(elemBytes));
  for (int64_t j = 0; !bByCopies && j < cfg.tileN / Sm90Config::chunk; ++j)
    wg.tmaLoad(b, loc, sharedPointer(add(bSlot, j * chunkBytes)), mapB, full,
               {toI32(add(colStart, j * Sm90Config::chunk)), row});
}

void RaggedKGemm::copyStage(Value slot, Value kt) {
  // The index entries are loaded once the stage is free: loading them
  // before the producer's wait measured slower on the H200 (the down and
  // gate/up weight gradients 1.18x and 1.15x the time at 32768 tokens).
  if (gatheredA)
    copyGathered(*gatheredA, gatheredRows(*gatheredA, kt), mStart, slot);
  if (gatheredB)
    copyGathered(*gatheredB, gatheredRows(*gatheredB, kt), colStart, slot);
}

// Line l of a ragged-K tile is K-row l % 64 of chunk l / 64.
int64_t RaggedKGemm::rowsPerThread(const Gathered &g) const {
  int64_t copies = g.tile * cfg.tileK / 8 / WarpgroupMma::kWarpgroupThreads;
  return std::min(copies, cfg.tileK / kLinesPerRound);
}

SmallVector<std::pair<Value, Value>>
RaggedKGemm::gatheredRows(const Gathered &g, Value kt) {
  Value firstLine =
      divu(remu(threadId(), WarpgroupMma::kWarpgroupThreads), kPiecesPerLine);
  Value limit = mul(g.sources, divisor);
  SmallVector<std::pair<Value, Value>> rows;
  for (int64_t i = 0; i < rowsPerThread(g); ++i) {
    Value r = add(add(rowStart, mul(kt, cfg.tileK)),
                  add(firstLine, i * kLinesPerRound));
    rows.push_back(
        gatheredCopy(g.index, r, lt(r, rowEnd), limit, divisor, g.width));
  }
  return rows;
}

void RaggedKGemm::copyGathered(const Gathered &g,
                               ArrayRef<std::pair<Value, Value>> rows,
                               Value first, Value slot) {
  int64_t threads = WarpgroupMma::kWarpgroupThreads;
  int64_t copies = g.tile * cfg.tileK / 8 / threads;
  Value thread = remu(threadId(), threads);
  Value piece = remu(thread, kPiecesPerLine);
  Value firstLine = divu(thread, kPiecesPerLine);
  for (int64_t i = 0; i < copies; ++i) {
    Value line = add(firstLine, i * kLinesPerRound);
    Value kRow = remu(line, cfg.tileK), chunk = divu(line, cfg.tileK);
    Value column =
        add(first, add(mul(chunk, Sm90Config::chunk), mul(piece, 8)));
    auto [element, bytes] = rows[i % rows.size()];
    Value offset = add(element, column);
    if (g.width % g.tile) {
      Value inside = lt(column, idx(g.width));
      bytes = select(inside, bytes, i32(0));
      offset = select(inside, offset, idx(0));
    }
    Value src = globalElement(g.matrix, offset);
    Value dst = sharedPointer(
        add(add(slot, g.offset),
            add(mul(chunk, Sm90Config::chunkBytes(elemBytes)),
                add(mul(kRow, WarpgroupMma::kSwizzleBytes),
                    mul(arith::XOrIOp::create(b, loc, piece, remu(kRow, 8)),
                        16)))));
    wg.asyncCopy16(b, loc, dst, src, bytes);
  }
}

void RaggedKGemm::prepareStage(Value slot, Value kt) {
  // Rows of a K-tile past the group's end are the next group's: zero them
  // in every chunk of both tiles (whole 128-byte rows, so the swizzle does
  // not matter). The two consumers share the B tile, so they split the
  // chunks, fence their writes into the async proxy and meet at a barrier
  // before any MMA reads the stage. Every thread stores each step, valid
  // rows' pieces to a scratch line: a branch on a thread's own row would
  // make ptxas serialize the wgmmas after it.
  Value valid = sub(rowEnd, add(rowStart, mul(kt, cfg.tileK)));
  ifThen(lt(valid, idx(cfg.tileK)), [&] {
    int64_t threads = WarpgroupMma::kWarpgroupThreads;
    Value consumer = sub(divu(threadId(), threads), idx(1));
    Value thread = remu(threadId(), threads);
    int64_t chunks = (cfg.tileM + cfg.tileN) / Sm90Config::chunk;
    int64_t perConsumer = (chunks + cfg.consumers - 1) / cfg.consumers;
    int64_t piecesPerRow = WarpgroupMma::kSwizzleBytes / 16;
    int64_t pieces = cfg.tileK * piecesPerRow; // of one chunk
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(VectorType::get({4}, b.getI32Type()),
                                       b.getI32IntegerAttr(0).getValue()));
    for (int64_t step = 0; step < perConsumer * pieces; step += threads) {
      Value piece = add(thread, step);
      Value chunk = add(mul(consumer, perConsumer), divu(piece, pieces));
      Value line = remu(piece, pieces);
      Value zeroed = andi(lt(chunk, idx(chunks)),
                          arith::CmpIOp::create(b, loc,
                                                arith::CmpIPredicate::sge,
                                                divu(line, piecesPerRow),
                                                valid));
      Value offset = add(add(slot, mul(chunk, Sm90Config::chunkBytes(
                                                  elemBytes))),
                         mul(line, 16));
      LLVM::StoreOp::create(b, loc, zero,
                            sharedPointer(select(zeroed, offset,
                                                 idx(scratchOffset()))),
                            /*alignment=*/16);
    }
    wg.fenceSharedForAsync(b, loc);
    wg.barrier(b, loc, i32(1), cfg.consumers * threads);
  });
}

void RaggedKGemm::build(Value offsets, Value cArg, Value T, Value mapAArg,
                        Value mapBArg, Value mapCArg, int64_t groups,
                        int64_t mRows, int64_t nCols, Value aArg, Value bArg,
                        Value aRows, Value bRows, int64_t rowsDivisor) {
  c = cArg;
  divisor = rowsDivisor;
  auto gathered = [&](Value operand, Value index, int64_t width, int64_t tile,
                      int64_t offset) {
    return Gathered{globalMatrix(operand),
                    memref::DimOp::create(b, loc, operand, 0),
                    width,
                    index,
                    tile,
                    offset};
  };
  if (aRows)
    gatheredA = gathered(aArg, aRows, mRows, cfg.tileM, 0);
  if (bRows)
    gatheredB = gathered(bArg, bRows, nCols, cfg.tileN, cfg.aBytes(elemBytes));
  cElem = cast<MemRefType>(c.getType()).getElementType();
  mapA = mapAArg;
  mapB = mapBArg;
  mapC = mapCArg;
  m = mRows;
  n = nCols;
  // Tiles in the order (N-tile, M-tile, group), N fastest: the blocks
  // running at once share a group's rows of a in L2.
  int64_t nTiles = tilesOf(n, cfg.tileN), mTiles = tilesOf(m, cfg.tileM);
  runPersistent(idx(nTiles * mTiles * groups), [&](Value tile) {
    colStart = mul(remu(tile, nTiles), cfg.tileN);
    mStart = mul(remu(divu(tile, nTiles), mTiles), cfg.tileM);
    group = divu(tile, nTiles * mTiles);
    // An empty group runs no K-tile: its accumulators stay zero.
    auto [start, end] = groupRows(offsets, group, groups, T);
    rowStart = uniform(start);
    rowEnd = uniform(end);
    numK = arith::CeilDivUIOp::create(b, loc, sub(rowEnd, rowStart),
                                      idx(cfg.tileK));
  });
}

/// Bytes of an operand element: wgmma takes 16-bit operands here
/// (WarpgroupMma::supports).
constexpr int64_t kElemBytes = 2;

/// The ring's configuration for tileN columns and an epilogue buffer of
/// `epilogueBytes` (as many stages as fit, at most 4, unless the kernel's
/// tessel.gpu_stages says); an error on `op` naming the shared-memory limit
/// when it does not fit.
FailureOr<Sm90Config> configure(Operation *op, const KernelContext &ctx,
                                int64_t tileN, int64_t epilogueBytes) {
  Sm90Config cfg;
  cfg.tileN = tileN;
  cfg.epilogueBytes = epilogueBytes;
  int64_t limit = ctx.target.getSharedMemoryBytes();
  if (ctx.stages > 0)
    cfg.stages = ctx.stages;
  else
    while (cfg.stages > 2 && cfg.sharedBytes(kElemBytes) > limit)
      --cfg.stages;
  if (cfg.stages >= 2 && cfg.sharedBytes(kElemBytes) <= limit)
    return cfg;
  // Two stages always fit: at most 2 x 48 KB and a 32 KB epilogue buffer.
  Sm90Config most = cfg;
  for (most.stages = 2; most.sharedBytes(kElemBytes) <= limit;)
    ++most.stages;
  return op->emitOpError() << "GPU template: " << cfg.stages << " stages of 128x"
               << cfg.tileN << "x64 tiles and a " << cfg.epilogueBytes
               << "-byte epilogue buffer need " << cfg.sharedBytes(kElemBytes)
               << " bytes of shared memory; " << ctx.target.getChip()
               << " takes 2 to " << most.stages - 1 << " stages";
}

constexpr int64_t kSwizzle128 = 3;

} // namespace

bool mlir::tessel::hasGroupedMatmulSm90(GroupedMatmulOp op,
                                        const TargetInfo &target) {
  const WarpgroupMma *wg = target.getWarpgroupMma();
  Type elem = cast<MemRefType>(op.getA().getType()).getElementType();
  // A tessel.gpu_tile override names a tile of the sm80 main loop. Without
  // trans_b, B tiles are whole 64-column chunks of whole 64-row K-tiles.
  bool layout = op.getTransB() || (op.getN() % Sm90Config::chunk == 0 &&
                                   op.getK() % Sm90Config::tileK == 0);
  // The fused SwiGLU's tiles are 128 gate and 128 up columns, its passes
  // inside one half: I a multiple of 128 (else the sm80 main loop).
  if (op.getAct() && (op.getN() / 2) % 128)
    return false;
  return wg && layout && !op->hasAttr("tessel.gpu_tile") &&
         wg->supports(elem, std::min<int64_t>(256, op.getN()));
}

FailureOr<LaunchGeometry>
mlir::tessel::buildGroupedMatmulSm90(OpBuilder &b, GroupedMatmulOp op,
                                     KernelContext &ctx) {
  const WarpgroupMma &wg = *ctx.target.getWarpgroupMma();
  Type elem = cast<MemRefType>(op.getA().getType()).getElementType();
  // buildGroupedMatmul has checked what both main loops need: N and K
  // whole 16-byte chunks (TMA's row strides too), G static.
  int64_t n = op.getN(), k = op.getK();
  int64_t groups = cast<MemRefType>(op.getB().getType()).getDimSize(0);
  Type cElem = cast<MemRefType>(op.getC().getType()).getElementType();
  Sm90Config sized;
  sized.tileN = std::min<int64_t>(256, n);
  FailureOr<Sm90Config> cfg =
      configure(op, ctx, sized.tileN, sized.stagedBytes(cElem));
  if (failed(cfg))
    return failure();

  Location loc = op.getLoc();
  // a [T, K] as {K, T}; b [G, N, K] as {K, G * N} in boxes of 64 x tileN,
  // or b [G, K, N] as {N, G * K} in boxes of 64 x 64; c [T, N] as {N, T}
  // in boxes of 128 bytes x 64 rows; 128-byte swizzled.
  bool transB = op.getTransB();
  // Gathered rows of a are copied by the producer threads instead.
  bool gather = static_cast<bool>(op.getARows());
  Value mapA;
  if (!gather)
    mapA = ctx.addTensorMap({ctx.argIndex(op.getA()),
                             {{1, 2}, {0, 1}},
                             {Sm90Config::tileK, Sm90Config::tileM},
                             kSwizzle128});
  // A pointer table's matrices are copied by the producer threads instead.
  bool pointerTable = op.isPointerTable();
  Value mapB;
  // The fused SwiGLU loads B's gate and up rows as two boxes.
  bool swiglu = static_cast<bool>(op.getAct());
  int64_t bBoxRows = swiglu ? cfg->tileN / 2 : cfg->tileN;
  if (!pointerTable)
    mapB = ctx.addTensorMap({ctx.argIndex(op.getB()),
                             {{2, 3}, {0, 2}},
                             {transB ? Sm90Config::tileK : Sm90Config::chunk,
                              transB ? bBoxRows : Sm90Config::tileK},
                             kSwizzle128});
  auto mapOut = [&](Value out) {
    return ctx.addTensorMap(
        {ctx.argIndex(out),
         {{1, 2}, {0, 1}},
         {Sm90Config::boxColumns(cElem), WarpgroupMma::kRows},
         kSwizzle128});
  };
  Value mapC = mapOut(op.getC());
  Value mapAct = swiglu ? mapOut(op.getAct()) : Value();
  // findRowTile's M-tiles: each group's, and the tail's, last one may be
  // partial, so T rows take at most (T + (G + 1) * (tileM - 1)) / tileM.
  int64_t slack = (groups + 1) * (Sm90Config::tileM - 1);
  Value T = ctx.dimValue(b, op.getC(), 0);
  Value mTiles = arith::DivUIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc, T, arith::ConstantIndexOp::create(b, loc, slack)),
      arith::ConstantIndexOp::create(b, loc, Sm90Config::tileM));
  RaggedMGemm(b, loc, ctx.target, wg, *cfg, elem, transB, pointerTable, gather,
              swiglu)
      .build(ctx.arg(op.getGroupOffsets()), ctx.arg(op.getC()), T, mTiles, mapA,
             mapB, mapC, ctx.arg(op.getB()), groups, n, k, ctx.arg(op.getA()),
             ctx.arg(op.getARows()), op.getRowsDivisorOrOne(),
             ctx.arg(op.getAct()), mapAct);

  // One block an SM, fewer when T is a constant with fewer tiles.
  const KernelDim &rows = ctx.dim(op.getC(), 0);
  int64_t blocks = Sm90Config::persistentBlocks;
  if (rows.symbol < 0)
    blocks =
        std::min(blocks, tilesOf(swiglu ? n / 2 : n,
                                 swiglu ? cfg->tileN / 2 : cfg->tileN) *
                             ((rows.constant + slack) / Sm90Config::tileM));
  LaunchGeometry geometry;
  geometry.grid[0] = GridDim{-1, 1, std::max<int64_t>(blocks, 1), 1};
  geometry.grid[1] = GridDim{-1, 1, 1, 1};
  geometry.grid[2] = GridDim{-1, 1, 1, 1};
  geometry.block = {static_cast<int32_t>(Sm90Config::threads), 1, 1};
  geometry.sharedBytes = cfg->sharedBytes(kElemBytes);
  return geometry;
}

bool mlir::tessel::hasGroupedMatmulWgradSm90(GroupedMatmulWgradOp op,
                                             const TargetInfo &target) {
  const WarpgroupMma *wg = target.getWarpgroupMma();
  auto cType = cast<MemRefType>(op.getC().getType());
  Type elem = cast<MemRefType>(op.getA().getType()).getElementType();
  int64_t n = cType.getDimSize(2);
  return wg && !op->hasAttr("tessel.gpu_tile") && n % Sm90Config::chunk == 0 &&
         wg->supports(elem, std::min<int64_t>(256, n));
}

FailureOr<LaunchGeometry>
mlir::tessel::buildGroupedMatmulWgradSm90(OpBuilder &b,
                                          GroupedMatmulWgradOp op,
                                          KernelContext &ctx) {
  const WarpgroupMma &wg = *ctx.target.getWarpgroupMma();
  Type elem = cast<MemRefType>(op.getA().getType()).getElementType();
  // buildGroupedMatmulWgrad has checked c [G, M, N] static, M and N whole
  // 16-byte chunks.
  auto cType = cast<MemRefType>(op.getC().getType());
  int64_t groups = cType.getDimSize(0), m = cType.getDimSize(1),
          n = cType.getDimSize(2);
  int64_t tileN = std::min<int64_t>(256, n);
  Sm90Config sized;
  sized.tileN = tileN;
  FailureOr<Sm90Config> cfg =
      configure(op, ctx, tileN, sized.stagedBytes(cType.getElementType()));
  if (failed(cfg))
    return failure();

  // a [T, M] as {M, T}, b [T, N] as {N, T}: boxes of 64 x 64, 128-byte
  // swizzled, MN-major. A gathered operand is copied by the producer
  // threads instead.
  auto operandMap = [&](Value operand, Value rows) {
    if (rows)
      return Value();
    return ctx.addTensorMap({ctx.argIndex(operand),
                             {{1, 2}, {0, 1}},
                             {Sm90Config::chunk, Sm90Config::tileK},
                             kSwizzle128});
  };
  Value mapA = operandMap(op.getA(), op.getARows());
  Value mapB = operandMap(op.getB(), op.getBRows());
  // c [G, M, N] as {N, M, G} in boxes of 128 bytes x 64 rows, 128-byte
  // swizzled, stored by TMA.
  Value mapC = ctx.addTensorMap(
      {ctx.argIndex(op.getC()),
       {{2, 3}, {1, 2}, {0, 1}},
       {Sm90Config::boxColumns(cType.getElementType()), WarpgroupMma::kRows, 1},
       kSwizzle128});
  // The product's rows: a's, or a_rows' when a is gathered.
  Value rows = op.getARows() ? op.getARows() : op.getA();
  RaggedKGemm(b, op.getLoc(), ctx.target, wg, *cfg, elem,
              static_cast<bool>(op.getARows()),
              static_cast<bool>(op.getBRows()))
      .build(ctx.arg(op.getGroupOffsets()), ctx.arg(op.getC()),
             ctx.dimValue(b, rows, 0), mapA, mapB, mapC, groups, m, n,
             ctx.arg(op.getA()), ctx.arg(op.getB()), ctx.arg(op.getARows()),
             ctx.arg(op.getBRows()), op.getRowsDivisorOrOne());

  int64_t tiles = tilesOf(n, cfg->tileN) * tilesOf(m, Sm90Config::tileM) *
                  groups;
  LaunchGeometry geometry;
  geometry.grid[0] =
      GridDim{-1, 1, std::min(tiles, Sm90Config::persistentBlocks), 1};
  geometry.grid[1] = GridDim{-1, 1, 1, 1};
  geometry.grid[2] = GridDim{-1, 1, 1, 1};
  geometry.block = {static_cast<int32_t>(Sm90Config::threads), 1, 1};
  geometry.sharedBytes = cfg->sharedBytes(kElemBytes);
  return geometry;
}
