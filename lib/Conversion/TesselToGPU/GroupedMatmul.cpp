//===- GroupedMatmul.cpp - Ragged-M grouped matmul kernel template --------===//
//
// c[rows_g] = a[rows_g] . B_g (b[g]^T with trans_b, else b[g]) for the groups
// of rows given by the cumulative ends `group_offsets` (on the device), fp32
// accumulation.
//
// Work decomposition. Each group is cut into M-tiles of tileM rows; the tail
// rows past the last group's end form one more "group" that is written with
// zeros (the op's semantics), so one kernel covers every row of c. Block
// (x, y) computes N-tile x of the y-th M-tile in that order. Group sizes live
// on the device, so the grid is an upper bound that depends on T and G only:
// sum_g ceil(size_g / tileM) <= ceil((T + (G + 1) (tileM - 1)) / tileM);
// blocks past the last tile exit at once. Every warp of a block finds the
// block's tile by scanning group_offsets one warp-width of groups at a time
// (KernelBuilder::findRowTile: shuffle scans on NVIDIA, DPP on CDNA; no
// shared memory, no host synchronisation).
//
// Tile loop. A and B tiles are staged in shared memory, K-contiguous, by
// 16-byte asynchronous copies in a `stages`-deep ring, zero-filled past the
// group's rows, past N and past K (so no masking in the MMA loop); on CDNA
// by buffer loads from windows that end with the data, which zero-fill in
// hardware (windows()), on gfx950 straight into LDS (loadsToShared: each
// lane loads the chunk the swizzle puts in its slot). Each warp
// owns a (tileM / warpsM) x (tileN / warpsN) block of C as MMA atoms whose
// accumulators stay in registers across the K loop: the fragments are
// indexed with compile-time indices only (dynamic indexing of an
// accumulator array would put it in local memory). Rows of a shared tile
// are 16-byte chunks XOR-swizzled with the row so that the eight row
// addresses of a fragment load hit eight different bank groups.
//
// B layouts. With trans_b, B is [N, K] per group and its tiles are staged
// K-contiguous like A's. Without it (the MoE dgrad, B [K, N] per group) the
// B tiles are staged as they lie in global memory, N-contiguous [tileK,
// tileN], so the 16-byte copies stay 16-byte copies of whole rows; the
// target transposes on the fragment load instead (ldmatrix .trans on sm80,
// issued like the plain ldmatrix, one per fragment pair). Transposing while
// staging would turn every 16-byte copy into 8 strided 2-byte loads through
// registers. gfx942 has no transposing LDS read (and tiles go through
// registers anyway): there a thread loads chunks of consecutive k rows at
// the same columns and stores each column's values as one vector of a
// K-contiguous tile; gfx950 stages the tile as it lies and reads it by
// ds_read_b64_tr_b16. B is either stacked
// ([G, ...]) or a pointer table of G i64 addresses of b_shape matrices:
// then each block turns its group's entry into a memref of that shape
// (inttoptr, like the kernel parameters) and reads it like a stacked slice.
//
// Epilogue: each lane stores its accumulator runs (bf16/f16), predicated on
// the group's last row and on N.
//
// Fused SwiGLU (an `act` operand: each group's b rows are gate rows, then
// up rows): an N-tile covers tileN / 2 columns of act, and its B tile
// stages, in each warp's block of columns, the gate rows of the warp's
// tileN / (2 warpsN) act columns and then their up rows. A lane thus holds
// a gate accumulator and its up partner at the same position of atoms j
// and j + atomsN / 2, and the epilogue writes both into c and silu(gate)
// * up (of the rounded values, as tessel.swiglu computes it) into act.
//
// Ragged K (grouped_matmul_wgrad, c[g] = a[rows_g]^T . b[rows_g], c [G, M,
// N]): the same main loop with the group's rows as the K dimension. Block
// (x, y, z) computes N-tile x of M-tile y of group z (a fixed grid), reads
// its group's row range from group_offsets and runs ceil(rows / tileK)
// K-tiles, zero-filled past the group's end, so an empty group stores
// zeros. Both operands lie with their rows along K: the A tile is staged
// M-contiguous [tileK, tileM] (A^T as it lies in a) and read transposed by
// the target, like the N-contiguous B tile of the dgrad (on gfx942 both
// are transposed while staging, as the dgrad's B).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "tessel/Conversion/Utils/KernelParams.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::tessel;

/// The op attribute that overrides the chosen tile configuration.
static constexpr llvm::StringLiteral kGpuTileAttr = "tessel.gpu_tile";

namespace {

/// Tile configuration. The default, 64x256x32 with 1x4 warps, gives each
/// warp 64x64 of C (4x8 m16n8 atoms, 128 fp32 accumulators per lane, the
/// MMA-to-ldmatrix ratio of the classic 128x128 Ampere tile) while its
/// 64-row M-tiles waste half as many MMAs on partly filled group tails as
/// 128-row ones; 4 stages keep 3 K-tiles in flight (80 KB of shared memory,
/// 2 blocks per SM on sm_90). On the H200 it measured with 128x128x32 x 4
/// stages (the two within noise) ahead of the other configs tried
/// (docs/performance.md). CDNA's forward and dgrad take 128x256 with 2x2
/// warps, or 128x128 where the LDS holds one such block only (gfx942)
/// (buildGroupedMatmul). `tessel.gpu_tile` on the op overrides it.
struct Config {
  int64_t tileM = 64, tileN = 256, tileK = 32;
  int64_t warpsM = 1, warpsN = 4;
  int64_t stages = 4;
};

class GroupedMatmulBuilder : public KernelBuilder {
public:
  GroupedMatmulBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                       const MmaAtom &atom, const Config &cfg)
      : KernelBuilder(b, loc, target), atom(atom), cfg(cfg) {}

  /// Writes the kernel body at the builder's insertion point.
  /// `transB`: b holds [N, K] matrices (else [K, N]); `bShape`: b is a
  /// pointer table of addresses of matrices of this shape (else stacked);
  /// `gather`: the rows of a that the product's rows read (a_rows and its
  /// divisor), else none.
  /// `act`: the fused SwiGLU's output (or null).
  LogicalResult build(Value a, Value bMat, Value offsets, Value c, Value T,
                      int64_t groups, int64_t n, int64_t k, bool transB,
                      std::optional<ArrayRef<int64_t>> bShape,
                      std::optional<std::pair<Value, int64_t>> gather,
                      Value act);
  /// Writes the ragged-K kernel body: c [G, m, n] from a [T, m], b [T, n];
  /// `aRows` / `bRows` (or null): the rows of a / b the product's rows
  /// read, their entries divided by `divisor`.
  LogicalResult buildWgrad(Value a, Value bMat, Value offsets, Value c, Value T,
                           int64_t groups, int64_t m, int64_t n, Value aRows,
                           Value bRows, int64_t divisor);

private:
  /// Memref indices of element (row, col) of stage `stage` of a swizzled
  /// shared tile [stages, rows, width].
  SmallVector<Value> sharedIndices(Value stage, Value row, Value col,
                                   int64_t width);
  /// Calls `fn` for each chunk this thread moves for K-tile `kt` into stage
  /// `stage`, in a fixed order.
  void forEachChunk(Value stage, Value kt,
                    function_ref<void(const StagedChunk &)> fn);
  /// CDNA: an operand read through a buffer window (bufferWindow) that
  /// ends where the tile's data does, so that its chunks past that read
  /// zeros with no select. `at` gives a chunk's element in the window and
  /// what else must hold for it to be read (null: nothing), `tileOffset`
  /// the K-tile's offset in the window in elements (uniform; 0 where the
  /// window is the K-tile's). No window: global loads.
  struct Windowed {
    Value window, tileOffset;
    std::function<std::pair<Value, Value>(Value row, Value col)> at;
  };
  /// The windows of A and B for K-tile `k0` (its first k): where the target
  /// has buffer loads and the operand's rows are not gathered.
  std::pair<Windowed, Windowed> windows(Value k0);
  /// One K-tile of MMAs from stage `stage` into `acc`.
  LogicalResult computeStage(Value stage, SmallVector<Value> &acc);
  /// The K loop: the staged tile loop over numK K-tiles.
  LogicalResult mainLoop(SmallVector<Value> &acc);
  void epilogue(ArrayRef<Value> acc);
  /// The fused SwiGLU's epilogue: c's gate and up columns and act.
  void swigluEpilogue(ArrayRef<Value> acc);
  /// With the fused SwiGLU, B-tile row (tile column) `tileCol`: its act
  /// column and its row of b[group] (a gate row, or the up row I further).
  std::pair<Value, Value> swigluColumn(Value tileCol);

