//===- AttentionBuilder.h - What the attention templates share -*- C++ -*-===//
//
// Prefill, paged decode and MLA decode all keep an fp32 online softmax in
// MMA accumulators: this base adds to KernelBuilder the float helpers, the
// per-row reductions of the accumulator layout, the online-softmax update,
// shared-memory operand tiles and the register-staged chunk load.
//
// Online-softmax state, per lane: state[0, slots) the running row maxima m
// (log2 units: scores are pre-scaled by scale * log2(e)), state[slots,
// 2 slots) this lane's partial row sums l, then the O accumulators. A slot
// is one run of accumulator elements of one row (TargetInfo::
// getAccumulatorRun); every atom of a row has the same slots.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_LIB_CONVERSION_TESSELTOGPU_ATTENTIONBUILDER_H
#define TESSEL_LIB_CONVERSION_TESSELTOGPU_ATTENTIONBUILDER_H

#include "KernelBuilder.h"

#include "tessel/Target/WarpgroupMma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::tessel {

/// Row starts of q, out and the caches are 16-byte aligned (head dims are
/// multiples of 64 and the runtime checks buffer alignment), so every chunk
/// of 8 elements at a multiple of 8 is.
inline const llvm::MaybeAlign kChunkAlign(16);

/// How far (log2 units) the Hopper flash-attention kernels let a row's
/// running maximum fall behind before they rescale O (softmaxStep's
/// rescaleSlack); CDNA's (computeTransposedTile) rescale where a lane's sum
/// of probabilities passes 2^kRescaleSlack. Either way P stays below 2^8,
/// well inside bf16 and fp16.
inline constexpr double kRescaleSlack = 8;

/// The MMA atom of attention on `target` for `elem` operands with f32
/// accumulation: the one with the fewest rows (query heads or tokens are
/// the rows; fewer rows waste less on small GQA groups and tails). An error
/// on `op` when the target has none.
FailureOr<MmaAtom> chooseAttentionAtom(Operation *op, const TargetInfo &target,
                                       Type elem);

class AttentionBuilder : public KernelBuilder {
public:
  AttentionBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                   const MmaAtom &atom)
      : KernelBuilder(b, loc, target), atom(atom) {}

