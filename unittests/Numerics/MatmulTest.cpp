//===- MatmulTest.cpp - Ragged grouped matmul, forward and wgrad ----------===//
//
// Groups of 0, 1, 7 and 300 rows, rows past the last offset (which must come
// out as exact zeros), offsets that need clamping, B stacked or as a table of
// pointers to separately allocated per-group matrices, trans_b and not, f32
// and bf16, K and N of 48, 64 and 96; rows of a gathered through a_rows,
// entries outside a among them; the fused SwiGLU (act).
//
//===----------------------------------------------------------------------===//

#include "AttentionSetup.h"

#include <cmath>
#include <memory>

using namespace tessel::numerics;

namespace {

constexpr tessel_dtype F32 = TESSEL_DTYPE_F32, BF16 = TESSEL_DTYPE_BF16;

/// Rows [begin, end) as a list.
std::vector<int64_t> rowRange(int64_t begin, int64_t end) {
  std::vector<int64_t> rows;
  for (int64_t r = begin; r < end; ++r)
    rows.push_back(r);
  return rows;
}

struct MatmulCase {
  const char *kernel;
  tessel_dtype dtype, outDtype;
  int64_t k, n;
  bool transB, pointerTable;
  /// With a_rows: its divisor (the MoE's top-k), a's rows being `sources`.
  int64_t divisor = 0, sources = 0;
  /// With act = silu(gate) * up of c's column halves.
  bool swiglu = false;
};

/// a_rows for `rows` product rows over `sources` rows of a: random entries
/// in [0, sources * divisor), and every 13th one outside it (negative or
/// past the end), which must read as zeros.
std::vector<int32_t> gatherEntries(int64_t rows, int64_t sources,
                                   int64_t divisor, Rng &rng) {
  std::vector<int32_t> entries;
  int64_t limit = sources * divisor;
  for (int64_t t = 0; t < rows; ++t) {
    int64_t entry = rng.integer(0, limit - 1);
    if (t % 13 == 5)
      entry = t % 2 ? -1 - entry : limit + entry;
    entries.push_back(static_cast<int32_t>(entry));
  }
  return entries;
}

/// The [entries, width] rows that entries pick from `source` [sources,
/// width] (entry / divisor; zeros for an entry outside).
std::vector<double> gatheredRows(const std::vector<double> &source,
                                 const std::vector<int32_t> &entries,
                                 int64_t sources, int64_t divisor,
                                 int64_t width) {
  std::vector<double> rows(entries.size() * width, 0.0);
  for (size_t t = 0; t < entries.size(); ++t)
    if (entries[t] >= 0 && entries[t] < sources * divisor)
      std::copy_n(source.begin() + entries[t] / divisor * width, width,
                  rows.begin() + t * width);
  return rows;
}

void checkGroupedMatmul(const MatmulCase &c, int64_t rows,
                        const std::vector<int32_t> &offsets, uint64_t seed) {
  Rng rng(seed);
  const int64_t groups = static_cast<int64_t>(offsets.size());
  Tensor a = randomTensor(c.dtype, {c.divisor ? c.sources : rows, c.k}, rng);
  // The rows the product reads: a's, or those a_rows picks.
  std::vector<double> aRead = a.values();
  Tensor aRows;
  if (c.divisor) {
    std::vector<int32_t> entries =
        gatherEntries(rows, c.sources, c.divisor, rng);
    aRows = Tensor::i32({rows}, entries);
    aRead = gatheredRows(aRead, entries, c.sources, c.divisor, c.k);
  }
  // Each group's B as stored: [N, K] with trans_b, else [K, N].
  std::vector<int64_t> bShape = c.transB ? std::vector<int64_t>{c.n, c.k}
                                         : std::vector<int64_t>{c.k, c.n};
  Tensor stacked;
  std::vector<Tensor> perGroup;
  Tensor pointers(TESSEL_DTYPE_I64, {groups});
  if (c.pointerTable) {
    perGroup.reserve(groups); // the table holds their addresses: no moves
    for (int64_t g = 0; g < groups; ++g) {
      perGroup.push_back(randomTensor(c.dtype, bShape, rng));
      pointers.i64()[g] = static_cast<int64_t>(
          reinterpret_cast<uintptr_t>(perGroup.back().data()));
    }
  } else {
    stacked = randomTensor(c.dtype, {groups, bShape[0], bShape[1]}, rng);
  }
  auto bAt = [&](int64_t g, int64_t i, int64_t j) { // op(B_g)[i, j]
    int64_t flat = c.transB ? j * c.k + i : i * c.n + j;
    return c.pointerTable ? perGroup[g].at(flat)
                          : stacked.at(g * c.k * c.n + flat);
  };

  Tensor groupOffsets = Tensor::i32({groups}, offsets);
  Tensor out = Tensor::poisoned(c.outDtype, {rows, c.n});
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, c.kernel);
  std::vector<NamedArg> args = {{"a", &a},
                                {"b", c.pointerTable ? &pointers : &stacked},
                                {"group_offsets", &groupOffsets},
                                {"c", &out}};
  if (c.divisor)
    args.push_back({"a_rows", &aRows});
  Tensor act = Tensor::poisoned(c.outDtype, {rows, c.n / 2});
  if (c.swiglu)
    args.push_back({"act", &act});
  ASSERT_TRUE(kernel.run(args));

