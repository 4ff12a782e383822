//===- MlaDecodeSm90.cpp - Absorbed MLA decode on wgmma + TMA --------------===//
//
// The Hopper (sm_90a) kernel of mla_decode, a sibling of MlaDecode.cpp with
// its work decomposition: block (g, b, p) takes 64 query heads (one wgmma
// row tile; heads past H are TMA's zeros, never stored) of request b over
// split p of its context (windows of whole cache blocks).
//
// Block: 3 warpgroups. Warpgroup 0 is the producer: one elected lane copies
// Q [64, L+R] once, then each 64-token tile of 576-wide latent rows into a
// 2-stage ring, page by page from the block table (a TMA box per 64 rows of
// a page, or per page where pages are smaller), through a tensor map of
// the cache seen as rows [NB * BS, L+R]. A tile's rows serve as K (all L+R
// columns) and as V (the first L). The 64 x L output does not fit one
// warpgroup's registers, so the two consumers split its columns:
//   consumer 0 computes S = Q K^T (wgmma from shared memory), the online
//   softmax, and O[:, 0, L/2) += P V with P from registers; it hands P
//   (bf16, 128-byte swizzled, the layout of a K-major wgmma operand) and
//   the rescale factors to consumer 1 through shared memory (named barrier
//   2: P ready; 3: P consumed);
//   consumer 1 accumulates O[:, L/2, L) += P V with P from shared memory.
// Keys past the window are masked in S; on the last tile, rows past it are
// zeroed in shared memory first (P is 0 there, but 0 x NaN is NaN and the
// cache past a context may hold anything), as in PrefillSm90.cpp.
//
// Epilogue: consumer 0 hands the final row sums over; each consumer stores
// O / l for its columns; consumer 0 the LSE.
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilder.h"

#include "tessel/Target/WarpgroupMma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr int64_t kElemBytes = 2;

struct MlaSm90Config {
  static constexpr int64_t rows = WarpgroupMma::kRows;
  static constexpr int64_t tileTokens = 64;
  static constexpr int64_t consumers = 2;
  static constexpr int64_t threads =
      (1 + consumers) * WarpgroupMma::kWarpgroupThreads;
  /// Elements of one 128-byte swizzled row.
  static constexpr int64_t chunk = WarpgroupMma::kSwizzleBytes / kElemBytes;
  /// Bytes of one 64-column chunk of a 64-row tile (Q, a K/V tile, P).
  static constexpr int64_t chunkBytes = 64 * WarpgroupMma::kSwizzleBytes;
  int64_t headDim = 576, latentDim = 512, stages = 2;

  int64_t tileBytes() const { return tileTokens * headDim * kElemBytes; }
  int64_t qBytes() const { return rows * headDim * kElemBytes; }
  // Layout: Q, the ring, P (one chunk), then f32 [64] rescale factors and
  // [64] row sums, the mbarriers full[stages], empty[stages], qFull, a
  // 16-byte scratch line and the alignment slack.
  int64_t ringOffset() const { return qBytes(); }
  int64_t pOffset() const { return ringOffset() + stages * tileBytes(); }
  int64_t alphaOffset() const { return pOffset() + chunkBytes; }
  int64_t sumOffset() const { return alphaOffset() + rows * 4; }
  int64_t barrierOffset() const { return sumOffset() + rows * 4; }
  int64_t scratchOffset() const {
    return barrierOffset() + 16 * ((8 * (2 * stages + 1) + 15) / 16);
  }
  int64_t sharedBytes() const {
    return scratchOffset() + 16 + WarpgroupMma::kSwizzleAlignment;
  }
};

struct MlaSm90Problem {
  Value blockTable, lens, out, lse, mapQ, mapCache, numBlocks;
  int64_t heads, blockSize;
  Value scaleLog2;
  bool split;
};

