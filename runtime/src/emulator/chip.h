//===- emulator/chip.h - The GPUs the emulator stands in for ----*- C++ -*-===//
//
// An emulated device behaves like one chip: its wave size, which ops exist
// on it, its launch limits and its compute-unit count (the dispatcher sizes
// split-KV work by it, so a run plans as it would on the real GPU).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_EMULATOR_CHIP_H
#define TESSEL_RUNTIME_EMULATOR_CHIP_H

#include "../core/device_limits.h"

#include <cstdint>

namespace tessel::runtime::emulator {

enum class Vendor { Amd, Nvidia };

struct EmulatedChip {
  /// The backend and bundle target name: "emu-gfx942".
  const char *name;
  /// For messages: "gfx942 (MI300X)".
  const char *description;
  Vendor vendor;
  uint32_t waveSize;
  uint32_t computeUnits;
  /// gfx950's additions: v_permlane{16,32}_swap and the MFMAs of twice the
  /// K (32x32x16, 16x16x32).
  bool hasGfx950Ops;
  DeviceLimits limits;
};

/// The three emulated chips.
extern const EmulatedChip kEmulatedGfx942;
extern const EmulatedChip kEmulatedGfx950;
extern const EmulatedChip kEmulatedSm80;

} // namespace tessel::runtime::emulator

#endif // TESSEL_RUNTIME_EMULATOR_CHIP_H
