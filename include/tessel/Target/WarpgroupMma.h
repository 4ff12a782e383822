//===- WarpgroupMma.h - Hopper's warpgroup MMA, TMA and mbarriers -*- C++ -*-===//
//
// The capability a Hopper (sm_90a) main loop asks for, beside TargetInfo
// rather than inside it: TargetInfo::mma is a warp's register-operand MMA,
// wgmma is a warpgroup's (4 warps) shared-memory-operand MMA issued
// asynchronously, fed by the tensor memory accelerator (TMA) into
// mbarrier-tracked stages, with roles (producer warp, consumer warpgroups)
// that trade registers through setmaxnreg. CUTLASS keeps the sm80 and sm90
// collectives apart the same way; Triton lowers WarpGroupDot beside MMAv2.
//
// Shared memory is addressed here by !llvm.ptr<3> pointers (TMA, mbarriers)
// and 32-bit shared-window byte addresses (matrix descriptors). Accumulators
// are one !llvm.struct of f32, the form nvvm.wgmma.mma_async takes.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TARGET_WARPGROUPMMA_H
#define TESSEL_TARGET_WARPGROUPMMA_H

#include "mlir/IR/Builders.h"

#include <memory>

namespace mlir::tessel {

class WarpgroupMma {
public:
  virtual ~WarpgroupMma();

  /// Threads of a warpgroup: an MMA is issued by all of them.
  static constexpr int64_t kWarpgroupThreads = 128;
  /// Rows of an MMA (m64nNk16): one warpgroup's share of a C tile.
  static constexpr int64_t kRows = 64;
  /// K of one MMA for 16-bit operands.
  static constexpr int64_t kDepth = 16;
  /// Bytes of one row of a 128-byte-swizzled operand tile: 64 16-bit
  /// elements of K. Tiles of that swizzle start at 1024-byte boundaries.
  static constexpr int64_t kSwizzleBytes = 128;
  static constexpr int64_t kSwizzleAlignment = 1024;
  /// The first of the 8 columns accumulator `i` lies in (see
  /// accumulatorPosition).
  static constexpr int64_t accumulatorColumnBlock(int64_t i) {
    return 8 * (i / 4);
  }

  /// Registers per thread after setmaxnreg in a block of one producer and
  /// two consumer warpgroups. The block keeps the registers it was launched
  /// with (384 threads x 168, ptxas's cap for .maxntid 384): the consumers'
  /// increase waits until the producer's decrease has freed enough, forever
  /// if it cannot (a producer at 48 beside consumers at 232 hung every
  /// consumer on the H200).
  struct RegisterSplit {
    int64_t producer, consumer;
    /// setmaxnreg takes multiples of 8.
    constexpr bool fits() const {
      return producer % 8 == 0 && consumer % 8 == 0 &&
             producer + 2 * consumer <= 3 * 168;
    }
  };
  /// Attention: the consumers hold O and S.
  static constexpr RegisterSplit kAttentionRegisters{40, 232};
  /// The prefill's producer only walks tiles and issues TMA: FlashAttention-3's
  /// split, the most the consumers can have.
  static constexpr RegisterSplit kPrefillRegisters{24, 240};
  /// At head dim 64 the consumers hold half as much O: at 24 / 240 ptxas
  /// spilled 8 bytes there; 32 / 232 spills none and measured 1.00-1.01x
  /// (H200, 2026-12-02).
  static constexpr RegisterSplit kPrefillSmallRegisters{32, 232};
  /// Paged attention over pre-shuffled caches: the producer issues a TMA
  /// box per 8 keys of K and a bulk copy per page of V, from the block id
  /// and a 64-bit address a page (at 40 / 232 ptxas spilled 20-44 bytes).
  static constexpr RegisterSplit kShuffledPagesRegisters{56, 224};
  /// The grouped matmuls: the producer walks a persistent grid's tiles (a
  /// group scan each) and may copy B from a pointer table; a consumer
  /// holds one m64n256 accumulator. (56 and 224 left 4-16 bytes spilled
  /// in two pointer-table kernels of bench/.)
  static constexpr RegisterSplit kGemmRegisters{72, 216};
  /// SMs of an H100 SXM or H200: the blocks of a persistent grid, one per
  /// SM. A part with fewer SMs (an H100 PCIe has 114) runs the surplus
  /// blocks, each with a whole share of the work, after the first wave.
  static constexpr int64_t kPersistentBlocks = 132;

  /// Whether C (f32) += A . B with `elem` operands has an MMA of N = `n`
  /// (a multiple of 8 up to 256).
  virtual bool supports(Type elem, int64_t n) const = 0;