class MlaSm90Builder : public AttentionBuilder {
public:
  MlaSm90Builder(OpBuilder &b, Location loc, const TargetInfo &target,
                 const MmaAtom &atom, const WarpgroupMma &wg,
                 const MlaSm90Config &cfg, const MlaSm90Problem &pb, Type elem)
      : AttentionBuilder(b, loc, target, atom), wg(wg), cfg(cfg), pb(pb),
        elem(elem) {}

  void build();

private:
  void produce();
  /// Waits for K/V tile kt; zeroes its rows past the window. Returns its
  /// stage and the stage's byte offset.
  std::pair<Value, Value> arrived(Value kt);
  void scoreConsumer();
  void valueConsumer();
  /// Rescales the accumulators `acc` by the factor of each member's row.
  Value rescale(Value acc, ArrayRef<Value> rowFactors);
  /// O += P V for this consumer's L/2 columns of the stage at `slot`, P
  /// from registers (`words`) or (none) from shared memory.
  Value issueValues(Value slot, ValueRange words, Value acc);
  /// Stores O / l for this consumer's columns (and the LSE: consumer 0).
  void epilogue(Value acc, ArrayRef<Value> inv, ArrayRef<Value> lse);

  Value ptr(Value offset) { return sharedByte(base, offset); }
  Value barrier(Value index) {
    return ptr(add(mul(index, 8), cfg.barrierOffset()));
  }
  Value descriptor(Value offset, WarpgroupMma::SharedOperand operand) {
    return wg.sharedDescriptor(b, loc, add(address, toI32(offset)), operand);
  }
  /// Named barrier `id` of both consumers: wait, or arrive and go on.
  void meet(int64_t id, bool arrive) {
    wg.barrier(b, loc, i32(id),
               cfg.consumers * WarpgroupMma::kWarpgroupThreads, arrive);
  }
  /// Rows (0..63) of this thread's accumulator slots 0 and 1.
  std::pair<Value, Value> slotRows() {
    Value t = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
    return {wg.accumulatorPosition(b, loc, t, 0).first,
            wg.accumulatorPosition(b, loc, t, 2).first};
  }

  const WarpgroupMma &wg;
  MlaSm90Config cfg;
  MlaSm90Problem pb;
  Type elem;
  Value base, address, group, request, split;
  Value start, end, numK, maxBlocks;
};

