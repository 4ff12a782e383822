//===- bundle/reader.cpp - Parse and validate bundle bytes ----------------===//
//
// The reader trusts nothing: it checks the header, the checksum, and the
// bounds of every offset, count and string before it reads through them, and
// copies every record out with memcpy (the file has no alignment guarantee
// once it sits in a caller's buffer). Counts are checked against the format's
// limits and against the file size before anything is allocated. Binaries are
// never copied, only located (Kernel::binaryOffset/binarySize): records may
// share a range, so copies could cost num_kernels x file size.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "../support/format.h"

#include <cstring>

namespace tessel::bundle {
namespace {

constexpr size_t kMagicSize = sizeof(tessel_bundle_header::magic);

/// Renders possibly binary bytes for a message: printable ASCII as is,
/// anything else as \xNN.
std::string printable(const uint8_t *bytes, size_t size) {
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    if (bytes[i] >= 0x20 && bytes[i] < 0x7F && bytes[i] != '\\')
      out += static_cast<char>(bytes[i]);
    else
      out += format("\\x%02X", bytes[i]);
  }
  return out;
}

class Reader {
public:
  Reader(const uint8_t *data, size_t size) : data(data), size(size) {}

  /// Parses the whole bundle into `out`; returns "" or the first problem.
  std::string run(std::vector<Kernel> &out);

  ParseError kind = ParseError::Corrupt;

private:
  template <typename T> T load(uint64_t offset) const {
    T value;
    std::memcpy(&value, data + offset, sizeof(T));
    return value;
  }

  /// Checks that `count` records of `recordSize` bytes at `offset` lie inside
  /// the file. Overflow-safe: offsets and counts come straight from the file.
  bool inFile(uint64_t offset, uint64_t count, uint64_t recordSize,
              const std::string &what) {
    uint64_t bytes = 0, end = 0;
    if (__builtin_mul_overflow(count, recordSize, &bytes) ||
        __builtin_add_overflow(offset, bytes, &end) || end > size) {
      error = format("%s: offset %llu + %llu x %llu bytes runs past the end "
                     "of the %zu-byte file",
                     what.c_str(), static_cast<unsigned long long>(offset),
                     static_cast<unsigned long long>(count),
                     static_cast<unsigned long long>(recordSize), size);
      return false;
    }
    return true;
  }

  /// Reads the string at `offset` in the string table into `out`.
  bool readString(uint32_t offset, std::string &out, const std::string &what) {
    if (offset >= stringsSize) {
      error = format("%s: string offset %u is outside the string table "
                     "(%llu bytes)",
                     what.c_str(), offset,
                     static_cast<unsigned long long>(stringsSize));
      return false;
    }
    const char *begin =
        reinterpret_cast<const char *>(data + stringsOffset + offset);
    size_t room = static_cast<size_t>(stringsSize - offset);
    const void *nul = std::memchr(begin, '\0', room);
    if (!nul) {
      error = format("%s: string at offset %u is not NUL-terminated within "
                     "the string table (%llu bytes)",
                     what.c_str(), offset,
                     static_cast<unsigned long long>(stringsSize));
      return false;
    }
    out.assign(begin, static_cast<const char *>(nul));
    return true;
  }

  bool fail(std::string message) {
    error = std::move(message);
    return false;
  }

  bool readHeader(tessel_bundle_header &header);
  bool readKernel(uint64_t offset, uint32_t index, Kernel &kernel);
  bool readArg(const std::string &where, uint64_t offset, Arg &arg);
  bool readTensorMap(const std::string &where, uint64_t offset,
                     TensorMap &map);