  // --- matrix descriptors and MMAs ----------------------------------------
  /// How an operand tile lies in shared memory, in rows of 128 bytes
  /// swizzled in 8-row, 1024-byte atoms (the layout TMA writes with
  /// 128-byte swizzle). K-major: a row holds 64 K-elements of one M or N
  /// index. MN-major: a row holds 64 M or N indices of one K, and the tile
  /// is chunks of 64 M or N indices, `chunkBytes` apart.
  /// Unswizzled (coreKBytes > 0, K-major only): core matrices of 8 M or N
  /// indices x 8 K-elements, 128 contiguous bytes each (a row's 16 bytes,
  /// then the next row's), `coreKBytes` apart along K and `coreMNBytes`
  /// along M or N: the layout a CDNA pre-shuffled KV cache page already
  /// has (K [D/8, BS, 8], V [BS/8, D, 8] per head).
  struct SharedOperand {
    bool kMajor = true;
    int64_t chunkBytes = 0;
    int64_t coreKBytes = 0, coreMNBytes = 0;
  };
  /// The i64 descriptor of the operand tile at shared byte address
  /// `address` (i32).
  virtual Value sharedDescriptor(OpBuilder &b, Location loc, Value address,
                                 SharedOperand operand) const = 0;
  /// The descriptor of the tile `bytes` (a multiple of 16) past the one of
  /// `descriptor`: one 32-bit add, where a descriptor made anew from the
  /// address costs a chain of 64-bit shifts and masks before every MMA.
  virtual Value advanceDescriptor(OpBuilder &b, Location loc, Value descriptor,
                                  int64_t bytes) const = 0;
  /// Bytes from one MMA's K slice (16 elements) of a tile to the next:
  /// 32 along a K-major row, 16 rows of an MN-major chunk, two core
  /// matrices unswizzled.
  static int64_t kStepBytes(SharedOperand operand) {
    if (operand.coreKBytes)
      return 2 * operand.coreKBytes;
    return operand.kMajor ? 32 : kDepth * kSwizzleBytes;
  }
  /// acc (an f32 struct of n / 2 members) += A . B for a 64 x n C tile from
  /// A [64, 16] and B [16, n] in the given layouts (MN-major: read
  /// transposed, 16-bit types only), given by their descriptors. A null
  /// `acc` starts a product: the MMA ignores its accumulator registers
  /// (scale-d 0), so nothing zeroes them first (a tile's first MMA).
  virtual Value mma(OpBuilder &b, Location loc, Type elem, int64_t n,
                    Value descA, SharedOperand aLayout, Value descB,
                    SharedOperand bLayout, Value acc) const = 0;
  /// acc += A . B as mma, with A (64 x 16) in registers rather than shared
  /// memory: each warp's 16 rows as the four i32 words (two 16-bit values
  /// each) of the mma.sync m16n8k16 A fragment, the layout an accumulator
  /// tile's members 8s .. 8s + 7 have once packed in pairs (flash
  /// attention's P, fed to P . V without a trip through shared memory).
  virtual Value mmaRegisterA(OpBuilder &b, Location loc, Type elem, int64_t n,
                             ValueRange aWords, Value descB,
                             SharedOperand bLayout, Value acc) const = 0;
  /// A zero accumulator struct for n columns.
  virtual Value zeroAccumulators(OpBuilder &b, Location loc,
                                 int64_t n) const = 0;
  /// Member `i` of an accumulator struct.
  virtual Value accumulator(OpBuilder &b, Location loc, Value acc,
                            int64_t i) const = 0;
  /// Row and column, in the warpgroup's 64 x n C tile, of accumulator `i`
  /// of warpgroup thread `thread` (index values). Members 2j and 2j + 1 sit
  /// in one row, in consecutive columns, which lie in columns
  /// [8 * (i / 4), 8 * (i / 4) + 8) for every thread (the D fragment of
  /// wgmma).
  virtual std::pair<Value, Value> accumulatorPosition(OpBuilder &b,
                                                      Location loc,
                                                      Value thread,
                                                      int64_t i) const = 0;
  /// Orders register writes before the MMAs that read them (wgmma.fence).
  virtual void fence(OpBuilder &b, Location loc) const = 0;
  /// Closes the group of MMAs issued since the last commit.
  virtual void commit(OpBuilder &b, Location loc) const = 0;
  /// Waits until at most `pending` committed groups are in flight.
  virtual void wait(OpBuilder &b, Location loc, int64_t pending) const = 0;

