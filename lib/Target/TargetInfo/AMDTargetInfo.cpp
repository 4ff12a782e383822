//===- AMDTargetInfo.cpp - CDNA3 (gfx942) and CDNA4 (gfx950): MFMA --------===//
//
// Wave64 MFMA through amdgpu.mfma (which picks the intrinsic of the chip:
// v_mfma_f32_32x32x8_bf16 on gfx942, v_mfma_f32_32x32x16_bf16 on gfx950).
// Operand fragments are read from LDS with one vector load per lane: an
// MFMA A (B) fragment gives lane l row (column) l % m of the atom and
// m * k / 64 consecutive k values, which are contiguous in a K-contiguous
// tile (ds_read_b64 on gfx942, ds_read_b128 on gfx950); an M- or
// N-contiguous tile is read by ds_read_b64_tr_b16 on gfx950, one element
// at a time on gfx942 (where templates avoid it). Tiles come from global
// memory by buffer loads (bounds-checked: rows past the data read 0). On
// gfx942 they go through registers, stored to LDS by the template; on
// gfx950 the grouped matmuls and the unpaged prefill load them straight
// into LDS (buffer_load_dwordx4 ... lds, bufferLoadToShared), the DMA that
// amdgpu.gather_to_lds reaches by global_load_lds_dwordx4 but with the
// buffer's bounds check. That is not the cp.async interface
// (getAsyncCopyBytes() stays 0): its waits are vmcnt, which the templates
// already count for their register-staged loads.
//
// None of this has run on AMD hardware: it is checked by inspecting the
// emitted AMDGCN and code-object metadata (test/Target/gfx942, gfx950) and
// shares its template with the sm80 path that runs on the H200.
//
//===----------------------------------------------------------------------===//

#include "tessel/Target/TargetInfo.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
using namespace mlir;
using namespace mlir::tessel;

namespace {

// DPP controls (CDNA3 ISA, "DPP_CTRL"; all GFX9).
constexpr int32_t kRowShiftRight = 0x110;   // + n: lane i of a row reads i - n
constexpr int32_t kWaveShiftRight1 = 0x138; // lane l reads l - 1
constexpr int32_t kRowMirror = 0x140;       // lane i of a row reads 15 - i
constexpr int32_t kRowHalfMirror = 0x141;   // lane i of 8 reads 7 - i
constexpr int32_t kRowBroadcast15 = 0x142;  // row r reads lane 16 r - 1
constexpr int32_t kRowBroadcast31 = 0x143;  // rows 2, 3 read lane 31

/// v_mov_b32_dpp of `src` (i32) under `control`: lanes of the rows that
/// `rowMask` leaves out get `old`, and so do lanes whose source lane does
/// not exist unless `zeroMissing` (they get 0).
Value dpp(OpBuilder &b, Location loc, Value old, Value src, int32_t control,
          int32_t rowMask, bool zeroMissing = false) {
  return ROCDL::DPPUpdateOp::create(b, loc, b.getI32Type(), old, src, control,
                                    rowMask, /*bankMask=*/0xf, zeroMissing);
}

class CDNATargetInfo : public TargetInfo {
public:
  /// gfx950 doubles the K of the bf16 MFMAs and has 160 KB of LDS.
  explicit CDNATargetInfo(StringRef chip)
      : TargetInfo(chip), isGfx950(chip == "gfx950") {}

  GpuVendor getVendor() const override { return GpuVendor::AMD; }
  unsigned getWarpSize() const override { return 64; }
  int64_t getL2Partitions() const override { return 8; }
  int64_t getSharedMemoryBytes() const override {
    return (isGfx950 ? 160 : 64) * 1024;
  }
  // No cp.async-style copies with commit groups: gfx950's 16-byte loads to
  // LDS are hasBufferLoadsToShared() (gfx942's DMA moves 4 bytes a lane,
  // less than its register-staged 16-byte loads).
  unsigned getAsyncCopyBytes() const override { return 0; }

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
  Value exp2(OpBuilder &b, Location loc, Value x) const override {
    return ROCDL::ROCDLExp2::create(b, loc, x.getType(), x);
  }
  // llvm.amdgcn.log is the base-2 logarithm (v_log_f32).
  Value log2(OpBuilder &b, Location loc, Value x) const override {
    return ROCDL::ROCDLLog::create(b, loc, x.getType(), x);
  }

