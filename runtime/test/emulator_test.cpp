//===- test/emulator_test.cpp - Emulated devices: scheduling and errors ---===//
//
// The emulated devices as a user sees them: what they report, how they lay
// out work-items and blocks, barriers, and every error a kernel or a launch
// can run into, each asserted on its code and on the message naming the
// constraint and the place. The ops' semantics are in emulator_ops_test.cpp.
//
//===----------------------------------------------------------------------===//

#include "test_support.h"

#include "support/format.h"
#include "tessel/emulator_abi.h"

#include <chrono>
#include <cstdint>

using namespace tessel;
using namespace tessel::test;

namespace {

constexpr int32_t kPoison = -1; // four 0xff bytes

DevicePtr openEmu(const char *name) {
  tessel_device device = nullptr;
  EXPECT_TRUE(succeeds(tessel_device_open(name, 0, &device)));
  return DevicePtr(device);
}

//===-- Devices -----------------------------------------------------------===//

TEST(EmulatedDevice, RunsItsOwnTargetOnly) {
  for (const char *name : {"emu-gfx942", "emu-gfx950", "emu-sm80"}) {
    DevicePtr device = openEmu(name);
    ASSERT_TRUE(device);
    EXPECT_STREQ(tessel_device_target(device.get()), name);
    EXPECT_STREQ(tessel_device_target_at(device.get(), 0), name);
    EXPECT_EQ(tessel_device_target_at(device.get(), 1), nullptr);
  }
}

TEST(EmulatedDevice, HasOneOrdinal) {
  tessel_device device = nullptr;
  EXPECT_TRUE(failsWith(tessel_device_open("emu-sm80", 1, &device),
                        TESSEL_NOT_FOUND,
                        {"the emu-sm80 backend has one device (ordinal 0); "
                         "got ordinal 1"}));
}

TEST(EmulatedDevice, UnknownBackendListsTheEmulators) {
  tessel_device device = nullptr;
  EXPECT_TRUE(failsWith(tessel_device_open("emu-gfx90a", 0, &device),
                        TESSEL_NOT_FOUND,
                        {"emu-gfx942, emu-gfx950, emu-sm80"}));
}

TEST(EmulatedDevice, DoesNotRunTheChipsOwnBinaries) {
  // A gfx942 code object is no host shared object: the bundle has no
  // kernel for the emulator's target.
  DevicePtr device = openEmu("emu-gfx942");
  std::vector<uint8_t> bytes = pack({fakeKernel("k", "gfx942")});
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNSUPPORTED,
                        {"bundle has no kernels for target 'emu-gfx942' (it "
                         "has: gfx942)"}));
}

//===-- Work-items and blocks ---------------------------------------------===//

/// The ids kernel over `grid` x `block`: every work-item's ids in order.
void expectIds(const char *device, uint32_t waveSize,
               std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block) {
  const uint32_t threads = block[0] * block[1] * block[2];
  const uint32_t blocks = grid[0] * grid[1] * grid[2];
  std::vector<int32_t> out(9 * threads * blocks, -7), order(1 + blocks, -7);
  order[0] = 0;
  EmuLaunch launch;
  launch.device = device;
  launch.entry = "ids";
  launch.grid = grid;
  launch.block = block;
  launch.buffers = {emuBuffer("out", out), emuBuffer("order", order)};
  ASSERT_TRUE(succeeds(runEmu(launch)));

  // Blocks run one after the other, x fastest.
  EXPECT_EQ(order[0], int32_t(blocks));
  for (uint32_t b = 0; b < blocks; ++b)
    EXPECT_EQ(order[1 + b], int32_t(b));
  size_t record = 0;
  for (uint32_t bz = 0; bz < grid[2]; ++bz)
    for (uint32_t by = 0; by < grid[1]; ++by)
      for (uint32_t bx = 0; bx < grid[0]; ++bx)
        for (uint32_t z = 0; z < block[2]; ++z)
          for (uint32_t y = 0; y < block[1]; ++y)
            for (uint32_t x = 0; x < block[0]; ++x, ++record) {
              const int32_t *r = &out[9 * record];
              const uint32_t linear = x + block[0] * (y + block[1] * z);
              std::vector<int32_t> actual(r, r + 9);
              std::vector<int32_t> expected = {int32_t(x),
                                               int32_t(y),
                                               int32_t(z),
                                               int32_t(bx),
                                               int32_t(by),
                                               int32_t(bz),
                                               int32_t(linear % waveSize),
                                               int32_t(waveSize),
                                               0};
              ASSERT_EQ(actual, expected) << "record " << record;
            }
}

