//===- GroupedMatmulSm90.cpp - Ragged-M grouped matmul on wgmma + TMA -----===//
//
// The Hopper main loop of tessel.grouped_matmul with stacked b (trans_b: the
// MoE forward; without: the dgrad), a sibling of the sm80 template in
// GroupedMatmul.cpp that shares
// its work decomposition: group tiles found on the device from
// group_offsets (KernelBuilder::findRowTile), the zero tail past the last
// group, one block per (N-tile, M-tile) with blocks past the last tile
// leaving at once, rows of a neighbouring group masked at the store.
//
// Block: 3 warpgroups. Warpgroup 0 is the producer: one elected lane of its
// first warp issues, per K-tile, the TMA copies of the A tile (128 rows of
// a from the tile's first row) and the B tile (with trans_b, tileN rows of
// b[group] seen as [G * N, K], K-major; without, 64 rows of b[group] seen
// as [G * K, N] in tileN / 64 boxes of 64 columns, MN-major: wgmma reads it
// transposed) into a `stages`-deep ring of 128-byte-swizzled stages, each
// completing on its `full` mbarrier; it first waits on the stage's `empty`
// mbarrier. Warpgroups 1 and 2 are consumers, each owning 64 rows of the
// tile: they wait on `full`, issue 4 wgmma m64n<tileN>k16 from shared memory
// (accumulators in registers), keep one group of MMAs in flight and release
// the previous stage. setmaxnreg moves registers from the producer (40) to
// the consumers (232). TMA zero-fills what lies past a's rows, past b's
// last row and past K (or N), so K needs no tail loop; rows of the next
// group and columns past N are computed and never stored. Without trans_b
// a partial K-tile would read the next group's rows of b: K must be whole
// K-tiles there.
//
// Epilogue: each consumer thread stores its accumulator pairs as 4-byte
// (2 x 16-bit) stores, predicated on the group's last row and on N.
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

/// 128 x tileN x 64 tiles: 64 16-bit elements of K are one 128-byte
/// swizzled row; 128 rows are the two consumers' m64 MMAs. tileN 256 (the
/// widest wgmma) measured 10-15% ahead of 128 on the H200 (docs/sm90a.md).
struct Sm90Config {
  static constexpr int64_t tileM = 2 * WarpgroupMma::kRows;
  static constexpr int64_t tileK = 64;
  static constexpr int64_t consumers = 2;
  static constexpr int64_t threads =
      (1 + consumers) * WarpgroupMma::kWarpgroupThreads;
  int64_t tileN = 256;
  int64_t stages = 4;
  /// b [G, N, K] (K-major tiles); else [G, K, N] (MN-major tiles).
  bool transB = true;
  /// An MN-major B tile is chunks of 64 columns, one TMA box each.
  static constexpr int64_t chunkN = 64;

  WarpgroupMma::SharedOperand bOperand(int64_t elemBytes) const {
    return {transB, tileK * chunkN * elemBytes};
  }

  int64_t aBytes(int64_t elemBytes) const { return tileM * tileK * elemBytes; }
  int64_t stageBytes(int64_t elemBytes) const {
    return (tileM + tileN) * tileK * elemBytes;
  }
  /// The ring, its 2 * stages mbarriers and the slack that lets the kernel
  /// align the ring to the swizzle atom.
  int64_t sharedBytes(int64_t elemBytes) const {
    return stages * stageBytes(elemBytes) + 16 * stages +
           WarpgroupMma::kSwizzleAlignment;
  }
};

class GroupedMatmulSm90Builder : public KernelBuilder {
public:
  GroupedMatmulSm90Builder(OpBuilder &b, Location loc,
                           const TargetInfo &target, const WarpgroupMma &wg,
                           const Sm90Config &cfg, Type elem)
      : KernelBuilder(b, loc, target), wg(wg), cfg(cfg), elem(elem),
        elemBytes(elem.getIntOrFloatBitWidth() / 8) {}

  void build(Value offsets, Value c, Value T, Value mapA, Value mapB,
             int64_t groups, int64_t n, int64_t k);

private:
  /// Issues the TMA copies of K-tile `kt` into stage `stage`, completing on
  /// `full`.
  void loadStage(Value stage, Value kt, Value full);
  /// Byte `offset` (index) of the aligned ring as !llvm.ptr<3>.
  Value sharedPointer(Value offset);
  /// Barrier `index` (index): full barriers first, then empty ones.
  Value barrier(Value index) {
    return sharedPointer(add(mul(index, 8), cfg.stages * stageBytes));
  }
  Value parity(Value kt, bool flip);
  void produce();
  /// `x` (index or i1) from lane 0 of the warp: the same value, but one
  /// ptxas can see is warp-uniform. Without it, wgmmas under branches and
  /// loops on values from shuffle scans or thread ids count as divergent
  /// and are serialized (ptxas C7520); CUTLASS broadcasts its warpgroup
  /// index for the same reason.
  Value uniform(Value x);
  /// The consumer's K loop; returns the accumulator struct.
  Value consume(Value consumer);
  void epilogue(Value consumer, Value thread, Value acc);

