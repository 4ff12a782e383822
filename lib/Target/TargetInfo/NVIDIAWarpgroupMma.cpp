//===- NVIDIAWarpgroupMma.cpp - sm_90a: wgmma, TMA, mbarrier, setmaxnreg --===//
//
// The NVVM ops of Hopper's warpgroup path, as verified on an H200 with MLIR
// 22.1.8 and ptxas 13.0 (docs/sm90a.md). Several of them (wgmma.mma_async,
// mbarrier.try_wait.parity, arrive.expect_tx) have no LLVM intrinsic and
// become inline PTX in convert-nvvm-to-llvm, which the sm_90a pipeline runs.
//
//===----------------------------------------------------------------------===//

#include "tessel/Target/WarpgroupMma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;
using namespace mlir::tessel;

WarpgroupMma::~WarpgroupMma() = default;

namespace {

class NVIDIAWarpgroupMma : public WarpgroupMma {
public:
  bool supports(Type elem, int64_t n) const override {
    return (elem.isBF16() || elem.isF16()) && n % 8 == 0 && n >= 8 &&
           n <= 256;
  }

  // The descriptor of a tile with 128-byte swizzle: bits 0-13 the start
  // address >> 4; 16-29 the leading-dimension byte offset >> 4: unused
  // K-major (1, as CUTLASS sets it), MN-major the stride between 64-element
  // MN chunks; 32-45 the stride between 8-row atoms >> 4 (1024 bytes, along
  // M/N K-major, along K MN-major); 62-63 the swizzle mode (1: 128 bytes).
  // Unswizzled (mode 0), the leading offset is the stride between core
  // matrices along K and the stride offset the one along M/N.
  // The low word is computed in 32 bits (shared addresses are below 2^18),
  // the high one is a constant. The low word goes through `opaque`: where
  // LLVM sees its bounds, it folds each advanced descriptor's 32-bit add
  // and the high word into one 64-bit add, and ptxas then carries into the
  // high word and moves both halves to uniform registers before every MMA
  // (a dependent chain per wgmma while the warpgroup holds its turn).
  Value sharedDescriptor(OpBuilder &b, Location loc, Value address,
                         SharedOperand operand) const override {
    int64_t leading = operand.kMajor ? 1 : operand.chunkBytes >> 4;
    uint64_t high =
        (uint64_t{kSwizzleAlignment >> 4} << 32) | (uint64_t{1} << 62);
    if (operand.coreKBytes) {
      assert(operand.kMajor && "unswizzled operands are K-major");
      leading = operand.coreKBytes >> 4;
      high = uint64_t(operand.coreMNBytes >> 4) << 32;
    }
    Value field = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, address, i32(b, loc, 4)),
        i32(b, loc, 0x3FFF));
    Value low =
        opaque(b, loc,
               arith::OrIOp::create(b, loc, field, i32(b, loc, leading << 16)));
    return join(b, loc, low, constant(b, loc, static_cast<int64_t>(high)));
  }

  Value advanceDescriptor(OpBuilder &b, Location loc, Value descriptor,
                          int64_t bytes) const override {
    assert(bytes % 16 == 0 && "descriptors address 16-byte units");
    if (bytes == 0)
      return descriptor;
    Value low = arith::AddIOp::create(
        b, loc, arith::TruncIOp::create(b, loc, b.getI32Type(), descriptor),
        i32(b, loc, bytes >> 4));
    Value high = arith::AndIOp::create(
        b, loc, descriptor,
        constant(b, loc, static_cast<int64_t>(0xFFFFFFFF00000000ull)));
    return join(b, loc, low, high);
  }

  Value mma(OpBuilder &b, Location loc, Type elem, int64_t n, Value descA,
            SharedOperand aLayout, Value descB, SharedOperand bLayout,
            Value acc) const override {
    MLIRContext *ctx = b.getContext();
    auto type = [&](NVVM::WGMMATypes t) {
      return NVVM::WGMMATypesAttr::get(ctx, t);
    };
    NVVM::WGMMATypes operand =
        elem.isBF16() ? NVVM::WGMMATypes::bf16 : NVVM::WGMMATypes::f16;
    auto scaleIn = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
    // A product's first MMA reads no accumulator: poison inputs (no
    // register moves) and scale-d 0.
    auto scaleOut = acc ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero;
    if (!acc)
      acc = LLVM::PoisonOp::create(b, loc, accumulatorType(b, n));
    // A row / B col: K-major ([64, K], [n, K]); A col / B row: MN-major
    // ([K, 64], [K, n]), the transposed operands.
    return NVVM::WgmmaMmaAsyncOp::create(
        b, loc, acc.getType(), acc, descA, descB,
        NVVM::MMAShapeAttr::get(ctx, kRows, n, kDepth), type(operand),
        type(operand), type(NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, scaleOut), scaleIn, scaleIn,
        NVVM::MMALayoutAttr::get(ctx, aLayout.kMajor ? NVVM::MMALayout::row
                                                     : NVVM::MMALayout::col),
        NVVM::MMALayoutAttr::get(ctx, bLayout.kMajor ? NVVM::MMALayout::col
                                                     : NVVM::MMALayout::row),
        /*satfinite=*/nullptr);
  }

  // NVVM's wgmma.mma_async takes A by descriptor only: the register form
  // is inline PTX in the shape convert-nvvm-to-llvm gives the descriptor
  // form (accumulators tied in and out, scale-d through a predicate).
  Value mmaRegisterA(OpBuilder &b, Location loc, Type elem, int64_t n,
                     ValueRange aWords, Value descB, SharedOperand bLayout,
                     Value acc) const override {
    int64_t members = n / 2;
    std::string ptx;
    llvm::raw_string_ostream os(ptx);
    // Operands: the members out, the members tied in, the A words, B's
    // descriptor, scale-d.
    os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << 2 * members + 5
       << ", 0;\nwgmma.mma_async.sync.aligned.m64n" << n << "k16.f32."
       << (elem.isBF16() ? "bf16.bf16" : "f16.f16") << " {";
    for (int64_t i = 0; i < members; ++i)
      os << (i ? ", " : "") << "$" << i;
    os << "}, {$" << 2 * members << ", $" << 2 * members + 1 << ", $"
       << 2 * members + 2 << ", $" << 2 * members + 3 << "}, $"
       << 2 * members + 4 << ", p, 1, 1, "
       << (bLayout.kMajor ? 0 : 1) << ";\n}\n";
    std::string constraints;
    for (int64_t i = 0; i < members; ++i)
      constraints += "=f,";
    for (int64_t i = 0; i < members; ++i)
      constraints += std::to_string(i) + ",";
    constraints += "r,r,r,r,l,n";
    SmallVector<Value> operands;
    for (int64_t i = 0; i < members; ++i)
      operands.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
    operands.append(aWords.begin(), aWords.end());
    operands.push_back(descB);
    operands.push_back(i32(b, loc, 1));
    return LLVM::InlineAsmOp::create(
               b, loc, acc.getType(), operands, ptx, constraints,
               /*has_side_effects=*/true, /*is_align_stack=*/false,
               LLVM::tailcallkind::TailCallKind::None,
               LLVM::AsmDialectAttr::get(b.getContext(),
                                         LLVM::AsmDialect::AD_ATT),
               /*operand_attrs=*/ArrayAttr())
        .getResult(0);
  }

  Value zeroAccumulators(OpBuilder &b, Location loc,
                         int64_t n) const override {
    return LLVM::ZeroOp::create(b, loc, accumulatorType(b, n));
  }

  Value accumulator(OpBuilder &b, Location loc, Value acc,
                    int64_t i) const override {
    return LLVM::ExtractValueOp::create(b, loc, acc, i);
  }

  // m64nN: warp w of the warpgroup holds rows 16w .. 16w + 15; lane l holds,
  // for each 8-column block j, members 4j .. 4j + 3 at rows l / 4 and
  // l / 4 + 8, columns 8j + 2 (l % 4) + {0, 1}.
  std::pair<Value, Value> accumulatorPosition(OpBuilder &b, Location loc,
                                              Value thread,
                                              int64_t i) const override {
    auto idx = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    Value warp = arith::DivUIOp::create(b, loc, thread, idx(32));
    Value lane = arith::RemUIOp::create(b, loc, thread, idx(32));
    Value row = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, warp, idx(16)),
        arith::DivUIOp::create(b, loc, lane, idx(4)));
    if (i % 4 >= 2)
      row = arith::AddIOp::create(b, loc, row, idx(8));
    Value col = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, lane, idx(4)), idx(2));
    col = arith::AddIOp::create(b, loc, col, idx(8 * (i / 4) + i % 2));
    return {row, col};
  }

  void fence(OpBuilder &b, Location loc) const override {
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
  }
  void commit(OpBuilder &b, Location loc) const override {
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  }
  void wait(OpBuilder &b, Location loc, int64_t pending) const override {
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc,
                                       b.getI64IntegerAttr(pending));
  }

  void barrierInit(OpBuilder &b, Location loc, Value bar,
                   int64_t arrivals) const override {
    NVVM::MBarrierInitOp::create(b, loc, bar, i32(b, loc, arrivals),
                                 /*predicate=*/Value());
  }
  void barrierInitFence(OpBuilder &b, Location loc) const override {
    NVVM::FenceMbarrierInitOp::create(b, loc);
  }
  void arrive(OpBuilder &b, Location loc, Value bar) const override {
    NVVM::MBarrierArriveOp::create(b, loc, /*res=*/Type(), bar,
                                   /*count=*/Value(), scope(b),
                                   b.getBoolAttr(false));
  }
  void arriveExpectBytes(OpBuilder &b, Location loc, Value bar,
                         int64_t bytes) const override {
    NVVM::MBarrierArriveExpectTxOp::create(b, loc, /*res=*/Type(), bar,
                                           i32(b, loc, bytes), scope(b),
                                           b.getBoolAttr(false),
                                           /*predicate=*/Value());
  }
  void waitParity(OpBuilder &b, Location loc, Value bar,
                  Value parity) const override {
    // The suspend-time hint (ns) lets a waiting warp sleep in hardware
    // rather than spin; its value measured within noise (docs/sm90a.md).
    NVVM::MBarrierTryWaitParityOp::create(b, loc, bar, parity,
                                          i32(b, loc, 10000000));
  }
  void tmaLoad(OpBuilder &b, Location loc, Value dst, Value map, Value bar,
               ValueRange coordinates) const override {
    // The copy names its destination in the cluster's shared window (the
    // CTA-only form needs PTX 8.6).
    Value cluster = LLVM::AddrSpaceCastOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7), dst);
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, loc, cluster, map, coordinates, bar, /*im2colOffsets=*/{},
        /*multicastMask=*/Value(), /*l2CacheHint=*/Value(),
        NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false, /*group=*/nullptr,
        /*predicate=*/Value());
  }
  void bulkLoad(OpBuilder &b, Location loc, Value dst, Value src, int64_t bytes,
                Value bar) const override {
    assert(bytes % 16 == 0 && "bulk copies move 16-byte units");
    Value cluster = LLVM::AddrSpaceCastOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 7), dst);
    NVVM::CpAsyncBulkGlobalToSharedClusterOp::create(
        b, loc, cluster, src, bar, i32(b, loc, bytes),
        /*multicastMask=*/Value(), /*l2CacheHint=*/Value());
  }
  void asyncCopy16(OpBuilder &b, Location loc, Value dst, Value src,
                   Value srcBytes) const override {
    // .cg: the tile is read once per block, L1 would not help it.
    NVVM::CpAsyncOp::create(
        b, loc, dst, src, b.getI32IntegerAttr(16),
        NVVM::LoadCacheModifierKindAttr::get(b.getContext(),
                                             NVVM::LoadCacheModifierKind::CG),
        srcBytes);
  }
  void asyncCopiesArrive(OpBuilder &b, Location loc,
                         Value bar) const override {
    NVVM::CpAsyncMBarrierArriveOp::create(
        b, loc, bar, b.getIntegerAttr(b.getI1Type(), 1));
  }
  void tmaStore(OpBuilder &b, Location loc, Value map, Value src,
                ValueRange coordinates) const override {
    NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
        b, loc, map, src, coordinates, /*l2CacheHint=*/Value(),
        NVVM::TMAStoreModeAttr::get(b.getContext(), NVVM::TMAStoreMode::TILE),
        /*predicate=*/Value());
  }
  void bulkCommit(OpBuilder &b, Location loc) const override {
    NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
  }
  void bulkWait(OpBuilder &b, Location loc, int64_t pending,
                bool read) const override {
    NVVM::CpAsyncBulkWaitGroupOp::create(
        b, loc, b.getI32IntegerAttr(pending),
        read ? b.getUnitAttr() : UnitAttr());
  }

  void fenceSharedForAsync(OpBuilder &b, Location loc) const override {
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  }
  void barrier(OpBuilder &b, Location loc, Value id, int64_t threads,
               bool arrive) const override {
    if (arrive) {
      NVVM::BarrierArriveOp::create(b, loc, id, i32(b, loc, threads));
      return;
    }
    NVVM::BarrierOp::create(b, loc, /*res=*/Type(), id, i32(b, loc, threads),
                            /*reductionOp=*/nullptr,
                            /*reductionPredicate=*/Value());
  }

  void setRegisters(OpBuilder &b, Location loc, int64_t count,
                    bool increase) const override {
    NVVM::SetMaxRegisterOp::create(
        b, loc, b.getI32IntegerAttr(count),
        NVVM::SetMaxRegisterActionAttr::get(
            b.getContext(), increase ? NVVM::SetMaxRegisterAction::increase
                                     : NVVM::SetMaxRegisterAction::decrease));
  }
  Value electOne(OpBuilder &b, Location loc) const override {
    return NVVM::ElectSyncOp::create(b, loc, b.getI1Type(),
                                     /*membermask=*/Value());
  }

  Value opaque(OpBuilder &b, Location loc, Value value) const override {
    return LLVM::InlineAsmOp::create(
               b, loc, b.getI32Type(), ValueRange{value}, "mov.b32 $0, $1;",
               "=r,r", /*has_side_effects=*/true, /*is_align_stack=*/false,
               LLVM::tailcallkind::TailCallKind::None,
               LLVM::AsmDialectAttr::get(b.getContext(),
                                         LLVM::AsmDialect::AD_ATT),
               /*operand_attrs=*/ArrayAttr())
        .getResult(0);
  }

private:
  static Type accumulatorType(OpBuilder &b, int64_t n) {
    SmallVector<Type> members(n / 2, b.getF32Type());
    return LLVM::LLVMStructType::getLiteral(b.getContext(), members);
  }
  /// The i64 of `low` (i32) in bits 0-31 and `high`'s bits 32-63.
  static Value join(OpBuilder &b, Location loc, Value low, Value high) {
    return arith::OrIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, b.getI64Type(), low), high);
  }
  static Value constant(OpBuilder &b, Location loc, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  static Value i32(OpBuilder &b, Location loc, int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  static NVVM::MemScopeKindAttr scope(OpBuilder &b) {
    return NVVM::MemScopeKindAttr::get(b.getContext(),
                                       NVVM::MemScopeKind::CTA);
  }
};

} // namespace

std::unique_ptr<WarpgroupMma> mlir::tessel::createNVIDIAWarpgroupMma() {
  return std::make_unique<NVIDIAWarpgroupMma>();
}