  // llvm.amdgcn.ballot.i64: an SGPR pair, uniform over the wave.
  Value ballot(OpBuilder &b, Location loc, Value pred) const override {
    return ROCDL::BallotOp::create(b, loc, b.getI64Type(), pred);
  }

  // gfx942 has no f32 -> bf16 conversion instruction, and LLVM's expansion
  // of fptrunc handles NaN (a compare and two selects besides the rounding
  // add). A probability is no NaN: round to nearest on the bits alone,
  // bits + 0x8000, keeping the high half (one add; a pair's high halves
  // are one v_perm). Ties (low half exactly 0x8000) go up rather than to
  // even: the same half-ulp bound, one instruction in three of what even
  // took (bits + 0x7fff + bit 16), on every score of the prefill loops.
  Value truncateProbability(OpBuilder &b, Location loc, Type elem,
                            Value p) const override {
    if (isGfx950 || !elem.isBF16())
      return TargetInfo::truncateProbability(b, loc, elem, p);
    // p may be a vector (pairs pack into one register).
    auto like = [&](Type scalar) -> Type {
      if (auto vec = dyn_cast<VectorType>(p.getType()))
        return vec.clone(scalar);
      return scalar;
    };
    Type i32 = like(b.getI32Type());
    auto c = [&](int64_t v) -> Value {
      TypedAttr value = b.getI32IntegerAttr(v);
      if (auto vec = dyn_cast<VectorType>(i32))
        value = DenseElementsAttr::get(vec, APInt(32, v));
      return arith::ConstantOp::create(b, loc, i32, value);
    };
    Value bits = arith::BitcastOp::create(b, loc, i32, p);
    Value rounded = arith::AddIOp::create(b, loc, bits, c(0x8000));
    Value high =
        arith::TruncIOp::create(b, loc, like(b.getI16Type()),
                                arith::ShRUIOp::create(b, loc, rounded, c(16)));
    return arith::BitcastOp::create(b, loc, like(elem), high);
  }

  // Within a row of 16 lanes, DPP moves instead of LDS swizzles: no LDS
  // traffic and no lgkmcnt wait before the combine (CDNA3 ISA, "Data
  // Parallel Processing"). Distances 1 and 2 are the quad permutations
  // [1,0,3,2] and [2,3,0,1] (lane ^ 1, lane ^ 2); after them every lane of
  // a quad holds the quad's value, so row_half_mirror (lane i of 8 reads
  // 7 - i, in the other quad) serves for distance 4 and row_mirror (i of
  // 16 reads 15 - i, in the other half) for 8. Farther: a shuffle.
  Value reductionPartner(OpBuilder &b, Location loc, Value x,
                         int64_t distance) const override {
    constexpr int32_t kQuadSwapPairs = 1 | 0 << 2 | 3 << 4 | 2 << 6;
    constexpr int32_t kQuadSwapHalves = 2 | 3 << 2 | 0 << 4 | 1 << 6;
    int32_t control;
    switch (distance) {
    case 1:
      control = kQuadSwapPairs;
      break;
    case 2:
      control = kQuadSwapHalves;
      break;
    case 4:
      control = kRowHalfMirror;
      break;
    case 8:
      control = kRowMirror;
      break;
    default:
      return TargetInfo::reductionPartner(b, loc, x, distance);
    }
    Type i32 = b.getI32Type();
    Value bits = x.getType() == i32
                     ? x
                     : arith::BitcastOp::create(b, loc, i32, x).getResult();
    Value moved = dpp(b, loc, bits, bits, control, 0xf, /*zeroMissing=*/true);
    return x.getType() == i32
               ? moved
               : arith::BitcastOp::create(b, loc, x.getType(), moved)
                     .getResult();
  }