  const WarpgroupMma &wg;
  Sm90Config cfg;
  Type elem;
  int64_t elemBytes, stageBytes = 0;
  int64_t n = 0, k = 0, groups = 0;
  Value c, mapA, mapB;
  /// The ring's base as a shared pointer and as a 32-bit shared address.
  Value ringBase, ringAddress;
  Value numK, rowStart, rowEnd, group, colStart;
};

Value GroupedMatmulSm90Builder::uniform(Value x) {
  Type type = x.getType();
  Value word = type.isIndex() ? toI32(x)
                              : arith::ExtUIOp::create(b, loc, b.getI32Type(),
                                                       x).getResult();
  word = broadcast(word, i32(0));
  if (type.isIndex())
    return toIndex(word);
  return arith::TruncIOp::create(b, loc, type, word);
}

Value GroupedMatmulSm90Builder::sharedPointer(Value offset) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext(), 3);
  return LLVM::GEPOp::create(b, loc, ptr, b.getI8Type(), ringBase,
                             ValueRange{toI32(offset)});
}

/// The parity a K-tile's wait needs: the stage's use count mod 2, flipped
/// for the producer's `empty` wait (a fresh barrier passes parity 1, so the
/// first round of the ring does not wait).
Value GroupedMatmulSm90Builder::parity(Value kt, bool flip) {
  Value use = remu(divu(kt, cfg.stages), 2);
  if (flip)
    use = arith::XOrIOp::create(b, loc, use, idx(1));
  return toI32(use);
}

void GroupedMatmulSm90Builder::produce() {
  wg.setRegisters(b, loc, 40, /*increase=*/false);
  Value warp = divu(threadId(), warpSize);
  Value lead = andi(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          warp, idx(0)),
                    wg.electOne(b, loc));
  ifThen(lead, [&] {
    auto loop = scf::ForOp::create(b, loc, idx(0), numK, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value stage = remu(kt, cfg.stages);
    Value full = barrier(stage);
    wg.waitParity(b, loc, barrier(add(stage, cfg.stages)), parity(kt, true));
    wg.arriveExpectBytes(b, loc, full, stageBytes);
    loadStage(stage, kt, full);
  });
}

void GroupedMatmulSm90Builder::loadStage(Value stage, Value kt, Value full) {
  Value k0 = mul(kt, cfg.tileK);
  Value aSlot = mul(stage, stageBytes);
  Value bSlot = add(aSlot, cfg.aBytes(elemBytes));
  wg.tmaLoad(b, loc, sharedPointer(aSlot), mapA, full,
             {toI32(k0), toI32(rowStart)});
  if (cfg.transB) {
    wg.tmaLoad(b, loc, sharedPointer(bSlot), mapB, full,
               {toI32(k0), toI32(add(mul(group, n), colStart))});
    return;
  }
  int64_t chunkBytes = cfg.bOperand(elemBytes).chunkBytes;
  Value bRow = toI32(add(mul(group, k), k0));
  for (int64_t j = 0; j < cfg.tileN / Sm90Config::chunkN; ++j)
    wg.tmaLoad(b, loc, sharedPointer(add(bSlot, j * chunkBytes)), mapB, full,
               {toI32(add(colStart, j * Sm90Config::chunkN)), bRow});
}

