//===- NVIDIATargetInfo.cpp - sm80: mma.sync, ldmatrix, cp.async ----------===//
//
// The Ampere instruction set, which runs on every sm80+ GPU (the H200 runs it
// from PTX or from an sm_90 cubin built from the same PTX). Operands go
// through shared memory: ldmatrix loads 8x8 16-bit tiles into the mma.sync
// fragment layout, cp.async fills shared memory without a register round trip.
// nvgpu ops are used where they exist (they compute addresses from memrefs);
// nvgpu.mma.sync has no bf16 case in MLIR 22, so the MMA is nvvm.mma.sync
// with bf16 pairs packed in i32.
//
//===----------------------------------------------------------------------===//

#include "tessel/Target/TargetInfo.h"
#include "tessel/Target/WarpgroupMma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

class SM80TargetInfo : public TargetInfo {
public:
  explicit SM80TargetInfo(StringRef chip = "sm_80") : TargetInfo(chip) {}

  GpuVendor getVendor() const override { return GpuVendor::NVIDIA; }
  unsigned getWarpSize() const override { return 32; }
  // 164 KB per SM, of which one block may use 163 KB after opting in.
  int64_t getSharedMemoryBytes() const override { return 163 * 1024; }
  unsigned getAsyncCopyBytes() const override { return 16; }

  SmallVector<MmaAtom> getMmaAtoms(Type operandType,
                                   Type accType) const override {
    if ((operandType.isBF16() || operandType.isF16()) && accType.isF32())
      return {MmaAtom{16, 8, 16, operandType, accType}};
    return {};
  }

  // m16n8 C fragment: lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and
  // 2(l%4) + 1 of each.
  int64_t getAccumulatorRun(const MmaAtom &) const override { return 2; }
  // Lanes 4r .. 4r+3 hold rows r and r + 8.
  int64_t getAccumulatorRowLanes(const MmaAtom &) const override { return 4; }
  std::pair<Value, Value> getAccumulatorPosition(OpBuilder &b, Location loc,
                                                 const MmaAtom &, Value lane,
                                                 int64_t i) const override {
    Value row = arith::DivUIOp::create(b, loc, lane, index(b, loc, 4));
    if (i >= 2)
      row = arith::AddIOp::create(b, loc, row, index(b, loc, 8));
    Value col = arith::RemUIOp::create(b, loc, lane, index(b, loc, 4));
    col = arith::MulIOp::create(b, loc, col, index(b, loc, 2));
    if (i % 2)
      col = arith::AddIOp::create(b, loc, col, index(b, loc, 1));
    return {row, col};
  }

