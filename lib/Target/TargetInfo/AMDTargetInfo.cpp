//===- AMDTargetInfo.cpp - CDNA3 (gfx942) and CDNA4 (gfx950) facts -------===//
//
// The facts templates need to size tiles for AMD are here; the ROCDL lowering
// of the code-emitting hooks (MFMA, LDS fragment reads, buffer loads) comes
// with the AMD grouped-matmul slice, and until then those hooks report an
// error instead of emitting anything.
//
//===----------------------------------------------------------------------===//

#include "tessel/Target/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

class CDNATargetInfo : public TargetInfo {
public:
  /// gfx950 doubles the K of the bf16 MFMAs and has 160 KB of LDS.
  explicit CDNATargetInfo(StringRef chip)
      : TargetInfo(chip), isGfx950(chip == "gfx950") {}

  GpuVendor getVendor() const override { return GpuVendor::AMD; }
  unsigned getWarpSize() const override { return 64; }
  int64_t getSharedMemoryBytes() const override {
    return (isGfx950 ? 160 : 64) * 1024;
  }
  // Global-to-LDS DMA (buffer/global_load_lds): one dword per lane on
  // gfx942, up to dwordx4 on gfx950.
  unsigned getAsyncCopyBytes() const override { return isGfx950 ? 16 : 4; }

  SmallVector<MmaAtom> getMmaAtoms(Type operandType,
                                   Type accType) const override {
    if (!(operandType.isBF16() || operandType.isF16()) || !accType.isF32())
      return {};
    int64_t k = isGfx950 ? 2 : 1;
    // v_mfma_f32_32x32x{8,16}_bf16 and v_mfma_f32_16x16x{16,32}_bf16.
    return {MmaAtom{32, 32, 8 * k, operandType, accType},
            MmaAtom{16, 16, 16 * k, operandType, accType}};
  }

  // MFMA C fragments hold one column per lane: lane l owns column l % n;
  // its 4-row groups are interleaved across the lane halves (32x32) or
  // quarters (16x16). No two elements share a row, so runs are 1.
  int64_t getAccumulatorRun(const MmaAtom &) const override { return 1; }
  std::pair<Value, Value> getAccumulatorPosition(OpBuilder &b, Location loc,
                                                 const MmaAtom &atom,
                                                 Value lane,
                                                 int64_t i) const override {
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    Value col = arith::RemUIOp::create(b, loc, lane, c(atom.n));
    // 32x32: row = 8 (i / 4) + 4 (l / 32) + i % 4;
    // 16x16: row = 4 (l / 16) + i.
    Value group = arith::DivUIOp::create(b, loc, lane, c(atom.n));
    Value row = arith::MulIOp::create(b, loc, group, c(4));
    int64_t base = atom.m == 32 ? 8 * (i / 4) + i % 4 : i;
    row = arith::AddIOp::create(b, loc, row, c(base));
    return {row, col};
  }

  FailureOr<SmallVector<Fragment>>
  loadFragments(OpBuilder &, Location loc, const MmaAtom &, MmaOperand,
                const SharedTile &, Value, Value, Value,
                int64_t) const override {
    return notYet(loc, "LDS fragment loads");
  }
  FailureOr<SmallVector<Value>> mma(OpBuilder &, Location loc,
                                    const MmaAtom &, const Fragment &,
                                    const Fragment &,
                                    ValueRange) const override {
    return notYet(loc, "MFMA");
  }
  LogicalResult asyncCopy(OpBuilder &, Location loc, Value, ValueRange, Value,
                          ValueRange, int64_t, Value) const override {
    return notYet(loc, "global-to-LDS copies");
  }
  LogicalResult asyncCommit(OpBuilder &, Location loc) const override {
    return notYet(loc, "global-to-LDS copies");
  }
  LogicalResult asyncWait(OpBuilder &, Location loc, int64_t) const override {
    return notYet(loc, "global-to-LDS copies");
  }

private:
  LogicalResult notYet(Location loc, StringRef what) const {
    return emitError(loc) << "the ROCDL lowering of " << what << " for "
                          << getChip() << " is not implemented yet";
  }

  bool isGfx950;
};

} // namespace

std::unique_ptr<TargetInfo> mlir::tessel::createAMDTargetInfo(StringRef chip) {
  if (chip == "gfx942" || chip == "gfx950")
    return std::make_unique<CDNATargetInfo>(chip);
  return nullptr;
}