TEST(EmulatedLaunch, LaysOutWorkItemsAndBlocks) {
  // 96 threads: one full wave of 64 and a partial one; 3 warps of 32.
  expectIds("emu-gfx942", 64, {3, 2, 1}, {8, 4, 3});
  expectIds("emu-gfx950", 64, {1, 1, 2}, {1, 1, 1});
  expectIds("emu-sm80", 32, {2, 1, 2}, {8, 4, 3});
}

/// Runs the barrier kernel; lanes with lane_id % exitModulus == exitLane
/// return at once (no exits for exitModulus 0).
void expectBarrierOrder(const char *device, uint32_t waveSize,
                        int32_t exitModulus, int32_t exitLane) {
  const uint32_t n = 128, blocks = 3;
  std::vector<int32_t> config = {exitModulus, exitLane};
  std::vector<int32_t> out(3 * n * blocks, -7);
  EmuLaunch launch;
  launch.device = device;
  launch.entry = "barrier";
  launch.grid = {blocks, 1, 1};
  launch.block = {n, 1, 1};
  launch.sharedBytes = 4 * n;
  launch.buffers = {emuBuffer("config", config), emuBuffer("out", out)};
  ASSERT_TRUE(succeeds(runEmu(launch)));
  auto exited = [&](uint32_t t) {
    return exitModulus && int32_t(t % waveSize % exitModulus) == exitLane;
  };
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t t = 0; t < n; ++t) {
      const int32_t *r = &out[3 * (b * n + t)];
      if (exited(t)) {
        EXPECT_EQ(r[0], -7) << "an exited thread wrote, thread " << t;
        continue;
      }
      const uint32_t right = (t + 1) % n, left = (t + n - 1) % n;
      // Every block starts from poisoned shared memory, whatever the
      // previous block left.
      EXPECT_EQ(r[0], kPoison) << "block " << b << " thread " << t;
      EXPECT_EQ(r[1], exited(right) ? kPoison : int32_t(1000 * b + right))
          << "block " << b << " thread " << t;
      EXPECT_EQ(r[2], exited(left) ? kPoison : -int32_t(left))
          << "block " << b << " thread " << t;
    }
}

TEST(EmulatedLaunch, BarriersOrderSharedMemory) {
  expectBarrierOrder("emu-gfx942", 64, 0, 0);
  expectBarrierOrder("emu-sm80", 32, 0, 0);
}

/// Runs the wave_barrier kernel: what each thread read of its neighbour.
std::vector<int32_t> waveNeighbours(bool meet) {
  const uint32_t n = 128, blocks = 2;
  std::vector<int32_t> config = {meet ? 1 : 0};
  std::vector<int32_t> out(n * blocks, -7);
  EmuLaunch launch;
  launch.device = "emu-gfx942";
  launch.entry = "wave_barrier";
  launch.grid = {blocks, 1, 1};
  launch.block = {n, 1, 1};
  launch.sharedBytes = 4 * n;
  launch.buffers = {emuBuffer("config", config), emuBuffer("out", out)};
  EXPECT_TRUE(succeeds(runEmu(launch)));
  return out;
}

TEST(EmulatedLaunch, WaveBarriersOrderAWavesSharedMemory) {
  const uint32_t n = 128, wave = 64;
  std::vector<int32_t> met = waveNeighbours(true);
  for (uint32_t b = 0; b < 2; ++b)
    for (uint32_t t = 0; t < n; ++t)
      EXPECT_EQ(met[b * n + t],
                int32_t(1000 * b + t / wave * wave + (t + 1) % wave))
          << "block " << b << " thread " << t;
  // Without it a lane runs on before the next one has written: the
  // emulator runs a wave's lanes one at a time between wave ops.
  std::vector<int32_t> alone = waveNeighbours(false);
  EXPECT_EQ(alone[0], kPoison);
}