void MlaSm90Builder::produce() {
  int64_t chunks = cfg.headDim / cfg.chunk;
  Value qFull = barrier(idx(2 * cfg.stages));
  wg.arriveExpectBytes(b, loc, qFull, cfg.qBytes());
  for (int64_t c = 0; c < chunks; ++c)
    wg.tmaLoad(b, loc, ptr(idx(c * cfg.chunkBytes)), pb.mapQ, qFull,
               {i32(c * cfg.chunk), toI32(mul(group, cfg.rows)),
                toI32(request)});
  // A box is 64 rows of one page, or a whole smaller page.
  int64_t boxRows = std::min(pb.blockSize, cfg.tileTokens);
  auto loop = scf::ForOp::create(b, loc, idx(0), numK, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value kt = loop.getInductionVar();
  auto [stage, parity] = ringUse(kt, cfg.stages, /*flip=*/true);
  Value full = barrier(stage);
  wg.waitParity(b, loc, barrier(add(stage, cfg.stages)), parity);
  wg.arriveExpectBytes(b, loc, full, cfg.tileBytes());
  Value slot = add(mul(stage, cfg.tileBytes()), cfg.ringOffset());
  for (int64_t box = 0; box < cfg.tileTokens / boxRows; ++box) {
    Value token = add(add(start, mul(kt, cfg.tileTokens)), box * boxRows);
    // Past the window the ids are clamped into the cache: every copy
    // reads rows that exist, and the consumers mask them.
    Value logical = minu(divu(token, pb.blockSize), sub(maxBlocks, idx(1)));
    Value id = toIndex(memref::LoadOp::create(b, loc, pb.blockTable,
                                              ValueRange{request, logical}));
    Value block = minu(id, sub(pb.numBlocks, idx(1)));
    Value row = toI32(add(mul(block, pb.blockSize), remu(token, pb.blockSize)));
    for (int64_t c = 0; c < chunks; ++c)
      wg.tmaLoad(b, loc,
                 ptr(add(slot, c * cfg.chunkBytes +
                                   box * boxRows * WarpgroupMma::kSwizzleBytes)),
                 pb.mapCache, full, {i32(c * cfg.chunk), row});
  }
}

std::pair<Value, Value> MlaSm90Builder::arrived(Value kt) {
  auto [stage, parity] = ringUse(kt, cfg.stages, /*flip=*/false);
  wg.waitParity(b, loc, barrier(stage), parity);
  Value slot = add(mul(stage, cfg.tileBytes()), cfg.ringOffset());
  Value valid = sub(end, add(start, mul(kt, cfg.tileTokens)));
  // Whole 128-byte rows of every chunk, split between the consumers, who
  // fence their writes into the async proxy and meet before any MMA reads
  // the tile. Pieces of rows that stay go to the scratch line: a branch on
  // a thread's own row would serialize the wgmmas.
  ifThen(lt(valid, idx(cfg.tileTokens)), [&] {
    int64_t threads = WarpgroupMma::kWarpgroupThreads;
    int64_t piecesPerRow = WarpgroupMma::kSwizzleBytes / 16;
    int64_t perConsumer = cfg.headDim / cfg.chunk * cfg.tileTokens *
                          piecesPerRow / cfg.consumers;
    Value consumer = sub(divu(threadId(), threads), idx(1));
    Value thread = remu(threadId(), threads);
    Value zero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(VectorType::get({4}, b.getI32Type()),
                                       b.getI32IntegerAttr(0).getValue()));
    for (int64_t step = 0; step < perConsumer; step += threads) {
      Value piece = add(add(thread, step), mul(consumer, perConsumer));
      Value row = remu(divu(piece, piecesPerRow), cfg.tileTokens);
      Value zeroed =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, row, valid);
      LLVM::StoreOp::create(
          b, loc, zero,
          ptr(select(zeroed, add(slot, mul(piece, 16)),
                     idx(cfg.scratchOffset()))),
          /*alignment=*/16);
    }
    wg.fenceSharedForAsync(b, loc);
    meet(/*id=*/1, /*arrive=*/false);
  });
  return {stage, slot};
}

Value MlaSm90Builder::rescale(Value acc, ArrayRef<Value> rowFactors) {
  return rescaleRows(wg, acc, cfg.latentDim / 2 / 2, rowFactors);
}

Value MlaSm90Builder::issueValues(Value slot, ValueRange words, Value acc) {
  // V is the stage's first L columns, MN-major (tokens x 64-column chunks
  // 8 KB apart), 16 tokens (2 KB) per k16 step; this consumer's half
  // starts L/2 / 64 chunks in.
  int64_t half = cfg.latentDim / 2;
  WarpgroupMma::SharedOperand vLayout{false, cfg.chunkBytes};
  WarpgroupMma::SharedOperand pLayout{true, 0};
  Value vBase = words.empty()
                    ? add(slot, half / cfg.chunk * cfg.chunkBytes)
                    : slot;
  Value vFirst = descriptor(vBase, vLayout);
  Value pFirst = descriptor(idx(cfg.pOffset()), pLayout);
  for (int64_t t = 0; t < cfg.tileTokens / WarpgroupMma::kDepth; ++t) {
    Value descV = wg.advanceDescriptor(b, loc, vFirst,
                                       t * WarpgroupMma::kStepBytes(vLayout));
    if (!words.empty()) {
      acc = wg.mmaRegisterA(b, loc, elem, half, words.slice(4 * t, 4), descV,
                            vLayout, acc);
      continue;
    }
    Value descP = wg.advanceDescriptor(b, loc, pFirst,
                                       t * WarpgroupMma::kStepBytes(pLayout));
    acc = wg.mma(b, loc, elem, half, descP, pLayout, descV, vLayout, acc);
  }
  return acc;
}

