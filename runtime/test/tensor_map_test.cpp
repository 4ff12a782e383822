//===- test/tensor_map_test.cpp - TMA tensor maps at launch ---------------===//
//
// Kernels that declare tensor maps (sm90a) get them encoded at each launch
// from their arguments and appended to the parameter block: checked here
// against the fake CUDA driver, which records what cuTensorMapEncodeTiled was
// asked and what reached cuLaunchKernel. Also every error on the way: shapes
// TMA cannot describe, a driver that lacks the function or refuses the map,
// and backends without TMA.
//
//===----------------------------------------------------------------------===//

#include "fake_drivers.h"
#include "test_support.h"

using namespace tessel;
using namespace tessel::test;

namespace {

// CUtensorMapDataType, CUtensorMapL2promotion.
constexpr int kBfloat16 = 9, kL2Promotion128B = 2;

/// Fake device addresses of tmaKernel's arguments (16-byte aligned).
void *const kA = reinterpret_cast<void *>(0x100000);
void *const kB = reinterpret_cast<void *>(0x200000);
void *const kOffsets = reinterpret_cast<void *>(0x300000);
void *const kC = reinterpret_cast<void *>(0x400000);

class TensorMaps : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_NE(state = resetFakeCudaState(), nullptr);
    state->num_params = 7; // a, b, offsets, c, T, G, K
  }

  /// Opens the fake 9.0 device and loads `kernels`; returns the first.
  tessel_kernel load(const std::vector<bundle::Kernel> &kernels) {
    tessel_device raw = nullptr;
    EXPECT_TRUE(succeeds(tessel_device_open("cuda", 0, &raw)));
    device.reset(raw);
    bundle = loadOrFail(device.get(), pack(kernels));
    return bundle ? tessel_bundle_kernel_at(bundle.get(), 0) : nullptr;
  }

  /// Launches tmaKernel's signature: a [t, k], b [g, 256, k], c [t, 256].
  tessel_status launch(tessel_kernel kernel, int64_t t, int64_t g, int64_t k,
                       void *a = kA) {
    tessel_tensor args[] = {tensor(a, TESSEL_DTYPE_BF16, {t, k}),
                            tensor(kB, TESSEL_DTYPE_BF16, {g, 256, k}),
                            tensor(kOffsets, TESSEL_DTYPE_I32, {g}),
                            tensor(kC, TESSEL_DTYPE_BF16, {t, 256})};
    return tessel_kernel_launch(kernel, args, 4, nullptr);
  }

  ScopedEnv library{"TESSEL_CUDA_LIBRARY", TESSEL_TEST_FAKE_CUDA};
  fake_driver_state *state = nullptr;
  DevicePtr device;
  BundlePtr bundle;
};

