//===- test/cuda_backend_test.cpp - The CUDA backend without a GPU --------===//
//
// Runs the CUDA backend against fake drivers (fake_cuda.c) loaded through
// TESSEL_CUDA_LIBRARY: driver loading errors, device open, the targets a
// compute capability runs, bundle loading by target preference, the limit
// checks and what reaches cuLaunchKernel. cuda_smoke_test.cpp runs a real
// kernel where a GPU is present.
//
//===----------------------------------------------------------------------===//

#include "fake_drivers.h"
#include "test_support.h"

#include <cstring>
#include <dlfcn.h>

using namespace tessel;
using namespace tessel::test;

namespace {

tessel_status openCuda(int ordinal, DevicePtr &out) {
  tessel_device device = nullptr;
  tessel_status status = tessel_device_open("cuda", ordinal, &device);
  out.reset(device);
  return status;
}

/// The device's targets, joined with ",".
std::string targetsOf(tessel_device device) {
  std::string out;
  for (size_t i = 0; const char *target = tessel_device_target_at(device, i);
       ++i)
    out += (i ? "," : "") + std::string(target);
  return out;
}

TEST(CudaOpen, MissingLibraryNamesThePathTried) {
  ScopedEnv library("TESSEL_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  DevicePtr device;
  EXPECT_TRUE(failsWith(
      openCuda(0, device), TESSEL_UNAVAILABLE,
      {"cannot load the CUDA driver named by TESSEL_CUDA_LIBRARY: "
       "dlopen(/nonexistent/libcuda.so.1): /nonexistent/libcuda.so.1: cannot "
       "open shared object file"}));
  EXPECT_FALSE(device);
}

TEST(CudaOpen, EveryDefaultNameIsTried) {
  ScopedEnv library("TESSEL_CUDA_LIBRARY", "");
  for (const char *name : {"libcuda.so.1", "libcuda.so"})
    if (dlopen(name, RTLD_NOW | RTLD_LOCAL)) // left loaded, like the runtime
      GTEST_SKIP() << name << " loads on this machine, so the message for a "
                   << "machine without a CUDA driver cannot be tested here";
  DevicePtr device;
  EXPECT_TRUE(failsWith(openCuda(0, device), TESSEL_UNAVAILABLE,
                        {"cannot load the CUDA driver (is the NVIDIA driver "
                         "installed?): dlopen(libcuda.so.1): ",
                         "; dlopen(libcuda.so): "}));
}

TEST(CudaOpen, MissingRequiredFunctionsAreNamed) {
  ScopedEnv library("TESSEL_CUDA_LIBRARY", TESSEL_TEST_FAKE_CUDA_INCOMPLETE);
  DevicePtr device;
  std::string expected = "the CUDA driver " TESSEL_TEST_FAKE_CUDA_INCOMPLETE
                         " lacks required functions: cuModuleGetFunction, "
                         "cuLaunchKernel (is it too old, or not a CUDA "
                         "driver?)";
  EXPECT_TRUE(
      failsWith(openCuda(0, device), TESSEL_UNAVAILABLE, {expected.c_str()}));
}

TEST(CudaOpen, OptionalFunctionsMayBeMissing) {
  ScopedEnv library("TESSEL_CUDA_LIBRARY", TESSEL_TEST_FAKE_CUDA_MINIMAL);
  DevicePtr device;
  {
    ScopedEnv init("FAKE_CUDA_INIT", "100");
    EXPECT_TRUE(failsWith(openCuda(0, device), TESSEL_UNAVAILABLE,
                          {"no NVIDIA GPU found: cuInit: CUresult 100"}));
  }
  ScopedEnv cc("FAKE_CUDA_CC", "80");
  ASSERT_TRUE(succeeds(openCuda(0, device)));
  EXPECT_STREQ(tessel_device_target(device.get()), "sm80");
}

/// Opens devices of the fake driver and resets what it recorded.
class FakeCuda : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_NE(state = resetFakeCudaState(), nullptr); }

