//===- AttentionTest.cpp - Prefill, extend and paged attention ------------===//
//
// Each test launches one kernel of NumericsKernels.mlir on random ragged
// batches (request lengths 0, 1, 17, 300, ...) and compares out and lse with
// a plain double softmax over the keys each query must see. Extend runs
// against all three bundles: whole-context, chunked at 64 tokens (so a 463
// token context spans 8 chunks and the LSE merges between them matter) and
// lowered directly.
//
//===----------------------------------------------------------------------===//

#include "AttentionSetup.h"

#include <chrono>
#include <cstdio>
#include <functional>

using namespace tessel::numerics;

namespace {

constexpr tessel_dtype F32 = TESSEL_DTYPE_F32, BF16 = TESSEL_DTYPE_BF16,
                       F16 = TESSEL_DTYPE_F16;
constexpr float kScale64 = 0.125f, kScale128 = 0.0883883476f,
                kScale256 = 0.0625f, kScale192 = 0.0721687836f;

/// The request each token of a ragged batch belongs to.
std::vector<int64_t> requestOfToken(const std::vector<int32_t> &cu) {
  std::vector<int64_t> owner;
  for (size_t b = 0; b + 1 < cu.size(); ++b)
    for (int32_t t = cu[b]; t < cu[b + 1]; ++t)
      owner.push_back(static_cast<int64_t>(b));
  return owner;
}

//===----------------------------------------------------------------------===//
// Prefill
//===----------------------------------------------------------------------===//

struct PrefillCase {
  const char *kernel;
  tessel_dtype dtype, outDtype;
  int64_t qHeads, kvHeads, qkDim, vDim;
  float scale;
  bool causal, hasLse;
};

// The prefill kernels of NumericsKernels.mlir: dtypes (in, out), heads (q,
// kv), head dims (qk, v), scale, causal, lse.
// clang-format off
const PrefillCase kPrefillF32Gqa1{"prefill_f32_h4kv4_d64",
    F32, F32, 4, 4, 64, 64, kScale64, true, true};
const PrefillCase kPrefillF32Gqa4{"prefill_f32_h4kv1_d64",
    F32, F32, 4, 1, 64, 64, kScale64, true, true};
const PrefillCase kPrefillF32Gqa4Dim128{"prefill_f32_h8kv2_d128",
    F32, F32, 8, 2, 128, 128, kScale128, true, true};
const PrefillCase kPrefillBf16Gqa8Dim256{"prefill_bf16_h8kv1_d256",
    BF16, BF16, 8, 1, 256, 256, kScale256, true, true};
const PrefillCase kPrefillF32NonCausal{"prefill_f32_h4kv1_d64_noncausal",
    F32, F32, 4, 1, 64, 64, kScale64, false, false};
const PrefillCase kPrefillMla{"prefill_bf16_mla_h4_qk192_v128",
    BF16, F32, 4, 4, 192, 128, kScale192, true, true};
const PrefillCase kPrefillF16{"prefill_f16_h4kv2_d64",
    F16, F16, 4, 2, 64, 64, kScale64, true, true};
const PrefillCase kPrefillBf16Gqa1{"prefill_bf16_h4kv4_d64",
    BF16, BF16, 4, 4, 64, 64, kScale64, true, true};
const PrefillCase kPrefillBf16NonCausal{"prefill_bf16_h8kv2_d128_noncausal",
    BF16, BF16, 8, 2, 128, 128, kScale128, false, true};
const PrefillCase kPrefillBf16NegativeScale{"prefill_bf16_h8kv2_d128_noncausal",
    BF16, BF16, 8, 2, 128, 128, -4.0f, false, true};
// clang-format on

/// Random q/k/v of a ragged batch and the kernel's cu_seqlens.
struct PrefillInputs {
  PrefillInputs(const PrefillCase &c, const std::vector<int32_t> &lengths,
                Rng &rng)
      : cu(cumulative(lengths)), tokens(cu.back()),
        // Queries in [-2, 2]: a softmax with some peaks, so that a key too
        // many or too few moves the output well past the tolerance.
        q(randomTensor(c.dtype, {tokens, c.qHeads, c.qkDim}, rng, -2, 2)),
        k(randomTensor(c.dtype, {tokens, c.kvHeads, c.qkDim}, rng)),
        v(randomTensor(c.dtype, {tokens, c.kvHeads, c.vDim}, rng)),
        cuSeqlens(Tensor::i32({static_cast<int64_t>(cu.size())}, cu)),
        out(Tensor::poisoned(c.outDtype, {tokens, c.qHeads, c.vDim})),
        lse(Tensor::poisoned(F32, {c.qHeads, tokens})),
        scale(Tensor::scalar(c.scale)) {}