  std::vector<double> want =
      ref::groupedMatmul(aRead, rows, c.k, c.n, offsets, bAt);
  EXPECT_TRUE(near("c", out, want));
  if (c.swiglu) {
    // From the kernel's own (rounded) c, as tessel.swiglu would compute it;
    // the tail's zeros give zeros.
    int64_t half = c.n / 2;
    std::vector<double> wantAct(rows * half);
    for (int64_t t = 0; t < rows; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        double gate = out.at(t * c.n + i), up = out.at(t * c.n + half + i);
        wantAct[t * half + i] = gate / (1.0 + std::exp(-gate)) * up;
      }
    }
    EXPECT_TRUE(near("act", act, wantAct));
  }
  int64_t end = ref::groupRows(offsets, rows).back().second;
  std::vector<int64_t> tail = rowRange(end, rows);
  EXPECT_TRUE(exact("c rows past the last offset", selectTokens(out, 0, tail),
                    selectTokens(want, out, 0, tail)));
}

/// Groups of 0, 1, 7 and 300 rows, then 7 rows that belong to no group.
const std::vector<int32_t> kRaggedOffsets = {0, 1, 8, 308};
constexpr int64_t kRaggedRows = 315;

TEST(GroupedMatmul, F32TransBK64N96) {
  checkGroupedMatmul({"gmm_f32_tb_k64_n96", F32, F32, 64, 96, true, false},
                     kRaggedRows, kRaggedOffsets, 901);
}

TEST(GroupedMatmul, F32K96N48) {
  checkGroupedMatmul({"gmm_f32_k96_n48", F32, F32, 96, 48, false, false},
                     kRaggedRows, kRaggedOffsets, 902);
}

TEST(GroupedMatmul, Bf16TransBK48N64) {
  checkGroupedMatmul({"gmm_bf16_tb_k48_n64", BF16, BF16, 48, 64, true, false},
                     kRaggedRows, kRaggedOffsets, 903);
}

TEST(GroupedMatmul, Bf16K64N96F32Out) {
  checkGroupedMatmul(
      {"gmm_bf16_k64_n96_f32out", BF16, F32, 64, 96, false, false}, kRaggedRows,
      {300, 300, 301, 308}, 904);
}

/// B [K, N] (the dgrad's form) over an odd number of K-tiles.
TEST(GroupedMatmul, Bf16K80N96OddKTiles) {
  checkGroupedMatmul({"gmm_bf16_k80_n96", BF16, BF16, 80, 96, false, false},
                     kRaggedRows, kRaggedOffsets, 914);
}