void MlaSm90Builder::scoreConsumer() {
  int64_t n = cfg.tileTokens, half = cfg.latentDim / 2;
  int64_t nSlots = slots();
  WarpgroupMma::SharedOperand kMajor{true, 0};
  Value thread = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
  Value lane = remu(thread, warpSize);
  Value row0, row1;
  std::tie(row0, row1) = slotRows();

  SmallVector<Value> init(nSlots, f32(-INFINITY));
  init.append(nSlots, f32(0));
  init.push_back(wg.zeroAccumulators(b, loc, half));
  auto loop = scf::ForOp::create(b, loc, idx(0), numK, idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> state(carried.take_front(2 * nSlots));
    auto [stage, slot] = arrived(kt);

    // S = Q K^T over all L + R columns: chunk c of Q and of the tile, 32
    // bytes along their rows per k16 step.
    Value sAcc; // the first MMA starts the product
    wg.fence(b, loc);
    // (Q's descriptors from an opaque address stay in the loop: hoisted,
    // its 36 would hold 72 registers.)
    Value qFirst =
        wg.sharedDescriptor(b, loc, wg.opaque(b, loc, address), kMajor);
    Value kFirst = descriptor(slot, kMajor);
    for (int64_t t = 0; t < cfg.headDim / WarpgroupMma::kDepth; ++t) {
      int64_t offset = t / (cfg.chunk / WarpgroupMma::kDepth) * cfg.chunkBytes +
                       t % (cfg.chunk / WarpgroupMma::kDepth) *
                           WarpgroupMma::kStepBytes(kMajor);
      sAcc = wg.mma(b, loc, elem, n,
                    wg.advanceDescriptor(b, loc, qFirst, offset), kMajor,
                    wg.advanceDescriptor(b, loc, kFirst, offset), kMajor, sAcc);
    }
    wg.commit(b, loc);
    wg.wait(b, loc, 0);

    // Scale; mask tokens past the window on the tile that reaches it.
    Value tileStart = add(start, mul(kt, n));
    SmallVector<Value> s;
    for (int64_t i = 0; i < n / 2; ++i) {
      Value col = wg.accumulatorPosition(b, loc, thread, i).second;
      s.push_back(select(lt(add(tileStart, col), end),
                         fmul(wg.accumulator(b, loc, sAcc, i), pb.scaleLog2),
                         f32(-INFINITY)));
    }
    SmallVector<Value> alpha =
        softmaxStep(s, n / atom.n, state, /*outAtoms=*/0,
                    [&](int64_t, Value localMax) {
                      return rowReduce(localMax, /*isMax=*/true);
                    },
                    /*chains=*/4, /*multiplier=*/{}, kRescaleSlack);
    auto pairType = VectorType::get({2}, elem);
    SmallVector<Value> words;
    for (int64_t i = 0; i < n / 2; i += 2)
      words.push_back(LLVM::BitcastOp::create(
          b, loc, b.getI32Type(),
          vector::FromElementsOp::create(
              b, loc, pairType,
              ValueRange{arith::TruncFOp::create(b, loc, elem, s[i]),
                         arith::TruncFOp::create(b, loc, elem, s[i + 1])})));

    // Hand P and the factors over once consumer 1 is done with the
    // previous ones. P's row r is 128 bytes, its 16-byte piece j stored at
    // piece j ^ (r % 8) (TMA's 128-byte swizzle, which the descriptor
    // reads).
    ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, kt,
                                 idx(0)),
           [&] { meet(/*id=*/3, /*arrive=*/false); });
    for (int64_t i = 0; i < n / 2; i += 2) {
      auto [row, col] = wg.accumulatorPosition(b, loc, thread, i);
      Value piece = arith::XOrIOp::create(b, loc, divu(col, 8), remu(row, 8));
      Value offset = add(add(mul(row, WarpgroupMma::kSwizzleBytes),
                             mul(piece, 16)),
                         add(mul(remu(col, 8), kElemBytes), cfg.pOffset()));
      LLVM::StoreOp::create(b, loc, words[i / 2], ptr(offset),
                            /*alignment=*/4);
    }
    ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                 remu(lane, 4), idx(0)),
           [&] {
             LLVM::StoreOp::create(
                 b, loc, alpha[0], ptr(add(mul(row0, 4), cfg.alphaOffset())));
             LLVM::StoreOp::create(
                 b, loc, alpha[1], ptr(add(mul(row1, 4), cfg.alphaOffset())));
           });
    wg.fenceSharedForAsync(b, loc);
    meet(/*id=*/2, /*arrive=*/true);

    Value oAcc = rescale(carried.back(), alpha);
    wg.fence(b, loc);
    oAcc = issueValues(slot, words, oAcc);
    wg.commit(b, loc);
    wg.wait(b, loc, 0);
    wg.arrive(b, loc, barrier(add(stage, cfg.stages)));
    state.push_back(oAcc);
    scf::YieldOp::create(b, loc, state);
  }
  ValueRange results = loop.getResults();
  // The row sums for both consumers' O / l, and the LSE.
  // (Not structured bindings: lambdas below capture them.)
  SmallVector<Value> inv, lse;
  std::tie(inv, lse) = rowNormalizers(SmallVector<Value>(results));
  ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               remu(lane, 4), idx(0)),
         [&] {
           LLVM::StoreOp::create(b, loc, inv[0],
                                 ptr(add(mul(row0, 4), cfg.sumOffset())));
           LLVM::StoreOp::create(b, loc, inv[1],
                                 ptr(add(mul(row1, 4), cfg.sumOffset())));
         });
  meet(/*id=*/2, /*arrive=*/true);
  epilogue(results.back(), inv, lse);
}

