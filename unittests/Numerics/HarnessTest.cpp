//===- HarnessTest.cpp - The harness's own conversions and comparisons ----===//
//
// Every 16-bit test rests on the bf16/f16 conversions and on the
// comparison, so they are tested first: known ties and overflows, and f16
// against the compiler's _Float16 over all encodings and random floats.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace tessel::numerics;

namespace {

float floatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Harness, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 0x3f80 and 0x3f81: ties go to even.
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 0x3f81 and 0x3f82.
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80); // inf
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  EXPECT_EQ(bf16ToFloat(0x3fc0), 1.5f);
}

TEST(Harness, F16MatchesFloat16EverywhereAndOnRandomFloats) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    _Float16 ref;
    uint16_t bits = static_cast<uint16_t>(h);
    std::memcpy(&ref, &bits, 2);
    float want = static_cast<float>(ref), got = f16ToFloat(bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
      continue;
    }
    ASSERT_EQ(got, want) << std::hex << h;
    ASSERT_EQ(floatToF16(got), bits) << std::hex << h;
  }
  Rng rng(1);
  for (int i = 0; i < 1000000; ++i) {
    // Exponents from f16-subnormal to past the f16 range.
    float f = floatFromBits(
        static_cast<uint32_t>(rng.integer(0x32000000, 0x48000000)) |
        (i & 1 ? 0x80000000u : 0));
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(floatToF16(f), want) << f;
  }
}

TEST(Harness, ComparisonCatchesNaNInfAndScaledErrors) {
  Tensor t(TESSEL_DTYPE_F32, {4});
  for (size_t i = 0; i < 4; ++i)
    t.set(i, 1.0);
  std::vector<double> ref = {1.0, 1.0, 1.0, 1.0};
  EXPECT_TRUE(near("same", t, ref));
  t.set(2, 1.0 + 1e-4);
  EXPECT_FALSE(near("1e-4 off", t, ref));
  t.set(2, NAN);
  EXPECT_FALSE(near("NaN", t, ref));
  t.set(2, -INFINITY);
  EXPECT_FALSE(near("-inf vs 1", t, ref));
  ref[2] = -INFINITY;
  EXPECT_TRUE(nearLse("-inf vs -inf", t, ref));
  Tensor poisoned = Tensor::poisoned(TESSEL_DTYPE_BF16, {3});
  EXPECT_FALSE(near("poison", poisoned, {0.0, 0.0, 0.0}));
}

} // namespace