  MmaAtom atom;
  Config cfg;

  /// Register-staged targets (no cp.async, no ldmatrix .trans) stage the
  /// tiles that lie with their rows along K transposed, K-contiguous: the
  /// MMA then reads each fragment as one vector, not one element at a time.
  /// Not where the target reads them transposed by vectors (gfx950).
  bool kRowsTransposed() const {
    return target.getAsyncCopyBytes() == 0 &&
           !target.hasTransposedFragmentReads(atom);
  }
  bool aKContiguous() const { return !raggedK || kRowsTransposed(); }
  bool bKContiguous() const { return transB || kRowsTransposed(); }
  /// Allocates the shared-memory rings of A and B tiles.
  void allocateRings();
  /// Thread, lane and warp coordinates, and the block's first column of c
  /// (its N-tile: x of l2LocalBlockIds' `ids`).
  void setThreadIds(ArrayRef<Value> ids);
  /// Fills gatheredRows for the M-tile from `aRows` [T] and its divisor
  /// (rowsDivisor).
  void gatherRows(Value aRows);
  /// Accumulators of this warp's C block, zero.
  SmallVector<Value> zeroAccumulators();

  // Kernel state.
  Value a, bMat, c, sharedA, sharedB;
  /// CDNA: the rings as 1-D views (computeStage's fragment reads).
  Value flatA, flatB;
  int64_t n = 0, k = 0;
  bool transB = true;
  /// Ragged K: the K dimension is the group's rows [rowStart, rowEnd) and
  /// M is static (`m`); the A tile is M-contiguous.
  bool raggedK = false;
  int64_t m = 0;
  /// K-tiles of the main loop (static unless ragged K).
  Value numK;
  /// The group's B matrix ([N, K] or [K, N]) when b is a pointer table.
  Value bGroup;
  /// Gathered A rows (a_rows): per A copy of a thread, a's row and whether
  /// it exists, found once per M-tile.
  SmallVector<std::pair<Value, Value>> gatheredRows;
  /// Ragged K with gathered rows: the index of a's (b's) rows, or null.
  Value aIndex, bIndex;
  /// Whether the K loop's tiles go to shared memory by buffer loads to
  /// LDS (gfx950; mainLoop decides), and then the wave's index (uniform).
  bool loadsToShared = false;
  Value waveIndex;
  /// The divisor of gathered rows' entries (a_rows_divisor, rows_divisor).
  int64_t rowsDivisor = 1;
  /// The fused SwiGLU's act [T, N / 2] (or null), its first column in the
  /// block's N-tile.
  Value act, actStart;
  /// The row of `operand` that row r of the product reads through
  /// `index`, and whether r is in the group and the entry inside the
  /// operand.
  std::pair<Value, Value> gatheredRow(Value operand, Value index, Value r);
  Value tid, lane, warpRow, warpCol;
  /// Ragged M: the M-tile's rows of a and c. Ragged K: the group's rows
  /// of a and b. colStart: the N-tile's first column; mStart: the M-tile's
  /// first row of c[group] (ragged K).
  Value rowStart, rowEnd, group, colStart, mStart;
};

SmallVector<Value> GroupedMatmulBuilder::sharedIndices(Value stage, Value row,
                                                       Value col,
                                                       int64_t width) {
  return swizzledIndices(stage, row, col, width);
}

