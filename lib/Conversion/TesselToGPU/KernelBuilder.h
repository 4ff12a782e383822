//===- KernelBuilder.h - What every GPU kernel template builds with -*- C++ -*-===//
//
// The index arithmetic, warp collectives and shared-memory layout that all
// templates share. A template's builder class derives from KernelBuilder and
// adds its own state; everything here emits target-neutral ops (arith, gpu,
// memref) at the builder's insertion point.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_LIB_CONVERSION_TESSELTOGPU_KERNELBUILDER_H
#define TESSEL_LIB_CONVERSION_TESSELTOGPU_KERNELBUILDER_H

#include "Templates.h"

#include "tessel/Target/WarpgroupMma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <functional>

namespace mlir::tessel {

class WarpgroupMma;

/// Elements of a 16-byte chunk of a 16-bit type: the unit of global loads,
/// async copies and shared-memory swizzles.
constexpr int64_t kChunk = 8;

/// Checks that rows of `size` elements of `elem` (a head dim, say) are
/// whole 16-byte chunks; else emits "GPU template: <what> (<size>) must be
/// a multiple of <16 / element size> ..." on `op`.
LogicalResult checkChunkRows(Operation *op, StringRef what, int64_t size,
                             Type elem);

/// The target's MMA atoms for `elem` operands with f32 accumulation; none
/// is an error on `op` naming the chip and the type.
FailureOr<SmallVector<MmaAtom>> f32AccumulatorAtoms(Operation *op,
                                                    const TargetInfo &target,
                                                    Type elem);

class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc, const TargetInfo &target)
      : b(b), loc(loc), target(target), warpSize(target.getWarpSize()) {}