void MlaSm90Builder::valueConsumer() {
  int64_t half = cfg.latentDim / 2;
  Value row0, row1;
  std::tie(row0, row1) = slotRows();
  auto factors = [&](int64_t offset) -> SmallVector<Value> {
    Type f32Type = b.getF32Type();
    return {LLVM::LoadOp::create(b, loc, f32Type,
                                 ptr(add(mul(row0, 4), offset))),
            LLVM::LoadOp::create(b, loc, f32Type,
                                 ptr(add(mul(row1, 4), offset)))};
  };
  auto loop = scf::ForOp::create(b, loc, idx(0), numK, idx(1),
                                 ValueRange{wg.zeroAccumulators(b, loc, half)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    auto [stage, slot] = arrived(loop.getInductionVar());
    meet(/*id=*/2, /*arrive=*/false);
    Value oAcc = rescale(loop.getRegionIterArgs().front(),
                         factors(cfg.alphaOffset()));
    wg.fence(b, loc);
    oAcc = issueValues(slot, ValueRange(), oAcc);
    wg.commit(b, loc);
    wg.wait(b, loc, 0);
    meet(/*id=*/3, /*arrive=*/true);
    wg.arrive(b, loc, barrier(add(stage, cfg.stages)));
    scf::YieldOp::create(b, loc, oAcc);
  }
  meet(/*id=*/2, /*arrive=*/false);
  epilogue(loop.getResult(0), factors(cfg.sumOffset()), {});
}

void MlaSm90Builder::epilogue(Value acc, ArrayRef<Value> inv,
                              ArrayRef<Value> lse) {
  Type outElem = cast<MemRefType>(pb.out.getType()).getElementType();
  int64_t outBytes = outElem.getIntOrFloatBitWidth() / 8;
  int64_t half = cfg.latentDim / 2;
  Value thread = remu(threadId(), WarpgroupMma::kWarpgroupThreads);
  Value consumer = sub(divu(threadId(), WarpgroupMma::kWarpgroupThreads),
                       idx(1));
  Value colBase = mul(consumer, half);
  auto pairType = VectorType::get({2}, outElem);
  // Members 4j + {0, 1} are row r, 4j + {2, 3} row r + 8 (slot 1).
  for (int64_t sl = 0; sl < 2; ++sl) {
    Value row, col;
    std::tie(row, col) = wg.accumulatorPosition(b, loc, thread, 2 * sl);
    Value head = add(mul(group, cfg.rows), row);
    ifThen(lt(head, idx(pb.heads)), [&] {
      for (int64_t j = 0; j < half / 8; ++j) {
        SmallVector<Value> pair;
        for (int64_t e = 0; e < 2; ++e) {
          Value o = fmul(wg.accumulator(b, loc, acc, 4 * j + 2 * sl + e),
                         inv[sl]);
          if (outElem != o.getType())
            o = arith::TruncFOp::create(b, loc, outElem, o);
          pair.push_back(o);
        }
        SmallVector<Value> idxs = {request, head,
                                   add(colBase, add(col, 8 * j))};
        if (pb.split)
          idxs.insert(idxs.begin(), split);
        vector::StoreOp::create(
            b, loc, vector::FromElementsOp::create(b, loc, pairType, pair),
            pb.out, idxs, /*nontemporal=*/false,
            llvm::MaybeAlign(2 * outBytes));
      }
      if (lse.empty() || !pb.lse)
        return;
      ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, col,
                                   idx(0)),
             [&] {
               SmallVector<Value> idxs = {head, request};
               if (pb.split)
                 idxs.insert(idxs.begin(), split);
               memref::StoreOp::create(b, loc, lse[sl], pb.lse, idxs);
             });
    });
  }
}

