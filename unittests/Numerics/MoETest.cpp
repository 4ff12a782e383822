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

#include <memory>

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
  TESSEL_KERNEL_OR_SKIP(hist, defaultBundle().path, histogram);
  ASSERT_TRUE(hist.run(
      {{"topk_ids", &ids}, {"counts", &counts}, {"group_offsets", &offsets}}));
  EXPECT_TRUE(exact("counts", counts, asDoubles(want.counts)));
  EXPECT_TRUE(exact("group_offsets", offsets, asDoubles(want.offsets)));

  // The sort reads the reference offsets, so its check does not depend on
  // the histogram kernel.
  Tensor refOffsets = Tensor::i32({experts}, want.offsets);
  Tensor sorted = Tensor::poisoned(TESSEL_DTYPE_I32, {tokens * topk});
  Tensor positions = Tensor::poisoned(TESSEL_DTYPE_I32, {tokens, topk});
  TESSEL_KERNEL_OR_SKIP(sortKernel, defaultBundle().path, sort);
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
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, name);
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
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, name);
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


//===----------------------------------------------------------------------===//
// The C API (tessel_moe_*): the same kernels, found by shape parameters
//===----------------------------------------------------------------------===//

struct MoeDeleter {
  void operator()(tessel_moe m) const { tessel_moe_release(m); }
};
using MoePtr = std::unique_ptr<tessel_moe_t, MoeDeleter>;

tessel_moe_config moeConfig(int32_t experts, int32_t topk, int32_t hidden) {
  tessel_moe_config c;
  tessel_moe_config_init(&c);
  c.num_experts = experts;
  c.topk = topk;
  c.hidden = hidden;
  c.dtype = F32;
  return c;
}

MoePtr createMoe(const tessel_moe_config &config, std::string *error) {
  tessel_moe moe = nullptr;
  *error = consume(
      tessel_moe_create(sharedBundle(defaultBundle().path), &config, &moe));
  return MoePtr(moe);
}

TEST(MoEApi, RoutePermuteUnpermute) {
  std::string error;
  MoePtr moe = createMoe(moeConfig(8, 2, 96), &error);
  ASSERT_TRUE(moe) << error;
  Rng rng(1401);
  const int64_t tokens = 41, topk = 2, rows = tokens * topk, hidden = 96;
  std::vector<int32_t> idList = randomIds(rng, tokens, topk, 8);
  ref::Routing want = ref::route(idList, 8);
  Tensor ids = Tensor::i32({tokens, topk}, idList);
  Tensor counts = Tensor::poisoned(TESSEL_DTYPE_I32, {8});
  Tensor offsets = Tensor::poisoned(TESSEL_DTYPE_I32, {8});
  Tensor sorted = Tensor::poisoned(TESSEL_DTYPE_I32, {rows});
  Tensor positions = Tensor::poisoned(TESSEL_DTYPE_I32, {tokens, topk});
  tessel_tensor a[] = {ids.arg(), counts.arg(), offsets.arg(), sorted.arg(),
                       positions.arg()};
  ASSERT_EQ(consume(tessel_moe_route(moe.get(), &a[0], &a[1], &a[2], &a[3],
                                     &a[4], nullptr)),
            "");
  EXPECT_TRUE(exact("counts", counts, asDoubles(want.counts)));
  EXPECT_TRUE(exact("group_offsets", offsets, asDoubles(want.offsets)));
  EXPECT_TRUE(exact("sorted_rows", sorted, asDoubles(want.sortedRows)));
  EXPECT_TRUE(exact("row_positions", positions, asDoubles(want.rowPositions)));

  Tensor x = randomTensor(F32, {tokens, hidden}, rng);
  Tensor xs = Tensor::poisoned(F32, {rows, hidden});
  tessel_tensor p[] = {x.arg(), sorted.arg(), xs.arg()};
  ASSERT_EQ(consume(tessel_moe_permute(moe.get(), &p[0], &p[1], &p[2],
                                       nullptr)),
            "");
  EXPECT_TRUE(exact("permuted", xs,
                    ref::permute(x.values(), tokens, hidden, want.sortedRows,
                                 topk)));
  Tensor weights = randomTensor(F32, {tokens, topk}, rng, 0.0, 1.0);
  Tensor out = Tensor::poisoned(F32, {tokens, hidden});
  tessel_tensor u[] = {xs.arg(), positions.arg(), weights.arg(), out.arg()};
  ASSERT_EQ(consume(tessel_moe_unpermute(moe.get(), &u[0], &u[1], &u[2],
                                         &u[3], nullptr)),
            "");
  EXPECT_TRUE(near("combined", out,
                   ref::unpermute(xs.values(), rows, hidden,
                                  want.rowPositions, weights.values(), topk)));
}