  /// Opens device 0, failing the test if that fails.
  DevicePtr open() {
    DevicePtr device;
    EXPECT_TRUE(succeeds(openCuda(0, device)));
    return device;
  }

  ScopedEnv library{"TESSEL_CUDA_LIBRARY", TESSEL_TEST_FAKE_CUDA};
  fake_driver_state *state = nullptr;
};

TEST_F(FakeCuda, NoDevice) {
  DevicePtr device;
  {
    ScopedEnv init("FAKE_CUDA_INIT", "100");
    EXPECT_TRUE(failsWith(openCuda(0, device), TESSEL_UNAVAILABLE,
                          {"no NVIDIA GPU found: cuInit: "
                           "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable "
                           "device is detected"}));
  }
  {
    ScopedEnv init("FAKE_CUDA_INIT", "999");
    std::string expected =
        "cuInit failed (driver " TESSEL_TEST_FAKE_CUDA "): CUresult 999";
    EXPECT_TRUE(
        failsWith(openCuda(0, device), TESSEL_UNAVAILABLE, {expected.c_str()}));
  }
  ScopedEnv none("FAKE_CUDA_DEVICES", "0");
  EXPECT_TRUE(failsWith(openCuda(0, device), TESSEL_UNAVAILABLE,
                        {"no NVIDIA GPU found: the CUDA driver reports 0 "
                         "devices"}));
  EXPECT_EQ(state->retains, 0);
}

TEST_F(FakeCuda, OrdinalOutOfRange) {
  DevicePtr device;
  ScopedEnv two("FAKE_CUDA_DEVICES", "2");
  EXPECT_TRUE(failsWith(openCuda(2, device), TESSEL_NOT_FOUND,
                        {"CUDA device ordinal 2 is out of range: the driver "
                         "reports 2 devices (ordinals 0 to 1)"}));
  ASSERT_TRUE(succeeds(openCuda(1, device)));
  ScopedEnv one("FAKE_CUDA_DEVICES", "1");
  EXPECT_TRUE(failsWith(openCuda(1, device), TESSEL_NOT_FOUND,
                        {"the driver reports 1 device (ordinals 0 to 0)"}));
}

TEST_F(FakeCuda, TargetsFollowTheComputeCapability) {
  // sm_90a code runs on 9.0 only; sm_90 cubins on every 9.x.
  const std::pair<const char *, const char *> cases[] = {
      {"80", "sm80"},  {"86", "sm80"},  {"89", "sm80"},
      {"90", "sm90a,sm90,sm80"},        {"91", "sm90,sm80"},
      {"100", "sm80"}, {"120", "sm80"}};
  for (const auto &c : cases) {
    ScopedEnv cc("FAKE_CUDA_CC", c.first);
    DevicePtr device = open();
    ASSERT_TRUE(device);
    EXPECT_EQ(targetsOf(device.get()), c.second) << "compute " << c.first;
  }
  EXPECT_EQ(state->retains, 7);
  EXPECT_EQ(state->releases, 7);

  ScopedEnv old("FAKE_CUDA_CC", "75");
  DevicePtr device;
  EXPECT_TRUE(failsWith(openCuda(0, device), TESSEL_UNSUPPORTED,
                        {"CUDA device 0 (Fake GPU, sm_75) is not supported: "
                         "Tessel's kernels need compute capability 8.0 "
                         "(sm_80) or newer"}));
}

