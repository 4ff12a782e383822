//===- PrefillBuilder.h - The flash template's builder ----------*- C++ -*-===//
//
// What Prefill.cpp (the template, the FlashAttention-2 main loop) and
// PrefillTransposed.cpp (CDNA's transposed-score main loop) share: the
// problem, the tile configuration and the builder.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_LIB_CONVERSION_TESSELTOGPU_PREFILLBUILDER_H
#define TESSEL_LIB_CONVERSION_TESSELTOGPU_PREFILLBUILDER_H

#include "AttentionBuilder.h"

namespace mlir::tessel::flash {

struct PrefillProblem {
  Value q, k, v, cuSeqlens, out, lse;
  int64_t qHeads, kvHeads, headDim, valueDim;
  /// The softmax scale argument times log2(e) (scores are base 2).
  Value scaleLog2;
  bool causal;
  /// The keys are a request's cached context in a paged cache (k, v are
  /// the caches; paged_attention with cu_seqlens) rather than its new
  /// tokens.
  bool paged = false;
  Value blockTable, contextLens;
  KVLayout layout = KVLayout::NHD;
  int64_t blockSize = 0;
  /// out [P, T, Hq, Dv] and lse [P, Hq, T]: partial p is the context
  /// window [p W, (p + 1) W), W = ceil(MB / P) * BS.
  bool split = false;
  /// Query heads per tile row group (the paged form): a block takes the
  /// `packed` heads of one KV head, tile row r being token r / packed, head
  /// r % packed; 1: a block takes one query head.
  int64_t packed = 1;
};

struct PrefillConfig {
  int64_t warps = 4;
  /// Keys per K/V tile.
  int64_t tileKeys = 64;
  int64_t stages = 2;
  /// Q fragments stay in registers across the key loop (staged through
  /// shared memory; transposed scores load theirs from global memory).
  bool qInRegisters = true;
  /// Transposed scores (CDNA, 32x32 atoms): each warp computes
  /// S^T = K Q^T for atom.n queries, one per accumulator column, and O^T
  /// += V^T P^T with P^T straight from the S^T accumulators
  /// (TargetInfo::accumulatorsAsOperandB): no P through shared memory, a
  /// lane's scores all of one query (its row maximum and sum are its own
  /// but for one exchange with the lane 32 away), Q's B fragments loaded
  /// from global memory into registers once a tile.
  bool transposedScores = false;
  /// Transposed scores: atoms of atom.n queries a warp (each K and V^T
  /// fragment read from LDS serves them all).
  int64_t queryAtoms = 1;
  /// Transposed scores, unpaged, two stages, on targets with loads to
  /// shared memory (gfx950): K and V tiles go straight from global memory
  /// into their stages (laid out by groupedIndices), V^T's fragments read
  /// by transposing reads (laneFragments).
  bool loadsToShared = false;
};

class PrefillBuilder : public AttentionBuilder {
public:
  PrefillBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                 const MmaAtom &atom, const PrefillConfig &cfg,
                 const PrefillProblem &pb)
      : AttentionBuilder(b, loc, target, atom), cfg(cfg), pb(pb) {}

  LogicalResult build();

private:
  int64_t tileRows() const { return cfg.warps * atom.m * cfg.queryAtoms; }
  /// The first tile row of this warp's query atom `a` (transposed scores).
  Value queryAtomRow(int64_t a) {
    return add(mul(warp, atom.n * cfg.queryAtoms), a * atom.n);
  }
  int64_t tileTokens() const { return tileRows() / pb.packed; }
  /// Whether V is staged transposed, [Dv, keys]: with transposed scores
  /// (CDNA: tiles through registers, V^T the A operand of P.V), where V is
  /// not already dim-major in memory (the shuffled cache layout).
  bool vTransposed() const {
    return cfg.transposedScores &&
           !(pb.paged && pb.layout == KVLayout::Shuffled);
  }
  /// A V^T chunk's run of consecutive keys stored as one vector: a
  /// fragment's k run.
  int64_t vRun() const { return atom.n * atom.k / warpSize; }
  /// The token of tile row `row` (rows from `rowStart`) and its query head.
  Value rowToken(Value row) { return add(rowStart, divu(row, pb.packed)); }
  Value rowHead(Value row) { return add(head, remu(row, pb.packed)); }