Value GroupedMatmulSm90Builder::consume(Value consumer) {
  wg.setRegisters(b, loc, 232, /*increase=*/true);
  Value zero = wg.zeroAccumulators(b, loc, cfg.tileN);
  // This consumer's 64 rows of the A tile start 64 rows of 128 bytes in.
  Value aOffset = mul(consumer, WarpgroupMma::kRows * cfg.tileK * elemBytes);
  auto loop = scf::ForOp::create(b, loc, idx(0), numK, idx(1), zero);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    Value stage = remu(kt, cfg.stages);
    wg.waitParity(b, loc, barrier(stage), parity(kt, false));
    Value slot = add(ringAddress, toI32(mul(stage, stageBytes)));
    WarpgroupMma::SharedOperand aOperand, bOperand = cfg.bOperand(elemBytes);
    Value descA =
        wg.sharedDescriptor(b, loc, add(slot, toI32(aOffset)), aOperand);
    Value descB = wg.sharedDescriptor(
        b, loc, add(slot, i32(cfg.aBytes(elemBytes))), bOperand);
    Value acc = loop.getRegionIterArgs().front();
    wg.fence(b, loc);
    // Each MMA's 16-element K slice is kStepBytes further into the tile:
    // bytes >> 4 in the descriptor's address field.
    auto step = [&](Value desc, WarpgroupMma::SharedOperand operand,
                    int64_t s) -> Value {
      int64_t bytes = s * WarpgroupMma::kStepBytes(operand);
      return arith::AddIOp::create(
          b, loc, desc,
          arith::ConstantIntOp::create(b, loc, b.getI64Type(), bytes >> 4));
    };
    for (int64_t s = 0; s < cfg.tileK / WarpgroupMma::kDepth; ++s)
      acc = wg.mma(b, loc, elem, cfg.tileN, step(descA, aOperand, s),
                   step(descB, bOperand, s), bOperand, acc);
    wg.commit(b, loc);
    // Keep this K-tile's MMAs in flight; the previous tile's are done, so
    // its stage goes back to the producer.
    wg.wait(b, loc, 1);
    Value previous = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                           kt, idx(0));
    ifThen(previous, [&] {
      Value before = remu(add(kt, cfg.stages - 1), cfg.stages);
      wg.arrive(b, loc, barrier(add(before, cfg.stages)));
    });
    scf::YieldOp::create(b, loc, acc);
  }
  wg.wait(b, loc, 0);
  return loop.getResult(0);
}

void GroupedMatmulSm90Builder::epilogue(Value consumer, Value thread,
                                        Value acc) {
  auto pairType = VectorType::get({2}, elem);
  Value rowBase = add(rowStart, mul(consumer, WarpgroupMma::kRows));
  for (int64_t i = 0; i < cfg.tileN / 2; i += 2) {
    auto [r, col] = wg.accumulatorPosition(b, loc, thread, i);
    Value row = add(rowBase, r), column = add(colStart, col);
    Value inside = lt(row, rowEnd);
    // N is a multiple of 8 and a pair never crosses an 8-column boundary.
    if (n % cfg.tileN)
      inside = andi(inside, lt(column, idx(n)));
    ifThen(inside, [&] {
      SmallVector<Value> pair;
      for (int64_t v = 0; v < 2; ++v)
        pair.push_back(arith::TruncFOp::create(
            b, loc, elem, wg.accumulator(b, loc, acc, i + v)));
      Value vec = vector::FromElementsOp::create(b, loc, pairType, pair);
      vector::StoreOp::create(b, loc, vec, c, ValueRange{row, column},
                              /*nontemporal=*/false,
                              llvm::MaybeAlign(2 * elemBytes));
    });
  }
}

void GroupedMatmulSm90Builder::build(Value offsets, Value cArg, Value T,
                                     Value mapAArg, Value mapBArg,
                                     int64_t groupCount, int64_t nCols,
                                     int64_t kDepth) {
  c = cArg;
  mapA = mapAArg;
  mapB = mapBArg;
  n = nCols;
  k = kDepth;
  groups = groupCount;
  stageBytes = cfg.stageBytes(elemBytes);
  numK = idx((kDepth + cfg.tileK - 1) / cfg.tileK);
  colStart = mul(blockId(gpu::Dimension::x), cfg.tileN);

  // The ring starts at the first 1024-byte boundary of dynamic shared
  // memory: TMA's 128-byte swizzle and the descriptors assume it.
  Value bytes = dynamicSharedBytes();
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bytes);
  Value aligned = mul(arith::CeilDivUIOp::create(
                          b, loc, base, idx(WarpgroupMma::kSwizzleAlignment)),
                      WarpgroupMma::kSwizzleAlignment);
  ringAddress = toI32(aligned);
  ringBase = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3),
      arith::IndexCastOp::create(b, loc, b.getI64Type(), aligned)
          .getResult());

  Value thread = threadId();
  ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread,
                               idx(0)),
         [&] {
           for (int64_t s = 0; s < cfg.stages; ++s) {
             wg.barrierInit(b, loc, barrier(idx(s)), 1);
             wg.barrierInit(b, loc, barrier(idx(cfg.stages + s)),
                            cfg.consumers *
                                WarpgroupMma::kWarpgroupThreads);
           }
           wg.barrierInitFence(b, loc);
         });
  gpu::BarrierOp::create(b, loc);

  // Groups 0..G-1 and the zero tail [end_{G-1}, T) (entry G); every warp
  // finds the same tile.
  RowTile tile = findRowTile(
      [&](Value g) { return memref::LoadOp::create(b, loc, offsets, g); },
      idx(groups), T, blockId(gpu::Dimension::y), cfg.tileM, /*tail=*/true);
  ifThen(uniform(tile.found), [&] {
    rowStart = uniform(tile.rowStart);
    rowEnd = uniform(tile.rowEnd);
    group = uniform(tile.group);
    // The tail group runs no K-tile: its accumulators stay zero.
    numK = select(lt(group, idx(groups)), numK, idx(0));
    Value role = uniform(divu(thread, WarpgroupMma::kWarpgroupThreads));
    auto roles = scf::IfOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, role,
                                      idx(0)),
        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(roles.thenBlock());
    produce();
    b.setInsertionPointToStart(roles.elseBlock());
    Value consumer = sub(role, idx(1));
    Value acc = consume(consumer);
    epilogue(consumer, remu(thread, WarpgroupMma::kWarpgroupThreads), acc);
  });
}

} // namespace