TEST_F(FakeCuda, LoadingPrefersTheFirstTarget) {
  std::vector<uint8_t> bytes =
      pack({gpuKernel("a", "sm80"), gpuKernel("a", "sm90"),
            gpuKernel("b", "sm80"), gpuKernel("c", "gfx942")});
  {
    DevicePtr device = open(); // sm_90: sm90a, sm90, then sm80
    BundlePtr bundle = loadOrFail(device.get(), bytes);
    ASSERT_EQ(tessel_bundle_kernel_count(bundle.get()), 2u);
    tessel_kernel a = tessel_bundle_kernel_at(bundle.get(), 0);
    tessel_kernel b = tessel_bundle_kernel_at(bundle.get(), 1);
    EXPECT_STREQ(tessel_kernel_name(a), "a");
    EXPECT_STREQ(tessel_kernel_target(a), "sm90");
    EXPECT_STREQ(tessel_kernel_name(b), "b");
    EXPECT_STREQ(tessel_kernel_target(b), "sm80");
    // Binaries go to the driver as C strings: the PTX case.
    EXPECT_STREQ(state->last_image, FAKE_IMAGE_PREFIX "sm80:b");
    EXPECT_EQ(state->modules_loaded, 2);
    tessel_kernel kernel = nullptr;
    EXPECT_TRUE(failsWith(
        tessel_bundle_find_kernel(bundle.get(), "c", &kernel), TESSEL_NOT_FOUND,
        {"kernel 'c' is not built for targets 'sm90a', 'sm90' or 'sm80' (the "
         "bundle has it for: gfx942)"}));
  }
  ScopedEnv ampere("FAKE_CUDA_CC", "80");
  DevicePtr device = open();
  BundlePtr bundle = loadOrFail(device.get(), bytes);
  ASSERT_EQ(tessel_bundle_kernel_count(bundle.get()), 2u);
  EXPECT_STREQ(tessel_kernel_target(tessel_bundle_kernel_at(bundle.get(), 0)),
               "sm80");
}

TEST_F(FakeCuda, PtxGetsTheNulTheDriverNeeds) {
  // 24 bytes: glibc's malloc puts the next chunk's (non-zero) size field
  // right after a 24-byte block, so an unterminated image would read on.
  bundle::Kernel k = gpuKernel("nul_terminated", "sm80");
  ASSERT_EQ(k.binary.size(), 24u);
  DevicePtr device = open();
  BundlePtr bundle = loadOrFail(device.get(), pack({k}));
  EXPECT_STREQ(state->last_image, FAKE_IMAGE_PREFIX "sm80:nul_terminated");
}

TEST_F(FakeCuda, BundleWithoutTheDevicesTargets) {
  DevicePtr device = open();
  std::vector<uint8_t> bytes = pack({gpuKernel("x", "gfx942")});
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNSUPPORTED,
                        {"bundle has no kernels for targets 'sm90a', 'sm90' "
                         "or 'sm80' (it has: gfx942)"}));
}

/// Launches `kernel` as add over `n` elements at fake device addresses.
tessel_status launchAdd(tessel_kernel kernel, int64_t n, void *stream) {
  tessel_tensor args[] = {
      tensor(reinterpret_cast<void *>(0x10000), TESSEL_DTYPE_F32, {n}),
      tensor(reinterpret_cast<void *>(0x20000), TESSEL_DTYPE_F32, {n}),
      tensor(reinterpret_cast<void *>(0x30000), TESSEL_DTYPE_F32, {n})};
  return tessel_kernel_launch(kernel, args, 3, stream);
}

TEST_F(FakeCuda, LaunchPassesGeometryStreamAndParams) {
  DevicePtr device = open();
  BundlePtr bundle = loadOrFail(device.get(), pack({gpuKernel("add", "sm80")}));
  tessel_kernel add = tessel_bundle_kernel_at(bundle.get(), 0);
  state->num_params = 4;
  void *stream = reinterpret_cast<void *>(0x5000);
  ASSERT_TRUE(succeeds(launchAdd(add, 1000, stream)));
  ASSERT_EQ(state->launches, 1);
  const fake_launch &l = state->last_launch;
  EXPECT_STREQ(l.function, "add_entry");
  EXPECT_EQ(l.grid[0], 4u); // ceildiv(1000, 256)
  EXPECT_EQ(l.grid[1], 1u);
  EXPECT_EQ(l.grid[2], 1u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.block[1], 1u);
  EXPECT_EQ(l.shared, 0u);
  EXPECT_EQ(l.stream, stream);
  EXPECT_EQ(l.params[0], 0x10000u);
  EXPECT_EQ(l.params[1], 0x20000u);
  EXPECT_EQ(l.params[2], 0x30000u);
  EXPECT_EQ(l.params[3], 1000u);
  EXPECT_NE(l.current, 0) << "launched with no context current";
  EXPECT_EQ(state->pushes, state->pops);
  // No elements, no blocks: nothing reaches the driver.
  ASSERT_TRUE(succeeds(launchAdd(add, 0, stream)));
  EXPECT_EQ(state->launches, 1);
}

