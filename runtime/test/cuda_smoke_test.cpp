//===- test/cuda_smoke_test.cpp - The CUDA backend on a real GPU ----------===//
//
// Loads hand-written PTX packed as "sm80" kernels and runs them on CUDA
// device 0: the PTX JIT path (on sm_90 the sm80 target is PTX), launches on
// a caller's stream and on the default one, the opt-in to large dynamic
// shared memory, the limit checks against a real device, and the JIT log of
// bad PTX. Skipped, saying why, where no CUDA device can be opened;
// bench/gpu-check.sh runs it on the GPU machine.
//
// The device code is test-only: Tessel's real kernels come from tessel-aot.
//
//===----------------------------------------------------------------------===//

#include "test_support.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <numeric>
#include <type_traits>

using namespace tessel;
using namespace tessel::test;

namespace {

/// c = a + b, and y = x through the far end of 100 KiB of dynamic shared
/// memory. Checked with ptxas for sm_80 and sm_90.
const char kPtx[] = R"(.version 7.0
.target sm_80
.address_size 64

.visible .entry tessel_test_vadd(.param .u64 a, .param .u64 b,
                                 .param .u64 c, .param .u64 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<12>;
  .reg .f32 %f<4>;

  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u64 %rd4, [n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd5, %r1, %r2;
  cvt.u64.u32 %rd6, %r3;
  add.s64 %rd7, %rd5, %rd6;
  setp.ge.s64 %p1, %rd7, %rd4;
  @%p1 bra DONE;
  shl.b64 %rd8, %rd7, 2;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  add.s64 %rd9, %rd1, %rd8;
  add.s64 %rd10, %rd2, %rd8;
  add.s64 %rd11, %rd3, %rd8;
  ld.global.f32 %f1, [%rd9];
  ld.global.f32 %f2, [%rd10];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd11], %f3;
DONE:
  ret;
}

.extern .shared .align 16 .b8 tessel_test_smem[];

.visible .entry tessel_test_shared_copy(.param .u64 x, .param .u64 y,
                                        .param .u64 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<7>;
  .reg .b64 %rd<10>;
  .reg .f32 %f<3>;

  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u64 %rd3, [n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.s64 %rd6, %rd4, %rd5;
  setp.ge.s64 %p1, %rd6, %rd3;
  @%p1 bra DONE;
  shl.b64 %rd7, %rd6, 2;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  add.s64 %rd8, %rd1, %rd7;
  add.s64 %rd9, %rd2, %rd7;
  ld.global.f32 %f1, [%rd8];
  mov.u32 %r4, tessel_test_smem;
  add.u32 %r5, %r4, 101376;
  mad.lo.u32 %r6, %r3, 4, %r5;
  st.shared.f32 [%r6], %f1;
  ld.shared.f32 %f2, [%r6];
  st.global.f32 [%rd9], %f2;
DONE:
  ret;
}
)";

constexpr uint32_t kSharedCopyBytes = 100 * 1024; // 101376 + 256 * 4

bundle::Kernel ptxKernel(const char *name, const char *entry) {
  bundle::Kernel k = gpuKernel(name, "sm80");
  k.entry = entry;
  k.binary.assign(kPtx, kPtx + sizeof kPtx - 1); // as a compiler stores it
  return k;
}

/// The few driver functions the test needs for memory and streams, from
/// the same library the runtime loads.
struct Driver {
  using Ptr = unsigned long long;
  int (*cuDeviceGet)(int *, int);
  int (*cuDevicePrimaryCtxRetain)(void **, int);
  int (*cuDevicePrimaryCtxRelease)(int);
  int (*cuCtxPushCurrent)(void *);
  int (*cuCtxPopCurrent)(void **);
  int (*cuMemAlloc)(Ptr *, size_t);
  int (*cuMemFree)(Ptr);
  int (*cuMemcpyHtoD)(Ptr, const void *, size_t);
  int (*cuMemcpyDtoH)(void *, Ptr, size_t);
  int (*cuStreamCreate)(void **, unsigned);
  int (*cuStreamSynchronize)(void *);
  int (*cuStreamDestroy)(void *);