void MlaSm90Builder::build() {
  std::tie(base, address) = alignedSharedBase(WarpgroupMma::kSwizzleAlignment);
  group = blockId(gpu::Dimension::x);
  request = blockId(gpu::Dimension::y);
  split = blockId(gpu::Dimension::z);
  // The split's window of the context, as paged_attention defines it.
  maxBlocks = memref::DimOp::create(b, loc, pb.blockTable, 1);
  Value numSplits =
      pb.split ? memref::DimOp::create(b, loc, pb.out, 0).getResult() : idx(1);
  std::tie(start, end) = contextWindow(pb.lens, request, maxBlocks,
                                       pb.blockSize, split, numSplits);
  start = uniform(start);
  end = uniform(end);
  numK = arith::CeilDivUIOp::create(b, loc, sub(end, start),
                                    idx(cfg.tileTokens));

  SmallVector<std::pair<Value, int64_t>> barriers;
  for (int64_t s = 0; s < cfg.stages; ++s)
    barriers.push_back({barrier(idx(s)), 1});
  for (int64_t s = 0; s < cfg.stages; ++s)
    barriers.push_back({barrier(idx(cfg.stages + s)),
                        cfg.consumers * WarpgroupMma::kWarpgroupThreads});
  barriers.push_back({barrier(idx(2 * cfg.stages)), 1});
  warpgroupRoles(
      wg, barriers,
      [&] {
        ifThen(andi(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          divu(threadId(), warpSize), idx(0)),
                    wg.electOne(b, loc)),
               [&] { produce(); });
      },
      [&](Value consumer) {
        wg.waitParity(b, loc, barrier(idx(2 * cfg.stages)), i32(0));
        auto consumers = scf::IfOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, consumer,
                                  idx(0)),
            /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(consumers.thenBlock());
        scoreConsumer();
        b.setInsertionPointToStart(consumers.elseBlock());
        valueConsumer();
      });
}

} // namespace

bool mlir::tessel::hasMlaDecodeSm90(MLADecodeOp op, const TargetInfo &target) {
  const WarpgroupMma *wg = target.getWarpgroupMma();
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  int64_t d = qType.getDimSize(2);
  int64_t latent = outType.getDimSize(outType.getRank() - 1);
  int64_t bs = cast<MemRefType>(op.getKvCache().getType()).getDimSize(1);
  // Each consumer's half of the latent dims is whole 64-column chunks and
  // one wgmma wide; pages are whole boxes of a tile or whole tiles.
  return wg && !op.getWindowStart() && d % MlaSm90Config::chunk == 0 &&
         latent % (2 * MlaSm90Config::chunk) == 0 && latent <= 512 &&
         latent <= d &&
         (bs % MlaSm90Config::tileTokens == 0 ||
          MlaSm90Config::tileTokens % bs == 0) &&
         wg->supports(qType.getElementType(), latent / 2);
}

