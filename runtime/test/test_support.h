//===- test/test_support.h - Helpers for the runtime tests ------*- C++ -*-===//
//
// Kernels of the test shared object described as bundle::Kernel values,
// RAII owners for runtime handles, assertions on statuses (code AND message),
// and byte-level patching of bundles for the reader's negative tests.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_TEST_SUPPORT_H
#define TESSEL_RUNTIME_TEST_SUPPORT_H

#include "tessel/bundle.hpp"
#include "tessel/emulator_abi.h"
#include "tessel/runtime.h"

#include "fake_drivers.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace tessel::test {

//===-- Kernels ----------------------------------------------------------===//

/// The bytes of host_kernels.c built as a shared object.
const std::vector<uint8_t> &hostKernelsObject();

/// add: c = a + b; a, b, c: f32[N].
bundle::Kernel addKernel();
/// sum_pairs: y[i] = x[2i] + x[2i+1]; x: f32[2*N], y: f32[N].
bundle::Kernel sumPairsKernel();
/// row_sum: y[r] = sum_c x[r, c]; x: i32[R, 4], y: i64[R].
bundle::Kernel rowSumKernel();

/// Serializes `kernels`, failing the test if the writer refuses them.
std::vector<uint8_t> pack(const std::vector<bundle::Kernel> &kernels);

/// A kernel with a fake binary, for tests that never load it.
bundle::Kernel fakeKernel(const std::string &name, const std::string &target);

/// add's signature as a GPU kernel (grid ceildiv(N, 256) blocks of 256
/// threads, entry "<name>_entry") with a binary the fake drivers load:
/// FAKE_IMAGE_PREFIX "<target>:<name>", NUL-terminated for HIP only.
bundle::Kernel gpuKernel(const std::string &name, const std::string &target);

/// A grouped-matmul-shaped GPU kernel with two TMA tensor maps: a bf16[T, K],
/// b bf16[G, 256, K], offsets i32[G] (elementwise), c bf16[T, 256] (output);
/// symbols T, G, K; grid ceildiv(T, 128) blocks of 384 threads; a binary the
/// fake CUDA driver loads. Map 0 views a as {K, T} (dims {{1, 2}, {0, 1}},
/// box {64, 128}, 128B swizzle); map 1 views b as {K, G*256} (dims {{2, 3},
/// {0, 2}}, box {64, 256}, 128B swizzle).
bundle::Kernel tmaKernel(const std::string &name,
                         const std::string &target = "sm90a");

//===-- Emulated kernels -------------------------------------------------===//

/// The bytes of emu_kernels.c built as a shared object.
const std::vector<uint8_t> &emuKernelsObject();

/// A buffer argument of an emulated kernel: rank 1, `elements` long.
struct EmuBuffer {
  const char *name;
  tessel_dtype dtype;
  void *data;
  int64_t elements;
};

template <typename T> constexpr tessel_dtype dtypeOf() {
  if (sizeof(T) == 2)
    return TESSEL_DTYPE_BF16;
  if (sizeof(T) == 8)
    return TESSEL_DTYPE_I64;
  return std::is_floating_point<T>::value ? TESSEL_DTYPE_F32 : TESSEL_DTYPE_I32;
}

/// `values` as a buffer; 16-bit elements are bf16 unless `dtype` says f16.
template <typename T>
EmuBuffer emuBuffer(const char *name, std::vector<T> &values,
                    tessel_dtype dtype = dtypeOf<T>()) {
  return {name, dtype, values.data(), static_cast<int64_t>(values.size())};
}

/// One launch of an emu_kernels.c entry on an emulated device.
struct EmuLaunch {
  /// The device to open, and the kernel's target.
  std::string device = "emu-gfx942";
  std::string entry;
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {64, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<EmuBuffer> buffers;
  std::vector<std::pair<std::string, int64_t>> params = {
      {"emulator_abi", TESSEL_EMU_ABI_VERSION}};
};

/// The bundle kernel `launch` runs: its buffers' constant shapes, its
/// constant grid.
bundle::Kernel emuKernel(const EmuLaunch &launch);

/// Loads the kernel of `launch` on `device` and launches it on the
/// buffers: the first failure, or null.
tessel_status runEmu(tessel_device device, const EmuLaunch &launch);
/// The same on a newly opened launch.device.
tessel_status runEmu(const EmuLaunch &launch);

//===-- Handles and statuses ---------------------------------------------===//

struct DeviceDeleter {
  void operator()(tessel_device d) const { tessel_device_release(d); }
};
struct BundleDeleter {
  void operator()(tessel_bundle b) const { tessel_bundle_release(b); }
};
using DevicePtr = std::unique_ptr<tessel_device_t, DeviceDeleter>;
using BundlePtr = std::unique_ptr<tessel_bundle_t, BundleDeleter>;

/// Passes if `status` is success; frees it.
::testing::AssertionResult succeeds(tessel_status status);

/// Passes if `status` has `code` and its message contains every substring;
/// frees it.
::testing::AssertionResult failsWith(tessel_status status,
                                     tessel_status_code code,
                                     std::initializer_list<const char *> parts);

/// Passes if parseBundle rejects `bytes` with `kind` and a message that
/// contains every substring.
::testing::AssertionResult
parseFails(const std::vector<uint8_t> &bytes, bundle::ParseError kind,
           std::initializer_list<const char *> parts);

/// The host device; fails the test if it cannot be opened.
DevicePtr openHost();

/// Loads `bytes` on `device`; fails the test if that fails.
BundlePtr loadOrFail(tessel_device device, const std::vector<uint8_t> &bytes);

//===-- Patching bundles -------------------------------------------------===//

template <typename T> T readAt(const std::vector<uint8_t> &bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  return value;
}

/// Writes `value` at `at` and recomputes the checksum, so that the reader's
/// field checks, not its checksum, must catch the change.
template <typename T>
void patch(std::vector<uint8_t> &bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof(T));
  uint32_t crc = bundle::bundleChecksum(bytes.data(), bytes.size());
  std::memcpy(bytes.data() + offsetof(tessel_bundle_header, crc32), &crc,
              sizeof crc);
}

/// File offsets of records inside a serialized bundle.
size_t kernelAt(const std::vector<uint8_t> &bytes, size_t kernel);
size_t argAt(const std::vector<uint8_t> &bytes, size_t kernel, size_t arg);
size_t dimAt(const std::vector<uint8_t> &bytes, size_t kernel, size_t arg,
             size_t dim);
size_t paramAt(const std::vector<uint8_t> &bytes, size_t kernel, size_t param);
size_t tensorMapAt(const std::vector<uint8_t> &bytes, size_t kernel,
                   size_t map);

/// `count` kernels ("k0", "k1", ...) of `target` with fake binaries, whose
/// records are then patched to all name the whole file as their binary: the
/// reader must not copy a binary per kernel.
std::vector<uint8_t> sharedRangeBundle(size_t count,
                                       const std::string &target = "sm80");

/// The peak resident set size of this process so far, in KiB.
long peakRssKiB();

/// A tensor descriptor.
tessel_tensor tensor(void *data, tessel_dtype dtype,
                     std::initializer_list<int64_t> shape);

/// The fake CUDA driver's record of calls, zeroed; null (and a test
/// failure) if the fake cannot be loaded.
fake_driver_state *resetFakeCudaState();

//===-- Environment ------------------------------------------------------===//

/// Sets an environment variable for the scope of one test; an empty value
/// counts as unset for the runtime's variables.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name;
  std::string saved;
  bool hadValue = false;
};

} // namespace tessel::test

#endif // TESSEL_RUNTIME_TEST_SUPPORT_H