TEST(MoEApi, Errors) {
  std::string error;
  tessel_status_code code;
  tessel_moe_config config = moeConfig(9, 2, 96);
  tessel_moe moe = nullptr;
  error = consume(tessel_moe_create(sharedBundle(defaultBundle().path),
                                    &config, &moe),
                  &code);
  EXPECT_EQ(code, TESSEL_UNSUPPORTED);
  EXPECT_EQ(error.rfind("tessel_moe_create: 9 experts, top-2 needs a kernel "
                        "for the expert histogram: tessel.expert_histogram "
                        "with topk=2 groups=9; the bundle has these "
                        "tessel.expert_histogram kernels: hist_e8_k2 (",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find("(tessel.torch.moe_mlp_spec writes the kernels)"),
            std::string::npos);

  config = moeConfig(8, 2, 96);
  config.struct_size = 4;
  EXPECT_FALSE(createMoe(config, &error));
  EXPECT_EQ(error, "tessel_moe_create: config.struct_size is 4, expected " +
                       std::to_string(sizeof(tessel_moe_config)) +
                       ": initialise the config with tessel_moe_config_init");
  EXPECT_FALSE(createMoe(moeConfig(8, 0, 96), &error));
  EXPECT_EQ(error, "tessel_moe_create: config.num_experts (8) and topk (0) "
                   "must be positive and hidden (96) not negative");

  // Routing only: no permute kernels looked up, none launched.
  MoePtr routingOnly = createMoe(moeConfig(8, 2, 0), &error);
  ASSERT_TRUE(routingOnly) << error;
  Rng rng(1402);
  Tensor x = randomTensor(F32, {3, 96}, rng);
  Tensor sorted = Tensor::i32({6}, {0, 1, 2, 3, 4, 5});
  Tensor xs = Tensor::poisoned(F32, {6, 96});
  tessel_tensor p[] = {x.arg(), sorted.arg(), xs.arg()};
  EXPECT_EQ(consume(tessel_moe_permute(routingOnly.get(), &p[0], &p[1], &p[2],
                                       nullptr)),
            "tessel_moe_permute: the handle was created with hidden 0 "
            "(routing only)");

  MoePtr moe8 = createMoe(moeConfig(8, 2, 96), &error);
  ASSERT_TRUE(moe8) << error;
  EXPECT_EQ(consume(tessel_moe_permute(moe8.get(), &p[0], nullptr, &p[2],
                                       nullptr)),
            "tessel_moe_permute: a tensor argument is NULL");
  // A kernel's own shape check, named by the step it comes from.
  Tensor ids = Tensor::i32({3, 2}, {0, 1, 2, 3, 4, 5});
  Tensor counts = Tensor::poisoned(TESSEL_DTYPE_I32, {7});
  Tensor offsets = Tensor::poisoned(TESSEL_DTYPE_I32, {8});
  Tensor rows = Tensor::poisoned(TESSEL_DTYPE_I32, {6});
  Tensor positions = Tensor::poisoned(TESSEL_DTYPE_I32, {3, 2});
  tessel_tensor r[] = {ids.arg(), counts.arg(), offsets.arg(), rows.arg(),
                       positions.arg()};
  error = consume(tessel_moe_route(moe8.get(), &r[0], &r[1], &r[2], &r[3],
                                   &r[4], nullptr));
  EXPECT_EQ(error.rfind("tessel_moe_route: the expert histogram: kernel "
                        "'hist_e8_k2': arg 'counts' ",
                        0),
            0u)
      << error;
}

} // namespace
