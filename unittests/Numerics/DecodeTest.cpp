//===- DecodeTest.cpp - Paged decode and absorbed MLA decode --------------===//
//
// One query per request against a paged cache with contexts of 0, 1, 18,
// 463, ... tokens, in both KV layouts, against all three bundles: the default
// one (one split-KV partial below 16384 tokens), the small-budget one (48-token
// partials, so that a 463-token context is ten partials merged by
// lse_merge_n, with windows that cross block boundaries) and the direct one.
//
//===----------------------------------------------------------------------===//

#include "AttentionSetup.h"

using namespace tessel::numerics;

namespace {

constexpr tessel_dtype F32 = TESSEL_DTYPE_F32, BF16 = TESSEL_DTYPE_BF16;

struct DecodeCase {
  const char *kernel;
  tessel_dtype dtype, outDtype;
  ref::Layout layout;
  int64_t qHeads, kvHeads, headDim, blockSize;
  float scale;
  bool hasLse;
};

// The decode kernels of NumericsKernels.mlir: dtypes (in, out), layout,
// heads (q, kv), head dim, block size, scale, lse.
// clang-format off
const DecodeCase kDecodeF32Nhd{"decode_f32_nhd_h8kv2_d128_bs16",
    F32, F32, ref::Layout::NHD, 8, 2, 128, 16, 0.0883883476f, true};
const DecodeCase kDecodeBf16NhdBlock16{"decode_bf16_nhd_h8kv2_d128_bs16",
    BF16, BF16, ref::Layout::NHD, 8, 2, 128, 16, 0.0883883476f, true};
const DecodeCase kDecodeF32Shuffled{"decode_f32_shuf_h4kv4_d64_bs32",
    F32, F32, ref::Layout::Shuffled, 4, 4, 64, 32, 0.125f, true};
const DecodeCase kDecodeBf16Nhd{"decode_bf16_nhd_h8kv1_d256_bs32",
    BF16, BF16, ref::Layout::NHD, 8, 1, 256, 32, 0.0625f, false};
const DecodeCase kDecodeBf16Shuffled{"decode_bf16_shuf_h8kv1_d128_bs16",
    BF16, BF16, ref::Layout::Shuffled, 8, 1, 128, 16, 0.0883883476f, true};
const DecodeCase kDecodeF32Small{"decode_f32_nhd_h4kv1_d64_bs16",
    F32, F32, ref::Layout::NHD, 4, 1, 64, 16, 0.125f, true};
const DecodeCase kDecodeBf16Block64{"decode_bf16_nhd_h8kv2_d128_bs64",
    BF16, BF16, ref::Layout::NHD, 8, 2, 128, 64, 0.0883883476f, true};
const DecodeCase kDecodeBf16Gqa1{"decode_bf16_shuf_h4kv4_d64_bs32",
    BF16, BF16, ref::Layout::Shuffled, 4, 4, 64, 32, 0.125f, true};
const DecodeCase kDecodeBf16Small{"decode_bf16_nhd_h4kv1_d64_bs16",
    BF16, BF16, ref::Layout::NHD, 4, 1, 64, 16, 0.125f, true};
const DecodeCase kDecodeBf16Gqa32{"decode_bf16_nhd_h32kv1_d128_bs16",
    BF16, BF16, ref::Layout::NHD, 32, 1, 128, 16, 0.0883883476f, true};
// clang-format on

/// q[b] sees the seq_lens[b] cached tokens of request b.
AttentionRef decodeReference(const Tensor &q, const PagedKV &cache,
                             int64_t kvHeads, int64_t vDim, double scale) {
  return attendAll(tokenRows(q), kvHeads, vDim, scale,
                   [&](int64_t b, int64_t kvHead, auto &keys, auto &values) {
                     for (int64_t j = 0; j < cache.keys[b].tokens; ++j) {
                       keys.push_back(cache.keys[b].row(j, kvHead));
                       values.push_back(cache.values[b].row(j, kvHead));
                     }
                   });
}

void checkDecode(const DecodeCase &c, const std::vector<int32_t> &contexts,
                 const BundleVariant &bundle, uint64_t seed) {
  Rng rng(seed);
  PagedKV cache(
      {c.dtype, c.layout, c.blockSize, c.kvHeads, c.headDim, c.headDim},
      contexts, rng);
  const int64_t requests = static_cast<int64_t>(contexts.size());
  Tensor q = randomTensor(c.dtype, {requests, c.qHeads, c.headDim}, rng, -2, 2);
  Tensor out = Tensor::poisoned(c.outDtype, {requests, c.qHeads, c.headDim});
  Tensor lse = Tensor::poisoned(F32, {c.qHeads, requests});
  std::vector<NamedArg> args = {{"q", &q},
                                {"k_cache", &cache.kCache},
                                {"v_cache", &cache.vCache},
                                {"block_table", &cache.blockTable},
                                {"seq_lens", &cache.lens},
                                {"out", &out}};
  if (c.hasLse)
    args.push_back({"lse", &lse});
  Tensor scale = Tensor::scalar(c.scale);
  args.push_back({"scale", &scale});
  TESSEL_KERNEL_OR_SKIP(kernel, bundle.path, c.kernel);
  ASSERT_TRUE(kernel.run(args));
  AttentionRef r = decodeReference(q, cache, c.kvHeads, c.headDim, c.scale);
  EXPECT_TRUE(near("out", out, r.out));
  if (c.hasLse)
    EXPECT_TRUE(nearLse("lse", lse, r.lse));
}

class Decode : public ::testing::TestWithParam<BundleVariant> {};

TEST_P(Decode, F32NhdGqa4Dim128Block16) {
  checkDecode(kDecodeF32Nhd, {0, 18, 463, 1, 64, 250}, GetParam(), 401);
}

TEST_P(Decode, Bf16NhdGqa4Dim128Block16) {
  checkDecode(kDecodeBf16NhdBlock16, {0, 18, 463, 1, 64, 250, 33}, GetParam(),
              410);
}

TEST_P(Decode, F32ShuffledGqa1Dim64Block32) {
  checkDecode(kDecodeF32Shuffled, {463, 0, 18, 31, 32, 33}, GetParam(), 402);
}

TEST_P(Decode, Bf16NhdGqa8Dim256Block32NoLse) {
  checkDecode(kDecodeBf16Nhd, {18, 463, 0, 97}, GetParam(), 403);
}

TEST_P(Decode, Bf16ShuffledGqa8Dim128Block16) {
  checkDecode(kDecodeBf16Shuffled, {1, 463, 18, 0, 200}, GetParam(), 404);
}

TEST_P(Decode, Bf16NhdGqa4Dim128Block64) {
  checkDecode(kDecodeBf16Block64, {1, 463, 64, 0, 129}, GetParam(), 407);
}

// 32 heads a KV head: the host and CDNA's transposed scores (sm80's
// decode takes 16 rows; tessel-aot left its kernel out).
TEST_P(Decode, Bf16NhdGqa32Dim128Block16) {
  if (std::string(testDevice()) == "emu-sm80")
    GTEST_SKIP() << "sm80's decode takes at most 16 query heads a KV head";
  checkDecode(kDecodeBf16Gqa32, {463, 0, 18, 130, 1}, GetParam(), 411);
}

TEST_P(Decode, Bf16ShuffledGqa1Dim64Block32) {
  checkDecode(kDecodeBf16Gqa1, {463, 0, 18, 31, 32, 33}, GetParam(), 408);
}

/// Longer than the default 16384-token split: two partials even there.
TEST_P(Decode, F32ContextOver16K) {
  checkDecode(kDecodeF32Small, {20000, 5, 0}, GetParam(), 405);
}

TEST_P(Decode, Bf16ContextOver16K) {
  checkDecode(kDecodeBf16Small, {20000, 5, 0}, GetParam(), 409);
}

/// The split form: partial p of request b is the window [p W, (p + 1) W),
/// W = ceil(MB / P) * BS, of its context; each is checked on its own (an
/// empty window gives zeros and LSE -inf).
TEST_P(Decode, SplitPartialsCoverWholeBlocks) {
  Rng rng(406);
  const std::vector<int32_t> contexts = {463, 0, 18, 100};
  const int64_t splits = 3, heads = 8, dim = 64, blockSize = 16;
  PagedKV cache({BF16, ref::Layout::Shuffled, blockSize, 2, dim, dim},
                contexts, rng);
  const int64_t requests = static_cast<int64_t>(contexts.size());
  Tensor q = randomTensor(BF16, {requests, heads, dim}, rng, -2, 2);
  Tensor out = Tensor::poisoned(F32, {splits, requests, heads, dim});
  Tensor lse = Tensor::poisoned(F32, {splits, heads, requests});
  Tensor scale = Tensor::scalar(0.125f);
  TESSEL_KERNEL_OR_SKIP(kernel, GetParam().path,
                        "paged_split_bf16_shuf_h8kv2_d64_bs16");
  ASSERT_TRUE(kernel.run({{"q", &q},
                          {"k_cache", &cache.kCache},
                          {"v_cache", &cache.vCache},
                          {"block_table", &cache.blockTable},
                          {"context_lens", &cache.lens},
                          {"out", &out},
                          {"lse", &lse},
                          {"scale", &scale}}));
  expectSplitPartials(out, lse, q, cache, blockSize, 2, 0.125,
                      [](int64_t t) { return t; });
}

//===----------------------------------------------------------------------===//
// MLA decode: keys are whole 576-wide latent rows, values their first 512.
//===----------------------------------------------------------------------===//

struct MlaCase {
  const char *kernel;
  tessel_dtype dtype;
  int64_t heads, headDim, latentDim, blockSize;
  float scale;
  bool hasLse;
};

// The MLA decode kernels: dtype, heads, head dim (latent + rope), latent dim,
// block size, scale, lse.
// clang-format off
const MlaCase kMlaBf16{"mla_bf16_h16_d576_l512_bs16",
    BF16, 16, 576, 512, 16, 0.0416666679f, true};
const MlaCase kMlaBf16Block64{"mla_bf16_h16_d576_l512_bs64",
    BF16, 16, 576, 512, 64, 0.0416666679f, true};
const MlaCase kMlaBf16Heads20{"mla_bf16_h20_d576_l512_bs32",
    BF16, 20, 576, 512, 32, 0.0416666679f, true};
const MlaCase kMlaF32{"mla_f32_h4_d576_l512_bs32",
    F32, 4, 576, 512, 32, 0.0416666679f, true};
const MlaCase kMlaF32Small{"mla_f32_h8_d96_l64_bs16",
    F32, 8, 96, 64, 16, 0.102062076f, false};
// clang-format on

void checkMla(const MlaCase &c, const std::vector<int32_t> &contexts,
              const BundleVariant &bundle, uint64_t seed) {
  Rng rng(seed);
  PagedKV cache({c.dtype, ref::Layout::NHD, c.blockSize, 1, c.headDim,
                 c.latentDim, /*mla=*/true},
                contexts, rng);
  const int64_t requests = static_cast<int64_t>(contexts.size());
  Tensor q = randomTensor(c.dtype, {requests, c.heads, c.headDim}, rng, -2, 2);
  Tensor out = Tensor::poisoned(c.dtype, {requests, c.heads, c.latentDim});
  Tensor lse = Tensor::poisoned(F32, {c.heads, requests});
  std::vector<NamedArg> args = {{"q", &q},
                                {"kv_cache", &cache.kCache},
                                {"block_table", &cache.blockTable},
                                {"seq_lens", &cache.lens},
                                {"out", &out}};
  if (c.hasLse)
    args.push_back({"lse", &lse});
  Tensor scale = Tensor::scalar(c.scale);
  args.push_back({"scale", &scale});
  TESSEL_KERNEL_OR_SKIP(kernel, bundle.path, c.kernel);
  ASSERT_TRUE(kernel.run(args));
  AttentionRef r = decodeReference(q, cache, 1, c.latentDim, c.scale);
  EXPECT_TRUE(near("out", out, r.out));
  if (c.hasLse)
    EXPECT_TRUE(nearLse("lse", lse, r.lse));
}

class MlaDecode : public ::testing::TestWithParam<BundleVariant> {};

TEST_P(MlaDecode, Bf16Heads16Dim576Latent512) {
  checkMla(kMlaBf16, {18, 463, 0}, GetParam(), 501);
}

TEST_P(MlaDecode, Bf16Heads16Dim576Latent512Block64) {
  checkMla(kMlaBf16Block64, {18, 463, 0, 64, 200}, GetParam(), 507);
}

TEST_P(MlaDecode, Bf16Heads20PadsTheSecondHeadGroup) {
  checkMla(kMlaBf16Heads20, {37, 0, 300, 129}, GetParam(), 508);
}

TEST_P(MlaDecode, F32Heads4Dim576Latent512Block32) {
  checkMla(kMlaF32, {1, 463, 100, 0, 33}, GetParam(), 502);
}

TEST_P(MlaDecode, F32Heads8Dim96Latent64NoLse) {
  checkMla(kMlaF32Small, {463, 0, 18, 250}, GetParam(), 503);
}

/// The split form: partial p is the window [p W, (p + 1) W) of each
/// request's latent context.
TEST_P(MlaDecode, SplitPartialsCoverWholeBlocks) {
  Rng rng(504);
  const std::vector<int32_t> contexts = {463, 0, 18, 100};
  const int64_t splits = 3, heads = 16, blockSize = 16;
  PagedKV cache({BF16, ref::Layout::NHD, blockSize, 1, 576, 512,
                 /*mla=*/true},
                contexts, rng);
  const int64_t requests = static_cast<int64_t>(contexts.size());
  Tensor q = randomTensor(BF16, {requests, heads, 576}, rng, -2, 2);
  Tensor out = Tensor::poisoned(F32, {splits, requests, heads, 512});
  Tensor lse = Tensor::poisoned(F32, {splits, heads, requests});
  const float mlaScale = 0.0416666679f;
  Tensor scale = Tensor::scalar(mlaScale);
  TESSEL_KERNEL_OR_SKIP(kernel, GetParam().path,
                        "mla_split_bf16_h16_d576_l512_bs16");
  ASSERT_TRUE(kernel.run({{"q", &q},
                          {"kv_cache", &cache.kCache},
                          {"block_table", &cache.blockTable},
                          {"seq_lens", &cache.lens},
                          {"out", &out},
                          {"lse", &lse},
                          {"scale", &scale}}));
  expectSplitPartials(out, lse, q, cache, blockSize, 1, mlaScale,
                      [](int64_t t) { return t; });
}

auto bundleName = [](const auto &info) { return std::string(info.param.name); };
INSTANTIATE_TEST_SUITE_P(Bundles, Decode, ::testing::ValuesIn(allBundles()),
                         bundleName);
INSTANTIATE_TEST_SUITE_P(Bundles, MlaDecode, ::testing::ValuesIn(allBundles()),
                         bundleName);

} // namespace