void GroupedMatmulBuilder::forEachChunk(
    Value stage, Value kt, function_ref<void(const StagedChunk &)> fn) {
  int64_t threads = cfg.warpsM * cfg.warpsN * warpSize;
  Value k0 = mul(kt, cfg.tileK);
  Value none = idx(0);
  // One 16-byte copy per (row, chunk) of a [rows, width] tile; consecutive
  // threads take consecutive chunks of a row, so a warp reads whole row
  // segments. `source` maps a tile element to its validity and source
  // indices.
  auto inWindow = [&](StagedChunk &chunk, const Windowed &w, Value row,
                      Value col) {
    if (!w.window)
      return;
    auto [element, valid] = w.at(row, col);
    readFromWindow(chunk, w.window, element, valid, w.tileOffset);
  };
  auto copyTile = [&](Value shared, int64_t rows, int64_t width, Value src,
                      bool zeroFill, const Windowed &windowed, auto source) {
    int64_t chunksPerRow = width / kChunk;
    int64_t copies = rows * chunksPerRow / threads;
    // Loads to shared memory whose source rows are at least as long as the
    // tile's: a wave's copies fill runs of rows that share M0 (m0Slot), the
    // immediate offset added to the source offset too, which then stays
    // >= 0 less it.
    int64_t pitch = cast<MemRefType>(src.getType()).getShape().back();
    bool sharedM0 =
        loadsToShared && !ShapedType::isDynamic(pitch) && pitch >= width;
    for (int64_t i = 0; i < copies; ++i) {
      M0Slot slot;
      if (loadsToShared)
        slot = m0Slot(i, copies, cfg.warpsM * cfg.warpsN, waveIndex,
                      sharedM0 ? rows * chunksPerRow : warpSize);
      Value id = loadsToShared ? add(slot.first, lane) : add(tid, i * threads);
      Value row = divu(id, chunksPerRow);
      // Loaded to shared memory, the wave's lanes fill consecutive slots:
      // lane id's slot of the row holds the chunk the swizzle puts there.
      Value inRow = remu(id, chunksPerRow);
      if (loadsToShared)
        inRow = arith::XOrIOp::create(b, loc, inRow, swizzleOf(row, width));
      Value col = mul(inRow, kChunk);
      auto [valid, srcIndices] = source(i, row, col);
      // Zero-filled copies still need an in-bounds source address.
      for (Value &index : srcIndices)
        index = select(valid, index, none);
      StagedChunk chunk{shared, sharedIndices(stage, row, col, width), src,
                        srcIndices, select(valid, idx(kChunk), none)};
      chunk.zeroFill = zeroFill;
      inWindow(chunk, windowed, row, col);
      if (loadsToShared) {
        chunk.waveDst = {stage, divu(slot.runStart, chunksPerRow), idx(0)};
        moveToImmediateOffset(chunk, slot.immediateBytes);
      }
      fn(chunk);
    }
  };
  // A [tileK, width] tile (rows along K) stored transposed, [width, tileK]:
  // a thread's chunks of consecutive k at the same 8 columns (up to the MMA
  // fragment's k run) are written as one vector a column.
  auto copyTransposed = [&](Value shared, int64_t width, Value src,
                            bool zeroFill, const Windowed &windowed,
                            auto source) {
    forEachRowGroupChunk(
        cfg.tileK, width, threads, atom.m * atom.k / warpSize,
        [&](int64_t i, Value row, Value col, int64_t groupRows) {
          auto [valid, srcIndices] = source(i, row, col);
          for (Value &index : srcIndices)
            index = select(valid, index, none);
          StagedChunk chunk{
              shared, {}, src, srcIndices, select(valid, idx(kChunk), none)};
          chunk.zeroFill = zeroFill;
          for (int64_t e = 0; groupRows && e < kChunk; ++e)
            chunk.scatter.push_back(
                sharedIndices(stage, add(col, e), row, cfg.tileK));
          chunk.scatterRows = std::max<int64_t>(groupRows, 1);
          inWindow(chunk, windowed, row, col);
          fn(chunk);
        });
  };
  // Whole chunks: K and N are multiples of 8.
  auto kInside = [&](Value valid, Value kIndex) {
    return k % cfg.tileK ? andi(valid, lt(kIndex, idx(k))) : valid;
  };
  // Ragged K: a [tileK, tile] tile of the group's rows of a or b (or of
  // the rows `index` gathers), columns from `first` (of `limit`); rows
  // past the group's end are zeros.
  auto fromGroupRows = [&](Value row, Value col, Value first, int64_t limit,
                           int64_t tile, Value operand, Value index) {
    Value r = add(add(rowStart, k0), row), column = add(first, col);
    Value valid = lt(r, rowEnd);
    if (index)
      std::tie(r, valid) = gatheredRow(operand, index, r);
    if (limit % tile)
      valid = andi(valid, lt(column, idx(limit)));
    return std::make_pair(valid, SmallVector<Value>{r, column});
  };
  auto fromA = [&](int64_t i, Value row, Value col) {
    if (raggedK)
      return fromGroupRows(row, col, mStart, m, cfg.tileM, a, aIndex);
    Value kc = add(k0, col);
    if (!gatheredRows.empty())
      return std::make_pair(kInside(gatheredRows[i].second, kc),
                            SmallVector<Value>{gatheredRows[i].first, kc});
    Value r = add(rowStart, row);
    return std::make_pair(kInside(lt(r, rowEnd), kc),
                          SmallVector<Value>{r, kc});
  };
  Value bSrc = bGroup ? bGroup : bMat;
  auto bIndices = [&](Value first, Value second) {
    if (bGroup)
      return SmallVector<Value>{first, second};
    return SmallVector<Value>{group, first, second};
  };
  // With trans_b a B tile row is an n, else a k.
  auto fromB = [&](int64_t, Value row, Value col) {
    if (raggedK)
      return fromGroupRows(row, col, colStart, n, cfg.tileN, bMat, bIndex);
    if (transB && act) {
      auto [actCol, r] = swigluColumn(row);
      Value kc = add(k0, col);
      return std::make_pair(kInside(lt(actCol, idx(n / 2)), kc),
                            bIndices(r, kc));
    }
    if (transB) {
      Value r = add(colStart, row), kc = add(k0, col);
      return std::make_pair(kInside(lt(r, idx(n)), kc), bIndices(r, kc));
    }
    Value kr = add(k0, row), nc = add(colStart, col);
    return std::make_pair(kInside(lt(nc, idx(n)), kr), bIndices(kr, nc));
  };
  // Ragged M: a row past the group (or past T) only makes a row of C that
  // is not stored, a B row past N a column, so with whole K-tiles their
  // chunks need no zeros; gathered entries outside a must read as zeros,
  // and ragged K's rows past the group are K.
  bool zeroA = raggedK || !gatheredRows.empty() || k % cfg.tileK;
  bool zeroB = raggedK || k % cfg.tileK;
  auto [windowA, windowB] = windows(k0);
  if (!raggedK)
    copyTile(sharedA, cfg.tileM, cfg.tileK, a, zeroA, windowA, fromA);
  else if (kRowsTransposed())
    copyTransposed(sharedA, cfg.tileM, a, zeroA, windowA, fromA);
  else
    copyTile(sharedA, cfg.tileK, cfg.tileM, a, zeroA, windowA, fromA);
  if (transB)
    copyTile(sharedB, cfg.tileN, cfg.tileK, bSrc, zeroB, windowB, fromB);
  else if (kRowsTransposed())
    copyTransposed(sharedB, cfg.tileN, bSrc, zeroB, windowB, fromB);
  else
    copyTile(sharedB, cfg.tileK, cfg.tileN, bSrc, zeroB, windowB, fromB);
}

std::pair<GroupedMatmulBuilder::Windowed, GroupedMatmulBuilder::Windowed>
GroupedMatmulBuilder::windows(Value k0) {
  Windowed wa, wb;
  if (!target.hasBufferLoads())
    return {wa, wb};
  auto both = [&](Value x, Value y) { return !x ? y : !y ? x : andi(x, y); };
  // Past K only where K is no multiple of the K-tile.
  auto insideK = [&](Value kIndex) {
    return k % cfg.tileK ? lt(kIndex, idx(k)) : Value();
  };
  auto below = [&](Value index, int64_t limit, int64_t tile) {
    return limit % tile ? lt(index, idx(limit)) : Value();
  };
  // Through uniform() although bufferResource takes the first lane's
  // window anyway: without it the K loops lost 2-3 points of MFMA share on
  // both chips (2026-12-03), the windows' arithmetic done per lane.
  Value start = uniform(rowStart), end = uniform(rowEnd);
  if (raggedK) {
    // The K-tile's rows of the group: `width` columns each, from `first`.
    Value first = add(start, k0);
    Value rows = clampI32(sub(end, first), 0, cfg.tileK);
    auto groupRows = [&](Windowed &w, Value operand, int64_t width,
                         Value firstCol, int64_t tile) {
      w.window = bufferWindow(operand, mul(first, width), mul(rows, width),
                              cfg.tileK * width);
      w.tileOffset = idx(0);
      w.at = [this, width, firstCol, tile, below](Value row, Value col) {
        Value column = add(firstCol, col);
        return std::make_pair(add(mul(row, width), column),
                              below(column, width, tile));
      };
    };
    if (!aIndex)
      groupRows(wa, a, m, mStart, cfg.tileM);
    if (!bIndex)
      groupRows(wb, bMat, n, colStart, cfg.tileN);
    return {wa, wb};
  }
  if (gatheredRows.empty()) {
    // The M-tile's rows of the group.
    Value rows = minu(sub(end, start), idx(cfg.tileM));
    wa.window = bufferWindow(a, mul(start, k), mul(rows, k), cfg.tileM * k);
    wa.tileOffset = k0;
    wa.at = [this, k0, insideK](Value row, Value col) {
      return std::make_pair(add(mul(row, k), col), insideK(add(k0, col)));
    };
  }
  // The group's matrix, whole: with trans_b, rows past N are past it.
  Value first = bGroup ? idx(0) : mul(uniform(group), n * k);
  wb.window = bufferWindow(bGroup ? bGroup : bMat, first, idx(n * k), n * k);
  if (transB) {
    wb.tileOffset = k0;
    wb.at = [this, k0, insideK, both](Value row, Value col) {
      Value kIndex = add(k0, col);
      if (!act)
        return std::make_pair(add(mul(add(colStart, row), k), col),
                              insideK(kIndex));
      auto [actCol, r] = swigluColumn(row);
      return std::make_pair(add(mul(r, k), col),
                            both(lt(actCol, idx(n / 2)), insideK(kIndex)));
    };
  } else {
    wb.tileOffset = mul(k0, n);
    wb.at = [this, k0, insideK, below, both](Value row, Value col) {
      Value column = add(colStart, col);
      return std::make_pair(
          add(mul(row, n), column),
          both(below(column, n, cfg.tileN), insideK(add(k0, row))));
    };
  }
  return {wa, wb};
}

