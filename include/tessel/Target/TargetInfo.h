//===- TargetInfo.h - What a GPU lowering may ask of its target -*- C++ -*-===//
//
// Kernel templates (lib/Conversion/TesselToGPU) are written once against this
// interface; a target answers questions about the hardware (warp size, MMA
// atoms and their fragment layouts, shared-memory capacity, async copies) and
// emits the few operations that have no target-neutral form (warp-level MMA,
// operand fragment loads, asynchronous global-to-shared copies). Triton's
// TargetInfoBase is the model: a new target adds an implementation, it does
// not fork a template.
//
// Implemented: NVIDIA sm80 (mma.sync, ldmatrix, cp.async; runs on every sm80+
// GPU), NVIDIA sm_90a (the same, plus the warpgroup path of WarpgroupMma.h
// for the templates that have a Hopper main loop) and AMD CDNA gfx942/gfx950
// (MFMA, LDS vector reads; tiles staged through registers).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TARGET_TARGETINFO_H
#define TESSEL_TARGET_TARGETINFO_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <functional>
#include <memory>
#include <optional>

namespace mlir::tessel {

class WarpgroupMma;

enum class GpuVendor { NVIDIA, AMD };

/// One warp-level matrix multiply-accumulate instruction:
/// C[m x n] (accType) += A[m x k] . B[k x n] (operandType).
struct MmaAtom {
  int64_t m = 0, n = 0, k = 0;
  Type operandType;
  Type accType;
};

/// The registers one lane holds of one operand fragment of one atom. Opaque
/// to templates: they come from loadFragments and go to mma.
using Fragment = SmallVector<Value, 4>;

/// Which multiplicand a fragment feeds.
enum class MmaOperand { A, B };

/// An operand tile in shared memory. K-contiguous (the default): element
/// (row, k) of an A tile is A[row][k], of a B tile B^T[n][k]. A tile may
/// instead lie with K along its rows (kContiguous = false): element (k, n)
/// of a B tile is B[k][n], element (k, m) of an A tile A[m][k] — the layout
/// of a B stored [K, N] (dgrad) or of an A^T stored [K, M] (wgrad) in global
/// memory, which then needs no transpose on its way to shared memory; the
/// target transposes on the fragment load. `indices` maps a row and a column of the stored layout to
/// the memref indices of that element; the template owns the layout (stage,
/// swizzle) and guarantees that runs of 8 bf16 along the contiguous
/// dimension that start at a multiple of 8 are contiguous and 16-byte
/// aligned.
struct SharedTile {
  Value memref;
  std::function<SmallVector<Value>(OpBuilder &, Location, Value row, Value col)>
      indices;
  bool kContiguous = true;
};

class TargetInfo {
public:
  virtual ~TargetInfo();

  /// The target of `chip` ("sm80" or "sm_80", "sm90a" or "sm_90a", "gfx942",
  /// "gfx950"). An unknown
  /// chip is reported through `emitError`, naming the known ones.
  static FailureOr<std::unique_ptr<TargetInfo>>
  get(StringRef chip, llvm::function_ref<InFlightDiagnostic()> emitError);

  /// The canonical chip name, as LLVM spells it ("sm_80", "gfx942").
  StringRef getChip() const { return chip; }
  virtual GpuVendor getVendor() const = 0;

  /// Hopper's warpgroup MMA with TMA and mbarriers, or null: templates with
  /// a warpgroup main loop use it where the target has it.
  virtual const WarpgroupMma *getWarpgroupMma() const { return nullptr; }

  /// Threads that execute an MMA atom together (32 on NVIDIA, 64 on CDNA).
  virtual unsigned getWarpSize() const = 0;
  /// Dies with an L2 cache of their own that the chip deals workgroups to
  /// in turn (CDNA3/4's XCDs: 8 on MI300X, MI325X and MI355X; MI300A's 6
  /// are gfx942 too, where the renumbering below still holds, less well);
  /// 1 where one L2 serves the chip.
  virtual int64_t getL2Partitions() const { return 1; }
  /// Shared memory (LDS) one block may use, in bytes (on NVIDIA, beyond
  /// 48 KB only as dynamic shared memory, which the runtime opts in to).
  virtual int64_t getSharedMemoryBytes() const = 0;
  /// The widest global load or store one lane issues, in bytes.
  virtual unsigned getMaxVectorBytes() const { return 16; }
  /// Bytes one lane moves with one asynchronous global-to-shared copy that
  /// bypasses registers (cp.async, LDS DMA); 0 when the target has none (or
  /// none in use): templates then load tiles into registers and store them
  /// to shared memory themselves, and never call asyncCopy/Commit/Wait.
  virtual unsigned getAsyncCopyBytes() const = 0;