protected:
  // --- index arithmetic ---------------------------------------------------
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value f32(double v) {
    return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                          llvm::APFloat(static_cast<float>(v)));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, idx(y)) : x; }
  Value mul(Value x, int64_t y) { return y == 1 ? x : mul(x, idx(y)); }
  Value divu(Value x, int64_t y) {
    return y == 1 ? x : arith::DivUIOp::create(b, loc, x, idx(y)).getResult();
  }
  Value remu(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, idx(y));
  }
  Value minu(Value x, Value y) { return arith::MinUIOp::create(b, loc, x, y); }
  /// min(x, limit) as unsigned 32-bit integers, as an index: `x` an index
  /// below 2^32 or an i32 (negative: past any limit), `limit` an index
  /// (saturated at 2^31 - 1). One 32-bit min where an index min compares
  /// 64 bits (five instructions on CDNA).
  Value minI32(Value x, Value limit) {
    Value word = x.getType().isIndex() ? toI32(x) : x;
    Value cap = toI32(minu(limit, idx(std::numeric_limits<int32_t>::max())));
    return arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(), arith::MinUIOp::create(b, loc, word, cap));
  }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  /// Unsigned less-than: a negative (sign-extended) x is past any y.
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value andi(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// `x` (index, within i32) clamped to [lo, hi], compared in i32: CDNA's
  /// scalar unit has no 64-bit ordering compare, so an index max or min
  /// there is a vector compare and two selects (the buffer windows' sizes,
  /// computed every tile).
  Value clampI32(Value x, int64_t lo, int64_t hi) {
    Value c = arith::MaxSIOp::create(b, loc, toI32(x), i32(lo));
    return toIndex(arith::MinSIOp::create(b, loc, c, i32(hi)));
  }
  /// x < y for indices within i32, compared in i32 (as clampI32).
  Value ltI32(Value x, Value y) { return lt(toI32(x), toI32(y)); }
  /// `c` (i1), marked as usually false (llvm.expect): the back end lays
  /// the branch it guards out of the way of the usual path.
  Value unlikely(Value c) {
    return LLVM::ExpectOp::create(
        b, loc, c, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0));
  }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  Value toI32(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
  }
  Value blockId(gpu::Dimension d) { return gpu::BlockIdOp::create(b, loc, d); }
  /// Emits `body` under scf.if `cond` (no results).
  void ifThen(Value cond, function_ref<void()> body);
  /// The block's ids (x, y, z) in a grid of `sizes` (index values),
  /// renumbered so that the blocks that run on one L2 partition
  /// (TargetInfo::getL2Partitions: the chip deals workgroups to them in
  /// turn, x fastest) take consecutive linear ids: blocks that read the
  /// same data, whose ids are consecutive, would otherwise land on
  /// different L2s. A bijection on the grid; empty where one L2 serves the
  /// chip (blockIdOr then reads the plain ids where they are used).
  SmallVector<Value, 3> l2LocalBlockIds(ArrayRef<Value> sizes);
  /// ids[d] of l2LocalBlockIds, or the plain block id d where it is empty.
  Value blockIdOr(ArrayRef<Value> ids, gpu::Dimension d) {
    return ids.empty() ? blockId(d) : ids[static_cast<unsigned>(d)];
  }
  Value threadId() { return gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x); }

  // --- warp collectives ---------------------------------------------------
  /// Inclusive scan of `x` (i32) over the lanes with `combine`, of which
  /// `identity` (i32) is an identity on the values scanned.
  Value warpScan(Value x, function_ref<Value(Value, Value)> combine,
                 Value identity);
  /// `combine` (commutative and associative) of `x` over all lanes (i32 or
  /// f32), in every lane; with `width` < warpSize, over each aligned group
  /// of `width` lanes (TargetInfo::reductionPartner's steps).
  Value warpReduce(Value x, function_ref<Value(Value, Value)> combine,
                   int64_t width = 0);
  Value broadcast(Value x, Value lane);
  /// `x` (i32) of lane `lane` (i32, the same in every lane) in every lane.
  Value readLane(Value x, Value lane) {
    return target.readLane(b, loc, x, lane);
  }
  /// How many lanes of the warp `pred` (i1) holds in, as an i32 in every
  /// lane (TargetInfo::countLanes, or a butterfly sum).
  Value countLanes(Value pred);
  /// Whether `pred` (i1) holds in any lane of the warp, in every lane (a
  /// value uniform over the warp, for a branch all its lanes take).
  Value anyLane(Value pred);
  /// `x` (index or i1) from lane 0 of the warp: the same value, but one
  /// ptxas can see is warp-uniform. Without it, wgmmas under branches and
  /// loops on values from shuffle scans, loads or thread ids count as
  /// divergent and are serialized (ptxas C7520); CUTLASS broadcasts its
  /// warpgroup index for the same reason.
  Value uniform(Value x);

  // --- global memory and float math ---------------------------------------
  /// A gathered row (a_rows, b_rows): the entry index[r] when `inside`
  /// (nothing is loaded otherwise: the index may be empty) and whether it
  /// is one of the operand's `limit` (rows x divisor) entries; an entry
  /// outside, or a row not inside, reads as zeros.
  std::pair<Value, Value> gatherEntry(Value index, Value r, Value inside,
                                      Value limit);
  /// `elements` consecutive elements of `memref` from `indices` (along the
  /// last dimension), as one vector, read by loads of at most
  /// target.getMaxVectorBytes() each. The first element must be aligned to
  /// min(elements * element size, getMaxVectorBytes()) bytes (rows made of
  /// 16-byte chunks, 16-byte aligned buffers), and elements * element size
  /// must be a power of two or a multiple of getMaxVectorBytes().
  Value loadVector(Value memref, ValueRange indices, int64_t elements);
  /// Stores `vec` at `indices` of `memref` likewise.
  void storeVector(Value vec, Value memref, ValueRange indices);
  /// `x` (a float scalar or vector) as element type `elem` (extf / truncf).
  Value convertFloat(Value x, Type elem);
  /// e^x and ln(x) of an f32 scalar through the target's base-2
  /// approximations (TargetInfo::exp2/log2): exp(-inf) = 0, log(0) = -inf.
  Value exp(Value x);
  Value log(Value x);
  /// 1 / (1 + e^-x) of an f32 scalar: 0 for x -> -inf, 1 for x -> inf.
  Value sigmoid(Value x);
  /// silu(gate) * up = gate * sigmoid(gate) * up in f32: tessel.swiglu's
  /// formula, in its kernel and in the grouped matmul's fused epilogue.
  Value swiglu(Value gate, Value up);

  // --- ragged row tiles -----------------------------------------------------
  /// A tile of consecutive rows of one group of a ragged batch.
  struct RowTile {
    Value found;            ///< i1: the tile exists.
    Value rowStart, rowEnd; ///< index: the tile's rows.
    Value group;            ///< index: its group (== count for the tail).
  };
  /// Tile `tileIndex` in the order of the groups' `tileRows`-row tiles.
  /// Group g holds rows [end_{g-1}, end_g) (end_{-1} = 0) of `count`
  /// groups whose cumulative ends (i32) `loadEnd(g)` reads; with `tail`,
  /// rows past the last end up to T form one more group. Every warp scans
  /// the ends one warp-width at a time (shuffle scans: no shared memory,
  /// no host synchronisation), so the result is uniform over the block.
  RowTile findRowTile(function_ref<Value(Value)> loadEnd, Value count,
                      Value T, Value tileIndex, int64_t tileRows, bool tail);
  /// Rows [start, end) (index) of group `group` (index) of `count` groups
  /// whose cumulative ends `offsets` (an i32 memref) holds, as the ops
  /// define them: end_g = min(T, max(0, offsets[0..g])), start_g = end_{g-1}
  /// (0 for the first group). Each lane takes the maximum of a strided
  /// slice of offsets[0..g-1], then the warp combines them: every warp gets
  /// the same rows.
  std::pair<Value, Value> groupRows(Value offsets, Value group, int64_t count,
                                    Value T);

  /// This thread's 16-byte chunks of a row-major [rows, width] tile (width a
  /// multiple of 64), in 64-element column blocks: at step `step` (0, 1, ...
  /// per block) the threads cover rows step * threads / 8 + tid / 8, each
  /// thread the same 8-element column of the block. Row and column then
  /// change by compile-time amounts between a thread's chunks (as does a
  /// swizzled shared-memory address), so their addresses are one base plus
  /// immediates rather than one register pair each. Needs rows * 8 to be a
  /// multiple of `threads`.
  void forEachRowChunk(int64_t rows, int64_t width, int64_t threads,
                       function_ref<void(int64_t step, Value row, Value col)>
                           fn);

  /// The 16-byte chunks of a [rows, width] tile that is stored transposed
  /// ([width, rows]), for `threads` threads: each thread's chunks come in
  /// groups of consecutive rows at the same 8 columns, so that a group's
  /// values of a column are one vector of the transposed tile
  /// (StagedChunk::scatterRows). fn(i, row, col, groupRows) for the
  /// thread's chunks i = 0, 1, ..., groupRows the group's size on its first
  /// chunk and 0 on the others: the most, up to `maxGroup`, that divides a
  /// thread's chunk count. Consecutive threads take consecutive row groups
  /// of a column chunk: a wave's stores fill whole transposed rows.
  void forEachRowGroupChunk(
      int64_t rows, int64_t width, int64_t threads, int64_t maxGroup,
      function_ref<void(int64_t i, Value row, Value col, int64_t groupRows)>
          fn);

  // --- staged tile loops ----------------------------------------------------
  /// A loop over `numTiles` tiles staged in a shared-memory ring, the
  /// protocol of every main loop. With async copies (cp.async): tile t lives
  /// in stage t % stages, the prologue issues tiles 0 .. stages-2 (one
  /// commit group each, issued unconditionally: tiles past the end must be
  /// zero-filled copies), and iteration t waits for tile t, lets one barrier
  /// publish it and retire tile t-1, refills that stage with tile t +
  /// stages - 1, then computes tile t. Without them (CDNA), two stages: tile
  /// t+1's global loads go to registers before tile t is computed and to the
  /// other stage after it (or, with one stage, to the same stage once every
  /// warp is done with tile t: a second barrier a tile).
  using TileCompute =
      std::function<LogicalResult(Value s, Value t, SmallVector<Value> &state)>;
  struct TilePipeline {
    Value numTiles;
    int64_t stages;
    /// Async targets: issue tile `t`'s copies into stage `s`.
    std::function<void(Value s, Value t)> issue;
    /// Register-staged targets: tile `t`'s chunks (`chunks` of `chunkType`)
    /// into registers, and into stage `s`. `ahead` is what `lookahead(t)`
    /// returned, a tile earlier.
    std::function<SmallVector<Value>(Value t, ValueRange ahead)> fetch;
    std::function<void(Value s, Value t, ValueRange chunks)> store;
    /// Register-staged targets, optional: the values tile `t`'s fetch
    /// reads its addresses from (a paged tile's block ids), loaded while
    /// the tile before it is fetched and computed, so that the fetch's
    /// loads do not wait for a round trip of their own (s_waitcnt
    /// vmcnt(0) between a tile's loads). Called for any t, even past the
    /// last tile.
    std::function<SmallVector<Value>(Value t)> lookahead;
    /// Register-staged targets: fetch(t) for a t past the last tile is
    /// harmless and free (its loads read zeros from empty buffer windows),
    /// so the next tile is fetched with no branch around it. The branch's
    /// join made the AMD back end wait for the fetch's loads before the
    /// compute they were meant to overlap.
    bool fetchPastEnd = false;
    /// With fetchPastEnd: tile t+1 is stored with no branch either (a tile
    /// past the last goes to the stage nothing reads again). The back end
    /// sank the loads into a branch around the store, where it waited for
    /// them at once (the unpaged prefill on CDNA).
    bool storePastEnd = false;
    int64_t chunks = 0;
    Type chunkType;
    /// Tile `t` from stage `s`, updating the loop-carried `state`.
    TileCompute compute;
    /// Register-staged, optional: the tiles from `tailFrom` (index, at most
    /// numTiles) on run `tailCompute` instead, in a second loop that goes on
    /// where the first stops (no second prologue: each iteration stores the
    /// next tile). For the tiles that need a mask: neither loop branches on
    /// it.
    Value tailFrom;
    TileCompute tailCompute;
    /// Register-staged with two stages: run the tiles in pairs
    /// (runRegisterStagedPairs). For small tile bodies: it emits the body
    /// three times, and the attention kernels' went to their register
    /// limit with it (gfx942 prefill 216 -> 254 VGPRs) for no better MFMA
    /// share.
    bool pairStages = false;
    /// Register-staged with two stages, optional: the bytes (a power of 2)
    /// between a stage's every shared-memory address and the other's. The
    /// loop carries the stage times this, flipped by one XOR a tile, so
    /// that it is each address's stage offset as it stands (without it,
    /// the stage is shifted where used).
    int64_t stageBytes = 0;
    /// Register-staged with two stages, optional (loadChunksToShared):
    /// tile `t`'s chunks straight into stage `s` by loads to shared memory,
    /// instead of fetch and store, waited for before the next tile's
    /// barrier. With pairStages they are issued where the compute calls
    /// issueLoadsAfterReads (after its fragment reads, before its MMAs);
    /// else (fetchPastEnd) right after the barrier, the back end told that
    /// they do not alias the compute's reads
    /// (tessel-loads-to-shared-scopes).
    std::function<void(Value s, Value t)> loadToShared;
  };
  /// In a TilePipeline::compute: issues the next tile's loadToShared now,
  /// if the pipeline runs one and it is not issued yet.
  void issueLoadsAfterReads();
  LogicalResult runTilePipeline(const TilePipeline &p,
                                SmallVector<Value> &state);
  /// One loop of runTilePipeline over the tiles [from, to), `compute` on
  /// each: `carriedIn` is the state (its first `stateSize` values) and what
  /// the loop carries after it, in and out.
  LogicalResult runTileLoop(const TilePipeline &p, Value from, Value to,
                            const TileCompute &compute, size_t stateSize,
                            SmallVector<Value> &carriedIn);
  /// runTilePipeline's register-staged loop with two stages: tiles in
  /// pairs, the first from stage 0 and the second from stage 1, then an odd
  /// last tile from stage 0. With the stage a constant, every shared-memory
  /// address of the loop is a constant offset from a loop-invariant one; a
  /// loop-carried stage cost the swizzle's shifts and XORs again on every
  /// fragment read and store of every tile.
  LogicalResult runRegisterStagedPairs(const TilePipeline &p,
                                       SmallVector<Value> &state);
  /// Register-staged: tile `t`'s chunks where `cond` holds, else zeros.
  SmallVector<Value> fetchWhere(const TilePipeline &p, Value cond, Value t,
                                ValueRange ahead);

  /// One 16-byte chunk of a staged tile: the first `validElements` (index,
  /// 0..8) elements of src[srcIndices] go to shared[dst], the rest are
  /// zeros. The source indices are in bounds even when nothing is valid.
  /// `partial`: validElements may lie strictly between 0 and 8 (else it is
  /// 0 or 8, and a register-staged load needs no mask).
  struct StagedChunk {
    Value shared;
    SmallVector<Value> dst;
    Value src;
    SmallVector<Value> srcIndices;
    Value validElements;
    bool partial = false;
    /// Whether an invalid chunk must read as zeros. Register-staged targets
    /// skip the zeroing of chunks whose values reach no stored output (a
    /// ragged-M tile's rows past its group, columns past N): they only keep
    /// their address in bounds (cp.async zero-fills for free).
    bool zeroFill = true;
    /// Register-staged targets only: element e of the chunk is stored at
    /// scatter[e] instead of the 16 bytes at dst (a tile transposed on its
    /// way to shared memory). With `scatterRows` > 1, element e of this
    /// chunk and of the scatterRows - 1 chunks enumerated right after it
    /// (the next rows, same columns) go there as one vector, and those
    /// chunks are stored with this one (their own dst and scatter unused).
    SmallVector<SmallVector<Value>> scatter = {};
    int64_t scatterRows = 1;
    /// The view each scatter entry indexes, where not `shared`
    /// (chunkMajorElement's, each starting at its entry's constant part).
    SmallVector<Value> scatterViews = {};
    /// Register-staged targets with buffer loads (readFromWindow sets
    /// them): the chunk is read from `window` (bufferWindow) at byte
    /// `windowOffset` (i32) plus the tile's `tileOffset` (i32, uniform),
    /// zeros past the window, rather than from src[srcIndices] (which then
    /// serve async copies only). No selects keep such a load in bounds or zero
    /// it; a `partial` one is masked where it is stored to shared memory (after
    /// the compute that its load overlaps) if `mayBePartial` (i1, uniform,
    /// the same for every chunk of the tile) holds.
    Value window = {}, windowOffset = {}, tileOffset = {};
    Value mayBePartial = {};
    /// Loads to shared memory (TilePipeline::loadToShared): the indices in
    /// `shared` of the first of the 64 consecutive 16-byte slots the
    /// wave's lanes fill (uniform), this lane's being `dst`.
    SmallVector<Value> waveDst = {};
    /// Bytes added to both waveDst's slot and windowOffset by the load
    /// instruction (TargetInfo::bufferLoadToShared), which neither includes.
    int64_t immediateOffset = 0;
  };
  /// Enumerates this thread's chunks of tile `tile` into stage `stage`, the
  /// same chunks in the same order on every call. `ahead`: the tile's
  /// TilePipeline::lookahead values when its chunks are fetched, else
  /// empty (the enumerator then loads what it needs itself).
  using ChunkEnumerator =
      std::function<void(Value stage, Value tile, ValueRange ahead,
                         function_ref<void(const StagedChunk &)> fn)>;
  /// The TilePipeline that moves the chunks `forEachChunk` enumerates:
  /// cp.async copies on async targets; else `chunks` 16-byte loads of
  /// `elem` into registers (loadChunk) and 16-byte shared-memory stores.
  TilePipeline chunkPipeline(Value numTiles, int64_t stages, int64_t chunks,
                             Type elem, ChunkEnumerator forEachChunk);
  /// Sets p.loadToShared (TargetInfo::hasBufferLoadsToShared) for chunks
  /// that `forEachChunk` enumerates windowed (readFromWindow), whole and
  /// unscattered, with their waveDst.
  void loadChunksToShared(TilePipeline &p, ChunkEnumerator forEachChunk);
  /// Loads to shared memory, `copies` runs of a wave's 64 16-byte slots a
  /// wave (`waves` waves, this one `waveIndex`): copy i's first slot, the
  /// first slot of its M0 (`runStart`) and what its load adds to that
  /// (`immediateBytes`). Up to 4 of a wave's runs (a power of 2 dividing
  /// `copies` and `blockSlots` / 64) lie consecutively and share M0, told
  /// apart by the instruction's 12-bit immediate offset (1024 bytes a
  /// run); blockSlots = 64: one run an M0, copy i at slot (i waves +
  /// waveIndex) 64.
  struct M0Slot {
    Value first, runStart;
    int64_t immediateBytes;
  };
  M0Slot m0Slot(int64_t i, int64_t copies, int64_t waves, Value waveIndex,
                int64_t blockSlots);
  /// A windowed chunk loaded to shared memory: `bytes` of its slot and of
  /// its windowOffset moved to the load's immediate offset
  /// (StagedChunk::immediateOffset), which adds them to both.
  void moveToImmediateOffset(StagedChunk &chunk, int64_t bytes);
  /// 16 bytes of `src` at `indices`, of which the first `validElements` are
  /// kept and the rest zeroed (only `partial` chunks need that mask); zeros
  /// when none is valid, read from `src`'s first chunk instead (tiles past
  /// the end of their data must be zeros: stale memory, even NaN, must not
  /// reach the MMAs). The load is not under a branch, so a tile's loads
  /// issue back to back: a branch per load made the AMD back end wait for
  /// each (s_waitcnt vmcnt(0)) where its value met the zeros.
  /// Without `zeroFill` an invalid chunk keeps what src's first chunk
  /// holds.
  Value loadChunk(Value src, ValueRange indices, Value validElements,
                  bool partial, bool zeroFill = true);
  /// The chunk with its elements from `validElements` (index, 0..8) on
  /// zeroed.
  Value keepFirst(Value chunk, Value validElements);
  /// A window for bounds-checked buffer loads (TargetInfo::bufferResource)
  /// over `elements` elements of `memref` from its (linear) element
  /// `first`, both uniform; null where the target has no buffer loads or
  /// `maxElements`, a bound on `elements`, could reach past
  /// kMaxBufferBytes. A window's end is where its chunks' reads turn to
  /// zeros: one that ends with its tile's data needs no select per chunk.
  /// Chunks may read past the end by less than kMaxBufferBytes (a tile's
  /// rows past N, a K tail): their byte offsets stay below 2^32, which the
  /// 32-bit offset would wrap. `fixedFirst` (optional) is a part of
  /// `first` the same over a loop: added to the base pointer first, so
  /// that the sum leaves the loop (the paged windows' KV head offset: one
  /// 64-bit add a tile fewer).
  Value bufferWindow(Value memref, Value first, Value elements,
                     int64_t maxElements, Value fixedFirst = {});
  /// Makes `chunk` a read of `window` at element `element` (index) where
  /// `valid` holds (or is null), else past the window (zeros), plus the
  /// uniform `tileElement` (index; none if null) as the load's tile offset.
  void readFromWindow(StagedChunk &chunk, Value window, Value element,
                      Value valid = {}, Value tileElement = {});

  // --- warp-specialised Hopper blocks -------------------------------------
  /// The parity (i32) the `use`-th wait on an mbarrier waits for, flipped
  /// for a wait on a release barrier (a fresh barrier passes parity 1: the
  /// first round does not wait).
  Value barrierParity(Value use, bool flip) {
    Value p = remu(use, 2);
    if (flip)
      p = arith::XOrIOp::create(b, loc, p, idx(1));
    return toI32(p);
  }
  /// The stage (index) of a `stages`-stage ring that its `use`-th use takes
  /// and the parity (i32) that use's wait takes, as barrierParity gives it
  /// for the stage's round; divided in 32 bits (64-bit division by a stage
  /// count of 3 is a dozen instructions on every tile of a K loop).
  std::pair<Value, Value> ringUse(Value use, int64_t stages, bool flip);
  /// ringUse of the use after the one at (`stage`: index or i32,
  /// `parity`), without its division: a consumer loop carries them (with 3
  /// stages the division was a chain of dependent instructions at the head of
  /// every K/V tile: ncu counted 6% of the prefill consumers' samples there).
  std::pair<Value, Value> nextRingUse(Value stage, Value parity,
                                      int64_t stages);
  /// The skeleton of a block of one producer and several consumer
  /// warpgroups: thread 0 initialises the mbarriers `barriers` (pointer,
  /// arrival count) and makes them visible to TMA, and the block meets;
  /// then, where `active` (if given) says the block has work, warpgroup 0
  /// gives registers to the others (setmaxnreg, to `registers`) and runs
  /// `producer`, and the others claim them and run `consumer` with their
  /// index (0, 1, ..., warp-uniform).
  void warpgroupRoles(const WarpgroupMma &wg,
                      ArrayRef<std::pair<Value, int64_t>> barriers,
                      function_ref<void()> producer,
                      function_ref<void(Value consumer)> consumer,
                      function_ref<Value()> active = nullptr,
                      WarpgroupMma::RegisterSplit registers =
                          WarpgroupMma::kAttentionRegisters);

  // --- global memory --------------------------------------------------------
  /// The global pointer (!llvm.ptr<1>) of an i64 address.
  Value globalPointer(Value address);
  /// The global pointer to the first element of memref `operand`.
  Value globalMatrix(Value operand);
  /// Element `element` (index) of `elem`s from the global `matrix`
  /// (!llvm.ptr<1>).
  Value globalElement(Value matrix, Type elem, Value element);

  // --- shared memory --------------------------------------------------------
  /// The block's dynamic shared memory, as bytes.
  Value dynamicSharedBytes();
  /// Dynamic shared memory from its first `alignment`-byte boundary (the
  /// kernel requests `alignment` bytes of slack): as a !llvm.ptr<3> and as
  /// its 32-bit shared-window address. Tiles in TMA's 128-byte swizzle and
  /// wgmma's descriptors assume 1024-byte alignment, which the driver does
  /// not promise for dynamic shared memory.
  std::pair<Value, Value> alignedSharedBase(int64_t alignment);
  /// Byte `offset` (index) from `base` (a !llvm.ptr<3>).
  Value sharedByte(Value base, Value offset);
  /// A view of `shape` x `elem` at byte `offset` of `bytes`.
  Value sharedView(Value bytes, int64_t offset, ArrayRef<int64_t> shape,
                   Type elem);
  /// The same at a byte offset known at run time (a ring's stage, a lane's
  /// base: the offset goes into the base address, not into every element's
  /// index).
  Value sharedView(Value bytes, Value offset, ArrayRef<int64_t> shape,
                   Type elem);
  /// Memref indices of element (row, col) of a swizzled shared tile [rows,
  /// width] (of 16-bit elements), preceded by `outer` indices (e.g. the
  /// stage of a ring): rows are 16-byte chunks XOR-swizzled with the row so
  /// that the eight row addresses of a fragment load hit eight different
  /// bank groups. A run of 8 elements starting at a multiple of 8 stays
  /// contiguous. With `rowGroups`, the XOR also takes the row's group of 8
  /// rows: then 8 rows 8 apart (a tile stored transposed, chunk by chunk)
  /// hit different bank groups too.
  SmallVector<Value> swizzledIndices(ValueRange outer, Value row, Value col,
                                     int64_t width, bool rowGroups = false);
  /// What swizzledIndices XORs row `row`'s chunk index with (its own
  /// inverse: chunk slot s of the row holds chunk s ^ swizzleOf(row)).
  Value swizzleOf(Value row, int64_t width, bool rowGroups = false);
  /// Element (row, col) of stage `stage` of a chunk-major ring `ring`
  /// ([stages, width / 8, rows, 8]) as a byte view of the ring that starts
  /// at the element's constant part (of `row`, and of `col`'s whole
  /// chunks) and the byte offset of the rest in it, so that the back end
  /// folds the constant into the LDS store's immediate offset. (The ring's
  /// indices had it OR'd into the row term, an address register each;
  /// added to a flat offset it became an OR, of bits LLVM proved disjoint,
  /// that stayed an OR.)
  std::pair<Value, Value> chunkMajorElement(Value ring, Value stage, Value row,
                                            Value col);
  /// swizzledIndices' element as an offset in a flat view of a ring of
  /// [rows, width] stages, the constant parts of `stage`, `row` and `col`
  /// that the swizzle does not see (whole periods of its rows, whole 64
  /// columns) added last, where the back end folds them into the LDS
  /// instruction's immediate offset.
  Value swizzledOffset(Value stage, int64_t rows, Value row, Value col,
                       int64_t width);
  /// `v` as (a value, a constant) summing to it, the constant gathered from
  /// v's tree of additions and subtractions (a null value: v is constant).
  std::pair<Value, int64_t> peelConstant(Value v);

  OpBuilder &b;
  Location loc;
  const TargetInfo &target;
  int64_t warpSize;
  /// The loads issueLoadsAfterReads issues (runRegisterStagedPairs).
  std::function<void()> loadsAfterReads;
};

} // namespace mlir::tessel

#endif // TESSEL_LIB_CONVERSION_TESSELTOGPU_KERNELBUILDER_H