  // Across the half-waves on gfx950, one v_permlane32_swap of x with
  // itself: its results hold x of lanes 0-31 and of lanes 32-63 in every
  // lane, so a commutative combine needs no select of the partner's half
  // (gpu.shuffle xor 32 lowers to the swap, a compare and a select).
  Value
  butterflyStep(OpBuilder &b, Location loc, Value x, int64_t distance,
                function_ref<Value(Value, Value)> combine) const override {
    Type i32 = b.getI32Type();
    if (!isGfx950 || distance != 32 || !x.getType().isIntOrFloat() ||
        x.getType().getIntOrFloatBitWidth() != 32)
      return TargetInfo::butterflyStep(b, loc, x, distance, combine);
    Value bits = x.getType() == i32
                     ? x
                     : arith::BitcastOp::create(b, loc, i32, x).getResult();
    auto pairType =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32});
    Value swapped = ROCDL::Permlane32SwapOp::create(
        b, loc, pairType, bits, bits, /*fi=*/false, /*boundControl=*/false);
    auto half = [&](int64_t i) -> Value {
      Value v = LLVM::ExtractValueOp::create(b, loc, swapped, i);
      return x.getType() == i32
                 ? v
                 : arith::BitcastOp::create(b, loc, x.getType(), v).getResult();
    };
    return combine(half(0), half(1));
  }

  // The ROCDL lowering of gpu.shuffle up (LLVM 22) checks only the upper
  // end of the lane segment, so its lanes below d were valid and read the
  // top of the wave through ds_bpermute (found by the emulator: every scan
  // was wrong). The validity is the lane id's instead.
  std::pair<Value, Value> shuffleUp(OpBuilder &b, Location loc, Value x,
                                    int64_t d) const override {
    Value lane = gpu::LaneIdOp::create(b, loc, /*upper_bound=*/nullptr);
    Value valid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, lane,
                              arith::ConstantIndexOp::create(b, loc, d));
    // One lane up is DPP's wave_shr:1 (GFX9): no LDS round trip.
    if (d == 1 && x.getType().isInteger(32))
      return {dpp(b, loc, x, x, kWaveShiftRight1, 0xf), valid};
    auto up = gpu::ShuffleOp::create(b, loc, x, d, getWarpSize(),
                                     gpu::ShuffleMode::UP);
    return {up.getShuffleResult(), valid};
  }

  // A wave64 scan in six DPP moves (no LDS): row_shr 1, 2, 4, 8 scan each
  // row of 16 lanes; row_bcast:15 then adds row 0's total to row 1 and
  // row 2's to row 3, and row_bcast:31 the total of rows 0-1 to rows 2-3
  // (the GFX9 sequence of AMD's "AMD GCN Assembly: Cross-Lane Operations").
  // Lanes without a source, and the rows a step's row mask leaves out, get
  // `identity`.
  std::pair<Value, Value> scanPartner(OpBuilder &b, Location loc, Value x,
                                      int64_t step,
                                      Value identity) const override {
    if (step < 4)
      return {dpp(b, loc, identity, x, kRowShiftRight + (1 << step), 0xf),
              Value()};
    if (step == 4)
      return {dpp(b, loc, identity, x, kRowBroadcast15, 0xa), Value()};
    return {dpp(b, loc, identity, x, kRowBroadcast31, 0xc), Value()};
  }

  // s_bcnt1 of the ballot's SGPR pair: a value uniform over the wave (a
  // lane index for readLane) with no LDS round trip.
  Value countLanes(OpBuilder &b, Location loc, Value pred) const override {
    Value lanes = ballot(b, loc, pred);
    Value count = LLVM::CtPopOp::create(b, loc, lanes.getType(), lanes);
    return arith::TruncIOp::create(b, loc, b.getI32Type(), count);
  }

  // v_readlane_b32: the lane is an SGPR, the result is uniform.
  Value readLane(OpBuilder &b, Location loc, Value x,
                 Value lane) const override {
    return ROCDL::ReadlaneOp::create(b, loc, x.getType(), x, lane);
  }

  int64_t getAccumulatorRun(const MmaAtom &) const override { return 1; }
  int64_t getAccumulatorRowLanes(const MmaAtom &atom) const override {
    return atom.n;
  }
  std::pair<Value, Value> getAccumulatorPosition(OpBuilder &b, Location loc,
                                                 const MmaAtom &atom,
                                                 Value lane,
                                                 int64_t i) const override {
    // Folded where the lane is a constant (templates ask for lane 0's
    // positions as constants).
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    Value col = b.createOrFold<arith::RemUIOp>(loc, lane, c(atom.n));
    // 32x32: row = 8 (i / 4) + 4 (l / 32) + i % 4;
    // 16x16: row = 4 (l / 16) + i.
    Value group = b.createOrFold<arith::DivUIOp>(loc, lane, c(atom.n));
    Value row = b.createOrFold<arith::MulIOp>(loc, group, c(4));
    int64_t base = atom.m == 32 ? 8 * (i / 4) + i % 4 : i;
    row = b.createOrFold<arith::AddIOp>(loc, row, c(base));
    return {row, col};
  }

  // Lane l: row (A) or column (B) l % rows of the atom, k values
  // [kPerLane * (l / rows), +kPerLane).
  std::optional<FragmentRun> fragmentRun(OpBuilder &b, Location loc,
                                         const MmaAtom &atom,
                                         MmaOperand operand,
                                         Value lane) const override {
    int64_t rows = operand == MmaOperand::A ? atom.m : atom.n;
    int64_t kPerLane = rows * atom.k / getWarpSize();
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    Value group = arith::DivUIOp::create(b, loc, lane, c(rows));
    return FragmentRun{arith::RemUIOp::create(b, loc, lane, c(rows)),
                       arith::MulIOp::create(b, loc, group, c(kPerLane)),
                       kPerLane};
  }

  void fenceScheduling(OpBuilder &b, Location loc) const override {
    ROCDL::SchedBarrier::create(b, loc, b.getI32IntegerAttr(0));
  }

  // The emulator takes an empty asm statement for its operand
  // (EmulateGPU.cpp).
  Value opaqueCopy(OpBuilder &b, Location loc, Value v) const override {
    return LLVM::InlineAsmOp::create(
               b, loc, v.getType(), ValueRange{v}, /*asm_string=*/"", "=v,0",
               /*has_side_effects=*/true, /*is_align_stack=*/false,
               LLVM::tailcallkind::TailCallKind::None,
               LLVM::AsmDialectAttr::get(b.getContext(),
                                         LLVM::AsmDialect::AD_ATT),
               /*operand_attrs=*/ArrayAttr())
        .getResult(0);
  }

  // llvm.amdgcn.wave.barrier: no instruction, but the compiler keeps the
  // wave's memory accesses on their side of it.
  void waveBarrier(OpBuilder &b, Location loc) const override {
    LLVM::CallIntrinsicOp::create(
        b, loc, b.getStringAttr("llvm.amdgcn.wave.barrier"), ValueRange{});
  }

  FailureOr<SmallVector<Fragment>>
  loadFragments(OpBuilder &b, Location loc, const MmaAtom &atom,
                MmaOperand operand, const SharedTile &tile, Value row0,
                Value k0, Value lane, int64_t count) const override {
    int64_t rows = operand == MmaOperand::A ? atom.m : atom.n;
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
    FragmentRun run = *fragmentRun(b, loc, atom, operand, lane);
    int64_t kPerLane = run.length;
    Value inAtom = run.row;
    Value kFirst = arith::AddIOp::create(b, loc, k0, run.kFirst);
    auto fragType = VectorType::get({kPerLane}, atom.operandType);
    SmallVector<Fragment> frags;
    for (int64_t i = 0; i < count; ++i) {
      Value r = arith::AddIOp::create(
          b, loc, row0, arith::AddIOp::create(b, loc, inAtom, c(rows * i)));
      if (tile.kContiguous) {
        frags.push_back({vector::LoadOp::create(b, loc, fragType, tile.memref,
                                                tile.indices(b, loc, r, kFirst))});
        continue;
      }
      if (hasTransposedFragmentReads(atom)) {
        frags.push_back({loadTransposedRun(b, loc, tile, r, kFirst, kPerLane,
                                           lane, fragType)});
        continue;
      }
      // [k][m] or [k][n] tile (wgrad A, dgrad B): the lane's k values are
      // a column.
      SmallVector<Value> elems;
      for (int64_t j = 0; j < kPerLane; ++j) {
        Value kj = arith::AddIOp::create(b, loc, kFirst, c(j));
        elems.push_back(memref::LoadOp::create(b, loc, tile.memref,
                                               tile.indices(b, loc, kj, r)));
      }
      frags.push_back(
          {vector::FromElementsOp::create(b, loc, fragType, elems)});
    }
    return frags;
  }

  // gfx950's ds_read_b64_tr_b16 (CDNA4 ISA, "MFMA transpose load from
  // LDS"): in each group of 16 lanes, lane j reads 4 elements of row j / 4
  // of a 4 x 16 block, columns 4 (j % 4) + [0, 4), and lane i receives
  // column i, rows 0-3. With k as the block's rows, a lane gets 4
  // consecutive k of its row in one 8-byte read.
  bool hasTransposedFragmentReads(const MmaAtom &atom) const override {
    int64_t kPerLane = atom.m * atom.k / getWarpSize();
    return isGfx950 && atom.operandType.getIntOrFloatBitWidth() == 16 &&
           atom.m == atom.n && atom.m % 16 == 0 && kPerLane % 4 == 0;
  }
  std::pair<Value, Value> transposedReadStart(OpBuilder &b, Location loc,
                                              Value row, Value kFirst,
                                              Value lane) const override {
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // The group's 16 rows are consecutive (an atom's rows are lane % m):
    // lane j addresses rows group + 4 (j % 4) at k + j / 4.
    Value j = arith::RemUIOp::create(b, loc, lane, c(16));
    Value readRow = arith::AddIOp::create(
        b, loc, arith::SubIOp::create(b, loc, row, j),
        arith::MulIOp::create(b, loc, arith::RemUIOp::create(b, loc, j, c(4)),
                              c(4)));
    Value readK = arith::AddIOp::create(
        b, loc, kFirst, arith::DivUIOp::create(b, loc, j, c(4)));
    return {readRow, readK};
  }
  Value loadTransposedPiece(OpBuilder &b, Location loc, VectorType type,
                            Value memref, ValueRange indices) const override {
    return amdgpu::TransposeLoadOp::create(b, loc, type, memref, indices);
  }
  /// Lane `lane`'s run of `length` k values from `kFirst` of row `row` of a
  /// [k][row] tile, by length / 4 transpose reads.
  Value loadTransposedRun(OpBuilder &b, Location loc, const SharedTile &tile,
                          Value row, Value kFirst, int64_t length, Value lane,
                          VectorType runType) const {
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto [readRow, readK] = transposedReadStart(b, loc, row, kFirst, lane);
    auto quarterType = VectorType::get({4}, runType.getElementType());
    Value run;
    for (int64_t q = 0; q < length / 4; ++q) {
      Value k = arith::AddIOp::create(b, loc, readK, c(4 * q));
      Value part = loadTransposedPiece(b, loc, quarterType, tile.memref,
                                       tile.indices(b, loc, k, readRow));
      if (!run) {
        run = part;
        continue;
      }
      int64_t have = cast<VectorType>(run.getType()).getNumElements();
      run = vector::ShuffleOp::create(
          b, loc, run, part, llvm::to_vector(llvm::seq<int64_t>(0, have + 4)));
    }
    return run;
  }

  // Lane group g (lane / rows) of step s takes k values [(g steps + s)
  // kPerLane, ... + kPerLane) of the steps' range: the group's runs of all
  // steps are one run of 16 bytes, read at once.
  int64_t jointKSteps(const MmaAtom &atom) const override {
    int64_t bytes = atom.m * atom.k / getWarpSize() *
                    atom.operandType.getIntOrFloatBitWidth() / 8;
    return bytes < 16 && 16 % bytes == 0 ? 16 / bytes : 1;
  }
  FailureOr<SmallVector<SmallVector<Fragment>>>
  loadJointFragments(OpBuilder &b, Location loc, const MmaAtom &atom,
                     MmaOperand operand, const SharedTile &tile, Value row0,
                     Value k0, Value lane, int64_t count) const override {
    assert(tile.kContiguous && atom.m == atom.n);
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    int64_t steps = jointKSteps(atom);
    FragmentRun run = *fragmentRun(b, loc, atom, operand, lane);
    Value kFirst = arith::AddIOp::create(
        b, loc, k0, arith::MulIOp::create(b, loc, run.kFirst, c(steps)));
    auto jointType = VectorType::get({run.length * steps}, atom.operandType);
    SmallVector<SmallVector<Fragment>> frags(steps);
    for (int64_t i = 0; i < count; ++i) {
      Value row = arith::AddIOp::create(
          b, loc, row0, arith::AddIOp::create(b, loc, run.row, c(atom.m * i)));
      Value joint = vector::LoadOp::create(b, loc, jointType, tile.memref,
                                           tile.indices(b, loc, row, kFirst));
      for (int64_t s = 0; s < steps; ++s) {
        SmallVector<Value> elems;
        for (int64_t e = 0; e < run.length; ++e)
          elems.push_back(
              vector::ExtractOp::create(b, loc, joint, s * run.length + e));
        frags[s].push_back({vector::FromElementsOp::create(
            b, loc, VectorType::get({run.length}, atom.operandType), elems)});
      }
    }
    return frags;
  }

  // One run of `count` bf16/f16 columns a k: 16 bytes at most, and the
  // tile's contiguous runs are 8 elements (SharedTile).
  bool hasInterleavedFragments(const MmaAtom &atom,
                               int64_t count) const override {
    return atom.operandType.getIntOrFloatBitWidth() == 16 && 8 % count == 0;
  }
  SmallVector<Fragment>
  loadInterleavedFragments(OpBuilder &b, Location loc, const MmaAtom &atom,
                           const SharedTile &tile, Value col0, Value k0,
                           Value lane, int64_t count) const override {
    assert(!tile.kContiguous && hasInterleavedFragments(atom, count));
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    FragmentRun run = *fragmentRun(b, loc, atom, MmaOperand::B, lane);
    Value kFirst = arith::AddIOp::create(b, loc, k0, run.kFirst);
    // The lane's column c of every atom: tile columns col0 + count c + i.
    Value col = arith::AddIOp::create(
        b, loc, col0, arith::MulIOp::create(b, loc, run.row, c(count)));
    auto runType = VectorType::get({count}, atom.operandType);
    SmallVector<Value> rows;
    for (int64_t j = 0; j < run.length; ++j)
      rows.push_back(vector::LoadOp::create(
          b, loc, runType, tile.memref,
          tile.indices(b, loc, arith::AddIOp::create(b, loc, kFirst, c(j)),
                       col)));
    auto fragType = VectorType::get({run.length}, atom.operandType);
    SmallVector<Fragment> frags;
    for (int64_t i = 0; i < count; ++i) {
      SmallVector<Value> elems;
      for (Value row : rows)
        elems.push_back(vector::ExtractOp::create(b, loc, row, i));
      frags.push_back(
          {vector::FromElementsOp::create(b, loc, fragType, elems)});
    }
    return frags;
  }

  // A 32x32 C atom holds in lane l column l % 32 and rows 8 (i / 4) + 4 h
  // + i % 4 (h = l / 32) in element i; a B fragment of a 32 x 32 x K MFMA
  // gives lane l column l % 32 and k values [K / 2 h, K / 2 (h + 1)) of its
  // step. So element i is k value K / 2 h + i % (K / 2) of step i / (K / 2):
  // B fragments are runs of consecutive elements, and row r stands for
  // k = K (i / (K / 2)) + K / 2 h + i % (K / 2), i = 4 (r / 8) + r % 4. For
  // K = 8 (gfx942) that is r itself; for K = 16 (gfx950) rows 4-7 and 8-11
  // of each 16 trade places (bits 2 and 3 of r swap).
  // A 16x16 C atom holds in lane l column l % 16 and rows 4 (l / 16) + i;
  // a 16 x 16 x K B fragment gives lane l k values [K / 4 (l / 16), +K /
  // 4). K = 16 (gfx942): one atom is one step, row r is k = r. K = 32
  // (gfx950): two atoms stacked along M are one step, element i the row
  // 4 (l / 16) + i % 4 of atom i / 4, so row r of the pair stands for k =
  // 8 ((r % 16) / 4) + 4 (r / 16) + r % 4.
  bool hasAccumulatorsAsOperandB(const MmaAtom &atom) const override {
    return atom.m == atom.n && (atom.m == 32 || atom.m == 16);
  }
  Fragment accumulatorsAsOperandB(OpBuilder &b, Location loc,
                                  const MmaAtom &atom, ArrayRef<Value> acc,
                                  int64_t step) const override {
    int64_t perLane = atom.n * atom.k / getWarpSize();
    auto type = VectorType::get({perLane}, atom.operandType);
    return {vector::FromElementsOp::create(b, loc, type,
                                           acc.slice(step * perLane, perLane))};
  }
  Value operandKOfAccumulatorRow(OpBuilder &b, Location loc,
                                 const MmaAtom &atom,
                                 Value row) const override {
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    if (atom.k == 8 || (atom.m == 16 && atom.k == 16))
      return row;
    if (atom.m == 16) {
      assert(atom.k == 32 && "16x16 MFMAs of bf16/f16 have K 16 or 32");
      // (row - row % 32) + 8 ((row % 16) / 4) + 4 ((row % 32) / 16) + row
      // % 4, folded for a constant row.
      auto rem = [&](Value x, int64_t v) {
        return b.createOrFold<arith::RemUIOp>(loc, x, c(v));
      };
      auto times = [&](Value x, int64_t d, int64_t m) {
        return b.createOrFold<arith::MulIOp>(
            loc, b.createOrFold<arith::DivUIOp>(loc, x, c(d)), c(m));
      };
      Value inPair = rem(row, 32);
      Value k = b.createOrFold<arith::SubIOp>(loc, row, inPair);
      for (Value term :
           {times(rem(row, 16), 4, 8), times(inPair, 16, 4), rem(row, 4)})
        k = b.createOrFold<arith::AddIOp>(loc, k, term);
      return k;
    }
    assert(atom.k == 16 && "32x32 MFMAs of bf16/f16 have K 8 or 16");
    // Swap bits 2 and 3: row ^ (d | d << 1) << 2, d = bit 2 ^ bit 3
    // (folded for a constant row).
    Value bits = b.createOrFold<arith::ShRUIOp>(loc, row, c(2));
    Value d = b.createOrFold<arith::AndIOp>(
        loc,
        b.createOrFold<arith::XOrIOp>(
            loc, bits, b.createOrFold<arith::ShRUIOp>(loc, bits, c(1))),
        c(1));
    return b.createOrFold<arith::XOrIOp>(
        loc, row, b.createOrFold<arith::MulIOp>(loc, d, c(12)));
  }

  FailureOr<SmallVector<Value>> mma(OpBuilder &b, Location loc,
                                    const MmaAtom &atom, const Fragment &a,
                                    const Fragment &bFrag,
                                    ValueRange acc) const override {
    auto accType = VectorType::get({static_cast<int64_t>(acc.size())},
                                   atom.accType);
    Value c = vector::FromElementsOp::create(b, loc, accType, acc);
    Value d = amdgpu::MFMAOp::create(b, loc, accType, atom.m, atom.n, atom.k,
                                     /*blocks=*/1, a.front(), bFrag.front(), c);
    SmallVector<Value> out;
    for (int64_t i = 0, e = acc.size(); i < e; ++i)
      out.push_back(vector::ExtractOp::create(b, loc, d, i));
    return out;
  }

  // gfx9 s_waitcnt fields: vmcnt [3:0] and [15:14], expcnt [6:4], lgkmcnt
  // [11:8]; vmcnt n and the others at their maximum (no wait).
  static void waitVmcnt(OpBuilder &b, Location loc, int64_t n) {
    assert(n >= 0 && n < 63 && "vmcnt is 6 bits");
    ROCDL::SWaitcntOp::create(b, loc, (n & 0xf) | (n >> 4) << 14 | 0x0f70);
  }
  void waitForGlobalLoads(OpBuilder &b, Location loc) const override {
    waitVmcnt(b, loc, 0);
  }
  void waitForLoadsToShared(OpBuilder &b, Location loc,
                            int64_t pending) const override {
    waitVmcnt(b, loc, pending);
  }

  // gfx950's 16-byte buffer_load ... lds (CDNA4 ISA, "Memory Buffer Load
  // to LDS"): lane l's bytes go to LDS at M0 + offset + 16 l, M0 the
  // wave's base, `offset` the instruction's (also added to the source).
  bool hasBufferLoadsToShared() const override { return isGfx950; }
  void bufferLoadToShared(OpBuilder &b, Location loc, Value resource,
                          Value offset, Value tileOffset, Value shared,
                          ValueRange waveIndices,
                          int64_t immediateOffset) const override {
    assert(isGfx950 && "16-byte loads to LDS are gfx950's");
    assert(immediateOffset >= 0 && immediateOffset < 4096 &&
           "the instruction's offset has 12 bits");
    auto type = cast<MemRefType>(shared.getType());
    auto [strides, staticOffset] = type.getStridesAndOffset();
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    auto i64Const = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i64, v);
    };
    auto toI64 = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, loc, i64, index);
    };
    Value element = i64Const(staticOffset);
    for (auto [index, stride] : llvm::zip(waveIndices, strides))
      element = arith::AddIOp::create(
          b, loc, element,
          arith::MulIOp::create(b, loc, toI64(index), i64Const(stride)));
    // In 64 bits, as addresses are in the emulator; the chip's LDS
    // addresses are 32-bit, and the back end drops the high word.
    Value base = arith::AddIOp::create(
        b, loc,
        toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, shared)),
        arith::MulIOp::create(b, loc, element,
                              i64Const(type.getElementTypeBitWidth() / 8)));
    Value m0 = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), base);
    auto i32Const = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, i32, v);
    };
    ROCDL::RawPtrBufferLoadLdsOp::create(
        b, loc, resource, m0, i32Const(16), offset, tileOffset,
        i32Const(immediateOffset), i32Const(0), /*alias_scopes=*/nullptr,
        /*noalias_scopes=*/nullptr,
        /*tbaa=*/nullptr);
  }

  // A raw buffer (stride 0): the resource's word 3 as MLIR's
  // amdgpu-to-rocdl sets it for gfx9 chips (32-bit data format, no
  // swizzle, no added thread id), so that offsets are plain bytes checked
  // against `bytes`. Address and size go through v_readfirstlane: a
  // resource the back end cannot prove uniform (a pointer-table entry, a
  // value from a shuffle) would be used in a loop over the wave's distinct
  // values around every load.
  bool hasBufferLoads() const override { return true; }
  Value bufferResource(OpBuilder &b, Location loc, Value address,
                       Value bytes) const override {
    constexpr int32_t kRawBufferFlags = 159744;
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    auto constant = [&](Type type, int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, type, v);
    };
    auto firstLane = [&](Value word) -> Value {
      return ROCDL::ReadfirstlaneOp::create(b, loc, i32, word);
    };
    auto firstLane64 = [&](Value x) -> Value {
      Value low = firstLane(arith::TruncIOp::create(b, loc, i32, x));
      Value high = firstLane(arith::TruncIOp::create(
          b, loc, i32, arith::ShRUIOp::create(b, loc, x, constant(i64, 32))));
      return arith::OrIOp::create(
          b, loc, arith::ExtUIOp::create(b, loc, i64, low),
          arith::ShLIOp::create(b, loc,
                                arith::ExtUIOp::create(b, loc, i64, high),
                                constant(i64, 32)));
    };
    Value base = LLVM::IntToPtrOp::create(
        b, loc, address.getType(),
        firstLane64(LLVM::PtrToIntOp::create(b, loc, i64, address)));
    Value size = arith::ExtUIOp::create(
        b, loc, i64, firstLane(arith::TruncIOp::create(b, loc, i32, bytes)));
    return ROCDL::MakeBufferRsrcOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), 8), base,
        constant(b.getI16Type(), 0), size, constant(i32, kRawBufferFlags));
  }
  Value bufferLoad(OpBuilder &b, Location loc, Type type, Value resource,
                   Value offset, Value tileOffset) const override {
    // Loaded as words (buffer_load_dwordx4 for 16 bytes), then viewed as
    // `type`; aux 0: default caching.
    auto vectorType = cast<VectorType>(type);
    int64_t words =
        vectorType.getNumElements() * vectorType.getElementTypeBitWidth() / 32;
    Type wordsType = words == 1 ? Type(b.getI32Type())
                                : VectorType::get({words}, b.getI32Type());
    Value aux = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    Value loaded = ROCDL::RawPtrBufferLoadOp::create(
        b, loc, wordsType, resource, offset, tileOffset, aux,
        /*alias_scopes=*/nullptr, /*noalias_scopes=*/nullptr, /*tbaa=*/nullptr);
    if (words == 1)
      loaded = vector::BroadcastOp::create(
          b, loc, VectorType::get({1}, b.getI32Type()), loaded);
    return vector::BitCastOp::create(b, loc, vectorType, loaded);
  }

  LogicalResult asyncCopy(OpBuilder &, Location loc, Value, ValueRange, Value,
                          ValueRange, int64_t, Value) const override {
    return noAsyncCopies(loc);
  }
  LogicalResult asyncCommit(OpBuilder &, Location loc) const override {
    return noAsyncCopies(loc);
  }
  LogicalResult asyncWait(OpBuilder &, Location loc, int64_t) const override {
    return noAsyncCopies(loc);
  }

private:
  /// Templates ask getAsyncCopyBytes() first; reaching these is a bug.
  LogicalResult noAsyncCopies(Location loc) const {
    return emitError(loc) << getChip()
                          << ": no cp.async-style copies (the template must "
                             "stage tiles through registers or load them by "
                             "bufferLoadToShared)";
  }

  bool isGfx950;
};

} // namespace

std::unique_ptr<TargetInfo> mlir::tessel::createAMDTargetInfo(StringRef chip) {
  if (chip == "gfx942" || chip == "gfx950")
    return std::make_unique<CDNATargetInfo>(chip);
  return nullptr;
}