LogicalResult GroupedMatmulBuilder::computeStage(Value stage,
                                                 SmallVector<Value> &acc) {
  int64_t warpTileM = cfg.tileM / cfg.warpsM, warpTileN = cfg.tileN / cfg.warpsN;
  int64_t atomsM = warpTileM / atom.m, atomsN = warpTileN / atom.n;
  int64_t accCount = target.getAccumulatorCount(atom);
  // Register-staged targets (CDNA) read all of the tile's fragments before its
  // MMAs, behind a scheduling fence: the back end interleaved them with
  // a wait before nearly every MMA (gfx950 dgrad 24 s_waitcnt an iteration,
  // 74% -> 75% of the loop's issue cycles). There a k-step's MMAs take B's
  // atoms in the reverse order of their reads, so that the first one's LDS
  // wait (for the step's last read) covers the step: gfx942's wgrad 4 -> 2
  // waits a K-tile, every grouped matmul about a point of MFMA share.
  bool readsFirst = target.getAsyncCopyBytes() == 0;
  // The target asks for addresses through the template's own layout. CDNA
  // reads the stage flat, at an offset whose constant part (the stage, the
  // k-step, the atom past the swizzle's reach) the back end folds into the
  // LDS instruction: gfx950's 256x256 wgrad read through 52 address
  // registers where 8 do now (the constants had been OR'd into the row
  // term of the memref's linear index).
  auto tile = [&](Value ring, Value flat, bool kContiguous, int64_t rows) {
    int64_t width = kContiguous ? cfg.tileK : rows;
    int64_t ringRows = rows * cfg.tileK / width;
    if (readsFirst)
      return SharedTile{flat,
                        [this, stage, ringRows, width](OpBuilder &, Location,
                                                       Value row, Value col) {
                          return SmallVector<Value>{
                              swizzledOffset(stage, ringRows, row, col, width)};
                        },
                        kContiguous};
    return SharedTile{
        ring,
        [this, stage, width](OpBuilder &, Location, Value row, Value col) {
          return sharedIndices(stage, row, col, width);
        },
        kContiguous};
  };
  SharedTile tileA = tile(sharedA, flatA, aKContiguous(), cfg.tileM);
  SharedTile tileB = tile(sharedB, flatB, bKContiguous(), cfg.tileN);
  Value rowA = mul(warpRow, warpTileM), rowB = mul(warpCol, warpTileN);
  // K-steps whose fragments come by one read (gfx942: two).
  int64_t kSteps = cfg.tileK / atom.k, joint = target.jointKSteps(atom);
  if (!aKContiguous() || !bKContiguous() || kSteps % joint)
    joint = 1;
  // A k-step's fragments (joint steps' in order) of count atoms.
  using StepFragments = SmallVector<SmallVector<Fragment>>;
  auto load = [&](MmaOperand operand, const SharedTile &tile, Value row0,
                  Value k0, int64_t count) -> FailureOr<StepFragments> {
    if (joint > 1)
      return target.loadJointFragments(b, loc, atom, operand, tile, row0, k0,
                                       lane, count);
    FailureOr<SmallVector<Fragment>> f = target.loadFragments(
        b, loc, atom, operand, tile, row0, k0, lane, count);
    if (failed(f))
      return failure();
    return StepFragments{*f};
  };
  auto mmas = [&](const StepFragments &fa,
                  const StepFragments &fb) -> LogicalResult {
    for (int64_t s = 0; s < joint; ++s)
      for (int64_t i = 0; i < atomsM; ++i)
        for (int64_t n = 0; n < atomsN; ++n) {
          int64_t j = readsFirst ? atomsN - 1 - n : n;
          MutableArrayRef<Value> slice(&acc[(i * atomsN + j) * accCount],
                                       accCount);
          FailureOr<SmallVector<Value>> d =
              target.mma(b, loc, atom, fa[s][i], fb[s][j], slice);
          if (failed(d))
            return failure();
          llvm::copy(*d, slice.begin());
        }
    return success();
  };
  SmallVector<std::pair<StepFragments, StepFragments>> read;
  for (int64_t ks = 0; ks < kSteps; ks += joint) {
    Value k0 = idx(ks * atom.k);
    auto fa = load(MmaOperand::A, tileA, rowA, k0, atomsM);
    if (failed(fa))
      return failure();
    auto fb = load(MmaOperand::B, tileB, rowB, k0, atomsN);
    if (failed(fb))
      return failure();
    if (readsFirst)
      read.push_back({*fa, *fb});
    else if (failed(mmas(*fa, *fb)))
      return failure();
  }
  if (readsFirst) {
    issueLoadsAfterReads();
    target.fenceScheduling(b, loc);
  }
  for (auto &[fa, fb] : read)
    if (failed(mmas(fa, fb)))
      return failure();
  return success();
}

LogicalResult GroupedMatmulBuilder::mainLoop(SmallVector<Value> &acc) {
  // With a dynamic numK (ragged K), K-tiles past the group's rows are all
  // zero-filled: the prologue may issue them.
  int64_t threads = cfg.warpsM * cfg.warpsN * warpSize;
  TilePipeline pipeline = chunkPipeline(
      numK, cfg.stages, (cfg.tileM + cfg.tileN) * cfg.tileK / kChunk / threads,
      atom.operandType, [this](Value stage, Value kt, ValueRange, auto fn) {
        forEachChunk(stage, kt, fn);
      });
  pipeline.compute = [this](Value stage, Value, SmallVector<Value> &carried) {
    return computeStage(stage, carried);
  };
  pipeline.pairStages = true;
  pipeline.fetchPastEnd = raggedK;
  // gfx950: every tile loaded to shared memory where both operands are
  // read through windows (rows not gathered) and staged as they lie.
  loadsToShared = target.hasBufferLoadsToShared() && cfg.stages == 2 &&
                  !kRowsTransposed() && gatheredRows.empty() && !aIndex &&
                  !bIndex;
  if (loadsToShared) {
    waveIndex = uniform(divu(tid, warpSize));
    loadChunksToShared(pipeline,
                       [this](Value stage, Value kt, ValueRange, auto fn) {
                         forEachChunk(stage, kt, fn);
                       });
  }
  return runTilePipeline(pipeline, acc);
}