TEST_F(TensorMaps, AreEncodedFromTheArgumentsAndFollowTheSymbols) {
  tessel_kernel gmm = load({tmaKernel("gmm")});
  ASSERT_TRUE(gmm);
  EXPECT_STREQ(tessel_kernel_target(gmm), "sm90a");
  state->num_maps = 2;
  ASSERT_TRUE(succeeds(launch(gmm, 1000, 8, 128)));
  ASSERT_EQ(state->encodes, 2);

  // a [1000, 128] as {K, T}: rows of 128 bf16 = 256 bytes.
  const fake_tensor_map_call &a = state->encode_calls[0];
  EXPECT_EQ(a.data_type, kBfloat16);
  EXPECT_EQ(a.rank, 2u);
  EXPECT_EQ(a.address, reinterpret_cast<uintptr_t>(kA));
  EXPECT_EQ(a.dims[0], 128u);
  EXPECT_EQ(a.dims[1], 1000u);
  EXPECT_EQ(a.strides[0], 256u);
  EXPECT_EQ(a.box[0], 64u);
  EXPECT_EQ(a.box[1], 128u);
  EXPECT_EQ(a.element_strides[0], 1u);
  EXPECT_EQ(a.element_strides[1], 1u);
  EXPECT_EQ(a.interleave, 0);
  EXPECT_EQ(a.swizzle, 3);
  EXPECT_EQ(a.l2_promotion, kL2Promotion128B);
  EXPECT_EQ(a.oob_fill, 0);
  EXPECT_EQ(a.map % 64, 0u) << "CUtensorMap storage must be 64-byte aligned";

  // b [8, 256, 128] as {K, G*N}.
  const fake_tensor_map_call &b = state->encode_calls[1];
  EXPECT_EQ(b.data_type, kBfloat16);
  EXPECT_EQ(b.rank, 2u);
  EXPECT_EQ(b.address, reinterpret_cast<uintptr_t>(kB));
  EXPECT_EQ(b.dims[0], 128u);
  EXPECT_EQ(b.dims[1], 2048u);
  EXPECT_EQ(b.strides[0], 256u);
  EXPECT_EQ(b.box[0], 64u);
  EXPECT_EQ(b.box[1], 256u);
  EXPECT_EQ(b.swizzle, 3);

  // The parameter block: args, symbols, then the maps by value, in order.
  const fake_launch &l = state->last_launch;
  EXPECT_EQ(l.params[0], 0x100000u);
  EXPECT_EQ(l.params[3], 0x400000u);
  EXPECT_EQ(l.params[4], 1000u); // T
  EXPECT_EQ(l.params[5], 8u);    // G
  EXPECT_EQ(l.params[6], 128u);  // K
  for (int m = 0; m < 2; ++m) {
    uint64_t address;
    std::memcpy(&address, l.maps[m], sizeof address);
    EXPECT_EQ(address, m == 0 ? 0x100000u : 0x200000u) << "map " << m;
    for (int i = 8; i < 128; ++i)
      ASSERT_EQ(l.maps[m][i], 0xA0 + m) << "map " << m << " byte " << i;
    EXPECT_EQ(l.map_addresses[m], state->encode_calls[m].map)
        << "the launch must pass the bytes the driver encoded";
  }
  EXPECT_EQ(state->launches, 1);
  // The driver encodes only with a context current (CUDA_ERROR_INVALID_CONTEXT
  // otherwise): encoding makes it current like the launch does.
  EXPECT_NE(a.current, 0) << "encoded with no context current";
  EXPECT_EQ(b.current, a.current);
  EXPECT_EQ(state->pushes, state->pops);
}

TEST_F(TensorMaps, EmptyExtentsAreEncodedAsOneOrTheBox) {
  // The kernel never loads rows of an empty tensor, but TMA dims are >= 1.
  // Inner dim 0 becomes box[0], so the row stride stays 16-byte aligned.
  tessel_kernel gmm = load({tmaKernel("gmm")});
  ASSERT_TRUE(succeeds(launch(gmm, 256, 0, 0)));
  ASSERT_EQ(state->encodes, 2);
  const fake_tensor_map_call &b = state->encode_calls[1];
  EXPECT_EQ(b.dims[0], 64u);
  EXPECT_EQ(b.dims[1], 1u);
  EXPECT_EQ(b.strides[0], 128u);
  EXPECT_EQ(state->launches, 1);
  // No rows, no blocks: nothing is encoded or launched.
  ASSERT_TRUE(succeeds(launch(gmm, 0, 8, 128)));
  EXPECT_EQ(state->encodes, 2);
  EXPECT_EQ(state->launches, 1);
}

TEST_F(TensorMaps, RowStrideMustBeAMultipleOf16Bytes) {
  tessel_kernel gmm = load({tmaKernel("gmm")});
  const char *expected =
      "kernel 'gmm': tensor map 0 of arg 'a': rows are 200 bytes (dim 0 = "
      "100 bf16 elements); TMA needs a row stride that is a multiple of 16 "
      "bytes";
  EXPECT_TRUE(failsWith(launch(gmm, 1000, 8, 100), TESSEL_INVALID_ARGUMENT,
                        {expected}));
  // Checked even when the launch has no work: shapes, not sizes, break it.
  EXPECT_TRUE(failsWith(launch(gmm, 0, 8, 100), TESSEL_INVALID_ARGUMENT,
                        {expected}));
  EXPECT_EQ(state->encodes, 0);
  EXPECT_EQ(state->launches, 0);
}

TEST_F(TensorMaps, BaseMustBe16ByteAligned) {
  // An elementwise argument needs only element alignment, but TMA needs 16.
  bundle::Kernel k = tmaKernel("gmm");
  k.args[0].elementwise = true;
  tessel_kernel gmm = load({k});
  EXPECT_TRUE(failsWith(
      launch(gmm, 1000, 8, 128, reinterpret_cast<void *>(0x100002)),
      TESSEL_INVALID_ARGUMENT,
      {"kernel 'gmm': tensor map 0 of arg 'a': data 0x100002 is not aligned "
       "to 16 bytes (TMA needs a 16-byte aligned base)"}));
  EXPECT_EQ(state->launches, 0);
}