TEST(EmulatedLaunch, ReturnedLanesDoNotCountForBarriers) {
  expectBarrierOrder("emu-gfx942", 64, 7, 3);
  expectBarrierOrder("emu-sm80", 32, 2, 0);
}

TEST(EmulatedLaunch, ManyWaveOpsRunQuickly) {
  // 4 waves x 2000 bpermutes, each lane passing its value to the lane below:
  // a sanity check of the cost of switching lanes, which CI pays for every
  // interpreted kernel.
  const uint32_t threads = 256, rounds = 2000;
  std::vector<int32_t> config = {int32_t(rounds)};
  std::vector<uint32_t> out(threads);
  EmuLaunch launch;
  launch.entry = "rotate";
  launch.block = {threads, 1, 1};
  launch.buffers = {emuBuffer("config", config), emuBuffer("out", out)};
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(succeeds(runEmu(launch)));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (uint32_t t = 0; t < threads; ++t)
    ASSERT_EQ(out[t], t / 64 * 64 + (t + rounds) % 64) << "thread " << t;
  RecordProperty("lane_op_calls_per_second",
                 std::to_string(int64_t(rounds * threads / seconds)));
  EXPECT_LT(seconds, 10.0);
}

//===-- Kernels that break the rules --------------------------------------===//

EmuLaunch splitLaunch(std::vector<int32_t> &config, uint32_t threads) {
  EmuLaunch launch;
  launch.entry = "split";
  launch.block = {threads, 1, 1};
  launch.buffers = {emuBuffer("config", config)};
  return launch;
}

TEST(EmulatedErrors, DivergentWaveOp) {
  std::vector<int32_t> config = {32, TESSEL_EMU_DS_BPERMUTE,
                                 TESSEL_EMU_DS_SWIZZLE, 0};
  EXPECT_TRUE(failsWith(
      runEmu(splitLaunch(config, 64)), TESSEL_INTERNAL,
      {"kernel 'split': emu-gfx942: block (0, 0, 0), wave 0: divergence: "
       "lanes 0-31 at ds_bpermute, lanes 32-63 at ds_swizzle (every live "
       "lane of a wave must reach the same wave op)"}));
}

TEST(EmulatedErrors, BarrierDeadlock) {
  // Wave 0 is split between the barrier and a wave op; wave 1 waits at the
  // barrier.
  std::vector<int32_t> config = {32, TESSEL_EMU_BARRIER, TESSEL_EMU_DS_BPERMUTE,
                                 1};
  EXPECT_TRUE(failsWith(
      runEmu(splitLaunch(config, 128)), TESSEL_INTERNAL,
      {"emu-gfx942: block (0, 0, 0): deadlock: wave 0: lanes 0-31 at "
       "barrier, lanes 32-63 at ds_bpermute (a wave op waits for every live "
       "lane of its wave, a barrier for every live lane of the block)"}));
  config = {5, TESSEL_EMU_SHFL_IDX, TESSEL_EMU_BARRIER, 0};
  EmuLaunch warps = splitLaunch(config, 40);
  warps.device = "emu-sm80";
  EXPECT_TRUE(failsWith(runEmu(warps), TESSEL_INTERNAL,
                        {"deadlock: wave 0: lanes 0-4 at shfl.sync.idx, lanes "
                         "5-31 at barrier; wave 1: lanes 0-4 at "
                         "shfl.sync.idx, lanes 5-7 at barrier ("}));
}

TEST(EmulatedErrors, UnknownOpIndex) {
  std::vector<int32_t> config = {32, 40, 40, 0};
  EXPECT_TRUE(failsWith(runEmu(splitLaunch(config, 64)), TESSEL_INTERNAL,
                        {"block (0, 0, 0), thread (0, 0, 0) (wave 0, lane 0): "
                         "unknown op index 40 (emulator ABI 7 has ops 0 to "
                         "26)"}));
}