void GroupedMatmulBuilder::epilogue(ArrayRef<Value> acc) {
  int64_t warpTileM = cfg.tileM / cfg.warpsM, warpTileN = cfg.tileN / cfg.warpsN;
  int64_t atomsM = warpTileM / atom.m, atomsN = warpTileN / atom.n;
  int64_t accCount = target.getAccumulatorCount(atom);
  int64_t run = target.getAccumulatorRun(atom);
  Type elem = cast<MemRefType>(c.getType()).getElementType();
  auto runType = VectorType::get({run}, elem);
  int64_t runBytes = run * elem.getIntOrFloatBitWidth() / 8;
  // Ragged M: rows of c up to the group's end; ragged K: rows of c[group]
  // up to M.
  Value rowBase = add(raggedK ? mStart : rowStart, mul(warpRow, warpTileM));
  Value colBase = add(colStart, mul(warpCol, warpTileN));
  for (int64_t i = 0; i < atomsM; ++i) {
    for (int64_t j = 0; j < atomsN; ++j) {
      for (int64_t e = 0; e < accCount; e += run) {
        auto [r, col] = target.getAccumulatorPosition(b, loc, atom, lane, e);
        Value row = add(add(rowBase, i * atom.m), r);
        Value column = add(add(colBase, j * atom.n), col);
        Value inside = raggedK ? lt(row, idx(m)) : lt(row, rowEnd);
        if (raggedK && m % cfg.tileM == 0)
          inside = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
        // N is a multiple of 8 and runs never cross an 8-column boundary,
        // so a run is entirely inside or outside.
        if (n % cfg.tileN)
          inside = andi(inside, lt(column, idx(n)));
        auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        SmallVector<Value> values;
        for (int64_t v = 0; v < run; ++v) {
          Value value = acc[(i * atomsN + j) * accCount + e + v];
          if (value.getType() != elem)
            value = arith::TruncFOp::create(b, loc, elem, value);
          values.push_back(value);
        }
        Value vec = vector::FromElementsOp::create(b, loc, runType, values);
        SmallVector<Value> indices = {row, column};
        if (raggedK)
          indices.insert(indices.begin(), group);
        vector::StoreOp::create(b, loc, vec, c, indices,
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(runBytes));
      }
    }
  }
}

std::pair<Value, Value> GroupedMatmulBuilder::swigluColumn(Value tileCol) {
  int64_t warpTileN = cfg.tileN / cfg.warpsN, half = warpTileN / 2;
  Value within = remu(tileCol, warpTileN);
  Value actCol = add(add(actStart, mul(divu(tileCol, warpTileN), half)),
                     remu(within, half));
  Value up = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, within,
                                   idx(half));
  return {actCol, add(actCol, select(up, idx(n / 2), idx(0)))};
}

void GroupedMatmulBuilder::swigluEpilogue(ArrayRef<Value> acc) {
  int64_t warpTileM = cfg.tileM / cfg.warpsM,
          warpTileN = cfg.tileN / cfg.warpsN;
  int64_t atomsM = warpTileM / atom.m, atomsN = warpTileN / atom.n;
  int64_t accCount = target.getAccumulatorCount(atom);
  int64_t run = target.getAccumulatorRun(atom);
  int64_t intermediate = n / 2;
  Type elem = cast<MemRefType>(c.getType()).getElementType();
  auto runType = VectorType::get({run}, elem);
  int64_t runBytes = run * elem.getIntOrFloatBitWidth() / 8;
  Value rowBase = add(rowStart, mul(warpRow, warpTileM));
  Value colBase = add(actStart, mul(warpCol, warpTileN / 2));
  auto store = [&](ArrayRef<Value> values, Value memref, Value row,
                   Value column) {
    vector::StoreOp::create(
        b, loc, vector::FromElementsOp::create(b, loc, runType, values), memref,
        ValueRange{row, column}, /*nontemporal=*/false,
        llvm::MaybeAlign(runBytes));
  };
  for (int64_t i = 0; i < atomsM; ++i) {
    for (int64_t j = 0; j < atomsN / 2; ++j) {
      for (int64_t e = 0; e < accCount; e += run) {
        auto [r, col] = target.getAccumulatorPosition(b, loc, atom, lane, e);
        Value row = add(add(rowBase, i * atom.m), r);
        Value column = add(add(colBase, j * atom.n), col);
        Value inside = lt(row, rowEnd);
        if (intermediate % (cfg.tileN / 2))
          inside = andi(inside, lt(column, idx(intermediate)));
        ifThen(inside, [&] {
          SmallVector<Value> gates, ups, acts;
          for (int64_t v = 0; v < run; ++v) {
            auto rounded = [&](int64_t atomN) {
              return convertFloat(acc[(i * atomsN + atomN) * accCount + e + v],
                                  elem);
            };
            gates.push_back(rounded(j));
            ups.push_back(rounded(j + atomsN / 2));
            acts.push_back(
                convertFloat(swiglu(convertFloat(gates.back(), b.getF32Type()),
                                    convertFloat(ups.back(), b.getF32Type())),
                             elem));
          }
          store(gates, c, row, column);
          store(ups, c, row, add(column, intermediate));
          store(acts, act, row, column);
        });
      }
    }
  }
}

void GroupedMatmulBuilder::allocateRings() {
  Type elem = atom.operandType;
  // The rings live in dynamic shared memory: 3 stages of 128x128x32 fill
  // the 48 KB a static allocation may use, and deeper rings or wider K
  // tiles need more. The dynamic block is 16-byte aligned (what cp.async and
  // ldmatrix need) and each ring is a multiple of 16 bytes.
  Value bytes = dynamicSharedBytes();
  int64_t offset = 0;
  // CDNA reads each ring through a flat view too (computeStage).
  bool flat = target.getAsyncCopyBytes() == 0;
  auto ring = [&](int64_t rows, int64_t width, Value &flatView) -> Value {
    if (flat)
      flatView = sharedView(bytes, offset, {cfg.stages * rows * width}, elem);
    Value view = sharedView(bytes, offset, {cfg.stages, rows, width}, elem);
    offset += cfg.stages * rows * width * elem.getIntOrFloatBitWidth() / 8;
    return view;
  };
  sharedA = aKContiguous() ? ring(cfg.tileM, cfg.tileK, flatA)
                           : ring(cfg.tileK, cfg.tileM, flatA);
  sharedB = bKContiguous() ? ring(cfg.tileN, cfg.tileK, flatB)
                           : ring(cfg.tileK, cfg.tileN, flatB);
}

void GroupedMatmulBuilder::setThreadIds(ArrayRef<Value> ids) {
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = remu(tid, warpSize);
  Value warp = divu(tid, warpSize);
  warpRow = divu(warp, cfg.warpsN);
  warpCol = remu(warp, cfg.warpsN);
  colStart = mul(blockIdOr(ids, gpu::Dimension::x), cfg.tileN);
}

