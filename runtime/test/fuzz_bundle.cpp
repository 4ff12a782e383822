//===- test/fuzz_bundle.cpp - libFuzzer target for the bundle reader ------===//
//
// parseBundle must never read outside its input, crash, or accept something
// the writer would refuse. For every accepted input this target reads every
// field, then checks the round trip: what was parsed serializes, and parses
// back to the same kernels (skipped when the binaries, which records may
// share, would add up to more than kMaxRoundTripBinaries). Each input is tried as is and with its checksum
// fixed up, so that mutations reach the checks behind the checksum.
//
//===----------------------------------------------------------------------===//

#include "tessel/bundle.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace tessel::bundle;

namespace {

/// Folds every field into a value the compiler cannot drop, so that each is
/// really read (and checked by ASan).
uint64_t touch(const Kernel &k, const uint8_t *data) {
  uint64_t h = k.name.size() + k.op.size() + k.target.size() + k.entry.size();
  h += static_cast<uint64_t>(k.dtype) + k.sharedBytes;
  auto dim = [&h](const Dim &d) {
    h = h * 31 + static_cast<uint64_t>(d.sym) + static_cast<uint64_t>(d.mul) +
        static_cast<uint64_t>(d.add);
  };
  for (const Arg &arg : k.args) {
    h = h * 31 + arg.name.size() + arg.dtype + arg.isOutput;
    for (const Dim &d : arg.dims)
      dim(d);
  }
  for (const std::string &symbol : k.symbols)
    h = h * 31 + symbol.size() + static_cast<uint8_t>(symbol[0]);
  for (const auto &param : k.params)
    h = h * 31 + param.first.size() + static_cast<uint64_t>(param.second);
  for (size_t axis = 0; axis < 3; ++axis) {
    dim(k.grid[axis]);
    h = h * 31 + k.gridDiv[axis] + k.block[axis];
  }
  // The ends of the binary are enough for ASan to check its bounds; every
  // byte would cost kernels x file size on inputs whose records share one
  // range.
  ByteSpan binary = binaryBytes(k, data);
  h = h * 31 + binary.data[0] + binary.data[binary.size - 1];
  return h;
}

/// Round trips copy each binary; inputs whose records share a large range
/// would make that kernels x file size.
constexpr uint64_t kMaxRoundTripBinaries = 64 << 20;

/// Copies each binary into Kernel::binary, as the writer takes them.
void copyBinaries(std::vector<Kernel> &kernels, const uint8_t *data) {
  for (Kernel &k : kernels) {
    ByteSpan binary = binaryBytes(k, data);
    k.binary.assign(binary.data, binary.data + binary.size);
    k.binaryOffset = k.binarySize = 0;
  }
}

/// Parses `data`; if it is accepted, reads it all and checks the round trip.
void check(const uint8_t *data, size_t size) {
  std::vector<Kernel> kernels;
  if (!parseBundle(data, size, kernels).empty())
    return;
  volatile uint64_t sink = 0;
  uint64_t binaries = 0;
  for (const Kernel &k : kernels) {
    sink = sink + touch(k, data);
    binaries += k.binarySize;
  }
  if (binaries > kMaxRoundTripBinaries)
    return;
  copyBinaries(kernels, data);

  std::vector<uint8_t> bytes;
  if (!serializeBundle(kernels, bytes).empty())
    __builtin_trap(); // the reader accepted what the writer refuses
  std::vector<Kernel> again;
  if (!parseBundle(bytes.data(), bytes.size(), again).empty())
    __builtin_trap(); // the writer wrote what the reader refuses
  copyBinaries(again, bytes.data());
  if (again != kernels)
    __builtin_trap(); // the round trip lost or changed something
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(data, size);
  // Almost every mutation breaks the checksum, which would hide the checks
  // behind it from the fuzzer; so parse a copy whose checksum is made right.
  if (size >= sizeof(tessel_bundle_header)) {
    std::vector<uint8_t> fixed(data, data + size);
    uint32_t crc = bundleChecksum(fixed.data(), fixed.size());
    std::memcpy(fixed.data() + offsetof(tessel_bundle_header, crc32), &crc,
                sizeof crc);
    check(fixed.data(), fixed.size());
  }
  return 0;
}
