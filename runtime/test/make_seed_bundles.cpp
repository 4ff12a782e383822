//===- test/make_seed_bundles.cpp - Seed corpus for the bundle fuzzer -----===//
//
// Writes a few valid bundles into the directory given as the only argument.
// Random bytes almost never get past the checksum; mutations of these seeds
// that fix it up (libFuzzer's CMP tracing finds the comparison) reach every
// field check of the reader.
//
//===----------------------------------------------------------------------===//

#include "tessel/bundle.hpp"

#include <cstdio>
#include <cstring>
#include <string>

using namespace tessel::bundle;

namespace {

Kernel kernel(const char *name, const char *target) {
  Kernel k;
  k.name = name;
  k.op = "tessel.decode_attention";
  k.target = target;
  k.entry = std::string(name) + "_entry";
  k.dtype = TESSEL_DTYPE_BF16;
  k.symbols = {"B", "S"};
  k.args = {{"q",
             TESSEL_DTYPE_BF16,
             false,
             {Dim::symbol(0), Dim::constant(32), Dim::constant(128)}},
            {"kv",
             TESSEL_DTYPE_BF16,
             false,
             {Dim::symbol(1, 64, 1), Dim::constant(8)}},
            {"o", TESSEL_DTYPE_F32, true, {Dim::symbol(0)}},
            {"scale", TESSEL_DTYPE_F32, false, {}}};
  k.params = {{"num_q_heads", 32}, {"head_dim", 128}};
  k.grid = {Dim::symbol(0), Dim::constant(32), Dim::symbol(1, 2, -1)};
  k.gridDiv = {1, 4, 64};
  k.block = {128, 1, 1};
  k.sharedBytes = 16384;
  k.binary = {0x7F, 'E', 'L', 'F', 2, 1, 1, 0};
  return k;
}

/// A kernel with tensor maps (sm90a), so that the fuzzer reaches the map
/// records: q viewed as {128, B*32} and kv as {8, S'}.
Kernel tmaKernel(const char *name) {
  Kernel k = kernel(name, "sm90a");
  TensorMap q, kv;
  q.arg = 0;
  q.dims = {{2, 3}, {0, 2}};
  q.box = {64, 128};
  q.swizzle = 3;
  kv.arg = 1;
  kv.dims = {{1, 2}, {0, 1}};
  kv.box = {8, 64};
  k.tensorMaps = {q, kv};
  return k;
}

/// Makes every kernel record of `bytes` name the whole file as its binary
/// (the reader must not copy a binary per record) and fixes the checksum.
void shareWholeFile(std::vector<uint8_t> &bytes) {
  tessel_bundle_header header;
  std::memcpy(&header, bytes.data(), sizeof header);
  for (uint32_t i = 0; i < header.num_kernels; ++i) {
    tessel_bundle_kernel rec;
    uint8_t *at = bytes.data() + header.kernels_offset + i * sizeof rec;
    std::memcpy(&rec, at, sizeof rec);
    rec.binary_offset = 0;
    rec.binary_size = bytes.size();
    std::memcpy(at, &rec, sizeof rec);
  }
  header.crc32 = bundleChecksum(bytes.data(), bytes.size());
  std::memcpy(bytes.data(), &header, sizeof header);
}

bool write(const std::string &path, const std::vector<Kernel> &kernels,
           bool sharedRange = false) {
  std::vector<uint8_t> bytes;
  std::string error = serializeBundle(kernels, bytes);
  if (!error.empty()) {
    std::fprintf(stderr, "tessel-bundle-seeds: %s\n", error.c_str());
    return false;
  }
  if (sharedRange)
    shareWholeFile(bytes);
  FILE *file = std::fopen(path.c_str(), "wb");
  bool ok =
      file && std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  if (file)
    ok = std::fclose(file) == 0 && ok;
  if (!ok)
    std::fprintf(stderr, "tessel-bundle-seeds: cannot write %s\n",
                 path.c_str());
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  Kernel host = kernel("decode", "host");
  host.block = {1, 1, 1};
  // 4,096 records sharing the whole ~1.5 MB file as their binary: copies
  // would take ~6 GB, far past the fuzzer's RSS limit.
  std::vector<Kernel> shared(4096, kernel("k", "sm80"));
  for (size_t i = 0; i < shared.size(); ++i)
    shared[i].name = "k" + std::to_string(i);
  bool ok = write(dir + "/multi-target.tsb",
                  {kernel("decode", "sm80"), kernel("decode", "gfx942"),
                   kernel("prefill", "sm90"), tmaKernel("prefill"),
                   host}) &&
            write(dir + "/tensor-maps.tsb", {tmaKernel("gmm")}) &&
            write(dir + "/single.tsb", {kernel("mla", "gfx950")}) &&
            write(dir + "/empty.tsb", {}) &&
            write(dir + "/shared-range.tsb", shared, /*sharedRange=*/true);
  return ok ? 0 : 1;
}