SmallVector<Value> GroupedMatmulBuilder::zeroAccumulators() {
  int64_t warpTileM = cfg.tileM / cfg.warpsM, warpTileN = cfg.tileN / cfg.warpsN;
  int64_t numAcc = (warpTileM / atom.m) * (warpTileN / atom.n) *
                   target.getAccumulatorCount(atom);
  Value zero = arith::ConstantOp::create(b, loc, atom.accType,
                                         b.getZeroAttr(atom.accType));
  return SmallVector<Value>(numAcc, zero);
}

std::pair<Value, Value>
GroupedMatmulBuilder::gatheredRow(Value operand, Value index, Value r) {
  // Copies past the group's rows (the prologue's, of a group of none) load
  // no entry.
  Value limit = mul(memref::DimOp::create(b, loc, operand, 0), rowsDivisor);
  auto [entry, valid] = gatherEntry(index, r, lt(r, rowEnd), limit);
  return {select(valid, divu(entry, rowsDivisor), idx(0)), valid};
}

LogicalResult GroupedMatmulBuilder::buildWgrad(
    Value aArg, Value bArg, Value offsets, Value cArg, Value T, int64_t groups,
    int64_t mDim, int64_t nDim, Value aRows, Value bRows, int64_t divisor) {
  a = aArg;
  bMat = bArg;
  aIndex = aRows;
  bIndex = bRows;
  rowsDivisor = divisor;
  c = cArg;
  m = mDim;
  n = nDim;
  raggedK = true;
  transB = false;
  allocateRings();
  // Blocks of one (M-tile, group) read the same rows of a: on one L2.
  SmallVector<Value, 3> ids =
      l2LocalBlockIds({idx((nDim + cfg.tileN - 1) / cfg.tileN),
                       idx((mDim + cfg.tileM - 1) / cfg.tileM), idx(groups)});
  setThreadIds(ids);
  mStart = mul(blockIdOr(ids, gpu::Dimension::y), cfg.tileM);
  group = blockIdOr(ids, gpu::Dimension::z);

  std::tie(rowStart, rowEnd) = groupRows(offsets, group, groups, T);
  numK = divu(add(sub(rowEnd, rowStart), cfg.tileK - 1), cfg.tileK);
  // CDNA: a count the back end sees is uniform, so that the K loop's
  // branches are scalar (gfx942 and gfx950 wgrads a point of MFMA share).
  if (target.getAsyncCopyBytes() == 0)
    numK = uniform(numK);

  SmallVector<Value> acc = zeroAccumulators();
  if (failed(mainLoop(acc)))
    return failure();
  epilogue(acc);
  return success();
}

void GroupedMatmulBuilder::gatherRows(Value aRows) {
  // The rows forEachChunk's A copies of this thread take, in its order.
  int64_t threads = cfg.warpsM * cfg.warpsN * warpSize;
  int64_t chunksPerRow = cfg.tileK / kChunk;
  for (int64_t i = 0; i < cfg.tileM * chunksPerRow / threads; ++i)
    gatheredRows.push_back(gatheredRow(
        a, aRows, add(rowStart, divu(add(tid, i * threads), chunksPerRow))));
}

LogicalResult GroupedMatmulBuilder::build(
    Value aArg, Value bArg, Value offsets, Value cArg, Value T, int64_t groups,
    int64_t nDim, int64_t kDim, bool transBArg,
    std::optional<ArrayRef<int64_t>> bShape,
    std::optional<std::pair<Value, int64_t>> gather, Value actArg) {
  a = aArg;
  transB = transBArg;
  bMat = bArg;
  c = cArg;
  act = actArg;
  n = nDim;
  k = kDim;
  MLIRContext *ctx = b.getContext();
  Type elem = atom.operandType;
  numK = idx((k + cfg.tileK - 1) / cfg.tileK);
  allocateRings();
  // The N-tiles of an M-tile read its rows of a: on one L2. (The grid as
  // buildGroupedMatmul launches it: an N-tile is tileN / 2 columns of act.)
  int64_t nTiles = act ? (n / 2 + cfg.tileN / 2 - 1) / (cfg.tileN / 2)
                       : (n + cfg.tileN - 1) / cfg.tileN;
  SmallVector<Value, 3> ids = l2LocalBlockIds(
      {idx(nTiles),
       arith::CeilDivUIOp::create(
           b, loc, add(T, (groups + 1) * (cfg.tileM - 1)), idx(cfg.tileM)),
       idx(1)});
  setThreadIds(ids);
  if (act)
    actStart = mul(blockIdOr(ids, gpu::Dimension::x), cfg.tileN / 2);
  // Groups 0..G-1 and the zero tail [end_{G-1}, T) (entry G).
  RowTile tile = findRowTile(
      [&](Value g) { return memref::LoadOp::create(b, loc, offsets, g); },
      idx(groups), T, blockIdOr(ids, gpu::Dimension::y), cfg.tileM,
      /*tail=*/true);

  // Blocks past the last tile have nothing to do. `found` is uniform over
  // the block (every warp scanned the same offsets), so barriers inside
  // are safe.
  auto ifFound = scf::IfOp::create(b, loc, tile.found, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifFound.thenBlock());
  rowStart = tile.rowStart;
  rowEnd = tile.rowEnd;
  group = tile.group;
  if (gather) {
    rowsDivisor = gather->second;
    gatherRows(gather->first);
  }

  SmallVector<Value> acc = zeroAccumulators();
  // The tail (rows past the last group) skips the K loop: zeros.
  Value isGroup = lt(group, idx(groups));
  auto ifGroup = scf::IfOp::create(b, loc, TypeRange(ValueRange(acc)), isGroup,
                                   /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(ifGroup.thenBlock());
    if (bShape) {
      // Only real groups read the table (group == G is the zero tail).
      // A global pointer, cast to generic: the back ends infer the global
      // space again through the casts, so B is read by global (not flat)
      // loads, which on CDNA do not count against the LDS wait counter.
      Value address = memref::LoadOp::create(b, loc, bMat, group);
      Value ptr = LLVM::AddrSpaceCastOp::create(
          b, loc, LLVM::LLVMPointerType::get(ctx),
          LLVM::IntToPtrOp::create(
              b, loc, LLVM::LLVMPointerType::get(ctx, /*global=*/1), address));
      KernelArg matrix;
      matrix.type = MemRefType::get(*bShape, elem);
      for (int64_t size : *bShape) {
        KernelDim dim;
        dim.constant = size;
        matrix.dims.push_back(dim);
      }
      bGroup = buildArgMemRef(b, loc, matrix, ptr, /*symbols=*/{});
    }
    SmallVector<Value> sums = acc;
    if (failed(mainLoop(sums)))
      return failure();
    scf::YieldOp::create(b, loc, sums);
    b.setInsertionPointToStart(ifGroup.elseBlock());
    scf::YieldOp::create(b, loc, acc);
  }
  if (act)
    swigluEpilogue(SmallVector<Value>(ifGroup.getResults()));
  else
    epilogue(SmallVector<Value>(ifGroup.getResults()));
  return success();
}