  /// Bounds-checked global reads (CDNA's buffer loads), for tiles whose
  /// rows may run past their data: a resource over the `bytes` bytes (i64,
  /// less than kMaxBufferBytes) at `address` (an !llvm.ptr<1>), both
  /// uniform over the wave. Only where hasBufferLoads().
  virtual bool hasBufferLoads() const { return false; }
  virtual Value bufferResource(OpBuilder &b, Location loc, Value address,
                               Value bytes) const;
  /// A `type` (whole 4-byte words, at most 16 bytes) read from `resource`
  /// at byte `offset` (i32, per lane) plus `tileOffset` (i32, uniform; not
  /// an immediate): the words at an offset past the resource's bytes read
  /// as zeros. Whether the chips count `tileOffset` in that check is not
  /// documented alike, so a caller must not depend on it (the emulator
  /// fails a launch where the two readings differ).
  virtual Value bufferLoad(OpBuilder &b, Location loc, Type type,
                           Value resource, Value offset,
                           Value tileOffset) const;
  /// Whether buffer loads can write a tile's chunks straight into shared
  /// memory (gfx950's buffer_load_dwordx4 ... lds): no registers, no LDS
  /// store. The wave's 64 lanes then fill 64 consecutive 16-byte slots.
  virtual bool hasBufferLoadsToShared() const { return false; }
  /// Loads this lane's 16 bytes as bufferLoad does (zeros past the
  /// resource) into `shared` 16 x lane bytes past element `waveIndices`
  /// (uniform over the wave: the chip takes that base from M0).
  /// `immediateOffset` (bytes, below 4096) is the instruction's offset,
  /// which the chip adds to both the LDS slot and the source offset: loads
  /// whose slots differ by it share M0.
  /// Asynchronous: waitForLoadsToShared.
  virtual void bufferLoadToShared(OpBuilder &b, Location loc, Value resource,
                                  Value offset, Value tileOffset, Value shared,
                                  ValueRange waveIndices,
                                  int64_t immediateOffset = 0) const;
  /// Waits until at most `pending` of this wave's loads to shared memory
  /// are in flight (the chip's vmcnt: its other vector loads count too, so
  /// the wait is never weaker than asked). The back end waits by itself
  /// before a read of shared memory that such a load may write, from the
  /// same wave; other waves need this before a barrier.
  virtual void waitForLoadsToShared(OpBuilder &b, Location loc,
                                    int64_t pending) const;

  /// Buffers end below this, so that an offset of kMaxBufferBytes plus any
  /// tileOffset below it is out of bounds (a chunk that must read zeros).
  static constexpr int64_t kMaxBufferBytes = int64_t(1) << 31;

  /// Waits until this lane's global loads so far have returned: CDNA's
  /// s_waitcnt vmcnt(0), for values loaded once before a loop (Q
  /// fragments): the back end may move such loads below the loop's
  /// prologue, and then waits for them (and every load issued after them,
  /// the loads of the next tile among them) inside the loop. Nothing on
  /// targets whose loads are waited for by their use.
  virtual void waitForGlobalLoads(OpBuilder &b, Location loc) const {}

  /// The MMA atoms for `operandType` x `operandType` -> `accType`, the
  /// preferred one first; empty if the target has none.
  virtual SmallVector<MmaAtom> getMmaAtoms(Type operandType,
                                           Type accType) const = 0;

  /// Accumulator elements one lane holds of an atom's C tile.
  int64_t getAccumulatorCount(const MmaAtom &atom) const {
    return atom.m * atom.n / getWarpSize();
  }
  /// Elements [i, i + run) of a lane's accumulator, for i a multiple of run,
  /// sit in one row of the C tile in consecutive columns.
  virtual int64_t getAccumulatorRun(const MmaAtom &atom) const = 0;
  /// The lanes that hold the columns of one row of the C tile: aligned
  /// groups of this many consecutive lanes (a row reduction, as in a
  /// softmax, combines them by XOR shuffles below this width). Runs of
  /// different index (i / run) in one lane sit in different rows.
  virtual int64_t getAccumulatorRowLanes(const MmaAtom &atom) const = 0;
  /// Row and column, within the atom's C tile, of accumulator element `i` of
  /// lane `lane`.
  virtual std::pair<Value, Value>
  getAccumulatorPosition(OpBuilder &b, Location loc, const MmaAtom &atom,
                         Value lane, int64_t i) const = 0;