TEST_F(FakeCuda, BuffersMustBe16ByteAligned) {
  DevicePtr device = open();
  BundlePtr bundle = loadOrFail(device.get(), pack({gpuKernel("add", "sm80")}));
  tessel_kernel add = tessel_bundle_kernel_at(bundle.get(), 0);
  state->num_params = 4;
  // f32-aligned (enough for the host backend) but not 16-byte aligned.
  tessel_tensor args[] = {
      tensor(reinterpret_cast<void *>(0x10000), TESSEL_DTYPE_F32, {8}),
      tensor(reinterpret_cast<void *>(0x20004), TESSEL_DTYPE_F32, {8}),
      tensor(reinterpret_cast<void *>(0x30000), TESSEL_DTYPE_F32, {8})};
  EXPECT_TRUE(failsWith(tessel_kernel_launch(add, args, 3, nullptr),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'add': arg 'b' data 0x20004 is not aligned to "
                         "16 bytes (GPU kernels access buffers in 16-byte "
                         "vectors)"}));
  EXPECT_EQ(state->launches, 0);

  // An argument the kernels read one element at a time (a block table)
  // needs only element alignment.
  bundle::Kernel elementwise = gpuKernel("add", "sm80");
  elementwise.args[1].elementwise = true;
  BundlePtr second = loadOrFail(device.get(), pack({elementwise}));
  EXPECT_TRUE(succeeds(tessel_kernel_launch(
      tessel_bundle_kernel_at(second.get(), 0), args, 3, nullptr)));
  EXPECT_EQ(state->launches, 1);
  args[1].data = reinterpret_cast<void *>(0x20002);
  EXPECT_TRUE(failsWith(
      tessel_kernel_launch(tessel_bundle_kernel_at(second.get(), 0), args, 3,
                           nullptr),
      TESSEL_INVALID_ARGUMENT,
      {"arg 'b' data 0x20002 is not aligned to 4 bytes (the size of f32)"}));
}

TEST_F(FakeCuda, LaunchErrorsAreMapped) {
  DevicePtr device = open();
  BundlePtr bundle = loadOrFail(device.get(), pack({gpuKernel("add", "sm80")}));
  tessel_kernel add = tessel_bundle_kernel_at(bundle.get(), 0);
  {
    ScopedEnv fail("FAKE_CUDA_LAUNCH", "400");
    EXPECT_TRUE(failsWith(
        launchAdd(add, 10, nullptr), TESSEL_INVALID_ARGUMENT,
        {"kernel 'add': cuLaunchKernel on CUDA device 0 (Fake GPU, sm_90) "
         "failed: CUDA_ERROR_INVALID_HANDLE (400): invalid resource handle "
         "(is the stream one of this device's?)"}));
  }
  ScopedEnv fault("FAKE_CUDA_LAUNCH", "700");
  EXPECT_TRUE(failsWith(launchAdd(add, 10, nullptr), TESSEL_UNAVAILABLE,
                        {"CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory "
                         "access was encountered"}));
}

TEST_F(FakeCuda, ContextThatCannotBeMadeCurrentIsNamed) {
  DevicePtr device = open();
  BundlePtr bundle = loadOrFail(device.get(), pack({gpuKernel("add", "sm80")}));
  tessel_kernel add = tessel_bundle_kernel_at(bundle.get(), 0);
  ScopedEnv fail("FAKE_CUDA_PUSH", "201");
  const char *why = "cannot make the context of CUDA device 0 (Fake GPU, "
                    "sm_90) current: CUresult 201";
  EXPECT_TRUE(failsWith(launchAdd(add, 10, nullptr), TESSEL_UNAVAILABLE,
                        {why}));
  std::vector<uint8_t> bytes = pack({gpuKernel("more", "sm80")});
  tessel_bundle other = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &other),
                        TESSEL_UNAVAILABLE, {why}));
  EXPECT_EQ(state->launches, 0);
}

