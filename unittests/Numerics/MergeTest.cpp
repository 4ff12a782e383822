//===- MergeTest.cpp - lse_merge and lse_merge_n --------------------------===//
//
// Random partials, plus rows that hit every infinity rule of the op docs:
// an LSE of +inf counts as -inf (an empty partial); merging with an empty
// partial must return the other one exactly (weights exp(0) = 1 and
// exp(-inf) = 0 leave nothing to round); all partials empty gives o_a (2-way)
// or 0 (N-way) and an LSE of -inf; nothing is ever NaN.
//
//===----------------------------------------------------------------------===//

#include "AttentionSetup.h"

#include <cmath>
#include <limits>

using namespace tessel::numerics;

namespace {

constexpr tessel_dtype F32 = TESSEL_DTYPE_F32, BF16 = TESSEL_DTYPE_BF16;
const double kInf = std::numeric_limits<double>::infinity();

bool isEmpty(double lse) { return std::isinf(lse); }

/// Checks every element to tolerance, and the rows `exactTokens` (those
/// with an empty partial) bit for bit.
void expectMerged(const Tensor &out, const std::vector<double> &wantOut,
                  const Tensor *lseOut, const std::vector<double> &wantLse,
                  const std::vector<int64_t> &exactTokens) {
  EXPECT_TRUE(near("out", out, wantOut));
  EXPECT_TRUE(exact("out (rows with empty partials)",
                    selectTokens(out, 0, exactTokens),
                    selectTokens(wantOut, out, 0, exactTokens)));
  if (!lseOut)
    return;
  EXPECT_TRUE(nearLse("lse_out", *lseOut, wantLse));
  EXPECT_TRUE(exact("lse_out (rows with empty partials)",
                    selectTokens(*lseOut, 1, exactTokens),
                    selectTokens(wantLse, *lseOut, 1, exactTokens)));
}

//===----------------------------------------------------------------------===//
// Two-way merge
//===----------------------------------------------------------------------===//

/// (lse_a, lse_b) of the first tokens; the other tokens are random.
const std::vector<std::pair<double, double>> kSpecialPairs = {
    {-kInf, -kInf},
    {kInf, kInf},
    {kInf, -kInf},
    {-kInf, kInf},
    {-kInf, 1.5},
    {2.25, -kInf},
    {kInf, -0.5},
    {3.0, kInf},
    // Finite: equal, far apart (a weight underflows in f32), negative.
    {1.0, 1.0},
    {-100.0, 100.0},
    {0.5, -60.0},
    {-7.0, -9.0}};

void checkMerge(const char *name, tessel_dtype inDtype, tessel_dtype outDtype,
                int64_t heads, int64_t dim, bool hasLseOut, uint64_t seed) {
  Rng rng(seed);
  const int64_t tokens = 29;
  Tensor oa = randomTensor(inDtype, {tokens, heads, dim}, rng);
  Tensor ob = randomTensor(inDtype, {tokens, heads, dim}, rng);
  Tensor la(F32, {heads, tokens}), lb(F32, {heads, tokens});
  std::vector<int64_t> exactTokens;
  for (int64_t t = 0; t < tokens; ++t) {
    bool special = t < static_cast<int64_t>(kSpecialPairs.size());
    if (special &&
        (isEmpty(kSpecialPairs[t].first) || isEmpty(kSpecialPairs[t].second)))
      exactTokens.push_back(t);
    for (int64_t h = 0; h < heads; ++h) {
      la.set(h * tokens + t,
             special ? kSpecialPairs[t].first : rng.uniform(-5, 5));
      lb.set(h * tokens + t,
             special ? kSpecialPairs[t].second : rng.uniform(-5, 5));
    }
  }
  // The reference sees the partials as drawn; the kernel then gets NaN in
  // the output of every empty partial merged with a non-empty one: the op
  // ignores an empty partial's output, whatever it holds.
  ref::TokenRows a = tokenRows(oa), b = tokenRows(ob);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      bool emptyA = isEmpty(la.at(h * tokens + t));
      bool emptyB = isEmpty(lb.at(h * tokens + t));
      if (emptyA == emptyB)
        continue;
      Tensor &empty = emptyA ? oa : ob;
      for (int64_t d = 0; d < dim; ++d)
        empty.set((t * heads + h) * dim + d, nan);
    }
  Tensor out = Tensor::poisoned(outDtype, {tokens, heads, dim});
  Tensor lseOut = Tensor::poisoned(F32, {heads, tokens});
  std::vector<NamedArg> args = {{"o_a", &oa},
                                {"lse_a", &la},
                                {"o_b", &ob},
                                {"lse_b", &lb},
                                {"out", &out}};
  if (hasLseOut)
    args.push_back({"lse_out", &lseOut});
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, name);
  ASSERT_TRUE(kernel.run(args));

  std::vector<double> wantOut(out.numel()), wantLse(lseOut.numel());
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h)
      wantLse[h * tokens + t] = ref::lseMerge(
          a.row(t, h), la.at(h * tokens + t), b.row(t, h),
          lb.at(h * tokens + t), dim, &wantOut[(t * heads + h) * dim]);
  expectMerged(out, wantOut, hasLseOut ? &lseOut : nullptr, wantLse,
               exactTokens);
}