  /// One tile: query tokens [first, last) over the keys [start, end); with
  /// causal, token t's keys end at t + offset.
  LogicalResult tile(Value first, Value last, Value start, Value end,
                     Value offset);
  /// The paged form's tile: tokens [first, last) of request `request`,
  /// whose query tokens end at `queryEnd`.
  LogicalResult pagedTile(Value first, Value last, Value request,
                          Value queryEnd);
  void stageQuery(Value rowStart, Value rowEnd);
  /// Whether paged tiles are read by forEachWindowedChunk (CDNA).
  bool windowed() const {
    return pb.paged &&
           pagedWindowsApply(pb.layout, pb.blockSize, cfg.tileKeys, pb.headDim,
                             pb.valueDim, cfg.warps * warpSize);
  }
  /// `ahead`: the tile's block ids (TilePipeline::lookahead) where
  /// windowed().
  void forEachChunk(Value stage, Value kvTile, ValueRange ahead,
                    function_ref<void(const StagedChunk &)> fn);
  LogicalResult computeTile(Value stage, Value kvTile,
                            SmallVector<Value> &state);
  void epilogue(ArrayRef<Value> state);
  /// Indices in the K or V stage `stage` of element (row, col) of its
  /// [rows, width] tile: swizzled rows (swizzledIndices), or with
  /// transposed scores chunk-major, [width / 8, rows, 8], where a lane's
  /// fragments of successive k steps are a constant stride apart (one
  /// address a lane and immediate offsets, where the swizzle's XOR took
  /// two instructions a fragment) and a fragment read is 1 KB in a row.
  SmallVector<Value> stagedIndices(Value stage, Value row, Value col,
                                   int64_t width);
  // Loaded to shared memory (PrefillConfig::loadsToShared), a wave's lanes
  // fill 64 consecutive 16-byte slots: a stage is [width / g, keys, g]
  // for groups of g = groupChunks chunks of a key, so that a wave loads
  // runs of 32 or 64 bytes of a key row, and every fragment read of a lane
  // is one address a tile and an immediate offset (a k step, an atom),
  // free of bank conflicts by groupSwizzle.
  /// 2 for K (a fragment's k run is one chunk), 4 for V (a transposing
  /// read's 4 keys x 16 dims).
  static int64_t groupChunks(bool isKey) { return isKey ? 2 : 4; }
  /// What a key's chunk slot in its group is XORed with.
  Value groupSwizzle(bool isKey, Value key);
  /// Indices in the K (isKey) or V stage of element (key, col).
  SmallVector<Value> groupedIndices(bool isKey, Value key, Value col);
  /// The byte offset of K's (isKey) or V's stage `stage` (K's stages,
  /// then V's).
  Value stageOffset(bool isKey, Value stage);
  /// K's (isKey) or V's stage `stage`, [width / g, keys, g].
  Value stageView(bool isKey, Value stage);
  /// Sets laneOffset: the elements in a K and a V stage from which this
  /// lane's fragment reads are immediate offsets (LLVM did not find those
  /// in the layout's index arithmetic: 2-3 VALU a V read).
  void laneOffsets();
  /// K's (isKey: `count` score atoms) or V^T's (`count` output atoms)
  /// fragments of k step `ks` in stage `stage` (transposed scores): by
  /// laneFragments where loadsToShared, else through views of the stage
  /// (stagedIndices' layout).
  FailureOr<SmallVector<Fragment>> stageFragments(bool isKey, Value stage,
                                                  int64_t ks, int64_t count);
  /// The same, loaded to shared memory: read at the lane's base.
  FailureOr<SmallVector<Fragment>> laneFragments(bool isKey, Value stage,
                                                 int64_t ks, int64_t count);
  /// The unpaged tile's loads to shared memory: this wave's slots of the K
  /// and V stages, each reading its chunk of the tile's window.
  void forEachChunkToShared(Value stage, Value kvTile,
                            function_ref<void(const StagedChunk &)> fn);
  /// A buffer window over the tile's `cfg.tileKeys` rows of `src` (rows of
  /// `rowElements`, this KV head's `width` from its column), ending with the
  /// last key the tile may read: the keys past it read zeros.
  Value unpagedWindow(Value src, int64_t width, Value tileStart,
                      int64_t &rowElements);
  // Transposed scores (PrefillConfig::transposedScores).
  /// This warp's Q^T B fragments, from global memory.
  LogicalResult loadQueryFragments();
  /// State: [m, l, O^T (Dv / m atoms x accCount)], of this lane's query.
  /// `masked`: keys past the request and (causal) past the lane's query
  /// are masked, the scores scaled first; else the scale goes into exp2's
  /// argument (one FMA a score), which needs a positive scale.
  LogicalResult computeTransposedTile(Value stage, Value kvTile,
                                      SmallVector<Value> &state, bool masked);
  /// The first K/V tile that may need the mask (none before it does).
  Value firstMaskedTile(Value numTiles);
  void transposedEpilogue(ArrayRef<Value> state);

  PrefillConfig cfg;
  PrefillProblem pb;

  Type elem;
  Value sharedQ, sharedK, sharedV;
  Value tid, lane, warp, head, kvHead;
  /// The warp index, known uniform (loadsToShared: the wave's first slot).
  Value waveIndex;
  /// With transposed scores, the dynamic shared memory that stageView and
  /// stageFragments view; loadsToShared: laneOffsets' V and K offsets
  /// ([isKey]).
  Value smemBytes;
  Value laneOffset[2];
  /// Paged form: the request, its split (0 unless split) and the cache's
  /// block count and block-table width.
  Value request, split, numBlocks, maxBlocks;
  // Per tile: the query tokens [rowStart, rowEnd), the keys [keyStart,
  // keyEnd) they may see, with causal the position of token t minus t (its
  // keys end at t + queryOffset), and the Q fragments kept in registers.
  Value rowStart, rowEnd, keyStart, keyEnd, queryOffset;
  SmallVector<Fragment> qFrags;
};

} // namespace mlir::tessel::flash

#endif // TESSEL_LIB_CONVERSION_TESSELTOGPU_PREFILLBUILDER_H