  bool load(std::string &error) {
    const char *path = std::getenv("TESSEL_CUDA_LIBRARY");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    if (!lib) {
      error = dlerror();
      return false;
    }
    auto get = [&](auto &slot, const char *name) {
      slot = reinterpret_cast<std::decay_t<decltype(slot)>>(dlsym(lib, name));
      if (!slot)
        error += std::string(error.empty() ? "" : ", ") + name;
    };
    get(cuDeviceGet, "cuDeviceGet");
    get(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    get(cuCtxPushCurrent, "cuCtxPushCurrent_v2");
    get(cuCtxPopCurrent, "cuCtxPopCurrent_v2");
    get(cuMemAlloc, "cuMemAlloc_v2");
    get(cuMemFree, "cuMemFree_v2");
    get(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    get(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    get(cuStreamCreate, "cuStreamCreate");
    get(cuStreamSynchronize, "cuStreamSynchronize");
    get(cuStreamDestroy, "cuStreamDestroy_v2");
    return error.empty();
  }
};

class CudaSmoke : public ::testing::Test {
protected:
  void SetUp() override {
    tessel_device raw = nullptr;
    tessel_status status = tessel_device_open("cuda", 0, &raw);
    if (status) {
      std::string why = tessel_status_message(status);
      tessel_status_free(status);
      GTEST_SKIP() << "NO CUDA DEVICE, the GPU smoke test did not run: " << why;
    }
    device.reset(raw);
    std::string error;
    ASSERT_TRUE(cu.load(error)) << "driver functions missing: " << error;
    ASSERT_EQ(cu.cuDeviceGet(&cuDevice, 0), 0);
    ASSERT_EQ(cu.cuDevicePrimaryCtxRetain(&context, cuDevice), 0);
    ASSERT_EQ(cu.cuCtxPushCurrent(context), 0);
  }

  void TearDown() override {
    if (!context)
      return;
    for (Driver::Ptr p : allocations)
      cu.cuMemFree(p);
    void *popped = nullptr;
    cu.cuCtxPopCurrent(&popped);
    cu.cuDevicePrimaryCtxRelease(cuDevice);
  }

  /// A device copy of `host`.
  void *upload(const std::vector<float> &host) {
    Driver::Ptr p = 0;
    EXPECT_EQ(cu.cuMemAlloc(&p, host.size() * sizeof(float)), 0);
    allocations.push_back(p);
    EXPECT_EQ(cu.cuMemcpyHtoD(p, host.data(), host.size() * sizeof(float)), 0);
    return reinterpret_cast<void *>(p);
  }

  std::vector<float> download(void *device, size_t n) {
    std::vector<float> host(n);
    EXPECT_EQ(cu.cuMemcpyDtoH(host.data(),
                              reinterpret_cast<Driver::Ptr>(device),
                              n * sizeof(float)),
              0);
    return host;
  }

  DevicePtr device;
  Driver cu = {};
  int cuDevice = 0;
  void *context = nullptr;
  std::vector<Driver::Ptr> allocations;
};

TEST_F(CudaSmoke, VectorAddFromSm80Ptx) {
  const char *preferred = tessel_device_target(device.get());
  std::printf("[ INFO     ] CUDA device 0 runs targets %s%s%s\n", preferred,
              tessel_device_target_at(device.get(), 1) ? ", " : "",
              tessel_device_target_at(device.get(), 1)
                  ? tessel_device_target_at(device.get(), 1)
                  : "");
  BundlePtr bundle =
      loadOrFail(device.get(), pack({ptxKernel("vadd", "tessel_test_vadd")}));
  ASSERT_TRUE(bundle);
  tessel_kernel vadd = tessel_bundle_kernel_at(bundle.get(), 0);
  EXPECT_STREQ(tessel_kernel_target(vadd), "sm80");

  const int64_t n = 1000003; // not a multiple of the block
  std::vector<float> a(n), b(n);
  std::iota(a.begin(), a.end(), 0.0f);
  std::iota(b.begin(), b.end(), -500.0f);
  void *da = upload(a), *db = upload(b), *dc = upload(std::vector<float>(n));
  tessel_tensor args[] = {tensor(da, TESSEL_DTYPE_F32, {n}),
                          tensor(db, TESSEL_DTYPE_F32, {n}),
                          tensor(dc, TESSEL_DTYPE_F32, {n})};
  void *stream = nullptr;
  ASSERT_EQ(cu.cuStreamCreate(&stream, 0), 0);
  ASSERT_TRUE(succeeds(tessel_kernel_launch(vadd, args, 3, stream)));
  ASSERT_EQ(cu.cuStreamSynchronize(stream), 0);
  std::vector<float> c = download(dc, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(c[i], a[i] + b[i]) << "element " << i;

  // Again on the default stream, into a fresh output.
  void *dd = upload(std::vector<float>(n, -1.0f));
  args[2] = tensor(dd, TESSEL_DTYPE_F32, {n});
  ASSERT_TRUE(succeeds(tessel_kernel_launch(vadd, args, 3, nullptr)));
  std::vector<float> d = download(dd, n); // synchronous: waits for the kernel
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(d[i], a[i] + b[i]) << "element " << i;
  cu.cuStreamDestroy(stream);
}

TEST_F(CudaSmoke, LargeDynamicSharedMemory) {
  bundle::Kernel copy = ptxKernel("shared_copy", "tessel_test_shared_copy");
  copy.args.erase(copy.args.begin()); // x, y: f32[N]
  copy.args[0].name = "x";
  copy.args[1].name = "y";
  copy.sharedBytes = kSharedCopyBytes;
  BundlePtr bundle = loadOrFail(device.get(), pack({copy}));
  ASSERT_TRUE(bundle);
  const int64_t n = 4097;
  std::vector<float> x(n);
  std::iota(x.begin(), x.end(), 1.0f);
  void *dx = upload(x), *dy = upload(std::vector<float>(n));
  tessel_tensor args[] = {tensor(dx, TESSEL_DTYPE_F32, {n}),
                          tensor(dy, TESSEL_DTYPE_F32, {n})};
  ASSERT_TRUE(succeeds(tessel_kernel_launch(
      tessel_bundle_kernel_at(bundle.get(), 0), args, 2, nullptr)));
  EXPECT_EQ(download(dy, n), x);
}

TEST_F(CudaSmoke, LimitsAreCheckedBeforeLaunching) {
  bundle::Kernel wide = ptxKernel("wide", "tessel_test_vadd");
  wide.block = {2048, 1, 1};
  bundle::Kernel greedy = ptxKernel("greedy", "tessel_test_vadd");
  greedy.sharedBytes = 1024 * 1024;
  BundlePtr bundle = loadOrFail(device.get(), pack({wide, greedy}));
  ASSERT_TRUE(bundle);
  const int64_t n = 16;
  void *d = upload(std::vector<float>(n));
  tessel_tensor args[] = {tensor(d, TESSEL_DTYPE_F32, {n}),
                          tensor(d, TESSEL_DTYPE_F32, {n}),
                          tensor(d, TESSEL_DTYPE_F32, {n})};
  EXPECT_TRUE(
      failsWith(tessel_kernel_launch(tessel_bundle_kernel_at(bundle.get(), 0),
                                     args, 3, nullptr),
                TESSEL_INVALID_ARGUMENT,
                {"kernel 'wide': block x is 2048 threads; CUDA device 0 (",
                 "allows at most 1024"}));
  EXPECT_TRUE(failsWith(
      tessel_kernel_launch(tessel_bundle_kernel_at(bundle.get(), 1), args, 3,
                           nullptr),
      TESSEL_INVALID_ARGUMENT,
      {"kernel 'greedy': needs 1048576 bytes of shared memory per block",
       "allows at most"}));
}

TEST_F(CudaSmoke, BadPtxCarriesTheJitLog) {
  bundle::Kernel bad = ptxKernel("bad", "tessel_test_vadd");
  const std::string text = ".version 7.0\n.target sm_80\n.address_size 64\n"
                           "this is not ptx;\n";
  bad.binary.assign(text.begin(), text.end());
  std::vector<uint8_t> bytes = pack({bad});
  tessel_bundle raw = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_bundle_load_memory(device.get(), bytes.data(), bytes.size(), &raw),
      TESSEL_UNAVAILABLE,
      {"kernel 'bad': cannot load the sm80 binary on CUDA "
       "device 0",
       "CUDA_ERROR_INVALID_PTX", "JIT log: "}));
}

} // namespace
