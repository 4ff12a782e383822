//===- bundle/writer.cpp - Serialize kernels into bundle bytes ------------===//
//
// Layout, in file order (docs/bundle-format.md has the picture):
//   header | kernel records | per kernel: args, their dims, symbol names
//   (padded to 8 bytes), params, tensor maps | string table | binaries
//   (64-byte aligned)
// The output is a pure function of the input: the buffer starts zeroed, so
// padding and reserved fields are zero, and strings and identical binaries
// are stored once, in first-use order.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "../support/format.h"

#include <cstring>
#include <map>

namespace tessel::bundle {
namespace {

/// Binaries start on this boundary so a loader may hand them to a driver
/// straight from a mapped file.
constexpr uint64_t kBinaryAlign = 64;

uint64_t alignTo(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

/// Interns NUL-terminated strings, each stored once.
class StringTable {
public:
  uint32_t add(const std::string &s) {
    auto it = offsets.find(s);
    if (it != offsets.end())
      return it->second;
    auto offset = static_cast<uint32_t>(blob.size());
    blob.append(s).push_back('\0');
    offsets.emplace(s, offset);
    return offset;
  }
  const std::string &bytes() const { return blob; }

private:
  std::map<std::string, uint32_t> offsets;
  std::string blob;
};

/// Orders binaries by content, so identical ones share one copy.
struct BinaryLess {
  bool operator()(const std::vector<uint8_t> *a,
                  const std::vector<uint8_t> *b) const {
    if (a->size() != b->size())
      return a->size() < b->size();
    return std::memcmp(a->data(), b->data(), a->size()) < 0;
  }
};

tessel_bundle_dim encodeDim(const Dim &dim) {
  tessel_bundle_dim out{};
  out.sym = dim.sym;
  out.mul = dim.mul;
  out.add = dim.add;
  return out;
}

class Writer {
public:
  explicit Writer(std::vector<uint8_t> &out) : out(out) {}

  /// Returns "" or why the kernels cannot be written.
  std::string write(const std::vector<Kernel> &kernels);

private:
  template <typename T> void put(uint64_t offset, const T &value) {
    std::memcpy(out.data() + offset, &value, sizeof(T));
  }

  std::vector<uint8_t> &out;
};

/// Bytes of the per-kernel arrays (args, dims, symbols, params, maps).
uint64_t arraysSize(const Kernel &k) {
  uint64_t bytes = k.args.size() * sizeof(tessel_bundle_arg);
  for (const Arg &arg : k.args)
    bytes += arg.dims.size() * sizeof(tessel_bundle_dim);
  bytes += alignTo(k.symbols.size() * sizeof(uint32_t), 8);
  bytes += k.params.size() * sizeof(tessel_bundle_param);
  bytes += k.tensorMaps.size() * sizeof(tessel_bundle_tensor_map);
  return bytes;
}

/// The record of a validated map: its vectors fit the fixed arrays.
tessel_bundle_tensor_map encodeTensorMap(const TensorMap &map) {
  tessel_bundle_tensor_map out{};
  out.arg = map.arg;
  out.rank = static_cast<uint8_t>(map.dims.size());
  out.swizzle = map.swizzle;
  for (size_t i = 0; i < map.dims.size(); ++i) {
    out.dim_first[i] = map.dims[i].first;
    out.dim_last[i] = map.dims[i].second;
    out.box[i] = map.box[i];
  }
  return out;
}

std::string Writer::write(const std::vector<Kernel> &kernels) {
  // Intern every string first: the string table's size fixes where the
  // binaries go.
  StringTable strings;
  for (const Kernel &k : kernels) {
    strings.add(k.name);
    strings.add(k.op);
    strings.add(k.target);
    strings.add(k.entry);
    for (const Arg &arg : k.args)
      strings.add(arg.name);
    for (const std::string &symbol : k.symbols)
      strings.add(symbol);
    for (const auto &param : k.params)
      strings.add(param.first);
  }
  // String offsets are 32-bit in the format.
  if (strings.bytes().size() > UINT32_MAX)
    return "the string table exceeds 4 GiB";

  const uint64_t kernelsOffset = sizeof(tessel_bundle_header);
  uint64_t cursor =
      kernelsOffset + kernels.size() * sizeof(tessel_bundle_kernel);
  for (const Kernel &k : kernels)
    cursor += arraysSize(k);
  const uint64_t stringsOffset = cursor;
  cursor += strings.bytes().size();

  std::map<const std::vector<uint8_t> *, uint64_t, BinaryLess> binaryOffsets;
  for (const Kernel &k : kernels) {
    auto inserted = binaryOffsets.emplace(&k.binary, 0);
    if (inserted.second) {
      cursor = alignTo(cursor, kBinaryAlign);
      inserted.first->second = cursor;
      cursor += k.binary.size();
    }
  }
  // Checked before the buffer exists: the reader rejects larger bundles.
  if (cursor > TESSEL_BUNDLE_MAX_SIZE)
    return format("the bundle would be %llu bytes, more than the limit of "
                  "%llu",
                  static_cast<unsigned long long>(cursor),
                  static_cast<unsigned long long>(TESSEL_BUNDLE_MAX_SIZE));
  out.assign(cursor, 0);

  tessel_bundle_header header{};
  std::memcpy(header.magic, TESSEL_BUNDLE_MAGIC, sizeof(header.magic));
  header.version = TESSEL_BUNDLE_VERSION;
  header.header_size = sizeof(tessel_bundle_header);
  header.file_size = cursor;
  header.num_kernels = static_cast<uint32_t>(kernels.size());
  header.kernel_record_size = sizeof(tessel_bundle_kernel);
  header.kernels_offset = kernelsOffset;
  header.strings_offset = stringsOffset;
  header.strings_size = strings.bytes().size();

  uint64_t arrays =
      kernelsOffset + kernels.size() * sizeof(tessel_bundle_kernel);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Kernel &k = kernels[i];
    tessel_bundle_kernel rec{};
    rec.name = strings.add(k.name);
    rec.op = strings.add(k.op);
    rec.target = strings.add(k.target);
    rec.entry = strings.add(k.entry);
    rec.dtype = k.dtype;
    rec.num_args = static_cast<uint32_t>(k.args.size());
    rec.num_symbols = static_cast<uint32_t>(k.symbols.size());
    rec.num_params = static_cast<uint32_t>(k.params.size());

    rec.args_offset = arrays;
    uint64_t dimsCursor = arrays + k.args.size() * sizeof(tessel_bundle_arg);
    for (size_t a = 0; a < k.args.size(); ++a) {
      const Arg &arg = k.args[a];
      tessel_bundle_arg argRec{};
      argRec.name = strings.add(arg.name);
      argRec.dtype = static_cast<uint8_t>(arg.dtype);
      argRec.rank = static_cast<uint8_t>(arg.dims.size());
      argRec.is_output = arg.isOutput ? 1 : 0;
      argRec.elementwise = arg.elementwise ? 1 : 0;
      argRec.dims_offset = dimsCursor;
      put(rec.args_offset + a * sizeof(tessel_bundle_arg), argRec);
      for (const Dim &dim : arg.dims) {
        put(dimsCursor, encodeDim(dim));
        dimsCursor += sizeof(tessel_bundle_dim);
      }
    }
    rec.symbols_offset = dimsCursor;
    for (size_t s = 0; s < k.symbols.size(); ++s)
      put(rec.symbols_offset + s * sizeof(uint32_t), strings.add(k.symbols[s]));
    rec.params_offset =
        rec.symbols_offset + alignTo(k.symbols.size() * sizeof(uint32_t), 8);
    for (size_t p = 0; p < k.params.size(); ++p) {
      tessel_bundle_param paramRec{};
      paramRec.key = strings.add(k.params[p].first);
      paramRec.value = k.params[p].second;
      put(rec.params_offset + p * sizeof(tessel_bundle_param), paramRec);
    }
    rec.num_tensor_maps = static_cast<uint32_t>(k.tensorMaps.size());
    rec.tensor_maps_offset =
        rec.params_offset + k.params.size() * sizeof(tessel_bundle_param);
    for (size_t m = 0; m < k.tensorMaps.size(); ++m)
      put(rec.tensor_maps_offset + m * sizeof(tessel_bundle_tensor_map),
          encodeTensorMap(k.tensorMaps[m]));
    arrays = rec.tensor_maps_offset +
             k.tensorMaps.size() * sizeof(tessel_bundle_tensor_map);

    for (size_t axis = 0; axis < 3; ++axis) {
      rec.grid[axis] = encodeDim(k.grid[axis]);
      rec.grid_div[axis] = k.gridDiv[axis];
      rec.block[axis] = k.block[axis];
    }
    rec.shared_bytes = k.sharedBytes;
    rec.binary_offset = binaryOffsets.find(&k.binary)->second;
    rec.binary_size = k.binary.size();
    std::memcpy(out.data() + rec.binary_offset, k.binary.data(),
                k.binary.size());
    put(kernelsOffset + i * sizeof(tessel_bundle_kernel), rec);
  }
  std::memcpy(out.data() + stringsOffset, strings.bytes().data(),
              strings.bytes().size());

  put(0, header);
  header.crc32 = bundleChecksum(out.data(), out.size());
  put(0, header);
  return std::string();
}

} // namespace

std::string serializeBundle(const std::vector<Kernel> &kernels,
                            std::vector<uint8_t> &out) {
  for (size_t i = 0; i < kernels.size(); ++i) {
    ParseError kind =
        ParseError::None; // unused: the writer has no "unsupported"
    std::string error = detail::validateKernel(kernels[i], i, kind);
    if (!error.empty())
      return error;
    // The writer's own rule: it writes `binary` (the reader rejects an empty
    // binary on its side, where the size comes from the record).
    if (kernels[i].binary.empty())
      return detail::kernelLabel(kernels[i], i) + ": binary is empty";
  }
  std::string error = detail::validateKernelSet(kernels);
  if (!error.empty())
    return error;
  return Writer(out).write(kernels);
}

} // namespace tessel::bundle
