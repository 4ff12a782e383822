//===- MoETest.cpp - Expert histogram, sort, permute and unpermute --------===//
//
// Routing ids include out-of-range experts (dropped tokens, which must be
// neither counted nor placed) and many rows per expert, so the stable order
// is checked for real. Integer outputs and permute (a copy) are compared
// exactly, unpermute's weighted sums to the dtype's tolerance.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"
#include "Reference.h"

using namespace tessel::numerics;

namespace {

constexpr tessel_dtype F32 = TESSEL_DTYPE_F32, BF16 = TESSEL_DTYPE_BF16;

std::vector<double> asDoubles(const std::vector<int32_t> &v) {
  return std::vector<double>(v.begin(), v.end());
}

/// topk_ids `[tokens, topk]` in [-2, experts + 1]: about 4 / (E + 4) of
/// them out of range.
std::vector<int32_t> randomIds(Rng &rng, int64_t tokens, int64_t topk,
                               int64_t experts) {
  std::vector<int32_t> ids(tokens * topk);
  for (int32_t &id : ids)
    id = static_cast<int32_t>(rng.integer(-2, experts + 1));
  return ids;
}

void checkRouting(const char *histogram, const char *sort, int64_t experts,
                  int64_t tokens, int64_t topk, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> idList = randomIds(rng, tokens, topk, experts);
  ref::Routing want = ref::route(idList, experts);
  Tensor ids = Tensor::i32({tokens, topk}, idList);

  Tensor counts = Tensor::poisoned(TESSEL_DTYPE_I32, {experts});
  Tensor offsets = Tensor::poisoned(TESSEL_DTYPE_I32, {experts});
  Kernel hist(defaultBundle().path, histogram);
  ASSERT_TRUE(hist.run(
      {{"topk_ids", &ids}, {"counts", &counts}, {"group_offsets", &offsets}}));
  EXPECT_TRUE(exact("counts", counts, asDoubles(want.counts)));
  EXPECT_TRUE(exact("group_offsets", offsets, asDoubles(want.offsets)));

  // The sort reads the reference offsets, so its check does not depend on
  // the histogram kernel.
  Tensor refOffsets = Tensor::i32({experts}, want.offsets);
  Tensor sorted = Tensor::poisoned(TESSEL_DTYPE_I32, {tokens * topk});
  Tensor positions = Tensor::poisoned(TESSEL_DTYPE_I32, {tokens, topk});
  Kernel sortKernel(defaultBundle().path, sort);
  ASSERT_TRUE(sortKernel.run({{"topk_ids", &ids},
                              {"group_offsets", &refOffsets},
                              {"sorted_rows", &sorted},
                              {"row_positions", &positions}}));
  EXPECT_TRUE(exact("sorted_rows", sorted, asDoubles(want.sortedRows)));
  EXPECT_TRUE(exact("row_positions", positions, asDoubles(want.rowPositions)));
}

TEST(MoERouting, Experts8Top2) {
  checkRouting("hist_e8_k2", "sort_e8_k2", 8, 53, 2, 1101);
}

TEST(MoERouting, Experts37Top4) {
  checkRouting("hist_e37_k4", "sort_e37_k4", 37, 300, 4, 1102);
}

TEST(MoERouting, NoTokens) {
  checkRouting("hist_e8_k2", "sort_e8_k2", 8, 0, 2, 1103);
}

//===----------------------------------------------------------------------===//
// Permute and unpermute
//===----------------------------------------------------------------------===//

/// A routing of random ids, with extra invalid entries planted in
/// sorted_rows (past the tokens) and row_positions (past the rows, and
/// negative), which must give zero rows and no contribution.
ref::Routing plantedRouting(Rng &rng, int64_t tokens, int64_t topk,
                            int64_t experts) {
  ref::Routing r = ref::route(randomIds(rng, tokens, topk, experts), experts);
  r.sortedRows[3] = static_cast<int32_t>(tokens * topk + 5);
  r.rowPositions[2] = static_cast<int32_t>(tokens * topk);
  r.rowPositions[7] = -5;
  return r;
}

void checkPermute(const char *name, tessel_dtype dtype, int64_t hidden,
                  int64_t topk, uint64_t seed) {
  Rng rng(seed);
  const int64_t tokens = 45, rows = tokens * topk;
  ref::Routing r = plantedRouting(rng, tokens, topk, 6);
  Tensor x = randomTensor(dtype, {tokens, hidden}, rng);
  Tensor sorted = Tensor::i32({rows}, r.sortedRows);
  Tensor out = Tensor::poisoned(dtype, {rows, hidden});
  Kernel kernel(defaultBundle().path, name);
  ASSERT_TRUE(kernel.run({{"x", &x}, {"sorted_rows", &sorted}, {"out", &out}}));
  EXPECT_TRUE(
      exact("out", out,
            ref::permute(x.values(), tokens, hidden, r.sortedRows, topk)));
}

TEST(MoEPermute, F32Hidden96Top2) {
  checkPermute("permute_f32_h96_k2", F32, 96, 2, 1201);
}

TEST(MoEPermute, Bf16Hidden64Top4) {
  checkPermute("permute_bf16_h64_k4", BF16, 64, 4, 1202);
}

void checkUnpermute(const char *name, tessel_dtype dtype,
                    tessel_dtype weightDtype, int64_t hidden, int64_t topk,
                    uint64_t seed) {
  Rng rng(seed);
  const int64_t tokens = 45, rows = tokens * topk;
  ref::Routing r = plantedRouting(rng, tokens, topk, 6);
  Tensor y = randomTensor(dtype, {rows, hidden}, rng);
  Tensor positions = Tensor::i32({tokens, topk}, r.rowPositions);
  Tensor weights = randomTensor(weightDtype, {tokens, topk}, rng, 0.0, 1.0);
  Tensor out = Tensor::poisoned(dtype, {tokens, hidden});
  Kernel kernel(defaultBundle().path, name);
  ASSERT_TRUE(kernel.run({{"y", &y},
                          {"row_positions", &positions},
                          {"weights", &weights},
                          {"out", &out}}));
  EXPECT_TRUE(near("out", out,
                   ref::unpermute(y.values(), rows, hidden, r.rowPositions,
                                  weights.values(), topk)));
}

TEST(MoEUnpermute, F32Hidden96Top2) {
  checkUnpermute("unpermute_f32_h96_k2", F32, F32, 96, 2, 1301);
}

TEST(MoEUnpermute, Bf16Hidden64Top4Bf16Weights) {
  checkUnpermute("unpermute_bf16_h64_k4_wbf16", BF16, BF16, 64, 4, 1302);
}

TEST(MoEUnpermute, Bf16Hidden64Top4F32Weights) {
  checkUnpermute("unpermute_bf16_h64_k4_wf32", BF16, F32, 64, 4, 1303);
}

} // namespace
