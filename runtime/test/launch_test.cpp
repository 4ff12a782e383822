//===- test/launch_test.cpp - tessel_kernel_launch checks and results -----===//
//
// Every check of a launch, each asserted on its code and on the message
// naming the kernel and the argument; and kernels that compute real numbers
// through the params convention.
//
//===----------------------------------------------------------------------===//

#include "test_support.h"

#include <cstdint>

using namespace tessel;
using namespace tessel::test;
using bundle::Dim;

namespace {

/// Kernels with shape signatures made for the checks. They reuse add_entry,
/// which is never reached when a check fails.
bundle::Kernel signatureKernel(const char *name,
                               std::vector<std::pair<const char *, Dim>> args,
                               std::vector<std::string> symbols) {
  bundle::Kernel k = addKernel();
  k.name = name;
  k.args.clear();
  for (auto &arg : args)
    k.args.push_back({arg.first, TESSEL_DTYPE_F32, false, {arg.second}});
  k.symbols = std::move(symbols);
  return k;
}

class Launch : public ::testing::Test {
protected:
  void SetUp() override {
    device = openHost();
    bundle::Kernel gridK = addKernel();
    gridK.name = "grid_minus_one";
    gridK.grid[0] = Dim::symbol(0, 1, -1);
    bundle::Kernel wide = addKernel();
    wide.name = "wide_grid";
    wide.grid[1] = Dim::symbol(0, 1 << 30);
    bundle::Kernel empty = addKernel();
    empty.name = "empty_grid";
    // grid z = N - 8: for N = 8 the grid is empty and nothing may run.
    empty.grid = {Dim::symbol(0), Dim::constant(1), Dim::symbol(0, 1, -8)};
    empty.gridDiv[0] = 4;
    bundle::Kernel unused = addKernel();
    unused.name = "unused_symbol";
    unused.symbols.push_back("M");
    bundle = loadOrFail(
        device.get(),
        pack({addKernel(), sumPairsKernel(), rowSumKernel(),
              signatureKernel(
                  "affine",
                  {{"p", Dim::symbol(0, 1, 2)}, {"q", Dim::symbol(0, 3, -1)}},
                  {"N"}),
              signatureKernel(
                  "big", {{"p", Dim::symbol(0)}, {"q", Dim::symbol(0, 16)}},
                  {"N"}),
              gridK, wide, empty, unused}));
    ASSERT_TRUE(bundle);
  }

  tessel_kernel kernel(const char *name) {
    tessel_kernel k = nullptr;
    EXPECT_TRUE(succeeds(tessel_bundle_find_kernel(bundle.get(), name, &k)));
    return k;
  }

  tessel_status launch(const char *name, std::vector<tessel_tensor> args,
                       void *stream = nullptr) {
    return tessel_kernel_launch(kernel(name), args.data(), args.size(), stream);
  }

  /// Three f32 tensors of `n` elements for the add kernel.
  std::vector<tessel_tensor> addArgs(int64_t n) {
    a.assign(n > 0 ? n : 0, 1.0f);
    b.assign(n > 0 ? n : 0, 2.0f);
    c.assign(n > 0 ? n : 0, 0.0f);
    return {tensor(a.data(), TESSEL_DTYPE_F32, {n}),
            tensor(b.data(), TESSEL_DTYPE_F32, {n}),
            tensor(c.data(), TESSEL_DTYPE_F32, {n})};
  }

  DevicePtr device;
  BundlePtr bundle;
  std::vector<float> a, b, c;
  alignas(16) float scratch[64] = {};
};

//===-- Results -----------------------------------------------------------===//

TEST_F(Launch, AddComputes) {
  ASSERT_TRUE(succeeds(launch("add", addArgs(257))));
  for (float v : c)
    ASSERT_EQ(v, 3.0f);
}

TEST_F(Launch, SumPairsDerivesNFromTwiceN) {
  std::vector<float> x(10), y(5, 0.0f);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i);
  ASSERT_TRUE(
      succeeds(launch("sum_pairs", {tensor(x.data(), TESSEL_DTYPE_F32, {10}),
                                    tensor(y.data(), TESSEL_DTYPE_F32, {5})})));
  EXPECT_EQ(y, (std::vector<float>{1, 5, 9, 13, 17}));
}

