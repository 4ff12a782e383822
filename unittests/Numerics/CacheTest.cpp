//===- CacheTest.cpp - reshape_and_cache in both layouts ------------------===//
//
// reshape_and_cache is a scatter: every byte of the caches is checked
// exactly. The caches start full of old random data (not poison: the op must
// leave every slot it is not given untouched), and the slot mapping has
// padding (negative) and out-of-range slots that must be skipped. The last
// test writes a context with reshape_and_cache and decodes it, so the writer
// and the reader agree on the shuffled layout and both follow its docs.
//
//===----------------------------------------------------------------------===//

#include "AttentionSetup.h"

#include <algorithm>
#include <numeric>

using namespace tessel::numerics;

namespace {

constexpr tessel_dtype F32 = TESSEL_DTYPE_F32, BF16 = TESSEL_DTYPE_BF16;

struct CacheCase {
  const char *kernel;
  tessel_dtype dtype;
  ref::Layout layout;
  int64_t kvHeads, kDim, vDim, blockSize, numBlocks, tokens;
};

void checkReshapeAndCache(const CacheCase &c, uint64_t seed) {
  Rng rng(seed);
  int64_t x = 16 / static_cast<int64_t>(tessel_dtype_size(c.dtype));
  ref::CacheGeometry g{
      c.layout, c.numBlocks, c.blockSize, c.kvHeads, c.kDim, c.vDim, x};
  Tensor kCache = randomTensor(c.dtype, g.kShape(), rng);
  Tensor vCache = randomTensor(c.dtype, g.vShape(), rng);
  Tensor k = randomTensor(c.dtype, {c.tokens, c.kvHeads, c.kDim}, rng);
  Tensor v = randomTensor(c.dtype, {c.tokens, c.kvHeads, c.vDim}, rng);

  // Distinct slots in random order, then padding and garbage slots.
  const int64_t numSlots = c.numBlocks * c.blockSize;
  std::vector<int32_t> all(numSlots);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng.raw());
  std::vector<int32_t> slots(all.begin(), all.begin() + c.tokens);
  slots[1] = -1;
  slots[c.tokens / 2] = static_cast<int32_t>(numSlots);
  slots[c.tokens - 1] = -7;
  slots[c.tokens - 2] = static_cast<int32_t>(numSlots + 100);
  Tensor slotMapping = Tensor::i32({c.tokens}, slots);

  std::vector<double> wantK = kCache.values(), wantV = vCache.values();
  for (int64_t t = 0; t < c.tokens; ++t) {
    if (slots[t] < 0 || slots[t] >= numSlots)
      continue;
    int64_t block = slots[t] / c.blockSize, offset = slots[t] % c.blockSize;
    for (int64_t h = 0; h < c.kvHeads; ++h) {
      for (int64_t d = 0; d < c.kDim; ++d)
        wantK[g.kIndex(block, offset, h, d)] = k.at(k.index({t, h, d}));
      for (int64_t d = 0; d < c.vDim; ++d)
        wantV[g.vIndex(block, offset, h, d)] = v.at(v.index({t, h, d}));
    }
  }

  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, c.kernel);
  ASSERT_TRUE(kernel.run({{"k", &k},
                          {"v", &v},
                          {"k_cache", &kCache},
                          {"v_cache", &vCache},
                          {"slot_mapping", &slotMapping}}));
  EXPECT_TRUE(exact("k_cache", kCache, wantK));
  EXPECT_TRUE(exact("v_cache", vCache, wantV));
}

TEST(ReshapeAndCache, F32NhdBlock16) {
  checkReshapeAndCache(
      {"rac_f32_nhd_kv2_d64_bs16", F32, ref::Layout::NHD, 2, 64, 64, 16, 7, 61},
      601);
}

TEST(ReshapeAndCache, F32ShuffledBlock32) {
  checkReshapeAndCache({"rac_f32_shuf_kv1_d64_bs32", F32, ref::Layout::Shuffled,
                        1, 64, 64, 32, 5, 97},
                       602);
}

TEST(ReshapeAndCache, Bf16ShuffledBlock16) {
  checkReshapeAndCache({"rac_bf16_shuf_kv1_d128_bs16", BF16,
                        ref::Layout::Shuffled, 1, 128, 128, 16, 6, 50},
                       603);
}

TEST(ReshapeAndCache, Bf16NhdQk192V128) {
  checkReshapeAndCache({"rac_bf16_nhd_kv2_qk192_v128_bs16", BF16,
                        ref::Layout::NHD, 2, 192, 128, 16, 4, 33},
                       604);
}

/// Contexts written token by token through the block table, then decoded.
TEST(ReshapeAndCache, WrittenContextDecodes) {
  Rng rng(605);
  std::vector<int32_t> contexts = {18, 463, 0, 33};
  // PagedKV supplies shuffled blocks and caches full of other data; the
  // tokens it placed there are overwritten below.
  PagedKV cache({BF16, ref::Layout::Shuffled, 16, 1, 128, 128}, contexts, rng);
  const int64_t tokens = std::accumulate(contexts.begin(), contexts.end(), 0);
  Tensor k = randomTensor(BF16, {tokens, 1, 128}, rng);
  Tensor v = randomTensor(BF16, {tokens, 1, 128}, rng);
  std::vector<int32_t> slots;
  const int64_t columns = cache.blockTable.dim(1);
  for (size_t b = 0; b < contexts.size(); ++b)
    for (int32_t j = 0; j < contexts[b]; ++j)
      slots.push_back(cache.blockTable.i32()[b * columns + j / 16] * 16 +
                      j % 16);
  Tensor slotMapping = Tensor::i32({tokens}, slots);
  TESSEL_KERNEL_OR_SKIP(write, defaultBundle().path,
                        "rac_bf16_shuf_kv1_d128_bs16");
  ASSERT_TRUE(write.run({{"k", &k},
                         {"v", &v},
                         {"k_cache", &cache.kCache},
                         {"v_cache", &cache.vCache},
                         {"slot_mapping", &slotMapping}}));

  const int64_t requests = static_cast<int64_t>(contexts.size());
  Tensor q = randomTensor(BF16, {requests, 8, 128}, rng, -2, 2);
  Tensor out = Tensor::poisoned(BF16, {requests, 8, 128});
  Tensor lse = Tensor::poisoned(F32, {8, requests});
  Tensor scale = Tensor::scalar(0.0883883476f);
  TESSEL_KERNEL_OR_SKIP(decode, defaultBundle().path,
                        "decode_bf16_shuf_h8kv1_d128_bs16");
  ASSERT_TRUE(decode.run({{"q", &q},
                          {"k_cache", &cache.kCache},
                          {"v_cache", &cache.vCache},
                          {"block_table", &cache.blockTable},
                          {"seq_lens", &cache.lens},
                          {"out", &out},
                          {"lse", &lse},
                          {"scale", &scale}}));

  std::vector<int32_t> cu = cumulative(contexts);
  ref::TokenRows kr = tokenRows(k), vr = tokenRows(v);
  AttentionRef r =
      attendAll(tokenRows(q), 1, 128, 0.0883883476f,
                [&](int64_t b, int64_t kvHead, auto &keys, auto &values) {
                  for (int64_t j = cu[b]; j < cu[b + 1]; ++j) {
                    keys.push_back(kr.row(j, kvHead));
                    values.push_back(vr.row(j, kvHead));
                  }
                });
  EXPECT_TRUE(near("out", out, r.out));
  EXPECT_TRUE(nearLse("lse", lse, r.lse));
}

} // namespace
