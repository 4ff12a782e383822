//===- test/hip_backend_test.cpp - The HIP backend without a GPU ----------===//
//
// Runs the HIP backend against a fake HIP runtime (fake_hip.c), and against
// a real one that finds no GPU: Debian's libamdhip64-5, which CI installs.
// No Tessel AMD kernel has run on hardware; these are the HIP tests there are.
//
//===----------------------------------------------------------------------===//

#include "fake_drivers.h"
#include "test_support.h"

#include <cstring>
#include <dlfcn.h>

using namespace tessel;
using namespace tessel::test;

namespace {

tessel_status openHip(int ordinal, DevicePtr &out) {
  tessel_device device = nullptr;
  tessel_status status = tessel_device_open("hip", ordinal, &device);
  out.reset(device);
  return status;
}

TEST(HipOpen, MissingLibraryNamesThePathTried) {
  ScopedEnv library("TESSEL_HIP_LIBRARY", "/nonexistent/libamdhip64.so");
  DevicePtr device;
  EXPECT_TRUE(failsWith(
      openHip(0, device), TESSEL_UNAVAILABLE,
      {"cannot load the HIP runtime named by TESSEL_HIP_LIBRARY: "
       "dlopen(/nonexistent/libamdhip64.so): /nonexistent/libamdhip64.so: "
       "cannot open shared object file"}));
}

// The HIP runtime of a machine without an AMD GPU: it must load, report no
// device, and leave the process alone.
TEST(HipOpen, RealRuntimeWithoutGpuReportsNoDevice) {
  ScopedEnv library("TESSEL_HIP_LIBRARY", "");
  void *probe = nullptr;
  for (const char *name : {"libamdhip64.so", "libamdhip64.so.5"})
    if (!probe)
      probe = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!probe)
    GTEST_SKIP() << "no HIP runtime here (CI installs Debian's libamdhip64-5; "
                    "apt-get install libamdhip64-5): the real-HIP test did "
                    "not run";
  // probe stays loaded, as the runtime keeps HIP loaded: unloading a HIP
  // runtime is not something it supports.
  DevicePtr device;
  tessel_status status = openHip(0, device);
  if (!status)
    GTEST_SKIP() << "an AMD GPU is present: this test is for machines "
                    "without one";
  EXPECT_TRUE(failsWith(status, TESSEL_UNAVAILABLE,
                        {"no AMD GPU found (HIP runtime libamdhip64.so",
                         "hipGetDeviceCount: hipErrorNoDevice (100)"}));
}

class FakeHip : public ::testing::Test {
protected:
  void SetUp() override {
    void *library = dlopen(TESSEL_TEST_FAKE_HIP, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library, nullptr) << dlerror();
    auto getState = reinterpret_cast<fake_driver_state *(*)()>(
        dlsym(library, "fake_hip_state"));
    ASSERT_NE(getState, nullptr);
    state = getState();
    std::memset(state, 0, sizeof *state);
  }

  DevicePtr open(int ordinal = 0) {
    DevicePtr device;
    EXPECT_TRUE(succeeds(openHip(ordinal, device)));
    return device;
  }

  ScopedEnv library{"TESSEL_HIP_LIBRARY", TESSEL_TEST_FAKE_HIP};
  fake_driver_state *state = nullptr;
};

TEST_F(FakeHip, NoDeviceAndOrdinalOutOfRange) {
  DevicePtr device;
  {
    ScopedEnv none("FAKE_HIP_DEVICES", "0");
    std::string expected = "no AMD GPU found (HIP runtime " TESSEL_TEST_FAKE_HIP
                           "): hipGetDeviceCount: hipErrorNoDevice (100)";
    EXPECT_TRUE(
        failsWith(openHip(0, device), TESSEL_UNAVAILABLE, {expected.c_str()}));
  }
  ScopedEnv two("FAKE_HIP_DEVICES", "2");
  EXPECT_TRUE(failsWith(openHip(5, device), TESSEL_NOT_FOUND,
                        {"HIP device ordinal 5 is out of range: HIP reports 2 "
                         "devices (ordinals 0 to 1)"}));
}

TEST_F(FakeHip, TargetIsTheProcessorWithoutFeatures) {
  {
    DevicePtr device = open(); // "gfx942:sramecc+:xnack-"
    EXPECT_STREQ(tessel_device_target(device.get()), "gfx942");
    EXPECT_EQ(tessel_device_target_at(device.get(), 1), nullptr);
  }
  {
    ScopedEnv arch("FAKE_HIP_ARCH", "gfx950");
    DevicePtr device = open();
    EXPECT_STREQ(tessel_device_target(device.get()), "gfx950");
  }
  DevicePtr device;
  {
    ScopedEnv arch("FAKE_HIP_ARCH", "gfx90a:sramecc+:xnack-");
    EXPECT_TRUE(failsWith(openHip(0, device), TESSEL_UNSUPPORTED,
                          {"HIP device 0 (Fake Instinct, gfx90a) is not "
                           "supported: Tessel builds AMD kernels for gfx942 "
                           "and gfx950 only"}));
  }
  ScopedEnv arch("FAKE_HIP_ARCH", "");
  EXPECT_TRUE(failsWith(openHip(0, device), TESSEL_UNSUPPORTED,
                        {"(Fake Instinct, unknown architecture)"}));
}