  FailureOr<SmallVector<Fragment>>
  loadFragments(OpBuilder &b, Location loc, const MmaAtom &atom,
                MmaOperand operand, const SharedTile &tile, Value row0,
                Value k0, Value lane, int64_t count) const override {
    SmallVector<Fragment> frags;
    if (operand == MmaOperand::A && !tile.kContiguous) {
      // M-contiguous [k][m] tile (the wgrad's A^T): ldmatrix.x4 .trans.
      // Lanes 8q..8q+7 address the k rows of matrix q = a_q of the
      // fragment (m half q % 2, k half q / 2); .trans hands each lane the k
      // pair of its m, the same registers as the K-contiguous load.
      Value q = arith::DivUIOp::create(b, loc, lane, index(b, loc, 8));
      Value kRow = add(
          b, loc, arith::RemUIOp::create(b, loc, lane, index(b, loc, 8)),
          mulAdd(b, loc, arith::DivUIOp::create(b, loc, q, index(b, loc, 2)),
                 8, k0));
      Value mHalf = arith::MulIOp::create(
          b, loc, arith::RemUIOp::create(b, loc, q, index(b, loc, 2)),
          index(b, loc, 8));
      for (int64_t i = 0; i < count; ++i) {
        Value col = add(b, loc, mHalf, add(b, loc, row0, atom.m * i));
        frags.push_back(ldmatrix(b, loc, atom, tile, kRow, col, 4,
                                 /*transpose=*/true));
      }
      return frags;
    }
    if (operand == MmaOperand::A) {
      // One ldmatrix.x4 per m16k16 atom: lanes 0-15 address rows 0-15 at
      // k 0-7, lanes 16-31 the same rows at k 8-15; registers come back as
      // a0..a3 of the mma.sync A fragment.
      Value row = arith::RemUIOp::create(b, loc, lane, index(b, loc, 16));
      Value col = mulAdd(b, loc, arith::DivUIOp::create(b, loc, lane,
                                                        index(b, loc, 16)),
                         8, k0);
      for (int64_t i = 0; i < count; ++i) {
        Value r = add(b, loc, row, add(b, loc, row0, atom.m * i));
        frags.push_back(ldmatrix(b, loc, atom, tile, r, col, 4));
      }
      return frags;
    }
    // B: an n8k16 atom is two 8x8 matrices (k 0-7, k 8-15). Pairs of atoms
    // share one ldmatrix.x4: lanes 8q..8q+7 address matrix q = (atom 2j+q/2,
    // k half q%2).
    Value q = arith::DivUIOp::create(b, loc, lane, index(b, loc, 8));
    Value rowInAtom = arith::RemUIOp::create(b, loc, lane, index(b, loc, 8));
    Value kHalf = arith::RemUIOp::create(b, loc, q, index(b, loc, 2));
    Value kOffset = mulAdd(b, loc, kHalf, 8, k0);
    Value pairOffset = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, q, index(b, loc, 2)),
        index(b, loc, atom.n));
    // K-contiguous tile: a lane addresses an n row, 8 k values. N-contiguous
    // tile: a lane addresses a k row, 8 n values (the atom's 8 columns), and
    // ldmatrix .trans hands each lane the k pair of one n, which is the
    // mma.sync col-major B fragment, the same registers as in the K-major
    // case.
    bool trans = !tile.kContiguous;
    Value kRow = add(b, loc, rowInAtom, kOffset);
    for (int64_t j = 0; j < count; j += 2) {
      bool pair = j + 1 < count;
      // .x2 reads addresses of lanes 0-15 only: atom j, both k halves.
      Value nBase = add(b, loc, row0, atom.n * j);
      Fragment regs;
      if (!trans) {
        Value r =
            add(b, loc, pair ? add(b, loc, rowInAtom, pairOffset) : rowInAtom,
                nBase);
        regs = ldmatrix(b, loc, atom, tile, r, kOffset, pair ? 4 : 2,
                        /*transpose=*/false);
      } else {
        Value n = pair ? add(b, loc, nBase, pairOffset) : nBase;
        regs = ldmatrix(b, loc, atom, tile, kRow, n, pair ? 4 : 2,
                        /*transpose=*/true);
      }
      frags.push_back({regs[0], regs[1]});
      if (pair)
        frags.push_back({regs[2], regs[3]});
    }
    return frags;
  }

  // An m16n8 C tile gives lane l rows l/4 and l/4 + 8 at columns 2(l%4)
  // and 2(l%4)+1; an m16k16 A fragment wants in its registers a0..a3 rows
  // (l/4, l/4 + 8) x k pairs (2(l%4), 2(l%4) + 8). The C tiles of the two
  // n8 atoms covering k 0-7 and 8-15 are those registers: pack each pair.
  bool hasAccumulatorsAsOperandA(const MmaAtom &atom) const override {
    return atom.m == 16 && atom.n == 8 && atom.k == 16;
  }
  std::optional<Fragment>
  accumulatorsAsOperandA(OpBuilder &b, Location loc, const MmaAtom &atom,
                         ArrayRef<Value> acc) const override {
    if (!hasAccumulatorsAsOperandA(atom) || acc.size() != 8)
      return std::nullopt;
    Type elem = atom.operandType;
    auto pairType = VectorType::get({2}, elem);
    Fragment regs;
    // a0 = (r, k 0-1) = atom 0 c0c1; a1 = (r+8, k 0-1) = atom 0 c2c3;
    // a2 = (r, k 8-9) = atom 1 c0c1; a3 = (r+8, k 8-9) = atom 1 c2c3.
    for (int64_t i = 0; i < 8; i += 2) {
      regs.push_back(mmaPair(b, loc,
                             vector::FromElementsOp::create(
                                 b, loc, pairType,
                                 ValueRange{acc[i], acc[i + 1]})));
    }
    return regs;
  }

  FailureOr<SmallVector<Value>> mma(OpBuilder &b, Location loc,
                                    const MmaAtom &atom, const Fragment &a,
                                    const Fragment &bFrag,
                                    ValueRange acc) const override {
    MLIRContext *ctx = b.getContext();
    Type f32 = b.getF32Type();
    auto resultType = LLVM::LLVMStructType::getLiteral(
        ctx, SmallVector<Type>(acc.size(), f32));
    NVVM::MMATypes ptxType = atom.operandType.isBF16() ? NVVM::MMATypes::bf16
                                                       : NVVM::MMATypes::f16;
    Value d = NVVM::MmaOp::create(
        b, loc, resultType, a, bFrag, acc, {atom.m, atom.n, atom.k},
        /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
        std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0, e = acc.size(); i < e; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, d, i));
    return out;
  }

  LogicalResult asyncCopy(OpBuilder &b, Location loc, Value dst,
                          ValueRange dstIndices, Value src,
                          ValueRange srcIndices, int64_t elements,
                          Value validElements) const override {
    int64_t bytes =
        elements * cast<MemRefType>(src.getType()).getElementTypeBitWidth() / 8;
    assert((bytes == 4 || bytes == 8 || bytes == 16) &&
           "cp.async copies 4, 8 or 16 bytes");
    // .cg (bypass L1) exists for 16-byte copies only; the tiles are read
    // once per block, so L1 would not help them.
    UnitAttr bypassL1 = bytes == 16 ? b.getUnitAttr() : UnitAttr();
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst,
        dstIndices, src, srcIndices, b.getIndexAttr(elements), validElements,
        bypassL1);
    return success();
  }

  Value exp2(OpBuilder &b, Location loc, Value x) const override {
    return intrinsic(b, loc, "llvm.nvvm.ex2.approx.ftz.f", x);
  }
  Value log2(OpBuilder &b, Location loc, Value x) const override {
    return intrinsic(b, loc, "llvm.nvvm.lg2.approx.ftz.f", x);
  }

  Value ballot(OpBuilder &b, Location loc, Value pred) const override {
    Type i32 = b.getI32Type();
    Value all = arith::ConstantIntOp::create(b, loc, i32, -1);
    return NVVM::VoteSyncOp::create(b, loc, i32, all, pred,
                                    NVVM::VoteSyncKind::ballot);
  }

  std::pair<Value, Value> shuffleUp(OpBuilder &b, Location loc, Value x,
                                    int64_t d) const override {
    auto up = gpu::ShuffleOp::create(b, loc, x, d, getWarpSize(),
                                     gpu::ShuffleMode::UP);
    return {up.getShuffleResult(), up.getValid()};
  }

  LogicalResult asyncCommit(OpBuilder &b, Location loc) const override {
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    return success();
  }

  LogicalResult asyncWait(OpBuilder &b, Location loc,
                          int64_t pending) const override {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, pending);
    return success();
  }

