//===- bundle/targets.cpp - The targets a bundle may name -----------------===//
//
// One table: the reader's check and the error messages both come from it, so
// adding a target is a one-line change here (plus its backend).
//
//===----------------------------------------------------------------------===//

#include "internal.h"

namespace tessel::bundle {
namespace {

constexpr const char *kKnownTargets[] = {
    "host",   // x86-64 / aarch64 shared object, reference semantics
    "sm80",   // NVIDIA Ampere cubin (runs on every sm80+ GPU)
    "sm90",   // NVIDIA Hopper cubin
    "sm90a",  // NVIDIA Hopper with wgmma/TMA/setmaxnreg: sm_90a cubin or PTX
              // (runs on compute capability 9.0 only)
    "gfx942", // AMD CDNA3 hsaco (MI300X / MI325X)
    "gfx950", // AMD CDNA4 hsaco (MI355X)
    // The kernels of gfx942, gfx950 and sm80 compiled for the host, to run
    // lane by lane on the emulator (tessel/emulator_abi.h)
    "emu-gfx942",
    "emu-gfx950",
    "emu-sm80",
};

} // namespace

bool isKnownTarget(const std::string &target) {
  for (const char *known : kKnownTargets)
    if (target == known)
      return true;
  return false;
}

const char *knownTargetList() {
  static const std::string list = [] {
    std::string out;
    for (const char *known : kKnownTargets) {
      if (!out.empty())
        out += ", ";
      out += known;
    }
    return out;
  }();
  return list.c_str();
}

} // namespace tessel::bundle