  /// Loads the fragments of `count` atoms of `operand` that are stacked along
  /// the M (A) or N (B) dimension, the first one at tile row `row0`, all at
  /// K offset `k0` (a multiple of atom.k).
  virtual FailureOr<SmallVector<Fragment>>
  loadFragments(OpBuilder &b, Location loc, const MmaAtom &atom,
                MmaOperand operand, const SharedTile &tile, Value row0,
                Value k0, Value lane, int64_t count) const = 0;

  /// Whether loadFragments reads a [k][row] tile (kContiguous = false) of
  /// `atom`'s operands with whole-vector LDS reads (gfx950:
  /// ds_read_b64_tr_b16), so that templates stage such tiles as they lie
  /// rather than transposed through registers. NVIDIA reads them by
  /// ldmatrix.trans but stages by cp.async, and asks getAsyncCopyBytes().
  virtual bool hasTransposedFragmentReads(const MmaAtom &atom) const {
    return false;
  }
  /// Where hasTransposedFragmentReads: the (row, k) that lane `lane`'s first
  /// transposing read addresses, for the fragment run at (`row`, `kFirst`)
  /// of a [k][row] tile (fragmentRun's row and first k, offset by the
  /// tile's); the read at k + 4 q is piece q of the run. loadFragments reads
  /// so; templates that address the reads themselves (a lane's base and
  /// immediate offsets) ask it too.
  virtual std::pair<Value, Value> transposedReadStart(OpBuilder &b,
                                                      Location loc, Value row,
                                                      Value kFirst,
                                                      Value lane) const {
    llvm_unreachable("no transposed fragment reads");
  }
  /// One transposing read (4 elements of `type`'s element type) at
  /// `indices` of the shared `memref`, as transposedReadStart places it.
  virtual Value loadTransposedPiece(OpBuilder &b, Location loc, VectorType type,
                                    Value memref, ValueRange indices) const {
    llvm_unreachable("no transposed fragment reads");
  }

  /// K-steps whose fragments loadJointFragments reads together (1: none).
  virtual int64_t jointKSteps(const MmaAtom &atom) const { return 1; }
  /// The fragments of `count` atoms (as loadFragments) for each of
  /// jointKSteps() k-steps from `k0`, [step][atom], from a K-contiguous
  /// tile. The steps' k values are dealt out in an order that is the same
  /// for A and B, so that the steps' MMAs add up to the product over
  /// [k0, k0 + steps * atom.k) although step s is no slice [k0 + s k, ...):
  /// on CDNA a lane's runs of all the steps are one run (gfx942: one
  /// 16-byte LDS read for two 32x32x8 or 16x16x16 steps, where each step
  /// reads 8 bytes).
  virtual FailureOr<SmallVector<SmallVector<Fragment>>>
  loadJointFragments(OpBuilder &b, Location loc, const MmaAtom &atom,
                     MmaOperand operand, const SharedTile &tile, Value row0,
                     Value k0, Value lane, int64_t count) const {
    llvm_unreachable("no joint fragment loads on this target");
  }

  /// Whether loadInterleavedFragments works for `atom` and `count` atoms.
  virtual bool hasInterleavedFragments(const MmaAtom &atom,
                                       int64_t count) const {
    return false;
  }
  /// The B fragments of `count` atoms from a [k][n] tile (kContiguous =
  /// false) whose columns interleave: column c of atom i is tile column
  /// `col0 + count * c + i` (the caller's output columns follow the same
  /// map). A lane's elements of one k then are one run of `count` columns:
  /// on CDNA one 16-byte LDS read for 8 atoms, transposed in registers,
  /// where loadFragments reads a [k][n] tile one 2-byte element at a time.
  /// Only where hasInterleavedFragments (NVIDIA reads such a tile by
  /// ldmatrix.trans, and has none).
  virtual SmallVector<Fragment>
  loadInterleavedFragments(OpBuilder &b, Location loc, const MmaAtom &atom,
                           const SharedTile &tile, Value col0, Value k0,
                           Value lane, int64_t count) const {
    llvm_unreachable("no interleaved fragment loads on this target");
  }

  /// Where lane `lane`'s part of an operand fragment of `atom` lies, on
  /// targets whose fragments are one run of consecutive k values of one row
  /// (CDNA): that row (A; for B, the column) within the atom and the first
  /// k of the run, from the k-step's first; the run holds `length` values,
  /// in k order, as the Fragment's one vector. For fragments read straight
  /// from global memory. std::nullopt elsewhere.
  struct FragmentRun {
    Value row, kFirst;
    int64_t length;
  };
  virtual std::optional<FragmentRun> fragmentRun(OpBuilder &b, Location loc,
                                                 const MmaAtom &atom,
                                                 MmaOperand operand,
                                                 Value lane) const {
    return std::nullopt;
  }