FailureOr<LaunchGeometry>
mlir::tessel::buildMlaDecodeSm90(OpBuilder &b, MLADecodeOp op,
                                 KernelContext &ctx) {
  const TargetInfo &target = ctx.target;
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  Type elem = qType.getElementType();
  FailureOr<MmaAtom> atom = chooseAttentionAtom(op, target, elem);
  if (failed(atom))
    return failure();
  assert(atom->m == 16 && atom->n == 8 &&
         target.getAccumulatorCount(*atom) == 4 &&
         "NVIDIA's attention atom is mma.sync m16n8k16");
  MlaSm90Config cfg;
  cfg.headDim = qType.getDimSize(2);
  cfg.latentDim = outType.getDimSize(outType.getRank() - 1);
  if (ctx.stages > 0)
    cfg.stages = ctx.stages;
  if (cfg.stages < 2)
    return op.emitOpError()
           << "GPU template: stages must be at least 2, got " << cfg.stages;
  if (cfg.sharedBytes() > target.getSharedMemoryBytes())
    return op.emitOpError()
           << "GPU template: " << cfg.stages << " stages of "
           << MlaSm90Config::tileTokens << "-token tiles of " << cfg.headDim
           << "-wide latent rows need " << cfg.sharedBytes()
           << " bytes of shared memory, more than the "
           << target.getSharedMemoryBytes() << " a block of "
           << target.getChip() << " can use";

  MlaSm90Problem pb;
  pb.blockTable = ctx.arg(op.getBlockTable());
  pb.lens = ctx.arg(op.getSeqLens());
  pb.out = ctx.arg(op.getOut());
  pb.lse = ctx.arg(op.getLse());
  pb.numBlocks = ctx.dimValue(b, op.getKvCache(), 0);
  pb.heads = qType.getDimSize(1);
  pb.blockSize = cast<MemRefType>(op.getKvCache().getType()).getDimSize(1);
  pb.scaleLog2 = ctx.scaleLog2(b, op.getScale());
  pb.split = op.isSplit();
  // q [B, H, D] as {D, H, B}, boxes of 64 columns x 64 heads; the cache
  // [NB, BS, D] as rows {D, NB * BS}, boxes of 64 columns x a tile's rows
  // of one page; 128-byte swizzled.
  constexpr int64_t kSwizzle128 = 3;
  pb.mapQ = ctx.addTensorMap(
      {cast<BlockArgument>(op.getQ()).getArgNumber(),
       {{2, 3}, {1, 2}, {0, 1}},
       {MlaSm90Config::chunk, MlaSm90Config::rows, 1},
       kSwizzle128});
  pb.mapCache = ctx.addTensorMap(
      {cast<BlockArgument>(op.getKvCache()).getArgNumber(),
       {{2, 3}, {0, 2}},
       {MlaSm90Config::chunk,
        std::min(pb.blockSize, MlaSm90Config::tileTokens)},
       kSwizzle128});
  MlaSm90Builder(b, op.getLoc(), target, *atom, *target.getWarpgroupMma(), cfg,
                 pb, elem)
      .build();

  LaunchGeometry geometry;
  geometry.grid[0] = GridDim{-1, 1, pb.heads, MlaSm90Config::rows};
  geometry.grid[1] = gridOver(ctx.dim(op.getQ(), 0), 1, 1);
  geometry.grid[2] =
      pb.split ? gridOver(ctx.dim(op.getOut(), 0), 1, 1) : GridDim{-1, 1, 1, 1};
  geometry.block = {static_cast<int32_t>(MlaSm90Config::threads), 1, 1};
  geometry.sharedBytes = cfg.sharedBytes();
  return geometry;
}
