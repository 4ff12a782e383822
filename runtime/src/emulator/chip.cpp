//===- emulator/chip.cpp - The emulated chips' numbers --------------------===//
//
// Where each number comes from:
//  - Threads per block: 1024 on both vendors (AMD: the ISA's workgroup
//    limit, HSA_ISA_INFO_WORKGROUP_MAX_SIZE; NVIDIA: the CUDA C++
//    Programming Guide, "Technical Specifications per Compute Capability").
//  - Shared memory per block: LDS of 64 KiB on gfx942 and 160 KiB on gfx950
//    (LLVM's AMDGPU processor definitions, AddressableLocalMemorySize65536
//    and ...163840; CDNA3 and CDNA4 ISA guides); 163 KiB on sm_80 with the
//    opt-in the CUDA backend performs (the Programming Guide's table, and
//    what an A100 reports as cudaDevAttrMaxSharedMemoryPerBlockOptin).
//  - Grid: sm_80's 2^31 - 1 x 65535 x 65535 blocks (the same table). AMD
//    dispatch packets count the grid in 32-bit work-items per axis, the
//    limit the HIP backend checks too.
//  - Compute units: MI300X 304 CUs, MI355X 256 CUs, A100 108 SMs.
//
//===----------------------------------------------------------------------===//

#include "chip.h"

namespace tessel::runtime::emulator {

namespace {

constexpr DeviceLimits amdLimits(uint32_t ldsBytes) {
  DeviceLimits limits;
  limits.maxThreadsPerBlock = 1024;
  limits.maxBlock[0] = limits.maxBlock[1] = limits.maxBlock[2] = 1024;
  limits.maxGrid[0] = limits.maxGrid[1] = limits.maxGrid[2] = UINT32_MAX;
  limits.maxSharedPerBlock = ldsBytes;
  limits.maxWorkItemsPerAxis = UINT32_MAX;
  return limits;
}

constexpr DeviceLimits sm80Limits() {
  DeviceLimits limits;
  limits.maxThreadsPerBlock = 1024;
  limits.maxBlock[0] = limits.maxBlock[1] = 1024;
  limits.maxBlock[2] = 64;
  limits.maxGrid[0] = 2147483647u;
  limits.maxGrid[1] = limits.maxGrid[2] = 65535;
  limits.maxSharedPerBlock = 163 * 1024;
  return limits;
}

} // namespace

const EmulatedChip kEmulatedGfx942 = {
    "emu-gfx942", "gfx942 (MI300X)",   Vendor::Amd, 64, 304,
    false,        amdLimits(64 * 1024)};
const EmulatedChip kEmulatedGfx950 = {
    "emu-gfx950", "gfx950 (MI355X)",    Vendor::Amd, 64, 256,
    true,         amdLimits(160 * 1024)};
const EmulatedChip kEmulatedSm80 = {
    "emu-sm80", "sm_80 (A100)", Vendor::Nvidia, 32, 108, false, sm80Limits()};

} // namespace tessel::runtime::emulator