  // --- mbarriers and TMA ----------------------------------------------------
  virtual void barrierInit(OpBuilder &b, Location loc, Value bar,
                           int64_t arrivals) const = 0;
  /// Makes barrier initialisation visible to the async proxy (TMA).
  virtual void barrierInitFence(OpBuilder &b, Location loc) const = 0;
  virtual void arrive(OpBuilder &b, Location loc, Value bar) const = 0;
  /// Arrives and announces `bytes` of TMA traffic that completes the phase.
  virtual void arriveExpectBytes(OpBuilder &b, Location loc, Value bar,
                                 int64_t bytes) const = 0;
  /// Blocks until the phase of parity `parity` (i32, 0 or 1) completed.
  virtual void waitParity(OpBuilder &b, Location loc, Value bar,
                          Value parity) const = 0;
  /// Copies the box at coordinates (innermost first, i32) of the tensor map
  /// `map` (a generic pointer to the CUtensorMap kernel parameter) to
  /// shared memory at `dst`, completing on `bar`.
  virtual void tmaLoad(OpBuilder &b, Location loc, Value dst, Value map,
                       Value bar, ValueRange coordinates) const = 0;
  /// Copies `bytes` (a multiple of 16) contiguous bytes from global `src`
  /// (!llvm.ptr<1>, 16-byte aligned) to shared `dst`, completing on `bar`
  /// (a bulk copy: TMA without a tensor map).
  virtual void bulkLoad(OpBuilder &b, Location loc, Value dst, Value src,
                        int64_t bytes, Value bar) const = 0;
  /// Copies 16 bytes from global `src` (!llvm.ptr<1>) to shared `dst`
  /// (!llvm.ptr<3>) asynchronously, reading `srcBytes` (i32, 0 or 16) of
  /// them and zero-filling the rest (cp.async).
  virtual void asyncCopy16(OpBuilder &b, Location loc, Value dst, Value src,
                           Value srcBytes) const = 0;
  /// Arrives on mbarrier `bar` once this thread's cp.async copies issued so
  /// far have landed, without counting an extra arrival: the barrier's
  /// count includes one per copying thread.
  virtual void asyncCopiesArrive(OpBuilder &b, Location loc,
                                 Value bar) const = 0;
  /// Copies shared memory at `src` to the box at `coordinates` of the
  /// tensor map `map` (clipped at the tensor's bounds), in this thread's
  /// open bulk group.
  virtual void tmaStore(OpBuilder &b, Location loc, Value map, Value src,
                        ValueRange coordinates) const = 0;
  /// Closes this thread's bulk group of TMA stores.
  virtual void bulkCommit(OpBuilder &b, Location loc) const = 0;
  /// Waits until at most `pending` of this thread's bulk groups are in
  /// flight: still reading shared memory (`read`), or not yet complete.
  virtual void bulkWait(OpBuilder &b, Location loc, int64_t pending,
                        bool read) const = 0;

  /// Makes this thread's ordinary shared-memory writes visible to the async
  /// proxy (TMA, wgmma) once a barrier orders them.
  virtual void fenceSharedForAsync(OpBuilder &b, Location loc) const = 0;
  /// Named barrier `id` (i32, warp-uniform, 1..15) of `threads` threads
  /// (a multiple of 32): waits, or (arrive) counts this warp and goes on.
  virtual void barrier(OpBuilder &b, Location loc, Value id, int64_t threads,
                       bool arrive = false) const = 0;

  // --- roles ------------------------------------------------------------------
  /// Releases (`increase` false) or claims registers per thread for the rest
  /// of the kernel; the kernel needs a register cap at entry.
  virtual void setRegisters(OpBuilder &b, Location loc, int64_t count,
                            bool increase) const = 0;
  /// i1: true in one elected lane of the warp.
  virtual Value electOne(OpBuilder &b, Location loc) const = 0;
  /// `value` (i32) copied by an instruction the compiler must keep where it
  /// is: what is computed from it stays inside the loop that computes it
  /// rather than being hoisted out, holding registers across the loops
  /// around it.
  virtual Value opaque(OpBuilder &b, Location loc, Value value) const = 0;
};

static_assert(WarpgroupMma::kAttentionRegisters.fits() &&
                  WarpgroupMma::kPrefillRegisters.fits() &&
                  WarpgroupMma::kPrefillSmallRegisters.fits() &&
                  WarpgroupMma::kShuffledPagesRegisters.fits() &&
                  WarpgroupMma::kGemmRegisters.fits(),
              "setmaxnreg cannot hand out more than the block has");

/// Hopper's (sm_90a).
std::unique_ptr<WarpgroupMma> createNVIDIAWarpgroupMma();

} // namespace mlir::tessel

#endif // TESSEL_TARGET_WARPGROUPMMA_H