  /// Keeps the back end's instruction scheduler from moving anything across
  /// this point: CDNA's s_sched_barrier 0 (no instruction), to keep a
  /// tile's loads issued together before the compute that waits for them
  /// (the scheduler otherwise sinks loads to their use to save registers,
  /// and waits for each there). Nothing elsewhere.
  virtual void fenceScheduling(OpBuilder &b, Location loc) const {}

  /// `v` itself, through an instruction the optimizer cannot look into,
  /// move or merge with another: a value kept where it is computed (CDNA:
  /// an empty asm statement with side effects, no instruction). Elsewhere
  /// `v`.
  virtual Value opaqueCopy(OpBuilder &b, Location loc, Value v) const {
    return v;
  }

  /// Orders the shared-memory accesses of the lanes of one wave around it,
  /// where a wave reads what its own lanes wrote (CDNA runs a wave's LDS
  /// accesses in order: only the compiler and the emulator, which runs
  /// lanes one at a time, need it). Every lane of the wave must execute it.
  /// CDNA only.
  virtual void waveBarrier(OpBuilder &b, Location loc) const;

  /// The A fragment of one atom (m x k) made of accumulators without a trip
  /// through shared memory: `acc` holds the accumulators of the k / n atoms
  /// that tile the fragment's k columns (left to right), already converted
  /// to atom.operandType. How flash attention feeds P = softmax(S) to P.V.
  /// std::nullopt when the C and A layouts differ on this target (then the
  /// template stages P in shared memory and reads it with loadFragments).
  virtual std::optional<Fragment>
  accumulatorsAsOperandA(OpBuilder &b, Location loc, const MmaAtom &atom,
                         ArrayRef<Value> acc) const {
    return std::nullopt;
  }
  /// Whether accumulatorsAsOperandA works for `atom`.
  virtual bool hasAccumulatorsAsOperandA(const MmaAtom &atom) const {
    return false;
  }

  /// Transposed scores (flash attention on CDNA, whose C fragments give a
  /// lane one column): S^T = K Q^T holds one query per column, so P^T feeds
  /// O^T = V^T P^T as the B operand straight from the accumulators. The B
  /// fragment of k-step `step` (0 .. max(1, m / k) - 1) of C atoms (m x n,
  /// the next MMA's k along their m): `acc` is the accumulators of max(1,
  /// k / m) atoms stacked along m, already converted to atom.operandType.
  /// Its k values are the C rows that
  /// operandKOfAccumulatorRow maps onto that step, so the atom's rows must
  /// be computed in that order (the A tile of S^T read through it). Only
  /// where hasAccumulatorsAsOperandB(atom).
  virtual Fragment accumulatorsAsOperandB(OpBuilder &b, Location loc,
                                          const MmaAtom &atom,
                                          ArrayRef<Value> acc,
                                          int64_t step) const;
  virtual bool hasAccumulatorsAsOperandB(const MmaAtom &atom) const {
    return false;
  }
  /// The k index (in the next MMA's k order, from 0 at the atom's first k
  /// step) that C row `row` (index; rows of atoms stacked along m continue
  /// the count) stands for in accumulatorsAsOperandB.
  virtual Value operandKOfAccumulatorRow(OpBuilder &b, Location loc,
                                         const MmaAtom &atom, Value row) const;

  /// acc + a . b, element-wise on a lane's accumulator registers.
  virtual FailureOr<SmallVector<Value>> mma(OpBuilder &b, Location loc,
                                            const MmaAtom &atom,
                                            const Fragment &a,
                                            const Fragment &bFrag,
                                            ValueRange acc) const = 0;

  /// 2^x and log2(x) of an f32 as one hardware instruction (ex2/lg2.approx
  /// on NVIDIA, v_exp/v_log on CDNA), for softmax and log-sum-exp: the
  /// generic llvm/math ops lower to library calls (libdevice, ocml) here.
  /// exp2(-inf) = 0 and log2(0) = -inf.
  virtual Value exp2(OpBuilder &b, Location loc, Value x) const = 0;
  virtual Value log2(OpBuilder &b, Location loc, Value x) const = 0;

  /// The lanes of the warp whose i1 `pred` is true, bit l for lane l, in
  /// every lane (an i32 on NVIDIA, an i64 on CDNA: the warp's width). Every
  /// lane of the warp must execute it (vote.sync with a full mask; on CDNA
  /// inactive lanes would read as false).
  virtual Value ballot(OpBuilder &b, Location loc, Value pred) const = 0;

