//===- SwigluTest.cpp - tessel.swiglu and tessel.swiglu_backward ----------===//
//
// The routing has dropped slots (ids outside [0, E): no row, a zero weight
// gradient) and so an unplaced tail of sorted rows, whose grad and h rows
// hold NaN here: the kernels must write zeros there, not NaN. Both layouts
// of h: the column halves of [R, 2I] and [2, R, I]. The reference is in
// double (below), the kernels' outputs within the dtype's tolerance.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"
#include "Reference.h"

#include <cmath>
#include <limits>

using namespace tessel::numerics;

namespace {

/// Where gate and up element n of row p live in h's flat storage.
struct GateUp {
  int64_t rows, intermediate;
  bool fused; // [R, 2I], else [2, R, I]
  size_t gate(int64_t p, int64_t n) const {
    return fused ? p * 2 * intermediate + n : p * intermediate + n;
  }
  size_t up(int64_t p, int64_t n) const {
    return fused ? p * 2 * intermediate + intermediate + n
                 : (rows + p) * intermediate + n;
  }
  std::vector<int64_t> shape() const {
    if (fused)
      return {rows, 2 * intermediate};
    return {2, rows, intermediate};
  }
};

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// ids [T, k] in [-1, E + E / 4]: with E = 5, 3 in 8 outside [0, E).
std::vector<int32_t> idsWithDrops(Rng &rng, int64_t tokens, int64_t topk,
                                  int64_t experts) {
  std::vector<int32_t> ids(tokens * topk);
  for (int32_t &id : ids)
    id = static_cast<int32_t>(rng.integer(-1, experts + experts / 4));
  return ids;
}

void checkSwiglu(const char *forward, const char *backward,
                 tessel_dtype dtype, int64_t intermediate, bool fused,
                 int64_t topk, uint64_t seed) {
  Rng rng(seed);
  const int64_t tokens = 29, rows = tokens * topk, experts = 5;
  ref::Routing r = ref::route(idsWithDrops(rng, tokens, topk, experts),
                              experts);
  GateUp at{rows, intermediate, fused};
  Tensor h = randomTensor(dtype, at.shape(), rng, -4.0, 4.0);
  Tensor grad = randomTensor(dtype, {rows, intermediate}, rng);
  Tensor weights = randomTensor(TESSEL_DTYPE_F32, {tokens, topk}, rng, 0, 1);
  // The unplaced tail's rows are garbage the kernels must not pass on.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  int64_t placed = 0;
  for (int32_t s : r.sortedRows)
    placed += s >= 0;
  ASSERT_LT(placed, rows) << "the routing must drop some slots";
  for (int64_t p = placed; p < rows; ++p)
    for (int64_t n = 0; n < intermediate; ++n) {
      h.set(at.gate(p, n), nan);
      h.set(at.up(p, n), nan);
      grad.set(p * intermediate + n, nan);
    }

  std::vector<double> hv = h.values(), gv = grad.values(),
                      wv = weights.values();
  std::vector<double> act(rows * intermediate), dh(hv.size()),
      actWeighted(rows * intermediate), dWeights(tokens * topk, 0.0);
  for (int64_t p = 0; p < rows; ++p) {
    int32_t slot = r.sortedRows[p];
    double w = slot >= 0 ? wv[slot] : 0.0, dot = 0.0;
    for (int64_t n = 0; n < intermediate; ++n) {
      double gate = hv[at.gate(p, n)], up = hv[at.up(p, n)];
      double s = sigmoid(gate), a = gate * s * up;
      double g = gv[p * intermediate + n];
      act[p * intermediate + n] = a;
      if (slot < 0) {
        dh[at.gate(p, n)] = dh[at.up(p, n)] = 0.0;
        actWeighted[p * intermediate + n] = 0.0;
        continue;
      }
      dh[at.gate(p, n)] = g * w * up * s * (1 + gate * (1 - s));
      dh[at.up(p, n)] = g * w * gate * s;
      actWeighted[p * intermediate + n] = a * w;
      dot += g * a;
    }
    if (slot >= 0)
      dWeights[slot] = dot;
  }

  Tensor actOut = Tensor::poisoned(dtype, {rows, intermediate});
  TESSEL_KERNEL_OR_SKIP(fwd, defaultBundle().path, forward);
  ASSERT_TRUE(fwd.run({{"h", &h}, {"act", &actOut}}));
  // The placed rows only: act of a NaN row is NaN, as silu(NaN) is.
  for (int64_t p = placed; p < rows; ++p)
    for (int64_t n = 0; n < intermediate; ++n) {
      EXPECT_TRUE(std::isnan(actOut.at(p * intermediate + n)));
      actOut.set(p * intermediate + n, 0.0);
      act[p * intermediate + n] = 0.0;
    }
  EXPECT_TRUE(near("act", actOut, act));

  Tensor sorted = Tensor::i32({rows}, r.sortedRows);
  Tensor positions = Tensor::i32({tokens, topk}, r.rowPositions);
  Tensor dhOut = Tensor::poisoned(dtype, at.shape());
  Tensor actWeightedOut = Tensor::poisoned(dtype, {rows, intermediate});
  Tensor dWeightsOut = Tensor::poisoned(TESSEL_DTYPE_F32, {tokens, topk});
  TESSEL_KERNEL_OR_SKIP(bwd, defaultBundle().path, backward);
  ASSERT_TRUE(bwd.run({{"grad", &grad},
                       {"h", &h},
                       {"topk_weights", &weights},
                       {"sorted_rows", &sorted},
                       {"row_positions", &positions},
                       {"dh", &dhOut},
                       {"act_weighted", &actWeightedOut},
                       {"d_topk_weights", &dWeightsOut}}));
  EXPECT_TRUE(near("dh", dhOut, dh));
  EXPECT_TRUE(near("act_weighted", actWeightedOut, actWeighted));
  EXPECT_TRUE(near("d_topk_weights", dWeightsOut, dWeights));
}

TEST(Swiglu, F32FusedIntermediate13Top2) {
  checkSwiglu("swiglu_f32_i13", "swiglu_backward_f32_i13_k2",
              TESSEL_DTYPE_F32, 13, /*fused=*/true, 2, 1401);
}

TEST(Swiglu, Bf16PartsIntermediate16Top4) {
  checkSwiglu("swiglu_bf16_i16_parts", "swiglu_backward_bf16_i16_k4_parts",
              TESSEL_DTYPE_BF16, 16, /*fused=*/false, 4, 1402);
}

} // namespace