TEST_F(Launch, RowSumMixesStaticAndSymbolicDims) {
  std::vector<int32_t> x = {1, 2, 3, 4, 10, 20, 30, 40, -1, -1, -1, -1};
  std::vector<int64_t> y(3, 0);
  ASSERT_TRUE(
      succeeds(launch("row_sum", {tensor(x.data(), TESSEL_DTYPE_I32, {3, 4}),
                                  tensor(y.data(), TESSEL_DTYPE_I64, {3})})));
  EXPECT_EQ(y, (std::vector<int64_t>{10, 100, -4}));
}

TEST_F(Launch, EmptyTensorsMayBeNull) {
  std::vector<tessel_tensor> args = addArgs(0);
  for (tessel_tensor &t : args)
    t.data = nullptr;
  EXPECT_TRUE(succeeds(launch("add", args)));
}

TEST_F(Launch, EmptyGridSkipsTheLaunch) {
  ASSERT_TRUE(succeeds(launch("empty_grid", addArgs(8))));
  EXPECT_EQ(c, std::vector<float>(8, 0.0f)) << "the kernel must not have run";
  ASSERT_TRUE(succeeds(launch("empty_grid", addArgs(9))));
  EXPECT_EQ(c, std::vector<float>(9, 3.0f));
}

//===-- Argument checks ---------------------------------------------------===//

TEST_F(Launch, ChecksTheArgCount) {
  std::vector<tessel_tensor> args = addArgs(4);
  args.pop_back();
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add' takes 3 args (a, b, c) but 2 were "
                         "given"}));
  EXPECT_TRUE(
      failsWith(tessel_kernel_launch(kernel("add"), nullptr, 3, nullptr),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'add': args is null but num_args is 3"}));
  EXPECT_TRUE(failsWith(tessel_kernel_launch(nullptr, nullptr, 0, nullptr),
                        TESSEL_INVALID_ARGUMENT, {"kernel is null"}));
}

TEST_F(Launch, ChecksDtype) {
  std::vector<tessel_tensor> args = addArgs(4);
  args[1].dtype = TESSEL_DTYPE_F16;
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': arg 'b' has dtype f16 (value 2), "
                         "expected f32"}));
  // What a C caller can store; C++ may not load it as an enum, so memcpy.
  const int bogus = 77;
  std::memcpy(&args[1].dtype, &bogus, sizeof bogus);
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"arg 'b' has dtype unknown (value 77)"}));
}

TEST_F(Launch, ChecksRank) {
  std::vector<tessel_tensor> args = addArgs(4);
  args[2] = tensor(c.data(), TESSEL_DTYPE_F32, {2, 2});
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': arg 'c' has rank 2, expected 1"}));
  args[2].rank = 9;
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': arg 'c' has rank 9; a rank must be "
                         "in [0, 8]"}));
  args[2].rank = -1;
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"arg 'c' has rank -1"}));
}

TEST_F(Launch, ChecksNegativeSizes) {
  std::vector<tessel_tensor> args = addArgs(4);
  args[0].shape[0] = -4;
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': arg 'a' dim 0 is -4; sizes must be "
                         ">= 0"}));
}

TEST_F(Launch, ChecksStaticDims) {
  std::vector<int32_t> x(15);
  std::vector<int64_t> y(3);
  EXPECT_TRUE(
      failsWith(launch("row_sum", {tensor(x.data(), TESSEL_DTYPE_I32, {3, 5}),
                                   tensor(y.data(), TESSEL_DTYPE_I64, {3})}),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'row_sum': arg 'x' dim 1 is 5, expected 4"}));
}

TEST_F(Launch, ChecksSymbolConsistency) {
  std::vector<tessel_tensor> args = addArgs(18);
  args[1].shape[0] = 17;
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': arg 'b' dim 0 is 17 but arg 'a' dim "
                         "0 says N = 18"}));
  std::vector<float> x(8), y(8);
  EXPECT_TRUE(
      failsWith(launch("sum_pairs", {tensor(x.data(), TESSEL_DTYPE_F32, {8}),
                                     tensor(y.data(), TESSEL_DTYPE_F32, {5})}),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'sum_pairs': arg 'y' dim 0 is 5 but arg 'x' "
                 "dim 0 says N = 4"}));
  EXPECT_TRUE(
      failsWith(launch("affine", {tensor(scratch, TESSEL_DTYPE_F32, {5}),
                                  tensor(scratch, TESSEL_DTYPE_F32, {7})}),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'affine': arg 'q' dim 0 is 7 but arg 'p' dim "
                 "0 says N = 3, so it must be 3*N - 1 = 8"}));
}

