//===- tessel/bundle.hpp - Kernel bundle model, reader and writer -*- C++ -*-===//
//
// The in-memory model of a kernel bundle and the two functions that turn it
// into bytes and back. tessel-aot writes bundles with `serializeBundle`; the
// runtime reads them with `parseBundle`, which validates everything it reads.
// Plain C++17, no LLVM: the runtime is built on machines without LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_BUNDLE_HPP
#define TESSEL_BUNDLE_HPP

#include "tessel/bundle_format.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessel::bundle {

/// A symbolic size; see tessel_bundle_dim.
struct Dim {
  int32_t sym = -1;
  int32_t mul = 1;
  int64_t add = 0;

  static Dim constant(int64_t value) { return {-1, 1, value}; }
  static Dim symbol(int32_t sym, int32_t mul = 1, int64_t add = 0) {
    return {sym, mul, add};
  }
  bool isConstant() const { return sym < 0; }
  bool operator==(const Dim &o) const {
    return sym == o.sym && mul == o.mul && add == o.add;
  }
  bool operator!=(const Dim &o) const { return !(*this == o); }
};

struct Arg {
  std::string name;
  tessel_dtype dtype = TESSEL_DTYPE_INVALID;
  bool isOutput = false;
  std::vector<Dim> dims;
  /// Read one element at a time (see tessel_bundle_arg::elementwise).
  bool elementwise = false;

  /// Rank 0: a scalar passed by value, not a buffer.
  bool isScalar() const { return dims.empty(); }

  bool operator==(const Arg &o) const {
    return name == o.name && dtype == o.dtype && isOutput == o.isOutput &&
           dims == o.dims && elementwise == o.elementwise;
  }
  bool operator!=(const Arg &o) const { return !(*this == o); }
};

/// Bytes that belong to someone else: a view into bundle bytes.
struct ByteSpan {
  const uint8_t *data = nullptr;
  size_t size = 0;
};

/// A TMA tensor map a kernel takes (sm90a): the runtime encodes it at each
/// launch (cuTensorMapEncodeTiled) from the address and shape of buffer
/// argument `arg` and passes it by value, after the shape symbols.
struct TensorMap {
  /// The buffer argument it views (dense row-major).
  uint32_t arg = 0;
  /// The map's dims, innermost first: dim i is the product of the
  /// argument's dims [first, last). The ranges tile the argument's dims from
  /// the last back to the first: dims[0].second == rank, dims[i].first ==
  /// dims[i + 1].second, dims.back().first == 0. E.g. b [G, N, K] seen as
  /// {K, G*N}: {{2, 3}, {0, 2}}.
  std::vector<std::pair<uint32_t, uint32_t>> dims;
  /// The box (the tile one copy moves) per map dim, innermost first.
  std::vector<uint32_t> box;
  /// CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B.
  uint8_t swizzle = 0;

  bool operator==(const TensorMap &o) const {
    return arg == o.arg && dims == o.dims && box == o.box &&
           swizzle == o.swizzle;
  }
  bool operator!=(const TensorMap &o) const { return !(*this == o); }
};

struct Kernel {
  std::string name;
  std::string op;
  std::string target;
  std::string entry;
  tessel_dtype dtype = TESSEL_DTYPE_INVALID;
  std::vector<Arg> args;
  std::vector<std::string> symbols;
  std::vector<std::pair<std::string, int64_t>> params;
  std::array<Dim, 3> grid = {Dim::constant(1), Dim::constant(1),
                             Dim::constant(1)};
  std::array<uint32_t, 3> gridDiv = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t sharedBytes = 0;
  /// TMA tensor maps, in parameter order (none but for sm90a kernels).
  std::vector<TensorMap> tensorMaps;
  /// The binary, as serializeBundle's input. parseBundle leaves it empty and
  /// sets binaryOffset/binarySize instead: the writer stores identical
  /// binaries once, so many records may name one range (or a hostile file
  /// the whole file), and a copy per kernel could cost kernels x file size.
  std::vector<uint8_t> binary;
  /// Where parseBundle found the binary: [binaryOffset, binaryOffset +
  /// binarySize) of the bytes it parsed. Read it with binaryBytes().
  uint64_t binaryOffset = 0;
  uint64_t binarySize = 0;

  bool operator==(const Kernel &o) const {
    return name == o.name && op == o.op && target == o.target &&
           entry == o.entry && dtype == o.dtype && args == o.args &&
           symbols == o.symbols && params == o.params && grid == o.grid &&
           gridDiv == o.gridDiv && block == o.block &&
           sharedBytes == o.sharedBytes && tensorMaps == o.tensorMaps &&
           binary == o.binary &&
           binaryOffset == o.binaryOffset && binarySize == o.binarySize;
  }
  bool operator!=(const Kernel &o) const { return !(*this == o); }
};

/// "f32", "f16", "bf16", "i32", "i64"; "invalid" for TESSEL_DTYPE_INVALID and
/// "unknown" for anything else.
const char *dtypeName(tessel_dtype dtype);
/// Bytes per element; 0 for TESSEL_DTYPE_INVALID and anything unknown.
size_t dtypeSize(tessel_dtype dtype);

/// Targets a bundle may name. Anything else is rejected by the reader.
bool isKnownTarget(const std::string &target);
/// Comma-separated list of the known targets, for error messages.
const char *knownTargetList();

/// CRC-32 (IEEE 802.3, the zlib one) of `size` bytes.
uint32_t crc32(const uint8_t *data, size_t size);

/// The value the header's crc32 field must hold for this file: the CRC-32 of
/// all `size` bytes with the crc32 field read as zero. `size` must be at least
/// sizeof(tessel_bundle_header).
uint32_t bundleChecksum(const uint8_t *file, size_t size);

/// Why parseBundle rejected its input.
enum class ParseError {
  None,        ///< It did not: the bundle is valid.
  Corrupt,     ///< The bytes are not a valid bundle.
  Unsupported, ///< Well-formed, but newer than this code (version, target).
};

/// Serializes kernels into bundle bytes. Returns "" on success, or a message
/// naming the first kernel that cannot be written (duplicate name, too many
/// args, ...).
std::string serializeBundle(const std::vector<Kernel> &kernels,
                            std::vector<uint8_t> &out);

/// The binary of a kernel that parseBundle read from `bundle` (the same
/// bytes, still alive): a view, never a copy.
inline ByteSpan binaryBytes(const Kernel &kernel, const uint8_t *bundle) {
  return {bundle + kernel.binaryOffset, static_cast<size_t>(kernel.binarySize)};
}

/// Parses and validates bundle bytes. Returns "" on success, or a message that
/// names what is wrong (bad magic, unsupported version, checksum mismatch, an
/// offset or size out of bounds, unknown target, duplicate kernel name, ...).
/// Never reads outside [data, data + size), and never copies a binary: the
/// kernels refer to them by offset (see binaryBytes), so `data` must outlive
/// any use of those. Bundles over TESSEL_BUNDLE_MAX_SIZE are rejected.
/// `kind`, when given, receives why it failed.
std::string parseBundle(const uint8_t *data, size_t size,
                        std::vector<Kernel> &out, ParseError *kind = nullptr);

} // namespace tessel::bundle

#endif // TESSEL_BUNDLE_HPP