  std::vector<NamedArg> args(bool hasLse) {
    std::vector<NamedArg> a = {{"q", &q},
                               {"k", &k},
                               {"v", &v},
                               {"cu_seqlens", &cuSeqlens},
                               {"out", &out}};
    if (hasLse)
      a.push_back({"lse", &lse});
    a.push_back({"scale", &scale});
    return a;
  }

  std::vector<int32_t> cu;
  int64_t tokens;
  Tensor q, k, v, cuSeqlens, out, lse, scale;
};

/// Token t of request b sees tokens [cu[b], t] (causal) or all of b's.
AttentionRef prefillReference(const PrefillCase &c, PrefillInputs &in,
                              const std::vector<int64_t> &onlyTokens = {}) {
  ref::TokenRows k = tokenRows(in.k), v = tokenRows(in.v);
  std::vector<int64_t> owner = requestOfToken(in.cu);
  return attendAll(
      tokenRows(in.q), c.kvHeads, c.vDim, c.scale,
      [&](int64_t t, int64_t kvHead, auto &keys, auto &values) {
        int64_t b = owner[t];
        int64_t end = c.causal ? t + 1 : in.cu[b + 1];
        for (int64_t j = in.cu[b]; j < end; ++j) {
          keys.push_back(k.row(j, kvHead));
          values.push_back(v.row(j, kvHead));
        }
      },
      onlyTokens);
}

/// `adjust` may change the random inputs before the kernel runs.
void checkPrefill(const PrefillCase &c, const std::vector<int32_t> &lengths,
                  uint64_t seed,
                  const std::function<void(PrefillInputs &)> &adjust = {}) {
  Rng rng(seed);
  PrefillInputs in(c, lengths, rng);
  if (adjust)
    adjust(in);
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, c.kernel);
  ASSERT_TRUE(kernel.run(in.args(c.hasLse)));
  AttentionRef r = prefillReference(c, in);
  EXPECT_TRUE(near("out", in.out, r.out));
  if (c.hasLse)
    EXPECT_TRUE(nearLse("lse", in.lse, r.lse));
}

TEST(Prefill, F32Gqa1Dim64) {
  checkPrefill(kPrefillF32Gqa1, {1, 17, 0, 300, 5}, 101);
}

TEST(Prefill, F32Gqa4Dim64) {
  checkPrefill(kPrefillF32Gqa4, {17, 1, 0, 64, 300}, 102);
}

TEST(Prefill, F32Gqa4Dim128) {
  checkPrefill(kPrefillF32Gqa4Dim128, {300, 0, 17, 1}, 103);
}

TEST(Prefill, Bf16Gqa8Dim256) {
  checkPrefill(kPrefillBf16Gqa8Dim256, {1, 17, 300, 0}, 104);
}

TEST(Prefill, F32NonCausal) {
  checkPrefill(kPrefillF32NonCausal, {1, 17, 0, 300}, 105);
}

TEST(Prefill, MlaQk192V128Bf16InF32Out) {
  checkPrefill(kPrefillMla, {17, 0, 300, 1}, 106);
}

TEST(Prefill, F16Gqa2Dim64) { checkPrefill(kPrefillF16, {1, 17, 0, 300}, 107); }

TEST(Prefill, Bf16Gqa1Dim64) {
  checkPrefill(kPrefillBf16Gqa1, {1, 17, 0, 300, 5}, 110);
}