bool mlir::tessel::hasGroupedMatmulSm90(GroupedMatmulOp op,
                                        const TargetInfo &target) {
  const WarpgroupMma *wg = target.getWarpgroupMma();
  Type elem = cast<MemRefType>(op.getA().getType()).getElementType();
  // A tessel.gpu_tile override names a tile of the sm80 main loop. Without
  // trans_b, B tiles are whole 64-column chunks of whole 64-row K-tiles.
  bool layout = op.getTransB() || (op.getN() % Sm90Config::chunkN == 0 &&
                                   op.getK() % Sm90Config::tileK == 0);
  return wg && layout && !op.isPointerTable() &&
         !op->hasAttr("tessel.gpu_tile") &&
         wg->supports(elem, std::min<int64_t>(256, op.getN()));
}

FailureOr<LaunchGeometry>
mlir::tessel::buildGroupedMatmulSm90(OpBuilder &b, GroupedMatmulOp op,
                                     KernelContext &ctx) {
  const WarpgroupMma &wg = *ctx.target.getWarpgroupMma();
  Type elem = cast<MemRefType>(op.getA().getType()).getElementType();
  // buildGroupedMatmul has checked what both main loops need: N and K
  // whole 16-byte chunks (TMA's row strides too), G static.
  int64_t n = op.getN(), k = op.getK(), elemBytes = 2;
  int64_t groups = cast<MemRefType>(op.getB().getType()).getDimSize(0);
  Sm90Config cfg;
  cfg.tileN = std::min<int64_t>(cfg.tileN, n);
  cfg.transB = op.getTransB();
  if (ctx.stages > 0)
    cfg.stages = ctx.stages;
  if (cfg.stages < 2 ||
      cfg.sharedBytes(elemBytes) > ctx.target.getSharedMemoryBytes())
    return op.emitOpError()
           << "GPU template: " << cfg.stages << " stages of 128x"
           << cfg.tileN << "x64 tiles need "
           << cfg.sharedBytes(elemBytes)
           << " bytes of shared memory; " << ctx.target.getChip()
           << " takes 2 to "
           << (ctx.target.getSharedMemoryBytes() -
               WarpgroupMma::kSwizzleAlignment) /
                  (cfg.stageBytes(elemBytes) + 16)
           << " stages";

  Location loc = op.getLoc();
  // a [T, K] as {K, T}; b [G, N, K] as {K, G * N} in boxes of 64 x tileN,
  // or b [G, K, N] as {N, G * K} in boxes of 64 x 64; 128-byte swizzled.
  constexpr int64_t kSwizzle128 = 3;
  Value mapA = ctx.addTensorMap(
      {0, {{1, 2}, {0, 1}}, {Sm90Config::tileK, Sm90Config::tileM},
       kSwizzle128});
  int64_t bBoxRows = cfg.transB ? cfg.tileN : Sm90Config::tileK;
  int64_t bBoxColumns = cfg.transB ? Sm90Config::tileK : Sm90Config::chunkN;
  Value mapB = ctx.addTensorMap(
      {1, {{2, 3}, {0, 2}}, {bBoxColumns, bBoxRows}, kSwizzle128});
  const KernelDim &rows = ctx.dim(op.getA(), 0);
  Value T = rows.symbol < 0
                ? arith::ConstantIndexOp::create(b, loc, rows.constant)
                      .getResult()
                : arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                             ctx.symbols[rows.symbol])
                      .getResult();
  GroupedMatmulSm90Builder(b, loc, ctx.target, wg, cfg, elem)
      .build(ctx.args[2], ctx.args[3], T, mapA, mapB, groups, n, k);

  LaunchGeometry geometry;
  geometry.grid[0] = GridDim{-1, 1, n, cfg.tileN};
  geometry.grid[1] = GridDim{rows.symbol, 1,
                             (rows.symbol >= 0 ? 0 : rows.constant) +
                                 (groups + 1) * (Sm90Config::tileM - 1),
                             Sm90Config::tileM};
  geometry.grid[2] = GridDim{-1, 1, 1, 1};
  geometry.block = {static_cast<int32_t>(Sm90Config::threads), 1, 1};
  geometry.sharedBytes = cfg.sharedBytes(elemBytes);
  return geometry;
}
