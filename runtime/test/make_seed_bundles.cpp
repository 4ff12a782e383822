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
            {"pos", TESSEL_DTYPE_I64, false, {}}};
  k.params = {{"num_q_heads", 32}, {"head_dim", 128}};
  k.grid = {Dim::symbol(0), Dim::constant(32), Dim::symbol(1, 2, -1)};
  k.gridDiv = {1, 4, 64};
  k.block = {128, 1, 1};
  k.sharedBytes = 16384;
  k.binary = {0x7F, 'E', 'L', 'F', 2, 1, 1, 0};
  return k;
}

bool write(const std::string &path, const std::vector<Kernel> &kernels) {
  std::vector<uint8_t> bytes;
  std::string error = serializeBundle(kernels, bytes);
  if (!error.empty()) {
    std::fprintf(stderr, "tessel-bundle-seeds: %s\n", error.c_str());
    return false;
  }
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
  bool ok = write(dir + "/multi-target.tkb",
                  {kernel("decode", "sm80"), kernel("decode", "gfx942"),
                   kernel("prefill", "sm90"), host}) &&
            write(dir + "/single.tkb", {kernel("mla", "gfx950")}) &&
            write(dir + "/empty.tkb", {});
  return ok ? 0 : 1;
}