TEST(Prefill, Bf16Gqa4Dim128NonCausal) {
  checkPrefill(kPrefillBf16NonCausal, {300, 0, 17, 1, 64}, 111);
}

// A scale that is not positive (the op allows any) takes the path that
// scales before the row maximum: the others fold the scale into exp2's
// argument after it, which needs it positive (CDNA's and sm_90a's loops).
// Large enough that a maximum of the unscaled scores would overflow exp2.
TEST(Prefill, Bf16NegativeScale) {
  checkPrefill(kPrefillBf16NegativeScale, {300, 17, 64}, 113);
}

/// Keys grown along each request (token i of it times 1 + i / 8), so that
/// a query's running maximum keeps rising by more than the slack the lazy
/// rescaling of O allows (kRescaleSlack, 8 in log2 units), tile after tile
/// and in some lanes of a wave but not others: those tiles must rescale.
void growKeys(PrefillInputs &in) {
  int64_t width = in.k.numel() / in.tokens;
  for (size_t b = 0; b + 1 < in.cu.size(); ++b)
    for (int32_t t = in.cu[b]; t < in.cu[b + 1]; ++t)
      for (int64_t e = 0; e < width; ++e) {
        size_t i = t * width + e;
        in.k.set(i, in.k.at(i) * (1 + (t - in.cu[b]) / 8.0));
      }
}

TEST(Prefill, Bf16GrowingScores) {
  checkPrefill(kPrefillBf16Gqa1, {300, 17, 129}, 114, growKeys);
}

TEST(Prefill, Bf16GrowingScoresNonCausal) {
  checkPrefill(kPrefillBf16NonCausal, {300, 1, 200}, 115, growKeys);
}

TEST(Prefill, Bf16OnlyEmptyRequests) {
  checkPrefill(kPrefillBf16Gqa1, {0, 0, 0}, 112);
}

TEST(Prefill, OnlyEmptyRequests) {
  checkPrefill(kPrefillF32Gqa4, {0, 0, 0}, 108);
}

/// One 4096-token causal prompt, timed (printed, not asserted); a sample of
/// rows is checked, since the double reference of all of them takes longer
/// than the kernel.
TEST(Prefill, Causal4096TokensTimed) {
  const PrefillCase &c = kPrefillF32Gqa4;
  Rng rng(109);
  PrefillInputs in(c, {4096}, rng);
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, c.kernel);
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(kernel.run(in.args(true)));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // Causal: about T^2 / 2 (q . k and p . v) pairs per head, 2 * 64 flops each.
  double flops = 4.0 * 4096.0 * 4097.0 / 2.0 * 2.0 * 2.0 * 64.0;
  std::printf("[ timing ] prefill 4096 tokens, 4 q heads, 1 kv head, hd 64, "
              "f32, causal: %.3f s (%.2f GFLOP/s)\n",
              seconds, flops / seconds * 1e-9);

  std::vector<int64_t> sample = {0,    1,    2,    15,   16,   17,  255,
                                 1000, 2047, 2048, 3001, 4094, 4095};
  for (int i = 0; i < 12; ++i)
    sample.push_back(rng.integer(0, 4095));
  AttentionRef r = prefillReference(c, in, sample);
  EXPECT_TRUE(
      near("out (sampled rows)", selectTokens(in.out, 0, sample), r.out));
  EXPECT_TRUE(
      nearLse("lse (sampled rows)", selectTokens(in.lse, 1, sample), r.lse));
}

//===----------------------------------------------------------------------===//
// Extend
//===----------------------------------------------------------------------===//

struct ExtendCase {
  const char *kernel;
  tessel_dtype dtype, outDtype;
  ref::Layout layout;
  int64_t qHeads, kvHeads, qkDim, vDim, blockSize;
  float scale;
  bool hasLse;
};

// The extend kernels of NumericsKernels.mlir: dtypes (in, out), layout,
// heads (q, kv), head dims (qk, v), block size, scale, lse.
// clang-format off
const ExtendCase kExtendF32Nhd{"extend_f32_nhd_h4kv1_d64_bs16",
    F32, F32, ref::Layout::NHD, 4, 1, 64, 64, 16, kScale64, true};