private:
  /// A pair of 16-bit values in the form mma.sync takes: f16 pairs as
  /// vector<2xf16>, bf16 pairs as i32.
  static Value mmaPair(OpBuilder &b, Location loc, Value pair) {
    if (!cast<VectorType>(pair.getType()).getElementType().isBF16())
      return pair;
    Value word = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), pair);
    return vector::ExtractOp::create(b, loc, word, 0);
  }
  static Value intrinsic(OpBuilder &b, Location loc, StringRef name, Value x) {
    return LLVM::CallIntrinsicOp::create(b, loc, x.getType(),
                                         b.getStringAttr(name), ValueRange{x})
        .getResult(0);
  }
  static Value index(OpBuilder &b, Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  static Value add(OpBuilder &b, Location loc, Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y);
  }
  static Value add(OpBuilder &b, Location loc, Value x, int64_t y) {
    return y ? add(b, loc, x, index(b, loc, y)) : x;
  }
  /// x * m + y
  static Value mulAdd(OpBuilder &b, Location loc, Value x, int64_t m,
                      Value y) {
    return add(b, loc, arith::MulIOp::create(b, loc, x, index(b, loc, m)), y);
  }

  /// ldmatrix of `num` 8x8 matrices; this lane addresses the 8-element run
  /// at (row, col) of the tile. Returns one register (two 16-bit values,
  /// in the form mma.sync takes them) per matrix.
  Fragment ldmatrix(OpBuilder &b, Location loc, const MmaAtom &atom,
                    const SharedTile &tile, Value row, Value col, int64_t num,
                    bool transpose = false) const {
    Type elem = atom.operandType;
    auto resultType = VectorType::get({num, 2}, elem);
    Value m = nvgpu::LdMatrixOp::create(b, loc, resultType, tile.memref,
                                        tile.indices(b, loc, row, col),
                                        transpose, num);
    Fragment regs;
    for (int64_t i = 0; i < num; ++i) {
      regs.push_back(mmaPair(b, loc, vector::ExtractOp::create(b, loc, m, i)));
    }
    return regs;
  }
};

/// Hopper with its architecture-specific features: every sm80 answer (the
/// templates without a warpgroup main loop run as on sm80), plus wgmma,
/// TMA and setmaxnreg. Its cubins run on compute capability 9.0 only.
class SM90aTargetInfo : public SM80TargetInfo {
public:
  SM90aTargetInfo()
      : SM80TargetInfo("sm_90a"), warpgroup(createNVIDIAWarpgroupMma()) {}
  // 228 KB per SM, of which one block may use 227 KB after opting in.
  int64_t getSharedMemoryBytes() const override { return 227 * 1024; }
  const WarpgroupMma *getWarpgroupMma() const override {
    return warpgroup.get();
  }

private:
  std::unique_ptr<WarpgroupMma> warpgroup;
};

} // namespace

std::unique_ptr<TargetInfo> mlir::tessel::createNVIDIATargetInfo(StringRef chip) {
  if (chip == "sm80" || chip == "sm_80")
    return std::make_unique<SM80TargetInfo>();
  if (chip == "sm90a" || chip == "sm_90a")
    return std::make_unique<SM90aTargetInfo>();
  return nullptr;
}