protected:
  int64_t accCount() const { return target.getAccumulatorCount(atom); }
  int64_t run() const { return target.getAccumulatorRun(atom); }
  int64_t slots() const { return accCount() / run(); }

  Value fmax(Value x, Value y) { return LLVM::MaxNumOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value exp2(Value x) { return target.exp2(b, loc, x); }
  /// x, or 0 where x is -inf (a row that has seen no key), so that exp2(s -
  /// m) never computes -inf - -inf.
  Value finiteOrZero(Value x);
  /// Max or sum of `x` over the lanes that hold one accumulator row.
  Value rowReduce(Value x, bool isMax);
  /// Max or sum of `x` over the lanes that hold one accumulator column
  /// (CDNA: the two lane halves of a 32x32 atom, the four quarters of a
  /// 16x16 one): on transposed scores, one query's.
  Value columnReduce(Value x, bool isMax);
  /// A swizzled shared-memory operand tile of rows of `width` elements
  /// (`outer`, if any, indexes a stage or a warp's slice; `rowGroups` as
  /// for swizzledIndices).
  SharedTile tileOf(Value memref, Value outer, int64_t width, bool kContig,
                    bool rowGroups = false);

  // --- paged K/V tiles by buffer loads (PagedWindows.cpp) -----------------
  /// A register-staged paged K/V tile: tokens [tileStart, tileStart +
  /// tokens) of a request's context from the caches, tileStart a multiple
  /// of min(tokens, blockSize); `blocks` are the block-table entries (as
  /// loaded) of the wave's pieces, its cache blocks or the part of one
  /// block it is (the TilePipeline::lookahead of loadBlockIdsAhead), or
  /// empty where only the shared-memory side of the chunks is used (the
  /// pipeline's store). Tokens from `end` on read as zeros. MLA's latent
  /// cache ([blocks, BS, D]) has no vCache and no kvHead.
  struct PagedTile {
    Value kCache, vCache;
    KVLayout layout;
    int64_t blockSize, tokens, threads;
    Value kvHead, tileStart, end, stage;
    /// [stages, tokens, D] and [stages, tokens, Dv], or [stages, Dv,
    /// tokens] (shuffled V, or `vTransposed`: token-major V rows stored
    /// dim-major).
    Value sharedK, sharedV;
    bool vTransposed;
    ValueRange blocks;
    /// Stages laid out chunk-major, [width / 8, rows, 8] (the prefill's
    /// transposed scores), rather than in swizzled rows.
    bool chunkMajor = false;
    /// Token-major V stored transposed: a thread's chunks in runs of this
    /// many consecutive tokens at the same dims, each dim's run stored as
    /// one vector (where the wave's share allows; else one element at a
    /// time).
    int64_t vRun = 1;
  };
  /// Whether forEachWindowedChunk reads the tiles of this shape: the
  /// target stages tiles through registers and has buffer loads, tiles are
  /// whole blocks or (not shuffled) whole parts of one, and each wave's
  /// chunks are whole pieces or a whole share of one, in whole steps of
  /// the wave. valueDim 0: no V tile.
  bool pagedWindowsApply(KVLayout layout, int64_t blockSize, int64_t tokens,
                         int64_t headDim, int64_t valueDim,
                         int64_t threads) const;
  /// Enumerates the tile's K then V chunks (ChunkEnumerator's contract),
  /// each a buffer load from a window over its cache block.
  void forEachWindowedChunk(const PagedTile &tile,
                            function_ref<void(const StagedChunk &)> fn);
  /// Makes `pipeline` load each tile's block-table entries of the wave's
  /// pieces a tile ahead (TilePipeline::lookahead): tile t is tokens
  /// [start + t tokens, start + (t + 1) tokens) of `request`'s context
  /// (by buffer loads from a window over its row: ids past it read 0). A
  /// tile past the end has empty windows, so the next tile is fetched
  /// unconditionally (fetchPastEnd).
  void loadBlockIdsAhead(TilePipeline &pipeline, Value blockTable,
                         Value request, Value start, int64_t tokens,
                         int64_t blockSize, int64_t threads);
  /// The index in its tile of the wave's first piece.
  Value firstPieceOfWave(int64_t pieces, int64_t threads);
  /// Block-table entry `id` as a block of `cache`, clamped into it.
  Value clampBlockId(Value id, Value cache);

  /// One online-softmax step over the scores `s` (`atoms` atoms along N,
  /// masked, and scaled unless `multiplier` is given): m := max(m, tile
  /// max), l := l 2^(m_old - m) + sum 2^(s - m), the `outAtoms` O
  /// accumulators rescaled by 2^(m_old - m); `s` becomes P = 2^(s - m).
  /// `tileMax(slot, localMax)` turns this lane's maximum of a slot over its
  /// elements into the tile's row maximum (a row reduction, or one across
  /// warps). Row maxima and sums of a lane's elements run as `chains`
  /// interleaved chains. A `multiplier` (positive: it must keep the maximum
  /// where it is) scales the raw scores inside exp2's argument, one FFMA
  /// each instead of a multiply and a subtraction. With a `rescaleSlack`
  /// (log2 units), m stays where it is until a tile's maximum passes it by
  /// more than that: P may reach 2^slack, and the factors are 1 on most
  /// tiles, where O needs no rescale (FlashAttention-4's lazy rescaling;
  /// exact, since l and O share the stale m). Returns the factors 2^(m_old
  /// - m) per slot, for O accumulators kept elsewhere.
  SmallVector<Value>
  softmaxStep(SmallVector<Value> &s, int64_t atoms, SmallVector<Value> &state,
              int64_t outAtoms,
              function_ref<Value(int64_t slot, Value localMax)> tileMax,
              int64_t chains = 1, Value multiplier = {},
              double rescaleSlack = 0);

  /// Whether a lane of the warp has a rescale factor that is not 1.
  Value anyFactorNotOne(ArrayRef<Value> factors);
  /// The wgmma accumulator struct `acc` of `members` f32 with member i
  /// times its row's factor, factors[(i % 4) / 2]; skipped, by a branch
  /// uniform over the warp, where every factor of the warp is 1 (the usual
  /// tile under softmaxStep's rescaleSlack).
  Value rescaleRows(const WarpgroupMma &wg, Value acc, int64_t members,
                    ArrayRef<Value> factors);
  /// The same for accumulator sets of the atom (`o`, accCount() each):
  /// element e of a set times factors[e / run()], in an unlikely branch
  /// taken where some lane of the warp has a factor that is not 1.
  void rescaleLazily(MutableArrayRef<Value> o, ArrayRef<Value> factors);

  /// Per slot of the online-softmax state [m (slots), l (slots), ...]: 1 /
  /// l and the row's LSE (natural log, (m + log2 l) ln 2), l summed over
  /// the lanes that hold the row; 0 and -inf for a row that saw no key.
  std::pair<SmallVector<Value>, SmallVector<Value>>
  rowNormalizers(ArrayRef<Value> state);
  /// The same for one row: its running maximum `m` and its sum `total`
  /// over all its lanes.
  std::pair<Value, Value> rowNormalizer(Value m, Value total);

  /// The context window [start, end) (index values) of `request`, as
  /// paged_attention's split form defines it: its length `lens[request]`
  /// clamped to [0, maxBlocks * blockSize], cut into windows of
  /// ceil(maxBlocks / numSplits) whole blocks, of which split `split` is
  /// taken; without `numSplits`, the whole context.
  std::pair<Value, Value> contextWindow(Value lens, Value request,
                                        Value maxBlocks, int64_t blockSize,
                                        Value split = Value(),
                                        Value numSplits = Value());

  /// Stages the query tile [rows, width] into the swizzled `shared` tile,
  /// all `threads` threads a 16-byte chunk at a time: `source(row)` gives
  /// whether tile row `row` exists and the indices of its first element in
  /// `q` (rows that do not exist are zeros).
  void stageRows(Value shared, Value q, int64_t rows, int64_t width,
                 int64_t threads,
                 function_ref<std::pair<Value, SmallVector<Value>>(Value row)>
                     source);

  /// Transposed scores (CDNA): stores this lane's column of O^T, the
  /// accumulators `o` of its atoms of m-row dims, times `inv` to
  /// out[at..., dim] in runs of 4 consecutive dims or, where groups of
  /// `interleave` atoms interleave their rows (row r of the group's atom j
  /// is its dim interleave r + j), runs of a row over a group; and, where
  /// `lse` (a memref) is given, `lseValue` to lse[lseAt...] from the
  /// column's first lane (each of its lanes holds the same).
  void storeTransposedColumn(ArrayRef<Value> o, Value inv, Value out,
                             ArrayRef<Value> at, Value lse, Value lseValue,
                             ArrayRef<Value> lseAt, int64_t interleave = 1);
  /// Transposed-score decode (CDNA): the block-table entries of the
  /// `groups` groups of `groupTokens` tokens from `first` of `request`'s
  /// window ending at `end`, each the block of the group's first token or,
  /// past the end, of the window's last (an empty window's clamps into the
  /// row).
  SmallVector<Value> loadGroupBlockIds(Value blockTable, Value request,
                                       Value first, Value end, Value maxBlocks,
                                       int64_t blockSize, int64_t groups,
                                       int64_t groupTokens);
  /// Bytes of shared memory mergeAndStoreColumns takes for `waves` waves'
  /// states of `values` values after m.
  int64_t waveColumnsMergeBytes(int64_t waves, int64_t values) const;
  /// Transposed-score decode (CDNA): merges the online-softmax states [m,
  /// l, O^T...] of the block's `waves` waves (one query head a column; m
  /// the same over a column's lanes) through `shared` (dynamic shared
  /// memory, waveColumnsMergeBytes long, reused: the first barrier waits
  /// for every wave's last use), one wave after the other (a running sum,
  /// not every wave's O^T at once); the last stores the column, head
  /// `head` where `valid`, to out[(split,) request, head, :] and, where
  /// `lse` is given, lse[(split,) head, request] (`split`: null but in the
  /// split form; `interleave` as for storeTransposedColumn).
  void mergeAndStoreColumns(ArrayRef<Value> state, Value shared, int64_t waves,
                            Value head, Value valid, Value request, Value split,
                            Value out, Value lse, int64_t interleave = 1);
  /// c := c + a . b on one atom's accumulators `c`.
  LogicalResult mmaInto(MutableArrayRef<Value> c, const Fragment &a,
                        const Fragment &bFrag);
  /// The A fragment of one atom at k-step `ks` of `tile`, rows from `row0`.
  FailureOr<Fragment> loadA(const SharedTile &tile, Value row0, int64_t ks);
  /// The same from the K offset `k` (elements; a multiple of the atom's K).
  FailureOr<Fragment> loadA(const SharedTile &tile, Value row0, Value k);

  /// acc[j] += A(ks) . B_j(ks) over `kSteps` k-steps, for the `atoms` B
  /// atoms stacked along N from tile row `bRow`, their fragments loaded
  /// `group` atoms at a time (fewer in the last group) at K offset
  /// `bK(ks)`; acc holds `atoms` accumulator sets. `interleaved`: each
  /// group by TargetInfo::loadInterleavedFragments (its columns interleave).
  LogicalResult
  mmaSteps(MutableArrayRef<Value> acc, int64_t kSteps,
           function_ref<FailureOr<Fragment>(int64_t ks)> a,
           const SharedTile &bTile, Value bRow,
           function_ref<Value(int64_t ks)> bK, int64_t atoms, int64_t group,
           bool interleaved = false);

  MmaAtom atom;
};

} // namespace mlir::tessel

#endif // TESSEL_LIB_CONVERSION_TESSELTOGPU_ATTENTIONBUILDER_H