const ExtendCase kExtendF32Shuffled{"extend_f32_shuf_h2kv2_d128_bs32",
    F32, F32, ref::Layout::Shuffled, 2, 2, 128, 128, 32, kScale128, true};
const ExtendCase kExtendBf16Shuffled{"extend_bf16_shuf_h8kv1_d256_bs16",
    BF16, BF16, ref::Layout::Shuffled, 8, 1, 256, 256, 16, kScale256, true};
const ExtendCase kExtendBf16Mla{"extend_bf16_nhd_mla_h2_qk192_v128_bs16",
    BF16, BF16, ref::Layout::NHD, 2, 2, 192, 128, 16, kScale192, false};
// clang-format on

/// New token i of request b sees b's whole cached context, then b's new
/// tokens 0..i.
void checkExtend(const ExtendCase &c, const std::vector<int32_t> &newLens,
                 const std::vector<int32_t> &contextLens,
                 const BundleVariant &bundle, uint64_t seed) {
  Rng rng(seed);
  PagedKV cache({c.dtype, c.layout, c.blockSize, c.kvHeads, c.qkDim, c.vDim},
                contextLens, rng);
  PrefillCase shape{c.kernel, c.dtype, c.outDtype, c.qHeads, c.kvHeads,
                    c.qkDim,  c.vDim,  c.scale,    true,     c.hasLse};
  PrefillInputs in(shape, newLens, rng);
  std::vector<NamedArg> args = {{"q", &in.q},
                                {"k", &in.k},
                                {"v", &in.v},
                                {"k_cache", &cache.kCache},
                                {"v_cache", &cache.vCache},
                                {"block_table", &cache.blockTable},
                                {"cu_seqlens", &in.cuSeqlens},
                                {"context_lens", &cache.lens},
                                {"out", &in.out}};
  if (c.hasLse)
    args.push_back({"lse", &in.lse});
  args.push_back({"scale", &in.scale});
  TESSEL_KERNEL_OR_SKIP(kernel, bundle.path, c.kernel);
  ASSERT_TRUE(kernel.run(args));

  ref::TokenRows k = tokenRows(in.k), v = tokenRows(in.v);
  std::vector<int64_t> owner = requestOfToken(in.cu);
  AttentionRef r =
      attendAll(tokenRows(in.q), c.kvHeads, c.vDim, c.scale,
                [&](int64_t t, int64_t kvHead, auto &keys, auto &values) {
                  int64_t b = owner[t];
                  for (int64_t j = 0; j < contextLens[b]; ++j) {
                    keys.push_back(cache.keys[b].row(j, kvHead));
                    values.push_back(cache.values[b].row(j, kvHead));
                  }
                  for (int64_t j = in.cu[b]; j <= t; ++j) {
                    keys.push_back(k.row(j, kvHead));
                    values.push_back(v.row(j, kvHead));
                  }
                });
  EXPECT_TRUE(near("out", in.out, r.out));
  if (c.hasLse)
    EXPECT_TRUE(nearLse("lse", in.lse, r.lse));
}

class Extend : public ::testing::TestWithParam<BundleVariant> {};

TEST_P(Extend, F32NhdGqa4Dim64Block16) {
  checkExtend(kExtendF32Nhd, {1, 17, 0, 300, 33}, {463, 18, 463, 0, 130},
              GetParam(), 201);
}

TEST_P(Extend, F32ShuffledGqa1Dim128Block32) {
  checkExtend(kExtendF32Shuffled, {17, 1, 0, 40}, {463, 0, 18, 100}, GetParam(),
              202);
}

TEST_P(Extend, Bf16ShuffledGqa8Dim256Block16) {
  checkExtend(kExtendBf16Shuffled, {300, 17, 0, 1}, {18, 463, 463, 0},
              GetParam(), 203);
}

TEST_P(Extend, Bf16NhdMlaQk192V128) {
  checkExtend(kExtendBf16Mla, {17, 1, 0, 60}, {463, 18, 100, 0}, GetParam(),
              204);
}