TEST(EmulatedErrors, OpOfAnotherChip) {
  std::vector<int32_t> config = {32, TESSEL_EMU_DS_SWIZZLE,
                                 TESSEL_EMU_DS_SWIZZLE, 0};
  EmuLaunch launch = splitLaunch(config, 32);
  launch.device = "emu-sm80";
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_INTERNAL,
                        {"thread (0, 0, 0) (wave 0, lane 0): ds_swizzle: not "
                         "an op of sm_80 (A100)"}));
  config = {32, TESSEL_EMU_SHFL_BFLY, TESSEL_EMU_SHFL_BFLY, 0};
  EXPECT_TRUE(failsWith(runEmu(splitLaunch(config, 64)), TESSEL_INTERNAL,
                        {"shfl.sync.bfly: not an op of gfx942 (MI300X)"}));
  config = {32, TESSEL_EMU_PERMLANE32_SWAP, TESSEL_EMU_PERMLANE32_SWAP, 0};
  EXPECT_TRUE(failsWith(runEmu(splitLaunch(config, 64)), TESSEL_INTERNAL,
                        {"v_permlane32_swap: not an op of gfx942 (MI300X)"}));
}

TEST(EmulatedErrors, StopTheLaunchAndNameTheBlock) {
  // Block 2's thread 3 calls an unknown op: blocks 0 and 1 ran, block 2
  // stopped before its barrier, block 3 never started.
  std::vector<int32_t> config = {2, 3, 40};
  std::vector<int32_t> out(4, 0);
  EmuLaunch launch;
  launch.entry = "fail_late";
  launch.grid = {4, 1, 1};
  launch.block = {100, 1, 1};
  launch.buffers = {emuBuffer("config", config), emuBuffer("out", out)};
  DevicePtr device = openEmu("emu-gfx942");
  EXPECT_TRUE(failsWith(runEmu(device.get(), launch), TESSEL_INTERNAL,
                        {"block (2, 0, 0), thread (3, 0, 0) (wave 0, lane "
                         "3): unknown op index 40"}));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 1, 0, 0}));

  // A wave op that only one lane reaches, in block 1 of 2.
  config = {1, 70, TESSEL_EMU_DS_BPERMUTE};
  out.assign(4, 0);
  EXPECT_TRUE(failsWith(runEmu(device.get(), launch), TESSEL_INTERNAL,
                        {"block (1, 0, 0): deadlock: wave 1: lanes 0-5 at "
                         "barrier, lane 6 at ds_bpermute, lanes 7-35 at "
                         "barrier"}));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 0, 0, 0}));

  // The device and its stacks are fine afterwards.
  config = {-1, -1, 0};
  out.assign(4, 0);
  EXPECT_TRUE(succeeds(runEmu(device.get(), launch)));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 1, 1, 1}));
}

//===-- Loading and launch limits -----------------------------------------===//

EmuLaunch idsLaunch(std::vector<int32_t> &out, std::vector<int32_t> &order) {
  EmuLaunch launch;
  launch.entry = "ids";
  launch.buffers = {emuBuffer("out", out), emuBuffer("order", order)};
  return launch;
}

TEST(EmulatedLoad, RefusesAnotherAbiVersion) {
  std::vector<int32_t> out(9 * 64), order(2);
  EmuLaunch launch = idsLaunch(out, order);
  // Version 1 had no DPP op: its kernels would call a table of other ops.
  launch.params = {{"emulator_abi", 1}};
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_UNSUPPORTED,
                        {"kernel 'ids': compiled for emulator ABI version 1, "
                         "but this runtime implements version 7"}));
  launch.params = {{"x86_64_level", 1}};
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_UNSUPPORTED,
                        {"kernel 'ids': has no 'emulator_abi' parameter",
                         "this runtime implements version 7"}));
}

TEST(EmulatedLoad, RespectsTheX86Level) {
  std::vector<int32_t> out(9 * 64), order(2);
  EmuLaunch launch = idsLaunch(out, order);
  launch.params.push_back({"x86_64_level", 9});
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_UNSUPPORTED,
                        {"compiled for x86-64 level 9"}));
}