  /// `p` (f32 or a vector of f32, not NaN: softmax probabilities) as
  /// `elem` (bf16 or f16; a vector of them), rounded to nearest:
  /// arith.truncf (ties to even), unless the target has a cheaper form for
  /// values that are not NaN (gfx942: ties up). (A NaN probability comes from a
  /// NaN score, whose row sum makes the output NaN however P is rounded.)
  virtual Value truncateProbability(OpBuilder &b, Location loc, Type elem,
                                    Value p) const;

  /// The value a lane combines `x` with at step `distance` of a butterfly
  /// reduction (KernelBuilder::warpReduce): taken at distances 1, 2, 4, ...
  /// in that order with a commutative, associative combine, every lane ends
  /// with the reduction over its aligned group of 2 x the last distance
  /// lanes. The default reads lane ^ distance (gpu.shuffle xor); a target
  /// may read other lanes of the group that give the same result. Every
  /// lane of the warp must execute it.
  virtual Value reductionPartner(OpBuilder &b, Location loc, Value x,
                                 int64_t distance) const;

  /// One step of that butterfly: combine(x, reductionPartner(x, distance))
  /// for a commutative `combine`. A target may get both operands another
  /// way (gfx950: the two half-waves' values from one permlane32 swap).
  virtual Value butterflyStep(OpBuilder &b, Location loc, Value x,
                              int64_t distance,
                              function_ref<Value(Value, Value)> combine) const;

  /// `x` of the lane `d` below this one in the warp, and whether there is
  /// one (this lane >= d): gpu.shuffle up, with a validity that holds on
  /// the target. Every lane of the warp must execute it.
  virtual std::pair<Value, Value> shuffleUp(OpBuilder &b, Location loc, Value x,
                                            int64_t d) const = 0;

  /// The value a lane combines `x` (i32) with at step `step` (0, 1, ...,
  /// log2(warp size) - 1, in that order) of an inclusive scan
  /// (KernelBuilder::warpScan), and whether it has one: after the last step
  /// every lane holds the combine of lanes 0 to itself. The default reads
  /// lane - 2^step (shuffleUp); a target may read other lanes that give
  /// the same result, filling lanes without a partner with `identity` (the
  /// validity is then null). Every lane of the warp must execute it.
  virtual std::pair<Value, Value> scanPartner(OpBuilder &b, Location loc,
                                              Value x, int64_t step,
                                              Value identity) const;

  /// How many lanes of the warp `pred` (i1) holds in, as an i32 in every
  /// lane, where the target has a cheaper way than a butterfly sum (a
  /// ballot's bits counted); else null, and KernelBuilder::countLanes sums
  /// it (warpReduce). Every lane of the warp must execute it.
  virtual Value countLanes(OpBuilder &, Location, Value) const { return {}; }

  /// `x` (i32) of lane `lane` (i32, the same in every lane of the warp) in
  /// every lane. The default is gpu.shuffle idx.
  virtual Value readLane(OpBuilder &b, Location loc, Value x, Value lane) const;

  /// Starts copying `elements` contiguous elements (getAsyncCopyBytes()
  /// bytes) from `src[srcIndices...]` to `dst[dstIndices...]` in shared
  /// memory; only the first `validElements` are read, the rest written as
  /// zeros (so tiles past a matrix edge need no separate fill).
  virtual LogicalResult asyncCopy(OpBuilder &b, Location loc, Value dst,
                                  ValueRange dstIndices, Value src,
                                  ValueRange srcIndices, int64_t elements,
                                  Value validElements) const = 0;
  /// Closes the group of copies started since the last commit.
  virtual LogicalResult asyncCommit(OpBuilder &b, Location loc) const = 0;
  /// Waits until at most `pending` committed groups are still in flight.
  virtual LogicalResult asyncWait(OpBuilder &b, Location loc,
                                  int64_t pending) const = 0;

protected:
  explicit TargetInfo(StringRef chip) : chip(chip.str()) {}

private:
  std::string chip;
};

/// The NVIDIA target of `chip` (sm_80, sm_90a), or null.
std::unique_ptr<TargetInfo> createNVIDIATargetInfo(StringRef chip);
/// The AMD CDNA target of `chip` (gfx942, gfx950), or null.
std::unique_ptr<TargetInfo> createAMDTargetInfo(StringRef chip);

} // namespace mlir::tessel

#endif // TESSEL_TARGET_TARGETINFO_H