INSTANTIATE_TEST_SUITE_P(Bundles, Extend, ::testing::ValuesIn(allBundles()),
                         [](const auto &info) { return info.param.name; });

/// A context longer than the default 32768-token chunk: two chunks with the
/// default bundle, 516 with the small-budget one.
class ExtendLong : public ::testing::TestWithParam<BundleVariant> {};

TEST_P(ExtendLong, ContextOver32K) {
  checkExtend(kExtendF32Nhd, {3, 2}, {33000, 18}, GetParam(), 205);
}

INSTANTIATE_TEST_SUITE_P(Bundles, ExtendLong, ::testing::ValuesIn(allBundles()),
                         [](const auto &info) { return info.param.name; });

//===----------------------------------------------------------------------===//
// Paged attention (no window: every query sees its whole context)
//===----------------------------------------------------------------------===//

/// Runs paged_attention kernel `name` (with cu_seqlens) on the queries of a
/// prefill-shaped batch (its k and v are not used) over `cache`.
/// Skips the test where the device has no such kernel: callers return when
/// the test IsSkipped() or HasFatalFailure().
void runPagedQueries(const char *name, PrefillInputs &in, PagedKV &cache,
                     Tensor &out, Tensor &lse) {
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, name);
  ASSERT_TRUE(kernel.run({{"q", &in.q},
                          {"k_cache", &cache.kCache},
                          {"v_cache", &cache.vCache},
                          {"block_table", &cache.blockTable},
                          {"cu_seqlens", &in.cuSeqlens},
                          {"context_lens", &cache.lens},
                          {"out", &out},
                          {"lse", &lse},
                          {"scale", &in.scale}}));
}

/// Runs paged_attention kernel `kernel` (cu_seqlens, no window) with
/// `queries` new tokens a request over contexts of `contexts` tokens in a
/// cache of `spec`, and checks that every query saw its whole context.
void checkWholeContexts(const char *kernel, const PagedSpec &spec,
                        const PrefillCase &shape,
                        const std::vector<int32_t> &contexts,
                        const std::vector<int32_t> &queries, uint64_t seed) {
  Rng rng(seed);
  PagedKV cache(spec, contexts, rng);
  PrefillInputs in(shape, queries, rng);
  runPagedQueries(kernel, in, cache, in.out, in.lse);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure())
    return;
  std::vector<int64_t> owner = requestOfToken(in.cu);
  AttentionRef r =
      attendAll(tokenRows(in.q), shape.kvHeads, shape.vDim, shape.scale,
                [&](int64_t t, int64_t kvHead, auto &keys, auto &values) {
                  for (int64_t j = 0; j < contexts[owner[t]]; ++j) {
                    keys.push_back(cache.keys[owner[t]].row(j, kvHead));
                    values.push_back(cache.values[owner[t]].row(j, kvHead));
                  }
                });
  EXPECT_TRUE(near("out", in.out, r.out));
  EXPECT_TRUE(nearLse("lse", in.lse, r.lse));
}

TEST(Paged, F32NhdWithCuSeqlens) {
  checkWholeContexts("paged_f32_nhd_h4kv2_d64_bs16_cu",
                     {F32, ref::Layout::NHD, 16, 2, 64, 64},
                     {"", F32, F32, 4, 2, 64, 64, kScale64, false, true},
                     {463, 18, 100, 0}, {1, 17, 0, 5}, 301);
}

/// MLA's qk 192 / v 128 heads in bf16 (extend's context windows of
/// DeepSeek's non-absorbed prefill): contexts of 7 64-key tiles and a
/// partial one, short and empty ones.
TEST(Paged, Bf16MlaQk192V128WithCuSeqlens) {
  checkWholeContexts("paged_bf16_nhd_mla_h4kv2_qk192_v128_bs16_cu",
                     {BF16, ref::Layout::NHD, 16, 2, 192, 128},
                     {"", BF16, BF16, 4, 2, 192, 128, kScale192, false, true},
                     {463, 18, 130, 0}, {1, 17, 0, 40}, 307);
}