TEST(EmulatedLaunch, ChecksTheBlockAgainstTheChip) {
  std::vector<int32_t> out(9 * 1025), order(2);
  EmuLaunch launch = idsLaunch(out, order);
  launch.block = {1025, 1, 1};
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_INVALID_ARGUMENT,
                        {"block x is 1025 threads; emu-gfx942 allows at most "
                         "1024"}));
  launch.block = {64, 4, 5};
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_INVALID_ARGUMENT,
                        {"block 64x4x5 is 1280 threads; emu-gfx942 allows at "
                         "most 1024 threads per block"}));
  launch.device = "emu-sm80";
  launch.block = {1, 1, 65};
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_INVALID_ARGUMENT,
                        {"block z is 65 threads; emu-sm80 allows at most 64"}));
  // The largest block runs.
  launch.block = {1024, 1, 1};
  out.assign(9 * 1024, 0);
  order.assign(2, 0);
  launch.buffers = {emuBuffer("out", out), emuBuffer("order", order)};
  EXPECT_TRUE(succeeds(runEmu(launch)));
  EXPECT_EQ(out[9 * 1023], 1023);
  EXPECT_EQ(out[9 * 1023 + 6], 1023 % 32);
}

TEST(EmulatedLaunch, ChecksSharedMemoryAgainstTheChip) {
  struct Case {
    const char *device;
    uint32_t most;
  };
  for (Case c : {Case{"emu-gfx942", 64 * 1024}, Case{"emu-gfx950", 160 * 1024},
                 Case{"emu-sm80", 163 * 1024}}) {
    std::vector<int32_t> out(9 * 64), order(2);
    EmuLaunch launch = idsLaunch(out, order);
    launch.device = c.device;
    launch.sharedBytes = c.most + 1;
    std::string message =
        format("needs %u bytes of shared memory per block (%u dynamic + 0 "
               "static); %s allows at most %u",
               c.most + 1, c.most + 1, c.device, c.most);
    EXPECT_TRUE(
        failsWith(runEmu(launch), TESSEL_INVALID_ARGUMENT, {message.c_str()}));
    launch.sharedBytes = c.most;
    EXPECT_TRUE(succeeds(runEmu(launch))) << c.device;
  }
}

TEST(EmulatedLaunch, ChecksTheGridAgainstTheChip) {
  std::vector<int32_t> out(9 * 64), order(2);
  EmuLaunch launch = idsLaunch(out, order);
  launch.device = "emu-sm80";
  launch.grid = {1, 65536, 1};
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_INVALID_ARGUMENT,
                        {"grid y is 65536 blocks; emu-sm80 allows at most "
                         "65535"}));
}

TEST(EmulatedLaunch, HasNoStreams) {
  std::vector<int32_t> out(9 * 64), order(2);
  EmuLaunch launch = idsLaunch(out, order);
  launch.device = "emu-gfx950";
  DevicePtr device = openEmu("emu-gfx950");
  std::vector<uint8_t> bytes = pack({emuKernel(launch)});
  BundlePtr bundle = loadOrFail(device.get(), bytes);
  ASSERT_TRUE(bundle);
  tessel_tensor args[] = {tensor(out.data(), TESSEL_DTYPE_I32, {9 * 64}),
                          tensor(order.data(), TESSEL_DTYPE_I32, {2})};
  int stream = 0;
  EXPECT_TRUE(
      failsWith(tessel_kernel_launch(tessel_bundle_kernel_at(bundle.get(), 0),
                                     args, 2, &stream),
                TESSEL_INVALID_ARGUMENT,
                {"the emu-gfx950 backend has no streams; pass NULL"}));
}

TEST(EmulatedLaunch, ChecksGpuAlignment) {
  // Interpreted kernels get the GPU kernels' argument checks: `out` starts
  // 4 bytes into an allocation.
  std::vector<int32_t> storage(9 * 64 + 1), order(2);
  EmuLaunch launch;
  launch.entry = "ids";
  launch.buffers = {{"out", TESSEL_DTYPE_I32, storage.data() + 1, 9 * 64},
                    emuBuffer("order", order)};
  EXPECT_TRUE(failsWith(
      runEmu(launch), TESSEL_INVALID_ARGUMENT,
      {"kernel 'ids': arg 'out' data", "is not aligned to 16 bytes"}));
}

} // namespace