TEST(GroupedMatmul, F32PointerTableTransB) {
  checkGroupedMatmul({"gmm_f32_ptr_tb_k64_n96", F32, F32, 64, 96, true, true},
                     kRaggedRows, kRaggedOffsets, 905);
}

TEST(GroupedMatmul, Bf16PointerTableK48N96) {
  checkGroupedMatmul({"gmm_bf16_ptr_k48_n96", BF16, BF16, 48, 96, false, true},
                     kRaggedRows, {7, 7, 307, 308}, 906);
}

/// The MoE forward's form: x's rows through expert_sort's sorted rows
/// (divisor top-k), 45 tokens x 7 slots.
TEST(GroupedMatmul, Bf16GatheredRowsTransB) {
  checkGroupedMatmul(
      {"gmm_bf16_gather_tb_k48_n64", BF16, BF16, 48, 64, true, false, 7, 45},
      kRaggedRows, kRaggedOffsets, 909);
}

TEST(GroupedMatmul, Bf16GatheredRowsPointerTable) {
  checkGroupedMatmul({"gmm_bf16_gather_ptr_tb_k72_n200", BF16, BF16, 72, 200,
                      true, true, 2, 150},
                     300, {0, 130, 131, 290}, 910);
}

/// The MoE gate/up projection with SiLU-gated act in its epilogue: I = 40
/// (one partial N-tile), and I = 136 (a whole tile and a partial one).
TEST(GroupedMatmul, Bf16SwigluGatheredRows) {
  checkGroupedMatmul(
      {"gmm_bf16_swiglu_k48_n80", BF16, BF16, 48, 80, true, false, 7, 45, true},
      kRaggedRows, kRaggedOffsets, 912);
}

TEST(GroupedMatmul, Bf16SwigluTwoTiles) {
  checkGroupedMatmul({"gmm_bf16_swiglu_k64_n272", BF16, BF16, 64, 272, true,
                      false, 0, 0, true},
                     kRaggedRows, {5, 70, 71, 300}, 913);
}

TEST(GroupedMatmul, F32GatheredRowsK96N48) {
  checkGroupedMatmul(
      {"gmm_f32_gather_k96_n48", F32, F32, 96, 48, false, false, 1, 20},
      kRaggedRows, kRaggedOffsets, 911);
}

/// Offsets clamp to [previous end, T]: {2, 1, 9, 1000} over 20 rows are the
/// groups [0, 2), [2, 2), [2, 9), [9, 20).
TEST(GroupedMatmul, OffsetsAreClamped) {
  checkGroupedMatmul({"gmm_f32_tb_k64_n96", F32, F32, 64, 96, true, false}, 20,
                     {2, 1, 9, 1000}, 907);
}

TEST(GroupedMatmul, NoRowInAnyGroupGivesZeros) {
  checkGroupedMatmul({"gmm_f32_k96_n48", F32, F32, 96, 48, false, false}, 5,
                     {0, 0, 0, 0}, 908);
}

//===----------------------------------------------------------------------===//
// wgrad: c[g] = a[rows_g]^T . b[rows_g]
//===----------------------------------------------------------------------===//

/// A wgrad operand gathered through an index (a_rows or b_rows): 'a' or
/// 'b' (0: none), its source rows and the entries' divisor.
struct WgradGather {
  char operand = 0;
  int64_t sources = 0, divisor = 1;
};