TEST_F(TensorMaps, DimsMustBeAtMost2To32) {
  tessel_kernel gmm = load({tmaKernel("gmm")});
  const int64_t big = (int64_t(1) << 32) + 1;
  EXPECT_TRUE(failsWith(launch(gmm, big, 8, 8), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'gmm': tensor map 0 of arg 'a': dim 1 (arg "
                         "dims [0, 1)) is 4294967297 elements; TMA dims must "
                         "be at most 2^32"}));
  // 2^32 itself is a valid dim.
  EXPECT_TRUE(succeeds(launch(gmm, int64_t(1) << 32, 8, 8)));
  EXPECT_EQ(state->encode_calls[0].dims[1], uint64_t(1) << 32);
}

TEST_F(TensorMaps, DimsThatOverflowAreReported) {
  // b seen as {N*K, G}: with G = 0 the tensor is empty, so its size is fine,
  // but N*K = 256 * 2^62 overflows.
  bundle::Kernel k = tmaKernel("gmm");
  k.tensorMaps = {k.tensorMaps[1]};
  k.tensorMaps[0].dims = {{1, 3}, {0, 1}};
  k.tensorMaps[0].box = {64, 1};
  tessel_kernel gmm = load({k});
  EXPECT_TRUE(failsWith(launch(gmm, 0, 0, int64_t(1) << 62),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'gmm': tensor map 0 of arg 'b': dim 0 (arg "
                         "dims [1, 3)) overflows 64 bits; TMA dims must be at "
                         "most 2^32"}));
}

TEST_F(TensorMaps, StridesMustBeBelow2To40) {
  // b as {K, N, G}: the stride of G is N*K*2 bytes = 2^41 for K = 2^32.
  bundle::Kernel k = tmaKernel("gmm");
  k.tensorMaps[1].dims = {{2, 3}, {1, 2}, {0, 1}};
  k.tensorMaps[1].box = {64, 32, 1};
  tessel_kernel gmm = load({k});
  EXPECT_TRUE(failsWith(launch(gmm, 8, 2, int64_t(1) << 32),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'gmm': tensor map 1 of arg 'b': the stride of "
                         "dim 2 is 2199023255552 bytes; TMA strides must be "
                         "below 2^40"}));
  ASSERT_TRUE(succeeds(launch(gmm, 8, 2, 128)));
  const fake_tensor_map_call &b = state->encode_calls[1];
  EXPECT_EQ(b.rank, 3u);
  EXPECT_EQ(b.dims[2], 2u);
  EXPECT_EQ(b.strides[0], 256u);
  EXPECT_EQ(b.strides[1], 65536u);
}

TEST_F(TensorMaps, DriverFailureNamesTheMapAndWhatItWasAsked) {
  tessel_kernel gmm = load({tmaKernel("gmm")});
  ScopedEnv refuse("FAKE_CUDA_ENCODE", "1");
  EXPECT_TRUE(failsWith(launch(gmm, 1000, 8, 128), TESSEL_INVALID_ARGUMENT,
                        {"kernel 'gmm': tensor map 0 of arg 'a': "
                         "cuTensorMapEncodeTiled(bf16 at 0x100000, dims [128, "
                         "1000], strides [256], box [64, 128], swizzle 3) on "
                         "CUDA device 0 (Fake GPU, sm_90) failed: "
                         "CUDA_ERROR_INVALID_VALUE (1): invalid argument"}));
  EXPECT_EQ(state->launches, 0);
}

TEST_F(TensorMaps, DriverWithoutTheFunctionFailsOnlyKernelsWithMaps) {
  ScopedEnv minimal("TESSEL_CUDA_LIBRARY", TESSEL_TEST_FAKE_CUDA_MINIMAL);
  tessel_kernel gmm = load({tmaKernel("gmm"), gpuKernel("add", "sm80")});
  ASSERT_TRUE(gmm);
  EXPECT_TRUE(failsWith(launch(gmm, 1000, 8, 128), TESSEL_UNAVAILABLE,
                        {"kernel 'gmm': tensor map 0 of arg 'a': the CUDA "
                         "driver lacks cuTensorMapEncodeTiled (CUDA 12.0 or "
                         "newer has it), which kernels with TMA tensor maps "
                         "need"}));
  tessel_tensor args[] = {tensor(kA, TESSEL_DTYPE_F32, {4}),
                          tensor(kB, TESSEL_DTYPE_F32, {4}),
                          tensor(kC, TESSEL_DTYPE_F32, {4})};
  EXPECT_TRUE(succeeds(tessel_kernel_launch(
      tessel_bundle_kernel_at(bundle.get(), 1), args, 3, nullptr)));
}

