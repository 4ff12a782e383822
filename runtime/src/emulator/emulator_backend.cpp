//===- emulator/emulator_backend.cpp - GPU kernels run on the CPU ---------===//
//
// The devices "emu-gfx942", "emu-gfx950" and "emu-sm80" run a chip's GPU
// kernels on the CPU, lane by lane: how the AMD kernels are checked
// numerically on machines without an AMD GPU. A kernel's binary is the GPU
// kernel compiled for the host (see tessel/emulator_abi.h), an ELF shared
// object loaded like a host kernel's; the scheduler (scheduler.h) runs it
// once per work-item. Memory is host memory, as on the host backend: a
// "device pointer" is an ordinary pointer, and launches are synchronous.
//
// Everything else is the chip's: the bundle target, the launch limits and
// the compute-unit count (chip.cpp), so that bundles, limit errors and the
// dispatcher's plans are what they would be on the GPU.
//
//===----------------------------------------------------------------------===//

#include "chip.h"
#include "scheduler.h"

#include "../core/backend.h"
#include "../core/device_limits.h"
#include "../core/status.h"
#include "../host/host_object.h"

#include <cstring>

using namespace tessel;
using namespace tessel::runtime;
using namespace tessel::runtime::emulator;

namespace {

/// The kernel parameter holding the TESSEL_EMU_ABI_VERSION a kernel was
/// compiled against.
constexpr const char kAbiParam[] = "emulator_abi";

/// Refuses a kernel compiled against another emulator ABI: its records or
/// op numbers may mean something else.
tessel_status checkAbiVersion(const bundle::Kernel &kernel) {
  for (const auto &param : kernel.params) {
    if (param.first != kAbiParam)
      continue;
    if (param.second == TESSEL_EMU_ABI_VERSION)
      return nullptr;
    return makeStatusf(TESSEL_UNSUPPORTED,
                       "compiled for emulator ABI version %lld, but this "
                       "runtime implements version %d (%s = %lld)",
                       static_cast<long long>(param.second),
                       TESSEL_EMU_ABI_VERSION, kAbiParam,
                       static_cast<long long>(param.second));
  }
  return makeStatusf(TESSEL_UNSUPPORTED,
                     "has no '%s' parameter, so the emulator ABI version it "
                     "was compiled for is unknown; this runtime implements "
                     "version %d",
                     kAbiParam, TESSEL_EMU_ABI_VERSION);
}

class EmulatorBackend final : public Backend {
public:
  explicit EmulatorBackend(const EmulatedChip &chip)
      : chip(chip), targets_{chip.name} {}

  const char *name() const override { return chip.name; }
  const std::vector<std::string> &targets() const override { return targets_; }

  tessel_status loadKernel(const bundle::Kernel &kernel,
                           bundle::ByteSpan binary,
                           std::unique_ptr<LoadedKernel> &out) override {
    if (tessel_status status = checkAbiVersion(kernel))
      return status;
    return loadHostObject(kernel, binary, out);
  }

  tessel_status launch(LoadedKernel &kernel, void **params,
                       const uint32_t grid[3], const uint32_t block[3],
                       uint32_t sharedBytes, void *stream) override {
    if (stream)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "the %s backend has no streams; pass NULL", chip.name);
    std::string unlaunchable =
        checkBlockLimits(chip.limits, chip.name, block, 0, sharedBytes, 0);
    if (!unlaunchable.empty())
      return makeStatus(TESSEL_INVALID_ARGUMENT, std::move(unlaunchable));
    if (tessel_status status =
            checkGridLimits(chip.limits, chip.name, grid, block))
      return status;
    auto entry = reinterpret_cast<EmulatedEntry>(
        static_cast<HostObject &>(kernel).entry);
    return runGrid(chip, entry, params, grid, block, sharedBytes, stacks);
  }

  uint32_t computeUnits() const override { return chip.computeUnits; }

  tessel_status copyToDevice(void *dst, const void *src, size_t bytes,
                             void *stream) override {
    if (stream)
      return makeStatusf(TESSEL_INVALID_ARGUMENT,
                         "the %s backend has no streams; pass NULL", chip.name);
    std::memcpy(dst, src, bytes);
    return nullptr;
  }

private:
  const EmulatedChip &chip;
  /// A member: tessel_device_target returns it and must not allocate.
  const std::vector<std::string> targets_;
  FiberStackPool stacks;
};

tessel_status createEmulatorBackend(const EmulatedChip &chip, int ordinal,
                                    std::unique_ptr<Backend> &out) {
  if (ordinal != 0)
    return makeStatusf(TESSEL_NOT_FOUND,
                       "the %s backend has one device (ordinal 0); got "
                       "ordinal %d",
                       chip.name, ordinal);
  out = std::make_unique<EmulatorBackend>(chip);
  return nullptr;
}

} // namespace

tessel_status
tessel::runtime::createEmuGfx942Backend(int ordinal,
                                        std::unique_ptr<Backend> &out) {
  return createEmulatorBackend(kEmulatedGfx942, ordinal, out);
}

tessel_status
tessel::runtime::createEmuGfx950Backend(int ordinal,
                                        std::unique_ptr<Backend> &out) {
  return createEmulatorBackend(kEmulatedGfx950, ordinal, out);
}

tessel_status
tessel::runtime::createEmuSm80Backend(int ordinal,
                                      std::unique_ptr<Backend> &out) {
  return createEmulatorBackend(kEmulatedSm80, ordinal, out);
}