void checkWgrad(const char *name, tessel_dtype dtype, int64_t m, int64_t n,
                int64_t rows, const std::vector<int32_t> &offsets,
                uint64_t seed, WgradGather gather = {}) {
  Rng rng(seed);
  const int64_t groups = static_cast<int64_t>(offsets.size());
  bool gatherA = gather.operand == 'a', gatherB = gather.operand == 'b';
  Tensor a = randomTensor(dtype, {gatherA ? gather.sources : rows, m}, rng);
  Tensor b = randomTensor(dtype, {gatherB ? gather.sources : rows, n}, rng);
  Tensor groupOffsets = Tensor::i32({groups}, offsets);
  Tensor out = Tensor::poisoned(F32, {groups, m, n});
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, name);
  std::vector<NamedArg> args = {
      {"a", &a}, {"b", &b}, {"group_offsets", &groupOffsets}, {"c", &out}};
  std::vector<double> aRead = a.values(), bRead = b.values();
  Tensor index;
  if (gather.operand) {
    std::vector<int32_t> entries =
        gatherEntries(rows, gather.sources, gather.divisor, rng);
    index = Tensor::i32({rows}, entries);
    // Each index right after its operand, as the kernels take it.
    args.insert(args.begin() + (gatherA ? 1 : 2),
                {gatherA ? "a_rows" : "b_rows", &index});
    if (gatherA)
      aRead = gatheredRows(aRead, entries, gather.sources, gather.divisor, m);
    else
      bRead = gatheredRows(bRead, entries, gather.sources, gather.divisor, n);
  }
  ASSERT_TRUE(kernel.run(args));
  std::vector<double> want =
      ref::groupedMatmulWgrad(aRead, bRead, rows, m, n, offsets);
  EXPECT_TRUE(near("c", out, want));
  std::vector<int64_t> empty;
  auto ranges = ref::groupRows(offsets, rows);
  for (int64_t g = 0; g < groups; ++g)
    if (ranges[g].first == ranges[g].second)
      empty.push_back(g);
  EXPECT_TRUE(exact("c of empty groups", selectTokens(out, 0, empty),
                    selectTokens(want, out, 0, empty)));
}

TEST(GroupedMatmulWgrad, F32WithEmptyGroup) {
  // Groups of 3, 0, 50, 1 and 17 rows, and 4 rows past the last offset.
  checkWgrad("wgrad_f32_m64_n48", F32, 64, 48, 75, {3, 3, 53, 54, 71}, 1001);
}

TEST(GroupedMatmulWgrad, Bf16K300) {
  checkWgrad("wgrad_bf16_m96_n64", BF16, 96, 64, 308, {0, 7, 307, 308}, 1002);
}

/// M and N whole 256s: CDNA's 256x256 tiles (8 waves). Groups of 7, 0,
/// 130, 128 and 33 rows: K-tile counts odd and even on both chips (32- and
/// 64-row K-tiles), an empty group, and 5 rows past the last offset.
TEST(GroupedMatmulWgrad, Bf16M256N512) {
  checkWgrad("wgrad_bf16_m256_n512", BF16, 256, 512, 303, {7, 7, 137, 265, 298},
             1006);
}

TEST(GroupedMatmulWgrad, Bf16GatheredBM256N256) {
  checkWgrad("wgrad_bf16_gather_b_m256_n256", BF16, 256, 256, 200,
             {65, 65, 161, 197}, 1007, {'b', 90, 2});
}

/// The MoE backward's forms: the upstream gradient (a) or x (b) read
/// through the sorted (token, slot) rows, entries outside among them.
TEST(GroupedMatmulWgrad, Bf16GatheredA) {
  checkWgrad("wgrad_bf16_gather_a_m96_n64", BF16, 96, 64, 308, {0, 7, 307, 308},
             1003, {'a', 52, 6});
}

TEST(GroupedMatmulWgrad, Bf16GatheredB) {
  checkWgrad("wgrad_bf16_gather_b_m64_n200", BF16, 64, 200, 150,
             {3, 3, 70, 71, 140}, 1004, {'b', 75, 2});
}

TEST(GroupedMatmulWgrad, F32GatheredA) {
  checkWgrad("wgrad_f32_gather_a_m64_n48", F32, 64, 48, 75, {3, 3, 53, 54, 71},
             1005, {'a', 25, 3});
}

} // namespace