bundle::Kernel withShared(const char *name, uint32_t bytes) {
  bundle::Kernel k = gpuKernel(name, "sm80");
  k.sharedBytes = bytes;
  return k;
}

TEST_F(FakeCuda, LargeDynamicSharedMemoryIsOptedIn) {
  DevicePtr device = open();
  BundlePtr bundle = loadOrFail(
      device.get(),
      pack({withShared("small", 40000), withShared("large", 100000)}));
  EXPECT_EQ(state->shared_opt_ins, 1);
  EXPECT_EQ(state->last_opt_in, 100000);
  ASSERT_TRUE(succeeds(
      launchAdd(tessel_bundle_kernel_at(bundle.get(), 1), 1, nullptr)));
  EXPECT_EQ(state->last_launch.shared, 100000u);

  // Static shared memory counts against the 48 KiB too.
  ScopedEnv staticShared("FAKE_CUDA_STATIC_SHARED", "10000");
  BundlePtr other =
      loadOrFail(device.get(), pack({withShared("small", 40000)}));
  EXPECT_EQ(state->shared_opt_ins, 2);
  EXPECT_EQ(state->last_opt_in, 40000);
}

TEST_F(FakeCuda, LimitsAreCheckedBeforeLaunching) {
  bundle::Kernel wide = gpuKernel("wide", "sm80");
  wide.block = {2048, 1, 1};
  bundle::Kernel many = gpuKernel("many", "sm80");
  many.block = {512, 4, 1};
  bundle::Kernel deep = gpuKernel("deep", "sm80");
  deep.block = {32, 1, 128};
  bundle::Kernel tall = gpuKernel("tall", "sm80");
  tall.grid = {bundle::Dim::constant(1), bundle::Dim::symbol(0),
               bundle::Dim::constant(1)};
  tall.gridDiv = {1, 1, 1};
  DevicePtr device = open();
  // Kernels that cannot launch here still load: the rest of the bundle
  // stays usable.
  BundlePtr bundle = loadOrFail(
      device.get(),
      pack({withShared("big_shared", 300000), wide, many, deep, tall}));
  auto kernel = [&](size_t i) {
    return tessel_bundle_kernel_at(bundle.get(), i);
  };
  EXPECT_EQ(state->shared_opt_ins, 0);
  EXPECT_TRUE(failsWith(launchAdd(kernel(0), 10, nullptr),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'big_shared': needs 300000 bytes of shared "
                         "memory per block (300000 dynamic + 0 static); CUDA "
                         "device 0 (Fake GPU, sm_90) allows at most 232448"}));
  EXPECT_TRUE(failsWith(launchAdd(kernel(1), 10, nullptr),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'wide': block x is 2048 threads; CUDA device "
                         "0 (Fake GPU, sm_90) allows at most 1024"}));
  EXPECT_TRUE(failsWith(launchAdd(kernel(2), 10, nullptr),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'many': block 512x4x1 is 2048 threads; CUDA "
                         "device 0 (Fake GPU, sm_90) allows at most 1024 "
                         "threads per block"}));
  EXPECT_TRUE(failsWith(launchAdd(kernel(3), 10, nullptr),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'deep': block z is 128 threads; CUDA device 0 "
                         "(Fake GPU, sm_90) allows at most 64"}));
  EXPECT_TRUE(failsWith(launchAdd(kernel(4), 70000, nullptr),
                        TESSEL_INVALID_ARGUMENT,
                        {"kernel 'tall': grid y is 70000 blocks; CUDA device 0 "
                         "(Fake GPU, sm_90) allows at most 65535"}));
  EXPECT_EQ(state->launches, 0);
  ASSERT_TRUE(succeeds(launchAdd(kernel(4), 65535, nullptr)));
  EXPECT_EQ(state->last_launch.grid[1], 65535u);
}