/// The split form with cu_seqlens (extend's context chunks): partial p of
/// every query token is the window [p W, (p + 1) W), W = ceil(MB / P) * BS,
/// of its request's context.
TEST(Paged, SplitChunksWithCuSeqlens) {
  Rng rng(303);
  std::vector<int32_t> contexts = {463, 18, 100, 0};
  PagedKV cache({F32, ref::Layout::NHD, 16, 2, 64, 64}, contexts, rng);
  PrefillCase shape{"", F32, F32, 4, 2, 64, 64, kScale64, false, true};
  PrefillInputs in(shape, {1, 17, 0, 5}, rng);
  const int64_t splits = 4, tokens = in.q.dim(0);
  Tensor out = Tensor::poisoned(F32, {splits, tokens, 4, 64});
  Tensor lse = Tensor::poisoned(F32, {splits, 4, tokens});
  runPagedQueries("paged_split_f32_nhd_h4kv2_d64_bs16_cu", in, cache, out, lse);
  if (IsSkipped() || HasFatalFailure())
    return;
  std::vector<int64_t> owner = requestOfToken(in.cu);
  expectSplitPartials(out, lse, in.q, cache, 16, 2, kScale64,
                      [&](int64_t t) { return owner[t]; });
}

/// The unified mode's kernel (causal) on `sequences` (context_lens are
/// whole sequences) with `queries` new tokens each, their last: query j of
/// n sees the keys [0, len - n + j). Runs `kernel` and checks it against
/// the reference; returns the inputs and each token's last visible key + 1
/// for the split form.
struct CausalSequences {
  PrefillInputs in;
  std::vector<int64_t> owner;
  std::function<int64_t(int64_t)> keysEnd;
};
CausalSequences checkCausalSequences(const char *kernel, PagedKV &cache,
                                     const std::vector<int32_t> &sequences,
                                     const PrefillCase &shape,
                                     const std::vector<int32_t> &queries,
                                     Rng &rng) {
  CausalSequences c{PrefillInputs(shape, queries, rng), {}, {}};
  c.owner = requestOfToken(c.in.cu);
  c.keysEnd = [owner = c.owner, cu = c.in.cu, sequences](int64_t t) {
    int64_t b = owner[t];
    return std::max<int64_t>(sequences[b] - (cu[b + 1] - t) + 1, 0);
  };
  runPagedQueries(kernel, c.in, cache, c.in.out, c.in.lse);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure())
    return c;
  AttentionRef r =
      attendAll(tokenRows(c.in.q), shape.kvHeads, shape.vDim, shape.scale,
                [&](int64_t t, int64_t kvHead, auto &keys, auto &values) {
                  for (int64_t j = 0; j < c.keysEnd(t); ++j) {
                    keys.push_back(cache.keys[c.owner[t]].row(j, kvHead));
                    values.push_back(cache.values[c.owner[t]].row(j, kvHead));
                  }
                });
  EXPECT_TRUE(near("out", c.in.out, r.out));
  EXPECT_TRUE(nearLse("lse", c.in.lse, r.lse));
  return c;
}

/// A request with more queries than tokens (the first ones see nothing:
/// LSE -inf, zeros), a decode, an extend, a prefill and an empty request;
/// then the split form.
TEST(Paged, CausalSequencesWithCuSeqlens) {
  Rng rng(304);
  std::vector<int32_t> sequences = {464, 35, 100, 0, 3, 5};
  PagedKV cache({F32, ref::Layout::NHD, 16, 2, 64, 64}, sequences, rng);
  PrefillCase shape{"", F32, F32, 4, 2, 64, 64, kScale64, false, true};
  CausalSequences c =
      checkCausalSequences("paged_causal_f32_nhd_h4kv2_d64_bs16_cu", cache,
                           sequences, shape, {1, 17, 0, 0, 5, 5}, rng);
  if (IsSkipped() || HasFatalFailure())
    return;
  const int64_t splits = 3, tokens = c.in.q.dim(0);
  Tensor out = Tensor::poisoned(F32, {splits, tokens, 4, 64});
  Tensor lse = Tensor::poisoned(F32, {splits, 4, tokens});
  runPagedQueries("paged_causal_split_f32_nhd_h4kv2_d64_bs16_cu", c.in, cache,
                  out, lse);
  if (IsSkipped() || HasFatalFailure())
    return;
  expectSplitPartials(
      out, lse, c.in.q, cache, 16, 2, kScale64,
      [&](int64_t t) { return c.owner[t]; }, c.keysEnd);
}