TEST(LseMerge, F32Heads4Dim64) {
  checkMerge("merge_f32_h4_d64", F32, F32, 4, 64, true, 701);
}

TEST(LseMerge, F32ToBf16Heads8Dim128) {
  checkMerge("merge_f32_to_bf16_h8_d128", F32, BF16, 8, 128, true, 702);
}

TEST(LseMerge, Bf16ToF32Heads2Dim256NoLseOut) {
  checkMerge("merge_bf16_to_f32_h2_d256", BF16, F32, 2, 256, false, 703);
}

//===----------------------------------------------------------------------===//
// N-way merge
//===----------------------------------------------------------------------===//

/// Partial LSEs of the first tokens, per partial p (cycled when P is smaller);
/// the other tokens are random with one empty partial in five.
const std::vector<std::vector<double>> kSpecialColumns = {
    {-kInf, -kInf, -kInf, -kInf, -kInf}, // all empty
    {kInf, kInf, kInf, kInf, kInf},      // +inf is empty too
    {kInf, -kInf, kInf, -kInf, -kInf},   // mixed, still all empty
    {-kInf, kInf, 0.75, -kInf, kInf},    // one partial: returned exactly
    {-80.0, 0.0, 80.0, 1.0, -1.0},       // far apart
};

void checkMergeN(const char *name, tessel_dtype outDtype, int64_t parts,
                 int64_t heads, int64_t dim, bool hasLseOut, uint64_t seed) {
  Rng rng(seed);
  const int64_t tokens = 23;
  Tensor p = randomTensor(F32, {parts, tokens, heads, dim}, rng);
  Tensor pl(F32, {parts, heads, tokens});
  std::vector<int64_t> exactTokens;
  for (int64_t t = 0; t < tokens; ++t) {
    bool special = t < static_cast<int64_t>(kSpecialColumns.size());
    int finite = 0;
    for (int64_t i = 0; i < parts; ++i)
      for (int64_t h = 0; h < heads; ++h) {
        double l = special                  ? kSpecialColumns[t][i % 5]
                   : rng.integer(0, 4) == 0 ? -kInf
                                            : rng.uniform(-5, 5);
        pl.set((i * heads + h) * tokens + t, l);
        finite += h == 0 && !isEmpty(l);
      }
    // At most one non-empty partial: the merge is a copy (or zeros).
    if (special && finite <= 1)
      exactTokens.push_back(t);
  }
  // The reference sees the partials as drawn; the kernel gets NaN in every
  // empty partial's output, which the op must ignore.
  std::vector<double> values = p.values();
  for (int64_t i = 0; i < parts; ++i)
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < heads; ++h)
        if (isEmpty(pl.at((i * heads + h) * tokens + t)))
          for (int64_t d = 0; d < dim; ++d)
            p.set(((i * tokens + t) * heads + h) * dim + d,
                  std::numeric_limits<double>::quiet_NaN());
  Tensor out = Tensor::poisoned(outDtype, {tokens, heads, dim});
  Tensor lseOut = Tensor::poisoned(F32, {heads, tokens});
  std::vector<NamedArg> args = {
      {"partials", &p}, {"partial_lse", &pl}, {"out", &out}};
  if (hasLseOut)
    args.push_back({"lse_out", &lseOut});
  TESSEL_KERNEL_OR_SKIP(kernel, defaultBundle().path, name);
  ASSERT_TRUE(kernel.run(args));

  std::vector<double> wantOut(out.numel()), wantLse(lseOut.numel());
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<const double *> rows;
      std::vector<double> lses;
      for (int64_t i = 0; i < parts; ++i) {
        rows.push_back(&values[((i * tokens + t) * heads + h) * dim]);
        lses.push_back(pl.at((i * heads + h) * tokens + t));
      }
      wantLse[h * tokens + t] =
          ref::lseMergeN(rows, lses, dim, &wantOut[(t * heads + h) * dim]);
    }
  expectMerged(out, wantOut, hasLseOut ? &lseOut : nullptr, wantLse,
               exactTokens);
}

TEST(LseMergeN, F32FivePartials) {
  checkMergeN("merge_n_f32_h4_d64", F32, 5, 4, 64, true, 801);
}

TEST(LseMergeN, F32OnePartialIsACopy) {
  checkMergeN("merge_n_f32_h4_d64", F32, 1, 4, 64, true, 802);
}

TEST(LseMergeN, NoPartialsGiveZerosAndMinusInf) {
  checkMergeN("merge_n_f32_h4_d64", F32, 0, 4, 64, true, 803);
}

TEST(LseMergeN, F32ToBf16FivePartialsNoLseOut) {
  checkMergeN("merge_n_f32_to_bf16_h2_d128", BF16, 5, 2, 128, false, 804);
}

} // namespace
