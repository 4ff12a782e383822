//===- LaunchErrorTest.cpp - Bad launches of a real generated kernel ------===//
//
// The runtime checks every tensor against the signature tessel-aot wrote
// into the bundle before a kernel runs. Through a real prefill kernel
// (q [T, 4, 64], k/v [T, 1, 64], cu_seqlens [B + 1], out [T, 4, 64],
// lse [4, T], all f32 but cu_seqlens; the scale a rank-0 f32 scalar), each
// wrong argument must give an
// INVALID_ARGUMENT status whose message names the argument, and must not
// run
// the kernel (the poisoned output stays untouched).
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <cmath>

using namespace tessel::numerics;

namespace {

constexpr tessel_dtype F32 = TESSEL_DTYPE_F32;

class LaunchErrors : public ::testing::Test {
protected:
  LaunchErrors()
      : kernel(defaultBundle().path, "prefill_f32_h4kv1_d64"), rng(1401),
        q(randomTensor(F32, {10, 4, 64}, rng)),
        k(randomTensor(F32, {10, 1, 64}, rng)),
        v(randomTensor(F32, {10, 1, 64}, rng)),
        cu(Tensor::i32({3}, {0, 4, 10})),
        out(Tensor::poisoned(F32, {10, 4, 64})),
        lse(Tensor::poisoned(F32, {4, 10})), scale(Tensor::scalar(0.125f)) {}

  std::vector<tessel_tensor> args() const {
    return {q.arg(),   k.arg(),   v.arg(),    cu.arg(),
            out.arg(), lse.arg(), scale.arg()};
  }

  /// Launches `bad` and checks the status: INVALID_ARGUMENT, a message with
  /// each of `words`, and no output written.
  void expectRejected(const std::vector<tessel_tensor> &bad,
                      std::initializer_list<const char *> words) {
    tessel_status_code code = TESSEL_OK;
    std::string message = kernel.runRaw(bad, &code);
    ASSERT_FALSE(message.empty()) << "the launch was accepted";
    EXPECT_EQ(code, TESSEL_INVALID_ARGUMENT) << message;
    for (const char *word : words)
      EXPECT_NE(message.find(word), std::string::npos)
          << "'" << word << "' not in: " << message;
    for (size_t i = 0; i < out.numel(); ++i)
      ASSERT_TRUE(std::isnan(out.at(i))) << "a rejected launch wrote out";
  }

  Kernel kernel;
  Rng rng;
  Tensor q, k, v, cu, out, lse, scale;
};

TEST_F(LaunchErrors, CorrectArgsAreAccepted) {
  EXPECT_EQ(kernel.runRaw(args()), "");
}

TEST_F(LaunchErrors, WrongDtype) {
  auto bad = args();
  bad[0].dtype = TESSEL_DTYPE_BF16;
  expectRejected(bad, {"'q'", "dtype", "bf16", "f32"});
}

TEST_F(LaunchErrors, WrongIndexDtype) {
  auto bad = args();
  Tensor cu64(TESSEL_DTYPE_I64, {3});
  bad[3] = cu64.arg();
  expectRejected(bad, {"'cu_seqlens'", "dtype", "i64"});
}

TEST_F(LaunchErrors, WrongRank) {
  auto bad = args();
  bad[1].rank = 2;
  bad[1].shape[1] = 64;
  expectRejected(bad, {"'k'", "rank 2", "expected 3"});
}

TEST_F(LaunchErrors, WrongStaticDim) {
  auto bad = args();
  bad[2].shape[1] = 2; // v has 1 KV head
  expectRejected(bad, {"'v'", "dim 1", "expected 1"});
}

TEST_F(LaunchErrors, WrongHeadDimOfOutput) {
  auto bad = args();
  bad[4].shape[2] = 128;
  expectRejected(bad, {"'out'", "dim 2", "expected 64"});
}

TEST_F(LaunchErrors, InconsistentTokenCount) {
  auto bad = args();
  Tensor k11 = randomTensor(F32, {11, 1, 64}, rng); // q has 10 tokens
  bad[1] = k11.arg();
  expectRejected(bad, {"'k'", "'q'", "11", "10"});
}

TEST_F(LaunchErrors, InconsistentLseTokens) {
  auto bad = args();
  bad[5].shape[1] = 9;
  expectRejected(bad, {"'lse'", "9"});
}

TEST_F(LaunchErrors, WrongArgCount) {
  auto bad = args();
  bad.pop_back();
  expectRejected(bad, {"7", "6", "scale"});
}

TEST_F(LaunchErrors, ScaleGivenAsABuffer) {
  auto bad = args();
  bad[6].rank = 1;
  bad[6].shape[0] = 1;
  expectRejected(bad, {"'scale'", "rank 1", "expected 0"});
}

TEST_F(LaunchErrors, ScaleWithoutAValue) {
  auto bad = args();
  bad[6].data = nullptr;
  expectRejected(bad, {"'scale'", "scalar", "null", "f32 value"});
}

TEST_F(LaunchErrors, ScaleNotFinite) {
  auto bad = args();
  Tensor nan = Tensor::scalar(std::nanf(""));
  bad[6] = nan.arg();
  expectRejected(bad, {"'scale'", "nan", "finite"});
  Tensor inf = Tensor::scalar(INFINITY);
  bad[6] = inf.arg();
  expectRejected(bad, {"'scale'", "inf", "finite"});
}

TEST_F(LaunchErrors, ScaleOfTheWrongDtype) {
  auto bad = args();
  bad[6].dtype = TESSEL_DTYPE_F16;
  expectRejected(bad, {"'scale'", "dtype", "f16", "f32"});
}

} // namespace