/// The unified kernel in bf16 at the default set's head dim and GQA 4, for
/// both layouts: on CDNA the transposed-score loops (NHD V goes to LDS in
/// runs of 4 tokens, shuffled V as it lies), the long request's context
/// long enough for tiles with and without the mask.
void checkBf16CausalSequences(const char *kernel, ref::Layout layout,
                              uint64_t seed, int64_t blockSize = 16) {
  Rng rng(seed);
  std::vector<int32_t> sequences = {464, 35, 100, 0, 3, 5};
  PagedKV cache({BF16, layout, blockSize, 2, 128, 128}, sequences, rng);
  PrefillCase shape{"", BF16, BF16, 8, 2, 128, 128, kScale128, true, true};
  checkCausalSequences(kernel, cache, sequences, shape, {40, 17, 0, 0, 5, 5},
                       rng);
}

TEST(Paged, Bf16CausalSequencesNhdDim128) {
  checkBf16CausalSequences("paged_causal_bf16_nhd_h8kv2_d128_bs16_cu",
                           ref::Layout::NHD, 305);
}

TEST(Paged, Bf16CausalSequencesNhdDim128Blocks128) {
  checkBf16CausalSequences("paged_causal_bf16_nhd_h8kv2_d128_bs128_cu",
                           ref::Layout::NHD, 307, 128);
}

TEST(Paged, Bf16CausalSequencesNhdDim128Blocks32) {
  checkBf16CausalSequences("paged_causal_bf16_nhd_h8kv2_d128_bs32_cu",
                           ref::Layout::NHD, 308, 32);
}

TEST(Paged, Bf16CausalSequencesShuffledDim128) {
  checkBf16CausalSequences("paged_causal_bf16_shuf_h8kv2_d128_bs16_cu",
                           ref::Layout::Shuffled, 306);
}

TEST(Paged, Bf16ShuffledOneQueryPerRequestF32Out) {
  Rng rng(302);
  std::vector<int32_t> contexts = {0, 18, 463, 33, 1};
  PagedKV cache({BF16, ref::Layout::Shuffled, 32, 1, 128, 128}, contexts, rng);
  const int64_t requests = static_cast<int64_t>(contexts.size());
  Tensor q = randomTensor(BF16, {requests, 4, 128}, rng, -2, 2);
  Tensor out = Tensor::poisoned(F32, {requests, 4, 128});
  Tensor lse = Tensor::poisoned(F32, {4, requests});
  Tensor scale = Tensor::scalar(kScale128);
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path,
                        "paged_bf16_shuf_h4kv1_d128_bs32");
  ASSERT_TRUE(kernel.run({{"q", &q},
                          {"k_cache", &cache.kCache},
                          {"v_cache", &cache.vCache},
                          {"block_table", &cache.blockTable},
                          {"context_lens", &cache.lens},
                          {"out", &out},
                          {"lse", &lse},
                          {"scale", &scale}}));
  AttentionRef r =
      attendAll(tokenRows(q), 1, 128, kScale128,
                [&](int64_t b, int64_t kvHead, auto &keys, auto &values) {
                  for (int64_t j = 0; j < contexts[b]; ++j) {
                    keys.push_back(cache.keys[b].row(j, kvHead));
                    values.push_back(cache.values[b].row(j, kvHead));
                  }
                });
  // bf16 inputs, f32 output: nothing is rounded after the f32 accumulation.
  EXPECT_TRUE(near("out", out, r.out));
  EXPECT_TRUE(nearLse("lse", lse, r.lse));
}

} // namespace