TEST_F(FakeCuda, KernelRegisterUseLowersTheThreadLimit) {
  ScopedEnv funcMax("FAKE_CUDA_FUNC_MAX_THREADS", "128");
  DevicePtr device = open();
  BundlePtr bundle =
      loadOrFail(device.get(), pack({gpuKernel("heavy", "sm80")}));
  EXPECT_TRUE(failsWith(
      launchAdd(tessel_bundle_kernel_at(bundle.get(), 0), 10, nullptr),
      TESSEL_INVALID_ARGUMENT,
      {"block 256x1x1 is 256 threads; CUDA device 0 (Fake GPU, sm_90) allows "
       "at most 128 threads per block for this kernel (1024 for the device; "
       "the kernel's register use lowers it)"}));
}

TEST_F(FakeCuda, LoadFailuresCarryTheDriverError) {
  DevicePtr device = open();
  auto loadFails = [&](bundle::Kernel k, tessel_status_code code,
                       std::initializer_list<const char *> parts) {
    // A loadable kernel first: it must be unloaded when the next one fails.
    std::vector<uint8_t> bytes = pack({gpuKernel("good", "sm80"), k});
    tessel_bundle bundle = nullptr;
    return failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                               bytes.size(), &bundle),
                     code, parts);
  };
  bundle::Kernel badPtx = gpuKernel("bad", "sm80");
  const std::string ptx = "BADPTX";
  badPtx.binary.assign(ptx.begin(), ptx.end());
  EXPECT_TRUE(loadFails(badPtx, TESSEL_UNAVAILABLE,
                        {"kernel 'bad': cannot load the sm80 binary on CUDA "
                         "device 0 (Fake GPU, sm_90): CUDA_ERROR_INVALID_PTX "
                         "(218); JIT log: ptxas fatal: fake syntax error"}));
  bundle::Kernel cubin = gpuKernel("cubin", "sm80");
  const std::string noBinary = "NOBINARY";
  cubin.binary.assign(noBinary.begin(), noBinary.end());
  EXPECT_TRUE(loadFails(cubin, TESSEL_UNAVAILABLE,
                        {"CUDA_ERROR_NO_BINARY_FOR_GPU (209) (a cubin runs "
                         "only on its own GPU generation; to run on CUDA "
                         "device 0 (Fake GPU, sm_90), the sm80 kernel must be "
                         "PTX)"}));
  bundle::Kernel noEntry = gpuKernel("no_entry", "sm80");
  noEntry.entry = "missing_entry";
  EXPECT_TRUE(loadFails(noEntry, TESSEL_CORRUPT_BUNDLE,
                        {"kernel 'no_entry': entry symbol 'missing_entry' not "
                         "found in the sm80 binary: CUDA_ERROR_NOT_FOUND "
                         "(500)"}));
  EXPECT_EQ(state->modules_loaded, 4);
  EXPECT_EQ(state->modules_unloaded, 4);
  EXPECT_EQ(state->pushes, state->pops);
}

TEST_F(FakeCuda, ReleaseUnloadsModulesThenTheContext) {
  tessel_device device = nullptr;
  ASSERT_TRUE(succeeds(tessel_device_open("cuda", 0, &device)));
  tessel_bundle bundle = nullptr;
  std::vector<uint8_t> bytes =
      pack({gpuKernel("a", "sm80"), gpuKernel("b", "sm80")});
  ASSERT_TRUE(succeeds(
      tessel_bundle_load_memory(device, bytes.data(), bytes.size(), &bundle)));
  tessel_device_release(device); // the bundle holds it
  EXPECT_EQ(state->releases, 0);
  tessel_bundle_release(bundle);
  EXPECT_EQ(state->modules_unloaded, 2);
  EXPECT_EQ(state->retains, 1);
  EXPECT_EQ(state->releases, 1);
}

} // namespace