  const uint8_t *data;
  size_t size;
  uint64_t stringsOffset = 0;
  uint64_t stringsSize = 0;
  std::string error;
};

bool Reader::readHeader(tessel_bundle_header &h) {
  // Magic and version first: "this is not a bundle" and "this bundle is too
  // new" are the messages a user can act on, even for a short file.
  if (size >= kMagicSize &&
      std::memcmp(data, TESSEL_BUNDLE_MAGIC, kMagicSize) != 0)
    return fail(format("not a Tessel bundle: magic is '%s', expected '%s'",
                       printable(data, kMagicSize).c_str(),
                       TESSEL_BUNDLE_MAGIC));
  constexpr size_t versionEnd =
      offsetof(tessel_bundle_header, version) + sizeof(uint32_t);
  if (size >= versionEnd) {
    uint32_t version = load<uint32_t>(offsetof(tessel_bundle_header, version));
    if (version > TESSEL_BUNDLE_VERSION) {
      kind = ParseError::Unsupported;
      return fail(format("bundle version %u is newer than this runtime "
                         "(supports %u)",
                         version, TESSEL_BUNDLE_VERSION));
    }
    if (version == 0)
      return fail("bundle version 0 is invalid");
    if (version < TESSEL_BUNDLE_VERSION) {
      kind = ParseError::Unsupported;
      return fail(format("bundle version %u is older than this runtime's %u: "
                         "its attention kernels have the softmax scale "
                         "compiled in, where launches now pass it; recompile "
                         "it with this release's tessel-aot",
                         version, TESSEL_BUNDLE_VERSION));
    }
  }
  if (size > TESSEL_BUNDLE_MAX_SIZE)
    return fail(format("bundle is %zu bytes, more than the limit of %llu",
                       size,
                       static_cast<unsigned long long>(TESSEL_BUNDLE_MAX_SIZE)));
  if (size < sizeof(tessel_bundle_header))
    return fail(format("bundle is %zu bytes, smaller than its %zu-byte header "
                       "(truncated file)",
                       size, sizeof(tessel_bundle_header)));
  h = load<tessel_bundle_header>(0);
  if (h.header_size != sizeof(tessel_bundle_header))
    return fail(format("header_size is %u, expected %zu", h.header_size,
                       sizeof(tessel_bundle_header)));
  if (h.file_size != size)
    return fail(format("file_size is %llu but the bundle is %zu bytes (%s)",
                       static_cast<unsigned long long>(h.file_size), size,
                       h.file_size > size ? "truncated" : "trailing bytes"));
  uint32_t actual = bundleChecksum(data, size);
  if (h.crc32 != actual)
    return fail(format("checksum mismatch: header crc32 is 0x%08X, the "
                       "contents hash to 0x%08X (corrupted file)",
                       h.crc32, actual));
  if (h.kernel_record_size != sizeof(tessel_bundle_kernel))
    return fail(format("kernel_record_size is %u, expected %zu",
                       h.kernel_record_size, sizeof(tessel_bundle_kernel)));
  if (h.reserved0 != 0)
    return fail(format("header reserved0 is %u, expected 0", h.reserved0));
  if (h.num_kernels > TESSEL_BUNDLE_MAX_KERNELS)
    return fail(format("num_kernels %u exceeds the limit %u", h.num_kernels,
                       TESSEL_BUNDLE_MAX_KERNELS));
  if (!inFile(h.kernels_offset, h.num_kernels, sizeof(tessel_bundle_kernel),
              "kernel records") ||
      !inFile(h.strings_offset, h.strings_size, 1, "string table"))
    return false;
  stringsOffset = h.strings_offset;
  stringsSize = h.strings_size;
  return true;
}

bool Reader::readArg(const std::string &where, uint64_t offset, Arg &arg) {
  auto rec = load<tessel_bundle_arg>(offset);
  if (!readString(rec.name, arg.name, where + " name"))
    return false;
  std::string label = format("%s ('%s')", where.c_str(), arg.name.c_str());
  if (rec.dtype > TESSEL_DTYPE_I64)
    return fail(format("%s: dtype %u is not a valid tessel_dtype",
                       label.c_str(), rec.dtype));
  if (rec.rank > TESSEL_BUNDLE_MAX_RANK)
    return fail(format("%s: rank %u exceeds the limit %u", label.c_str(),
                       rec.rank, TESSEL_BUNDLE_MAX_RANK));
  if (rec.is_output > 1)
    return fail(format("%s: is_output is %u, expected 0 or 1", label.c_str(),
                       rec.is_output));
  if (rec.elementwise > 1)
    return fail(format("%s: elementwise is %u, expected 0 or 1",
                       label.c_str(), rec.elementwise));
  if (!inFile(rec.dims_offset, rec.rank, sizeof(tessel_bundle_dim),
              label + " dims"))
    return false;
  arg.dtype = static_cast<tessel_dtype>(rec.dtype);
  arg.isOutput = rec.is_output != 0;
  arg.elementwise = rec.elementwise != 0;
  arg.dims.resize(rec.rank);
  for (uint32_t d = 0; d < rec.rank; ++d) {
    auto dim = load<tessel_bundle_dim>(rec.dims_offset +
                                       d * sizeof(tessel_bundle_dim));
    arg.dims[d] = Dim{dim.sym, dim.mul, dim.add};
  }
  return true;
}

bool Reader::readTensorMap(const std::string &where, uint64_t offset,
                           TensorMap &map) {
  auto rec = load<tessel_bundle_tensor_map>(offset);
  const char *w = where.c_str();
  if (rec.rank < 1 || rec.rank > TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK)
    return fail(format("%s: rank is %u; it must be 1 to %u", w, rec.rank,
                       TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK));
  if (rec.reserved0 != 0 || rec.reserved1 != 0)
    return fail(format("%s: reserved0 is %u and reserved1 is %u, expected 0",
                       w, rec.reserved0, rec.reserved1));
  // Entries past the rank are padding, zero like every reserved field.
  for (uint32_t i = rec.rank; i < TESSEL_BUNDLE_MAX_TENSOR_MAP_RANK; ++i)
    if (rec.dim_first[i] || rec.dim_last[i] || rec.box[i])
      return fail(format("%s: entry %u of dim_first/dim_last/box is past the "
                         "rank %u but not zero",
                         w, i, rec.rank));
  map.arg = rec.arg;
  map.swizzle = rec.swizzle;
  map.dims.resize(rec.rank);
  map.box.resize(rec.rank);
  for (uint32_t i = 0; i < rec.rank; ++i) {
    map.dims[i] = {rec.dim_first[i], rec.dim_last[i]};
    map.box[i] = rec.box[i];
  }
  return true;
}

bool Reader::readKernel(uint64_t offset, uint32_t index, Kernel &k) {
  auto rec = load<tessel_bundle_kernel>(offset);
  std::string where = format("kernel %u", index);
  if (!readString(rec.name, k.name, where + " name") ||
      !readString(rec.op, k.op, where + " op") ||
      !readString(rec.target, k.target, where + " target") ||
      !readString(rec.entry, k.entry, where + " entry"))
    return false;
  where = format("kernel %u ('%s')", index, k.name.c_str());
  const char *w = where.c_str();
  if (rec.dtype > TESSEL_DTYPE_I64)
    return fail(
        format("%s: dtype %u is not a valid tessel_dtype", w, rec.dtype));
  k.dtype = static_cast<tessel_dtype>(rec.dtype);
  if (rec.num_args > TESSEL_BUNDLE_MAX_ARGS)
    return fail(format("%s: num_args %u exceeds the limit %u", w, rec.num_args,
                       TESSEL_BUNDLE_MAX_ARGS));
  if (rec.num_symbols > TESSEL_BUNDLE_MAX_SYMBOLS)
    return fail(format("%s: num_symbols %u exceeds the limit %u", w,
                       rec.num_symbols, TESSEL_BUNDLE_MAX_SYMBOLS));
  if (rec.num_params > TESSEL_BUNDLE_MAX_PARAMS)
    return fail(format("%s: num_params %u exceeds the limit %u", w,
                       rec.num_params, TESSEL_BUNDLE_MAX_PARAMS));
  if (rec.num_tensor_maps > TESSEL_BUNDLE_MAX_TENSOR_MAPS)
    return fail(format("%s: num_tensor_maps %u exceeds the limit %u", w,
                       rec.num_tensor_maps, TESSEL_BUNDLE_MAX_TENSOR_MAPS));
  if (!inFile(rec.args_offset, rec.num_args, sizeof(tessel_bundle_arg),
              where + " args") ||
      !inFile(rec.symbols_offset, rec.num_symbols, sizeof(uint32_t),
              where + " symbols") ||
      !inFile(rec.params_offset, rec.num_params, sizeof(tessel_bundle_param),
              where + " params") ||
      !inFile(rec.tensor_maps_offset, rec.num_tensor_maps,
              sizeof(tessel_bundle_tensor_map), where + " tensor maps") ||
      !inFile(rec.binary_offset, rec.binary_size, 1, where + " binary"))
    return false;
  if (rec.binary_size == 0)
    return fail(format("%s: binary is empty", w));

  k.args.resize(rec.num_args);
  for (uint32_t i = 0; i < rec.num_args; ++i)
    if (!readArg(format("%s arg %u", w, i),
                 rec.args_offset + i * sizeof(tessel_bundle_arg), k.args[i]))
      return false;

  k.symbols.resize(rec.num_symbols);
  for (uint32_t i = 0; i < rec.num_symbols; ++i) {
    auto name = load<uint32_t>(rec.symbols_offset + i * sizeof(uint32_t));
    if (!readString(name, k.symbols[i], format("%s symbol %u", w, i)))
      return false;
  }

  k.params.resize(rec.num_params);
  for (uint32_t i = 0; i < rec.num_params; ++i) {
    auto param = load<tessel_bundle_param>(rec.params_offset +
                                           i * sizeof(tessel_bundle_param));
    std::string what = format("%s param %u", w, i);
    if (!readString(param.key, k.params[i].first, what + " key"))
      return false;
    if (param.reserved0 != 0)
      return fail(format("%s: reserved0 is %u, expected 0", what.c_str(),
                         param.reserved0));
    k.params[i].second = param.value;
  }

  k.tensorMaps.resize(rec.num_tensor_maps);
  for (uint32_t i = 0; i < rec.num_tensor_maps; ++i)
    if (!readTensorMap(format("%s tensor map %u", w, i),
                       rec.tensor_maps_offset +
                           i * sizeof(tessel_bundle_tensor_map),
                       k.tensorMaps[i]))
      return false;

  for (size_t axis = 0; axis < 3; ++axis) {
    k.grid[axis] =
        Dim{rec.grid[axis].sym, rec.grid[axis].mul, rec.grid[axis].add};
    k.gridDiv[axis] = rec.grid_div[axis];
    k.block[axis] = rec.block[axis];
  }
  k.sharedBytes = rec.shared_bytes;
  k.binaryOffset = rec.binary_offset;
  k.binarySize = rec.binary_size;
  return true;
}

std::string Reader::run(std::vector<Kernel> &out) {
  tessel_bundle_header header;
  if (!readHeader(header))
    return error;
  std::vector<Kernel> kernels(header.num_kernels);
  for (uint32_t i = 0; i < header.num_kernels; ++i) {
    if (!readKernel(header.kernels_offset + i * sizeof(tessel_bundle_kernel), i,
                    kernels[i]))
      return error;
    std::string invalid = detail::validateKernel(kernels[i], i, kind);
    if (!invalid.empty())
      return invalid;
  }
  std::string invalid = detail::validateKernelSet(kernels);
  if (!invalid.empty())
    return invalid;
  kind = ParseError::None;
  out = std::move(kernels);
  return std::string();
}

} // namespace

std::string parseBundle(const uint8_t *data, size_t size,
                        std::vector<Kernel> &out, ParseError *kind) {
  Reader reader(data, size);
  // A null pointer with size 0 is an empty buffer, reported as truncated.
  std::string error = data || size == 0
                          ? reader.run(out)
                          : std::string("bundle data is a null pointer");
  if (kind)
    *kind = error.empty() ? ParseError::None : reader.kind;
  return error;
}

} // namespace tessel::bundle