/// A kernel may override the tile configuration with a dictionary
/// `tessel.gpu_tile = {tile_m, tile_n, tile_k, warps_m, warps_n, stages}`
/// (any subset) on its op: how benchmarks compare configs, and where
/// per-shape-class choices will land. `aRowsM` / `bRowsN`: the A (B) tile
/// is staged with M (N) along its rows, which the swizzle needs to be a
/// multiple of 64.
LogicalResult applyTileOverride(Operation *op, Config &cfg,
                                const MmaAtom &atom, int64_t warpSize,
                                bool aRowsM, bool bRowsN) {
  auto dict = op->getAttrOfType<DictionaryAttr>(kGpuTileAttr);
  if (!dict)
    return success();
  for (NamedAttribute entry : dict) {
    auto value = dyn_cast<IntegerAttr>(entry.getValue());
    int64_t *field = llvm::StringSwitch<int64_t *>(entry.getName().strref())
                         .Case("tile_m", &cfg.tileM)
                         .Case("tile_n", &cfg.tileN)
                         .Case("tile_k", &cfg.tileK)
                         .Case("warps_m", &cfg.warpsM)
                         .Case("warps_n", &cfg.warpsN)
                         .Case("stages", &cfg.stages)
                         .Default(nullptr);
    if (!field || !value || value.getInt() <= 0)
      return op->emitOpError()
             << "GPU template: tessel.gpu_tile takes positive integers "
                "tile_m, tile_n, tile_k, warps_m, warps_n, stages; got "
             << entry.getName() << " = " << entry.getValue();
    *field = value.getInt();
  }
  int64_t threads = cfg.warpsM * cfg.warpsN * warpSize;
  auto broken = [&](const Twine &constraint) {
    return op->emitOpError() << "GPU template: tessel.gpu_tile " << dict
                             << " breaks " << constraint;
  };
  // The swizzle permutes 4 or 8 16-byte chunks per row.
  if (cfg.tileK != 32 && cfg.tileK != 64)
    return broken("tile_k in {32, 64}");
  if (cfg.tileM % (cfg.warpsM * atom.m) || cfg.tileN % (cfg.warpsN * atom.n))
    return broken("tile_m % (warps_m * " + Twine(atom.m) +
                  ") == 0 and tile_n % (warps_n * " + Twine(atom.n) +
                  ") == 0");
  if ((cfg.tileM * cfg.tileK / kChunk) % threads ||
      (cfg.tileN * cfg.tileK / kChunk) % threads)
    return broken("a whole number of 16-byte copies per thread: (tile_m and "
                  "tile_n) * tile_k / 8 % " +
                  Twine(threads) + " == 0");
  // Tiles staged with M or N along their rows: the swizzle needs a
  // multiple of 8 chunks.
  if (bRowsN && cfg.tileN % 64)
    return broken(isa<GroupedMatmulOp>(op) ? "tile_n % 64 == 0 without trans_b"
                                            : "tile_n % 64 == 0");
  if (aRowsM && cfg.tileM % 64)
    return broken("tile_m % 64 == 0");
  return success();
}

/// The MMA atom and the tile configuration of `op` for `target`: `cfg`
/// with the op's override, checked against the target (stages, shared
/// memory). Sets `sharedBytes`.
FailureOr<std::pair<MmaAtom, Config>>
chooseConfig(Operation *op, const KernelContext &ctx, Type elem, Config cfg,
             bool aRowsM, bool bRowsN, int64_t &sharedBytes) {
  const TargetInfo &target = ctx.target;
  FailureOr<SmallVector<MmaAtom>> atoms =
      f32AccumulatorAtoms(op, target, elem);
  if (failed(atoms))
    return failure();
  // With async copies a ring of 4 (measured best on the H200); staged
  // through registers, a double buffer.
  bool async = target.getAsyncCopyBytes() > 0;
  cfg.stages = ctx.stages > 0 ? ctx.stages : (async ? cfg.stages : 2);
  if (failed(applyTileOverride(op, cfg, atoms->front(), target.getWarpSize(),
                               aRowsM, bRowsN)))
    return failure();
  if (!async && cfg.stages != 2)
    return op->emitOpError()
           << "GPU template: " << target.getChip()
           << " stages tiles through registers into a double buffer, so "
              "stages must be 2, got "
           << cfg.stages;
  // One stage is being refilled while another is computed.
  if (cfg.stages < 2)
    return op->emitOpError() << "GPU template: stages must be at least 2, got "
                             << cfg.stages;
  sharedBytes = cfg.stages * (cfg.tileM + cfg.tileN) * cfg.tileK *
                elem.getIntOrFloatBitWidth() / 8;
  if (sharedBytes > target.getSharedMemoryBytes())
    return op->emitOpError() << "GPU template: " << cfg.stages
                             << " stages need " << sharedBytes
                             << " bytes of shared memory, more than the "
                             << target.getSharedMemoryBytes() << " a block of "
                             << target.getChip() << " can use";
  return std::make_pair(atoms->front(), cfg);
}

/// Checks that every row of the operands is made of 16-byte chunks.
LogicalResult checkChunkedRows(Operation *op, StringRef names, int64_t x,
                               int64_t y) {
  if (x % kChunk == 0 && y % kChunk == 0)
    return success();
  return op->emitOpError() << "GPU template: " << names << " (" << x << ", "
                           << y
                           << ") must be multiples of 8, so that every row "
                              "is made of 16-byte chunks";
}

int32_t blockThreads(const Config &cfg, const TargetInfo &target) {
  return static_cast<int32_t>(cfg.warpsM * cfg.warpsN * target.getWarpSize());
}

} // namespace