TEST_F(TensorMaps, Sm90aIsPreferredOnComputeCapability90Only) {
  std::vector<uint8_t> bytes =
      pack({gpuKernel("gmm", "sm80"), gpuKernel("gmm", "sm90"),
            tmaKernel("gmm"), tmaKernel("only_a")});
  {
    tessel_device raw = nullptr;
    ASSERT_TRUE(succeeds(tessel_device_open("cuda", 0, &raw)));
    DevicePtr h200(raw);
    EXPECT_STREQ(tessel_device_target(h200.get()), "sm90a");
    BundlePtr loaded = loadOrFail(h200.get(), bytes);
    ASSERT_EQ(tessel_bundle_kernel_count(loaded.get()), 2u);
    EXPECT_STREQ(tessel_kernel_target(tessel_bundle_kernel_at(loaded.get(), 0)),
                 "sm90a");
  }
  // sm_90a code runs on 9.0 only: a later 9.x takes the sm90 cubin.
  ScopedEnv cc("FAKE_CUDA_CC", "91");
  tessel_device raw = nullptr;
  ASSERT_TRUE(succeeds(tessel_device_open("cuda", 0, &raw)));
  DevicePtr other(raw);
  EXPECT_STREQ(tessel_device_target(other.get()), "sm90");
  BundlePtr loaded = loadOrFail(other.get(), bytes);
  ASSERT_EQ(tessel_bundle_kernel_count(loaded.get()), 1u);
  EXPECT_STREQ(tessel_kernel_target(tessel_bundle_kernel_at(loaded.get(), 0)),
               "sm90");
  tessel_kernel kernel = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_bundle_find_kernel(loaded.get(), "only_a", &kernel),
      TESSEL_NOT_FOUND,
      {"kernel 'only_a' is not built for targets 'sm90' or 'sm80' (the bundle "
       "has it for: sm90a)"}));
}

/// A kernel of `target` whose arg 'a' (f32[N]) has a 16-byte map.
bundle::Kernel addWithMap(bundle::Kernel k) {
  bundle::TensorMap map;
  map.dims = {{0, 1}};
  map.box = {4};
  k.tensorMaps = {map};
  return k;
}

TEST(TensorMapBackends, HostAndHipCannotEncodeThem) {
  tessel_tensor args[3];
  alignas(16) float data[3][4] = {};
  for (int i = 0; i < 3; ++i)
    args[i] = tensor(data[i], TESSEL_DTYPE_F32, {4});
  {
    DevicePtr host = openHost();
    BundlePtr loaded = loadOrFail(host.get(), pack({addWithMap(addKernel())}));
    EXPECT_TRUE(failsWith(
        tessel_kernel_launch(tessel_bundle_kernel_at(loaded.get(), 0), args, 3,
                             nullptr),
        TESSEL_UNSUPPORTED,
        {"kernel 'add': tensor map 0 of arg 'a': the host backend cannot "
         "encode TMA tensor maps (kernels that take them run on NVIDIA sm_90 "
         "GPUs through the cuda backend)"}));
  }
  ScopedEnv library("TESSEL_HIP_LIBRARY", TESSEL_TEST_FAKE_HIP);
  tessel_device raw = nullptr;
  ASSERT_TRUE(succeeds(tessel_device_open("hip", 0, &raw)));
  DevicePtr hip(raw);
  BundlePtr loaded =
      loadOrFail(hip.get(), pack({addWithMap(gpuKernel("add", "gfx942"))}));
  EXPECT_TRUE(failsWith(
      tessel_kernel_launch(tessel_bundle_kernel_at(loaded.get(), 0), args, 3,
                           nullptr),
      TESSEL_UNSUPPORTED,
      {"kernel 'add': tensor map 0 of arg 'a': the hip backend cannot encode "
       "TMA tensor maps"}));
}

} // namespace