TEST_F(Launch, ChecksSymbolDerivation) {
  std::vector<float> x(8), y(8);
  EXPECT_TRUE(
      failsWith(launch("sum_pairs", {tensor(x.data(), TESSEL_DTYPE_F32, {7}),
                                     tensor(y.data(), TESSEL_DTYPE_F32, {3})}),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'sum_pairs': arg 'x' dim 0 is 7, which is "
                 "not 2*N for any integer N >= 0"}));
  EXPECT_TRUE(
      failsWith(launch("affine", {tensor(scratch, TESSEL_DTYPE_F32, {1}),
                                  tensor(scratch, TESSEL_DTYPE_F32, {2})}),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'affine': arg 'p' dim 0 is 1, which is not "
                 "N + 2 for any integer N >= 0"}));
}

TEST_F(Launch, ChecksOverflow) {
  // N = 2^60 is a valid f32 size (2^62 bytes); 16*N overflows int64.
  EXPECT_TRUE(
      failsWith(launch("big", {tensor(scratch, TESSEL_DTYPE_F32, {1LL << 60}),
                               tensor(scratch, TESSEL_DTYPE_F32, {5})}),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'big': arg 'q' dim 0 is 5 but arg 'p' dim 0 "
                 "says N = 1152921504606846976, and 16*N overflows "
                 "int64"}));
  EXPECT_TRUE(
      failsWith(launch("big", {tensor(scratch, TESSEL_DTYPE_F32, {1LL << 62}),
                               tensor(scratch, TESSEL_DTYPE_F32, {5})}),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'big': arg 'p' is larger than 2^63 bytes"}));
}

TEST_F(Launch, ChecksNullData) {
  std::vector<tessel_tensor> args = addArgs(16);
  args[2].data = nullptr;
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': arg 'c' data is null but it has 16 "
                         "elements"}));
}

TEST_F(Launch, ChecksAlignment) {
  std::vector<tessel_tensor> args = addArgs(4);
  args[1].data = reinterpret_cast<char *>(scratch) + 2;
  EXPECT_TRUE(failsWith(launch("add", args), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': arg 'b' data 0x",
                         "is not aligned to 4 bytes (the size of f32)"}));
}

TEST_F(Launch, UnderivableSymbolIsInternal) {
  EXPECT_TRUE(failsWith(launch("unused_symbol", addArgs(4)), TESSEL_INTERNAL,
                        {"kernel 'unused_symbol': symbol 'M' is used by no "
                         "argument",
                         "compiler bug"}));
}

//===-- Launch geometry and streams ---------------------------------------===//

TEST_F(Launch, ChecksGrid) {
  EXPECT_TRUE(failsWith(launch("grid_minus_one", addArgs(0)),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'grid_minus_one': grid x = N - 1 is -1 for "
                         "these shapes; it must be >= 0"}));
  EXPECT_TRUE(succeeds(launch("grid_minus_one", addArgs(3))));
  EXPECT_TRUE(failsWith(launch("wide_grid", addArgs(8)),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'wide_grid': grid y = ceildiv(1073741824*N, "
                         "1) is 8589934592 blocks, more than 2^32 - 1"}));
}

TEST_F(Launch, HostRejectsStreams) {
  int fakeStream = 0;
  EXPECT_TRUE(failsWith(launch("add", addArgs(4), &fakeStream),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': the host backend has no streams; pass "
                         "NULL"}));
}

} // namespace