FailureOr<LaunchGeometry> mlir::tessel::buildGroupedMatmul(OpBuilder &b,
                                                           GroupedMatmulOp op,
                                                           KernelContext &ctx) {
  auto bType = cast<MemRefType>(op.getB().getType());
  // A pointer table holds i64 addresses; the matrices have a's type.
  Type elem = cast<MemRefType>(op.getA().getType()).getElementType();
  int64_t n = op.getN(), k = op.getK();
  if (failed(checkChunkedRows(op, "N and K", n, k)))
    return failure();
  int64_t groups = bType.getDimSize(0);
  if (ShapedType::isDynamic(groups))
    return op.emitOpError("GPU template: the group count G must be static "
                          "(the grid is sized from T and G)");
  if (hasGroupedMatmulSm90(op, ctx.target))
    return buildGroupedMatmulSm90(b, op, ctx);
  int64_t sharedBytes = 0;
  // Tiles staged through registers (CDNA): 128x256 of 2x2 warps, each
  // warp's 64x128 block reading 6 fragments a k-step for 8 MFMAs (64x64
  // read 4 for 4): gfx950's forward 67% -> 76% of the loop's issue cycles,
  // its dgrad 57% -> 69%, at 2 waves a SIMD (2 blocks of 48 KB a CU).
  Config preferred;
  bool overridden = op->hasAttr(kGpuTileAttr);
  if (ctx.target.getAsyncCopyBytes() == 0 && !overridden) {
    preferred.tileM = 128;
    preferred.warpsM = preferred.warpsN = 2;
    // The dgrad's B fragments, where the target reads them transposed
    // (gfx950), take two reads each (A's one): 1x4 warps of 128x64 read
    // 4 + 2 x 2 a k-step for 8 MFMAs, not 2 + 4 x 2 (73% -> 74%).
    SmallVector<MmaAtom> atoms = ctx.target.getMmaAtoms(
        elem, Float32Type::get(op->getContext()));
    if (!op.getTransB() && !atoms.empty() &&
        ctx.target.hasTransposedFragmentReads(atoms.front())) {
      preferred.warpsM = 1;
      preferred.warpsN = 4;
    }
  }
  auto chosen = chooseConfig(op, ctx, elem, preferred, /*aRowsM=*/false,
                             /*bRowsN=*/!op.getTransB(), sharedBytes);
  // Two blocks a CU at least: gfx942's 64 KB of LDS holds one 64x256
  // block (40 KB), so one wave a SIMD. 128x128 tiles keep each warp's
  // 64x64 block (the same MMAs per fragment load) in 32 KB.
  if (succeeded(chosen) && !overridden &&
      2 * sharedBytes > ctx.target.getSharedMemoryBytes()) {
    Config square;
    square.tileM = square.tileN = 128;
    square.warpsM = square.warpsN = 2;
    chosen = chooseConfig(op, ctx, elem, square, /*aRowsM=*/false,
                          /*bRowsN=*/!op.getTransB(), sharedBytes);
  }
  if (failed(chosen))
    return failure();
  auto [atom, cfg] = *chosen;
  // The fused SwiGLU pairs atom j's gate columns with atom j + atomsN / 2's
  // up columns in each warp's block.
  int64_t warpTileN = cfg.tileN / cfg.warpsN;
  if (op.getAct() && warpTileN % (2 * atom.n))
    return op.emitOpError()
           << "GPU template: the fused SwiGLU ('act') needs each warp's "
           << warpTileN << " columns to be whole gate and up halves of "
           << atom.n << "-column MMA atoms (tile_n / warps_n % " << 2 * atom.n
           << " == 0)";

  Location loc = op.getLoc();
  GroupedMatmulBuilder builder(b, loc, ctx.target, atom, cfg);
  std::optional<std::pair<Value, int64_t>> gather;
  if (op.getARows())
    gather = {ctx.arg(op.getARows()), op.getRowsDivisorOrOne()};
  // c's rows: a's, or a_rows' when gathered.
  if (failed(builder.build(
          ctx.arg(op.getA()), ctx.arg(op.getB()), ctx.arg(op.getGroupOffsets()),
          ctx.arg(op.getC()), ctx.dimValue(b, op.getC(), 0), groups, n, k,
          op.getTransB(), op.isPointerTable() ? op.getBShape() : std::nullopt,
          gather, ctx.arg(op.getAct()))))
    return failure();

  const KernelDim &rows = ctx.dim(op.getC(), 0);
  LaunchGeometry geometry;
  // With the fused SwiGLU an N-tile is tileN / 2 columns of act.
  geometry.grid[0] = op.getAct() ? GridDim{-1, 1, n / 2, cfg.tileN / 2}
                                 : GridDim{-1, 1, n, cfg.tileN};
  geometry.grid[1] = GridDim{rows.symbol, 1,
                             (rows.symbol >= 0 ? 0 : rows.constant) +
                                 (groups + 1) * (cfg.tileM - 1),
                             cfg.tileM};
  geometry.grid[2] = GridDim{-1, 1, 1, 1};
  geometry.block = {blockThreads(cfg, ctx.target), 1, 1};
  geometry.sharedBytes = sharedBytes;
  return geometry;
}

FailureOr<LaunchGeometry>
mlir::tessel::buildGroupedMatmulWgrad(OpBuilder &b, GroupedMatmulWgradOp op,
                                      KernelContext &ctx) {
  auto cType = cast<MemRefType>(op.getC().getType());
  Type elem = cast<MemRefType>(op.getA().getType()).getElementType();
  int64_t groups = cType.getDimSize(0), m = cType.getDimSize(1),
          n = cType.getDimSize(2);
  if (ShapedType::isDynamic(groups) || ShapedType::isDynamic(m) ||
      ShapedType::isDynamic(n))
    return op.emitOpError("GPU template: c [G, M, N] must be static (the "
                          "grid is one block per group and output tile)");
  if (failed(checkChunkedRows(op, "M and N", m, n)))
    return failure();
  if (hasGroupedMatmulWgradSm90(op, ctx.target))
    return buildGroupedMatmulWgradSm90(b, op, ctx);
  // 128x128 output tiles, 2x2 warps of 64x64: the forward's per-warp block
  // and MMA-to-fragment-load ratio; there are no ragged M tails to waste
  // MMAs on here.
  Config defaults;
  defaults.tileM = 128;
  defaults.tileN = 128;
  defaults.warpsM = 2;
  defaults.warpsN = 2;
  // Tiles staged through registers (CDNA), where M and N are whole 256s:
  // 256x256 of 4x2 warps, each warp's 64x128 block reading 6 fragments a
  // k-step for 8 MFMAs (64x64: 4 for 4), and half the global loads an MFMA.
  // One block of 8 waves a CU is 2 waves a SIMD in the 64 KB of gfx942's
  // LDS (32-deep K-tiles); gfx950's 160 KB take 64-deep ones (twice the
  // MMAs for each tile's waits and barrier). gfx942 68% -> 80%, gfx950
  // 64% -> 77% of the loop's issue cycles.
  bool cdna = ctx.target.getAsyncCopyBytes() == 0 && !op->hasAttr(kGpuTileAttr);
  if (cdna && m % 256 == 0 && n % 256 == 0) {
    defaults.tileM = defaults.tileN = 256;
    defaults.warpsM = 4;
  }
  // Else two blocks a CU: 64-deep K-tiles where both fit (gfx950).
  int64_t blocks = defaults.tileM == 256 ? 1 : 2;
  int64_t deepRingBytes = /*double buffer*/ 2 *
                          (defaults.tileM + defaults.tileN) * 64 *
                          elem.getIntOrFloatBitWidth() / 8;
  if (cdna && blocks * deepRingBytes <= ctx.target.getSharedMemoryBytes())
    defaults.tileK = 64;
  int64_t sharedBytes = 0;
  auto chosen = chooseConfig(op, ctx, elem, defaults, /*aRowsM=*/true,
                             /*bRowsN=*/true, sharedBytes);
  if (failed(chosen))
    return failure();
  auto [atom, cfg] = *chosen;

  Location loc = op.getLoc();
  GroupedMatmulBuilder builder(b, loc, ctx.target, atom, cfg);
  // The product's rows: a's, or a_rows' when a is gathered.
  Value rows = op.getARows() ? op.getARows() : op.getA();
  if (failed(builder.buildWgrad(
          ctx.arg(op.getA()), ctx.arg(op.getB()), ctx.arg(op.getGroupOffsets()),
          ctx.arg(op.getC()), ctx.dimValue(b, rows, 0), groups, m, n,
          ctx.arg(op.getARows()), ctx.arg(op.getBRows()),
          op.getRowsDivisorOrOne())))
    return failure();

  LaunchGeometry geometry;
  geometry.grid[0] = GridDim{-1, 1, n, cfg.tileN};
  geometry.grid[1] = GridDim{-1, 1, m, cfg.tileM};
  geometry.grid[2] = GridDim{-1, 1, groups, 1};
  geometry.block = {blockThreads(cfg, ctx.target), 1, 1};
  geometry.sharedBytes = sharedBytes;
  return geometry;
}