/// Launches `kernel` as add over `n` elements at fake device addresses.
tessel_status launchAdd(tessel_kernel kernel, int64_t n, void *stream) {
  tessel_tensor args[] = {
      tensor(reinterpret_cast<void *>(0x10000), TESSEL_DTYPE_F32, {n}),
      tensor(reinterpret_cast<void *>(0x20000), TESSEL_DTYPE_F32, {n}),
      tensor(reinterpret_cast<void *>(0x30000), TESSEL_DTYPE_F32, {n})};
  return tessel_kernel_launch(kernel, args, 3, stream);
}

TEST_F(FakeHip, LoadsAndLaunchesOnItsOwnDevice) {
  ScopedEnv two("FAKE_HIP_DEVICES", "2");
  DevicePtr device = open(1);
  BundlePtr bundle =
      loadOrFail(device.get(),
                 pack({gpuKernel("add", "sm80"), gpuKernel("add", "gfx942")}));
  ASSERT_EQ(tessel_bundle_kernel_count(bundle.get()), 1u);
  tessel_kernel add = tessel_bundle_kernel_at(bundle.get(), 0);
  EXPECT_STREQ(tessel_kernel_target(add), "gfx942");
  EXPECT_STREQ(state->last_image, FAKE_IMAGE_PREFIX "gfx942:add");
  EXPECT_EQ(state->current_device, 0) << "the caller's device was not restored";

  state->num_params = 4;
  void *stream = reinterpret_cast<void *>(0x7000);
  ASSERT_TRUE(succeeds(launchAdd(add, 300, stream)));
  const fake_launch &l = state->last_launch;
  EXPECT_EQ(l.current, 1) << "launched on the wrong device";
  EXPECT_EQ(state->current_device, 0);
  EXPECT_STREQ(l.function, "add_entry");
  EXPECT_EQ(l.grid[0], 2u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.stream, stream);
  EXPECT_EQ(l.params[0], 0x10000u);
  EXPECT_EQ(l.params[3], 300u);
  bundle.reset();
  EXPECT_EQ(state->modules_unloaded, 1);
}

TEST_F(FakeHip, LimitsAreCheckedBeforeLaunching) {
  bundle::Kernel lds = gpuKernel("lds", "gfx942");
  lds.sharedBytes = 70000;
  bundle::Kernel huge = gpuKernel("huge", "gfx942");
  huge.block = {1024, 1, 1};
  huge.gridDiv = {1, 1, 1};
  DevicePtr device = open();
  BundlePtr bundle = loadOrFail(device.get(), pack({lds, huge}));
  EXPECT_TRUE(failsWith(
      launchAdd(tessel_bundle_kernel_at(bundle.get(), 0), 10, nullptr),
      TESSEL_INVALID_ARGUMENT,
      {"kernel 'lds': needs 70000 bytes of shared memory per block (70000 "
       "dynamic + 0 static); HIP device 0 (Fake Instinct, gfx942) allows at "
       "most 65536"}));
  // HSA counts the grid in work-items, in 32 bits.
  EXPECT_TRUE(failsWith(
      launchAdd(tessel_bundle_kernel_at(bundle.get(), 1), 5000000, nullptr),
      TESSEL_INVALID_ARGUMENT,
      {"kernel 'huge': grid x is 5000000 blocks of 1024 threads = 5120000000 "
       "work-items; HIP device 0 (Fake Instinct, gfx942) allows at most "
       "4294967295 per axis"}));
  EXPECT_EQ(state->launches, 0);
}

TEST_F(FakeHip, KernelAttributesAreOptional) {
  ScopedEnv fails("FAKE_HIP_FUNC_ATTR_FAILS", "1");
  DevicePtr device = open();
  BundlePtr bundle =
      loadOrFail(device.get(), pack({gpuKernel("add", "gfx942")}));
  EXPECT_TRUE(succeeds(
      launchAdd(tessel_bundle_kernel_at(bundle.get(), 0), 10, nullptr)));
  EXPECT_EQ(state->launches, 1);
}

TEST_F(FakeHip, LoadAndLaunchFailures) {
  DevicePtr device = open();
  bundle::Kernel bad = gpuKernel("bad", "gfx942");
  bad.binary = {'E', 'L', 'F', 0};
  std::vector<uint8_t> bytes = pack({bad});
  tessel_bundle raw = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_bundle_load_memory(device.get(), bytes.data(), bytes.size(), &raw),
      TESSEL_UNAVAILABLE,
      {"kernel 'bad': cannot load the gfx942 code object on "
       "HIP device 0 (Fake Instinct, gfx942): "
       "hipErrorInvalidImage (200)"}));
  bundle::Kernel noEntry = gpuKernel("no_entry", "gfx942");
  noEntry.entry = "missing_entry";
  bytes = pack({noEntry});
  EXPECT_TRUE(failsWith(
      tessel_bundle_load_memory(device.get(), bytes.data(), bytes.size(), &raw),
      TESSEL_CORRUPT_BUNDLE,
      {"entry symbol 'missing_entry' not found in the gfx942 "
       "code object: hipErrorNotFound (500)"}));
  EXPECT_EQ(state->modules_unloaded, state->modules_loaded);

  BundlePtr bundle =
      loadOrFail(device.get(), pack({gpuKernel("add", "gfx942")}));
  ScopedEnv fail("FAKE_HIP_LAUNCH", "400");
  EXPECT_TRUE(failsWith(
      launchAdd(tessel_bundle_kernel_at(bundle.get(), 0), 10, nullptr),
      TESSEL_INVALID_ARGUMENT,
      {"kernel 'add': hipModuleLaunchKernel on HIP device 0 (Fake Instinct, "
       "gfx942) failed: hipErrorInvalidHandle (400) (is the stream one of "
       "this device's?)"}));
}

} // namespace
