//===- test/bundle_format_test.cpp - Bundle writer and reader tests -------===//
//
// The writer's output round-trips; the reader rejects every malformed input
// with a message that names the field. Negative tests patch one field of a
// valid bundle and recompute the checksum, so that the field check itself is
// what catches the change.
//
//===----------------------------------------------------------------------===//

#include "test_support.h"

using namespace tessel;
using namespace tessel::test;
using bundle::ParseError;

namespace {

/// Kernels that exercise every field of the format.
std::vector<bundle::Kernel> richKernels() {
  bundle::Kernel decode = fakeKernel("decode", "sm80");
  decode.symbols = {"B", "S"};
  decode.args = {
      {"q",
       TESSEL_DTYPE_BF16,
       false,
       {bundle::Dim::symbol(0), bundle::Dim::constant(32),
        bundle::Dim::constant(128)}},
      {"k",
       TESSEL_DTYPE_BF16,
       false,
       {bundle::Dim::symbol(1, 64, 3), bundle::Dim::constant(8)}},
      {"lens", TESSEL_DTYPE_I32, false, {bundle::Dim::symbol(0)},
       /*elementwise=*/true},
      {"scale", TESSEL_DTYPE_F32, false, {}},
      {"o", TESSEL_DTYPE_F16, true, {bundle::Dim::symbol(0, 1, -1)}},
  };
  decode.params = {{"num_q_heads", 32}, {"head_dim", 128}, {"neg", -7}};
  decode.grid = {bundle::Dim::symbol(0), bundle::Dim::constant(32),
                 bundle::Dim::symbol(1, 2, 5)};
  decode.gridDiv = {1, 4, 64};
  decode.block = {256, 2, 1};
  decode.sharedBytes = 49152;
  decode.binary.assign(1000, 0x5A);

  bundle::Kernel decodeAmd = decode;
  decodeAmd.target = "gfx942";
  decodeAmd.block = {512, 1, 1};
  decodeAmd.binary = {1, 2, 3};

  bundle::Kernel empty = fakeKernel("noargs", "sm90");
  empty.args.clear();
  empty.symbols.clear();
  empty.grid = {bundle::Dim::constant(7), bundle::Dim::constant(1),
                bundle::Dim::constant(1)};
  empty.dtype = TESSEL_DTYPE_INVALID;

  // Tensor maps: rank 2 over rank 2 and 3 args, 128B swizzle, and a third
  // without swizzle.
  bundle::Kernel gmm = tmaKernel("gmm");
  bundle::TensorMap c;
  c.arg = 3;
  c.dims = {{1, 2}, {0, 1}};
  c.box = {8, 1};
  gmm.tensorMaps.push_back(c);
  return {addKernel(),
          gmm,
          decode,
          decodeAmd,
          sumPairsKernel(),
          empty,
          rowSumKernel(),
          fakeKernel("other", "gfx950")};
}

/// A small all-fake bundle: cheap enough to corrupt every byte of.
std::vector<uint8_t> smallBundle() {
  bundle::Kernel second = fakeKernel("second", "gfx942");
  second.params = {{"p", 1}};
  return pack({fakeKernel("first", "sm80"), second});
}

/// Parses `bytes` and copies each binary into Kernel::binary, clearing its
/// span: the reader only locates binaries, and this makes the kernels
/// comparable with (and serializable like) the writer's input.
std::vector<bundle::Kernel> parseOrFail(const std::vector<uint8_t> &bytes) {
  std::vector<bundle::Kernel> kernels;
  EXPECT_EQ(bundle::parseBundle(bytes.data(), bytes.size(), kernels), "");
  for (bundle::Kernel &k : kernels) {
    bundle::ByteSpan binary = bundle::binaryBytes(k, bytes.data());
    k.binary.assign(binary.data, binary.data + binary.size);
    k.binaryOffset = k.binarySize = 0;
  }
  return kernels;
}

TEST(BundleFormat, Crc32MatchesTheStandardCheckValue) {
  const char *check = "123456789";
  EXPECT_EQ(bundle::crc32(reinterpret_cast<const uint8_t *>(check), 9),
            0xCBF43926u);
  EXPECT_EQ(bundle::crc32(nullptr, 0), 0u);
}

TEST(BundleFormat, RoundTripPreservesEveryField) {
  std::vector<bundle::Kernel> kernels = richKernels();
  std::vector<uint8_t> bytes = pack(kernels);
  std::vector<bundle::Kernel> parsed = parseOrFail(bytes);
  ASSERT_EQ(parsed.size(), kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i)
    EXPECT_TRUE(parsed[i] == kernels[i]) << "kernel " << i;
}

TEST(BundleFormat, WriterIsDeterministic) {
  std::vector<uint8_t> first = pack(richKernels());
  EXPECT_EQ(pack(richKernels()), first);
  // Re-serializing what was read gives the same bytes.
  EXPECT_EQ(pack(parseOrFail(first)), first);
}

TEST(BundleFormat, HeaderDescribesTheFile) {
  std::vector<uint8_t> bytes = pack(richKernels());
  auto header = readAt<tessel_bundle_header>(bytes, 0);
  EXPECT_EQ(std::memcmp(header.magic, "TESSELKB", 8), 0);
  EXPECT_EQ(header.version, TESSEL_BUNDLE_VERSION);
  EXPECT_EQ(header.header_size, sizeof(tessel_bundle_header));
  EXPECT_EQ(header.kernel_record_size, sizeof(tessel_bundle_kernel));
  EXPECT_EQ(header.file_size, bytes.size());
  EXPECT_EQ(header.num_kernels, 8u);
  EXPECT_EQ(header.reserved0, 0u);
  EXPECT_EQ(header.crc32, bundle::bundleChecksum(bytes.data(), bytes.size()));
  // The string table ends with a NUL and its strings are stored once.
  EXPECT_EQ(bytes[header.strings_offset + header.strings_size - 1], 0);
  std::string table(reinterpret_cast<const char *>(bytes.data()) +
                        header.strings_offset,
                    header.strings_size);
  const std::string decode("\0decode\0", 8);
  EXPECT_NE(table.find(decode), std::string::npos);
  EXPECT_EQ(table.find(decode), table.rfind(decode));
}

TEST(BundleFormat, IdenticalBinariesAreStoredOnce) {
  bundle::Kernel a = fakeKernel("a", "sm80"), b = fakeKernel("b", "sm80");
  a.binary.assign(4096, 7);
  b.binary = a.binary;
  std::vector<uint8_t> bytes = pack({a, b});
  EXPECT_LT(bytes.size(), 2 * a.binary.size());
  auto ra = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, 0));
  auto rb = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, 1));
  EXPECT_EQ(ra.binary_offset, rb.binary_offset);
  EXPECT_EQ(ra.binary_offset % 64, 0u);
  std::vector<bundle::Kernel> parsed = parseOrFail(bytes);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[1].binary, a.binary);
}

TEST(BundleFormat, ReaderLocatesBinariesWithoutCopying) {
  bundle::Kernel a = fakeKernel("a", "sm80"), b = fakeKernel("b", "sm80");
  a.binary.assign(4096, 7);
  b.binary = a.binary;
  std::vector<uint8_t> bytes = pack({a, b});
  auto record = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, 0));
  std::vector<bundle::Kernel> parsed;
  ASSERT_EQ(bundle::parseBundle(bytes.data(), bytes.size(), parsed), "");
  ASSERT_EQ(parsed.size(), 2u);
  for (const bundle::Kernel &k : parsed) {
    EXPECT_TRUE(k.binary.empty());
    EXPECT_EQ(k.binaryOffset, record.binary_offset);
    EXPECT_EQ(k.binarySize, 4096u);
    bundle::ByteSpan span = bundle::binaryBytes(k, bytes.data());
    EXPECT_EQ(span.data, bytes.data() + record.binary_offset);
    EXPECT_EQ(std::vector<uint8_t>(span.data, span.data + span.size),
              a.binary);
  }
}

// 65,536 records that all name the whole file as their binary: a copy per
// kernel would be 65,536 x ~11 MB. The reader must accept it (the ranges are
// in bounds) with memory bounded by the file, not by kernels x file.
TEST(BundleFormat, ManyRecordsSharingOneRangeStayCheap) {
  std::vector<uint8_t> bytes = sharedRangeBundle(TESSEL_BUNDLE_MAX_KERNELS);
  long before = peakRssKiB();
  std::vector<bundle::Kernel> parsed;
  ASSERT_EQ(bundle::parseBundle(bytes.data(), bytes.size(), parsed), "");
  ASSERT_EQ(parsed.size(), TESSEL_BUNDLE_MAX_KERNELS);
  EXPECT_EQ(parsed.back().binaryOffset, 0u);
  EXPECT_EQ(parsed.back().binarySize, bytes.size());
  // The metadata of 65,536 small kernels takes tens of MB; copies would
  // take ~700 GB.
  EXPECT_LT(peakRssKiB() - before, 512 * 1024) << "KiB of peak RSS growth";
}

TEST(BundleFormat, ReaderRefusesOversizedInput) {
  // Refused from `size` alone: only the magic and version are read, so a
  // small buffer stands in for a 4 GiB + 1 one.
  std::vector<uint8_t> bytes = pack({});
  std::vector<bundle::Kernel> kernels;
  std::string error = bundle::parseBundle(
      bytes.data(), static_cast<size_t>(TESSEL_BUNDLE_MAX_SIZE + 1), kernels);
  EXPECT_NE(error.find("bundle is 4294967297 bytes, more than the limit of "
                       "4294967296"),
            std::string::npos)
      << error;
}

TEST(BundleFormat, EmptyBundleRoundTrips) {
  std::vector<uint8_t> bytes = pack({});
  EXPECT_EQ(bytes.size(), sizeof(tessel_bundle_header));
  EXPECT_TRUE(parseOrFail(bytes).empty());
}

//===-- Writer refusals ---------------------------------------------------===//

std::string serializeError(const bundle::Kernel &kernel) {
  std::vector<uint8_t> bytes;
  return bundle::serializeBundle({kernel}, bytes);
}

TEST(BundleWriter, RefusesWhatTheReaderWouldReject) {
  bundle::Kernel k = fakeKernel("k", "sm80");
  bundle::Kernel bad = k;
  bad.target = "sm75";
  EXPECT_NE(serializeError(bad).find("unknown target 'sm75' (known: host, "
                                     "sm80, sm90, sm90a, gfx942, gfx950, "
                                     "emu-gfx942, emu-gfx950, emu-sm80)"),
            std::string::npos);
  bad = k;
  bad.name = "";
  EXPECT_NE(serializeError(bad).find("name is empty"), std::string::npos);
  bad = k;
  bad.entry = std::string("a\0b", 3);
  EXPECT_NE(serializeError(bad).find("entry 'a' contains a NUL byte"),
            std::string::npos);
  bad = k;
  bad.args[0].dims.assign(9, bundle::Dim::constant(1));
  EXPECT_NE(serializeError(bad).find("arg 'x': rank 9 exceeds the limit 8"),
            std::string::npos);
  bad = k;
  bad.args.assign(65, bad.args[0]);
  EXPECT_NE(serializeError(bad).find("has 65 args; the limit is 64"),
            std::string::npos);
  bad = k;
  bad.args.push_back(bad.args[0]);
  EXPECT_NE(serializeError(bad).find("args 0 and 1 are both named 'x'"),
            std::string::npos);
  bad = k;
  bad.symbols.push_back("T");
  EXPECT_NE(serializeError(bad).find("symbols 0 and 1 are both named 'T'"),
            std::string::npos);
  bad = k;
  bad.params = {{"p", 1}, {"p", 2}};
  EXPECT_NE(serializeError(bad).find("params 0 and 1 are both named 'p'"),
            std::string::npos);
  bad = k;
  bad.args[0].dtype = TESSEL_DTYPE_INVALID;
  EXPECT_NE(serializeError(bad).find("dtype 0 is not a valid element type"),
            std::string::npos);
  bad = k;
  bad.args[0].dims[0] = bundle::Dim::symbol(1);
  EXPECT_NE(serializeError(bad).find(
                "arg 'x' dim 0: sym 1 is out of range (the kernel has 1 "
                "symbols)"),
            std::string::npos);
  bad = k;
  bad.args[0].dims.clear();
  bad.args[0].dtype = TESSEL_DTYPE_I32;
  EXPECT_NE(serializeError(bad).find("arg 'x': a scalar (rank 0) must be an "
                                     "f32 input, not an output or "
                                     "elementwise"),
            std::string::npos);
  bad.args[0].dtype = TESSEL_DTYPE_F32;
  EXPECT_EQ(serializeError(bad), "");
  bad.args[0].isOutput = true;
  EXPECT_NE(serializeError(bad).find("arg 'x': a scalar (rank 0) must be an "
                                     "f32 input"),
            std::string::npos);
  bad = k;
  bad.binary.clear();
  EXPECT_NE(serializeError(bad).find("binary is empty"), std::string::npos);
  bad = k;
  bad.gridDiv[2] = 0;
  EXPECT_NE(serializeError(bad).find("grid_div[2] is 0"), std::string::npos);

  std::vector<uint8_t> bytes;
  EXPECT_NE(bundle::serializeBundle({k, k}, bytes)
                .find("duplicate kernel 'k' for target 'sm80' (kernels 0 and "
                      "1)"),
            std::string::npos);
  EXPECT_TRUE(bytes.empty()) << "a refused bundle must leave out untouched";
}

//===-- Reader: whole-file damage -----------------------------------------===//

TEST(BundleReader, RejectsEveryTruncation) {
  std::vector<uint8_t> bytes = smallBundle();
  for (size_t size = 0; size < bytes.size(); ++size) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + size);
    EXPECT_TRUE(parseFails(cut, ParseError::Corrupt, {"truncated"}))
        << "size " << size;
  }
}

TEST(BundleReader, RejectsTrailingBytes) {
  std::vector<uint8_t> bytes = smallBundle();
  bytes.push_back(0);
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"file_size is", "trailing bytes"}));
}

TEST(BundleReader, DetectsEveryCorruptedByte) {
  const std::vector<uint8_t> bytes = smallBundle();
  auto fieldAt = [](size_t at) -> const char * {
    if (at < 8)
      return "not a Tessel bundle";
    if (at < 12)
      return "version";
    if (at < 16)
      return "header_size";
    if (at < 24)
      return "file_size";
    return "checksum mismatch"; // crc32 itself, and everything it covers
  };
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (uint8_t flip : {0x01, 0x80, 0xFF}) {
      std::vector<uint8_t> bad = bytes;
      bad[at] ^= flip;
      std::vector<bundle::Kernel> kernels;
      std::string error = bundle::parseBundle(bad.data(), bad.size(), kernels);
      ASSERT_NE(error, "") << "byte " << at << " ^ " << int(flip);
      EXPECT_NE(error.find(fieldAt(at)), std::string::npos)
          << "byte " << at << ": " << error;
    }
  }
}

TEST(BundleReader, RejectsNullAndNonBundles) {
  std::vector<bundle::Kernel> kernels;
  EXPECT_NE(bundle::parseBundle(nullptr, 64, kernels).find("null pointer"),
            std::string::npos);
  EXPECT_NE(bundle::parseBundle(nullptr, 0, kernels).find("truncated"),
            std::string::npos);
  // The classic mistake: loading the kernel's shared object itself.
  EXPECT_TRUE(parseFails(hostKernelsObject(), ParseError::Corrupt,
                         {"not a Tessel bundle: magic is "
                          "'\\x7FELF\\x02\\x01\\x01\\x00'",
                          "expected 'TESSELKB'"}));
}

//===-- Reader: header fields ---------------------------------------------===//

TEST(BundleReader, RejectsNewerVersionAsUnsupported) {
  std::vector<uint8_t> bytes = smallBundle();
  patch<uint32_t>(bytes, offsetof(tessel_bundle_header, version), 3);
  EXPECT_TRUE(
      parseFails(bytes, ParseError::Unsupported,
                 {"bundle version 3 is newer than this runtime (supports 2)"}));
  // A newer bundle is reported as such even if its header grew.
  bytes.resize(20);
  EXPECT_TRUE(parseFails(bytes, ParseError::Unsupported,
                         {"bundle version 3 is newer"}));
}

TEST(BundleReader, RejectsVersion1AsUnsupported) {
  // Its attention kernels have the softmax scale compiled in: a caller that
  // passes one would silently get the compiled one.
  std::vector<uint8_t> bytes = smallBundle();
  patch<uint32_t>(bytes, offsetof(tessel_bundle_header, version), 1);
  EXPECT_TRUE(parseFails(bytes, ParseError::Unsupported,
                         {"bundle version 1 is older than this runtime's 2",
                          "softmax scale compiled in",
                          "recompile it with this release's tessel-aot"}));
}

TEST(BundleReader, RejectsBadHeaderFields) {
  const std::vector<uint8_t> good = smallBundle();
  struct Case {
    size_t field;
    uint64_t value;
    size_t width;
    std::vector<const char *> parts;
  };
  const uint64_t huge = UINT64_MAX - 8;
  const Case cases[] = {
      {offsetof(tessel_bundle_header, version),
       0,
       4,
       {"bundle version 0 is invalid"}},
      {offsetof(tessel_bundle_header, header_size),
       72,
       4,
       {"header_size is 72, expected 64"}},
      {offsetof(tessel_bundle_header, kernel_record_size),
       152,
       4,
       {"kernel_record_size is 152, expected 160"}},
      {offsetof(tessel_bundle_header, reserved0),
       1,
       4,
       {"header reserved0 is 1, expected 0"}},
      {offsetof(tessel_bundle_header, num_kernels),
       70000,
       4,
       {"num_kernels 70000 exceeds the limit 65536"}},
      {offsetof(tessel_bundle_header, num_kernels),
       1000,
       4,
       {"kernel records: offset 64 + 1000 x 160 bytes runs past the end"}},
      {offsetof(tessel_bundle_header, kernels_offset),
       huge,
       8,
       {"kernel records: offset 18446744073709551607 + 2 x 160 bytes"}},
      {offsetof(tessel_bundle_header, strings_offset),
       huge,
       8,
       {"string table: offset 18446744073709551607"}},
      {offsetof(tessel_bundle_header, strings_size),
       UINT64_MAX,
       8,
       {"string table:", "runs past the end"}},
  };
  for (const Case &c : cases) {
    std::vector<uint8_t> bytes = good;
    if (c.width == 4)
      patch<uint32_t>(bytes, c.field, static_cast<uint32_t>(c.value));
    else
      patch<uint64_t>(bytes, c.field, c.value);
    std::vector<bundle::Kernel> kernels;
    std::string error =
        bundle::parseBundle(bytes.data(), bytes.size(), kernels);
    for (const char *part : c.parts)
      EXPECT_NE(error.find(part), std::string::npos)
          << "field at " << c.field << ": \"" << error << "\" lacks \"" << part
          << "\"";
  }
  std::vector<uint8_t> bytes = good;
  patch<uint64_t>(bytes, offsetof(tessel_bundle_header, file_size), 1u << 20);
  EXPECT_TRUE(
      parseFails(bytes, ParseError::Corrupt,
                 {"file_size is 1048576 but the bundle is", "(truncated)"}));
  bytes = good;
  bytes[offsetof(tessel_bundle_header, crc32)] ^= 1;
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"checksum mismatch: header crc32 is 0x"}));
}

//===-- Reader: kernel records --------------------------------------------===//

/// Patches field `field` of kernel `kernel`'s record and expects `parts`.
template <typename T>
::testing::AssertionResult
kernelFieldFails(size_t kernel, size_t field, T value,
                 std::initializer_list<const char *> parts) {
  std::vector<uint8_t> bytes = smallBundle();
  patch<T>(bytes, kernelAt(bytes, kernel) + field, value);
  return parseFails(bytes, ParseError::Corrupt, parts);
}

TEST(BundleReader, RejectsBadKernelRecords) {
  using K = tessel_bundle_kernel;
  EXPECT_TRUE(kernelFieldFails<uint32_t>(
      1, offsetof(K, num_args), 65,
      {"kernel 1 ('second'): num_args 65 exceeds the limit 64"}));
  EXPECT_TRUE(
      kernelFieldFails<uint32_t>(0, offsetof(K, num_symbols), 1000,
                                 {"num_symbols 1000 exceeds the limit 64"}));
  EXPECT_TRUE(kernelFieldFails<uint32_t>(
      0, offsetof(K, num_params), 65, {"num_params 65 exceeds the limit 64"}));
  EXPECT_TRUE(kernelFieldFails<uint32_t>(
      0, offsetof(K, dtype), 6,
      {"kernel 0 ('first'): dtype 6 is not a valid tessel_dtype"}));
  EXPECT_TRUE(kernelFieldFails<uint32_t>(
      0, offsetof(K, num_tensor_maps), 9,
      {"kernel 0 ('first'): num_tensor_maps 9 exceeds the limit 8"}));
  EXPECT_TRUE(kernelFieldFails<uint64_t>(
      1, offsetof(K, tensor_maps_offset), UINT64_MAX,
      {"kernel 1 ('second') tensor maps: offset 18446744073709551615 + 0 x "
       "72 bytes runs past the end"}));
  EXPECT_TRUE(kernelFieldFails<uint64_t>(
      0, offsetof(K, args_offset), UINT64_MAX,
      {"kernel 0 ('first') args: offset 18446744073709551615 + 1 x 16 bytes "
       "runs past the end"}));
  EXPECT_TRUE(kernelFieldFails<uint64_t>(0, offsetof(K, symbols_offset),
                                         1u << 30,
                                         {"symbols: offset 1073741824"}));
  EXPECT_TRUE(kernelFieldFails<uint64_t>(1, offsetof(K, params_offset),
                                         UINT64_MAX - 3, {"params: offset"}));
  EXPECT_TRUE(kernelFieldFails<uint64_t>(0, offsetof(K, binary_size),
                                         UINT64_MAX,
                                         {"binary: offset", "runs past"}));
  EXPECT_TRUE(kernelFieldFails<uint64_t>(0, offsetof(K, binary_offset),
                                         UINT64_MAX - 1, {"binary: offset"}));
  EXPECT_TRUE(kernelFieldFails<uint64_t>(0, offsetof(K, binary_size), 0,
                                         {"binary is empty"}));
  EXPECT_TRUE(kernelFieldFails<uint32_t>(0, offsetof(K, grid_div) + 4, 0,
                                         {"grid_div[1] is 0"}));
  EXPECT_TRUE(kernelFieldFails<uint32_t>(1, offsetof(K, block) + 8, 0,
                                         {"kernel 1 ('second', target "
                                          "'gfx942'): block[2] is 0"}));
  EXPECT_TRUE(kernelFieldFails<int32_t>(
      0, offsetof(K, grid) + offsetof(tessel_bundle_dim, sym), 5,
      {"grid[0]: sym 5 is out of range (the kernel has 1 symbols)"}));
  EXPECT_TRUE(kernelFieldFails<int32_t>(
      0, offsetof(K, grid) + offsetof(tessel_bundle_dim, mul), 0,
      {"grid[0]: symbolic dim has mul 0; it must be >= 1"}));
}

TEST(BundleReader, RejectsBadArgs) {
  using A = tessel_bundle_arg;
  auto argFails = [](size_t field, auto value,
                     std::initializer_list<const char *> parts) {
    std::vector<uint8_t> bytes = smallBundle();
    patch(bytes, argAt(bytes, 0, 0) + field, value);
    return parseFails(bytes, ParseError::Corrupt, parts);
  };
  EXPECT_TRUE(argFails(offsetof(A, dtype), uint8_t{200},
                       {"kernel 0 ('first') arg 0 ('x'): dtype 200 is not a "
                        "valid tessel_dtype"}));
  EXPECT_TRUE(argFails(offsetof(A, dtype), uint8_t{0},
                       {"arg 'x': dtype 0 is not a valid element type"}));
  EXPECT_TRUE(argFails(offsetof(A, rank), uint8_t{9},
                       {"arg 0 ('x'): rank 9 exceeds the limit 8"}));
  EXPECT_TRUE(argFails(offsetof(A, is_output), uint8_t{2},
                       {"is_output is 2, expected 0 or 1"}));
  EXPECT_TRUE(argFails(offsetof(A, elementwise), uint8_t{2},
                       {"arg 0 ('x'): elementwise is 2, expected 0 or 1"}));
  EXPECT_TRUE(argFails(offsetof(A, dims_offset), uint64_t{UINT64_MAX - 15},
                       {"arg 0 ('x') dims: offset 18446744073709551600 + 1 x "
                        "16 bytes runs past the end"}));
}

TEST(BundleReader, RejectsBadDims) {
  using D = tessel_bundle_dim;
  auto dimFails = [](size_t field, auto value,
                     std::initializer_list<const char *> parts) {
    std::vector<uint8_t> bytes = smallBundle();
    patch(bytes, dimAt(bytes, 0, 0, 0) + field, value);
    return parseFails(bytes, ParseError::Corrupt, parts);
  };
  EXPECT_TRUE(dimFails(offsetof(D, sym), int32_t{1},
                       {"arg 'x' dim 0: sym 1 is out of range (the kernel "
                        "has 1 symbols)"}));
  EXPECT_TRUE(dimFails(offsetof(D, sym), int32_t{-2},
                       {"sym is -2; it must be -1 (constant) or a symbol "
                        "index"}));
  EXPECT_TRUE(dimFails(offsetof(D, mul), int32_t{-3},
                       {"symbolic dim has mul -3; it must be >= 1"}));
  std::vector<uint8_t> bytes = smallBundle();
  size_t at = dimAt(bytes, 0, 0, 0);
  patch<int32_t>(bytes, at + offsetof(D, sym), -1);
  patch<int64_t>(bytes, at + offsetof(D, add), -4);
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"constant dim is -4; sizes must be >= 0"}));
  patch<int64_t>(bytes, at + offsetof(D, add), 4);
  patch<int32_t>(bytes, at + offsetof(D, mul), 2);
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"constant dim has mul 2; it must be 1"}));
}

TEST(BundleReader, RejectsBadParams) {
  std::vector<uint8_t> bytes = smallBundle();
  patch<uint32_t>(
      bytes, paramAt(bytes, 1, 0) + offsetof(tessel_bundle_param, reserved0),
      9);
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"kernel 1 ('second') param 0: reserved0 is 9"}));
}

//===-- Tensor maps -------------------------------------------------------===//

TEST(BundleWriter, RefusesBadTensorMaps) {
  const bundle::Kernel k = tmaKernel("gmm");
  ASSERT_EQ(serializeError(k), "");
  auto refuses = [&](auto change, const char *message) {
    bundle::Kernel bad = k;
    change(bad);
    std::string error = serializeError(bad);
    return error.find(message) != std::string::npos
               ? ::testing::AssertionSuccess()
               : ::testing::AssertionFailure()
                     << "\"" << error << "\" lacks \"" << message << "\"";
  };
  using K = bundle::Kernel;
  EXPECT_TRUE(refuses(
      [](K &b) { b.tensorMaps.assign(9, b.tensorMaps[0]); },
      "kernel 0 ('gmm', target 'sm90a'): has 9 tensor maps; the limit is 8"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[1].arg = 4; },
                      "kernel 0 ('gmm', target 'sm90a'): tensor map 1: arg 4 "
                      "is out of range (the kernel has 4 args)"));
  EXPECT_TRUE(refuses(
      [](K &b) {
        b.args.push_back({"scale", TESSEL_DTYPE_F32, false, {}});
        b.tensorMaps[1].arg = 4;
      },
      "tensor map 1: arg 4 ('scale') is a scalar; a map views a buffer"));
  EXPECT_TRUE(refuses(
      [](K &b) {
        b.tensorMaps[0].dims.clear();
        b.tensorMaps[0].box.clear();
      },
      "tensor map 0: rank is 0; it must be 1 to 5"));
  EXPECT_TRUE(refuses(
      [](K &b) {
        b.tensorMaps[0].dims.assign(6, {0, 1});
        b.tensorMaps[0].box.assign(6, 8);
      },
      "tensor map 0: rank is 6; it must be 1 to 5"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[0].box.pop_back(); },
                      "tensor map 0: has 1 box sizes for 2 dims"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[0].dims[0] = {1, 3}; },
                      "tensor map 0: dims[0] is [1, 3); it must end at 2, the "
                      "rank of arg 'a'"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[1].dims[1] = {0, 1}; },
                      "tensor map 1: dims[1] is [0, 1); it must end at 2, "
                      "where dims[0] starts"));
  EXPECT_TRUE(refuses(
      [](K &b) { b.tensorMaps[1].dims = {{3, 3}, {0, 3}}; },
      "tensor map 1: dims[0] is [3, 3), which is empty"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[1].dims[1] = {1, 2}; },
                      "tensor map 1: dims[1] starts at 1; the last range must "
                      "start at 0 (every dim of arg 'b' in some map dim)"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[1].box[1] = 0; },
                      "tensor map 1: box[1] is 0; it must be 1 to 256"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[1].box[1] = 257; },
                      "tensor map 1: box[1] is 257; it must be 1 to 256"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[0].box[0] = 12; },
                      "tensor map 0: box[0] is 12 bf16 elements = 24 bytes; "
                      "TMA moves multiples of 16 bytes"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[0].swizzle = 4; },
                      "tensor map 0: swizzle is 4; it must be 0 (none), 1 "
                      "(32B), 2 (64B) or 3 (128B)"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[0].box[0] = 128; },
                      "tensor map 0: box[0] is 256 bytes, wider than its 128B "
                      "swizzle span"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[0].swizzle = 1; },
                      "tensor map 0: box[0] is 128 bytes, wider than its 32B "
                      "swizzle span"));
  EXPECT_TRUE(refuses([](K &b) { b.tensorMaps[0].swizzle = 2; },
                      "box[0] is 128 bytes, wider than its 64B swizzle span"));
  // Each swizzle admits rows up to its span; no swizzle, any width.
  bundle::Kernel fits = k;
  fits.tensorMaps[0].swizzle = 1;
  fits.tensorMaps[0].box[0] = 16;
  EXPECT_EQ(serializeError(fits), "");
  fits.tensorMaps[0].swizzle = 0;
  fits.tensorMaps[0].box[0] = 256;
  EXPECT_EQ(serializeError(fits), "");
}

/// Patches field `field` of tensor map `map` of a tmaKernel bundle.
template <typename T>
::testing::AssertionResult
tensorMapFieldFails(size_t map, size_t field, T value,
                    std::initializer_list<const char *> parts) {
  std::vector<uint8_t> bytes = pack({tmaKernel("gmm")});
  patch<T>(bytes, tensorMapAt(bytes, 0, map) + field, value);
  return parseFails(bytes, ParseError::Corrupt, parts);
}

TEST(BundleReader, RejectsBadTensorMaps) {
  using M = tessel_bundle_tensor_map;
  EXPECT_TRUE(tensorMapFieldFails<uint8_t>(
      1, offsetof(M, rank), 0,
      {"kernel 0 ('gmm') tensor map 1: rank is 0; it must be 1 to 5"}));
  EXPECT_TRUE(tensorMapFieldFails<uint8_t>(
      0, offsetof(M, rank), 6,
      {"kernel 0 ('gmm') tensor map 0: rank is 6; it must be 1 to 5"}));
  EXPECT_TRUE(tensorMapFieldFails<uint16_t>(
      0, offsetof(M, reserved0), 1,
      {"tensor map 0: reserved0 is 1 and reserved1 is 0, expected 0"}));
  EXPECT_TRUE(tensorMapFieldFails<uint32_t>(
      1, offsetof(M, reserved1), 2,
      {"tensor map 1: reserved0 is 0 and reserved1 is 2, expected 0"}));
  EXPECT_TRUE(tensorMapFieldFails<uint32_t>(
      1, offsetof(M, box) + 4 * 4, 64,
      {"kernel 0 ('gmm') tensor map 1: entry 4 of dim_first/dim_last/box is "
       "past the rank 2 but not zero"}));
  EXPECT_TRUE(tensorMapFieldFails<uint32_t>(
      0, offsetof(M, dim_first) + 2 * 4, 1,
      {"tensor map 0: entry 2 of dim_first/dim_last/box is past the rank 2"}));
  // Fields the decoded model's rules catch, with the writer's messages.
  EXPECT_TRUE(tensorMapFieldFails<uint32_t>(
      0, offsetof(M, arg), 7,
      {"kernel 0 ('gmm', target 'sm90a'): tensor map 0: arg 7 is out of "
       "range (the kernel has 4 args)"}));
  EXPECT_TRUE(tensorMapFieldFails<uint8_t>(
      1, offsetof(M, swizzle), 4, {"tensor map 1: swizzle is 4; it must be"}));
  EXPECT_TRUE(tensorMapFieldFails<uint32_t>(
      1, offsetof(M, dim_last), 2,
      {"tensor map 1: dims[0] is [2, 2); it must end at 3, the rank of arg "
       "'b'"}));
  EXPECT_TRUE(tensorMapFieldFails<uint32_t>(
      0, offsetof(M, box) + 4, 300, {"tensor map 0: box[1] is 300"}));
  EXPECT_TRUE(tensorMapFieldFails<uint32_t>(
      0, offsetof(M, box), 4,
      {"tensor map 0: box[0] is 4 bf16 elements = 8 bytes; TMA moves "
       "multiples of 16 bytes"}));
}

TEST(BundleFormat, TensorMapRecordsAreWhereTheKernelSays) {
  std::vector<uint8_t> bytes = pack({tmaKernel("gmm")});
  auto rec = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, 0));
  EXPECT_EQ(rec.num_tensor_maps, 2u);
  EXPECT_EQ(rec.tensor_maps_offset % 8, 0u);
  auto b = readAt<tessel_bundle_tensor_map>(bytes, tensorMapAt(bytes, 0, 1));
  EXPECT_EQ(b.arg, 1u);
  EXPECT_EQ(b.rank, 2u);
  EXPECT_EQ(b.swizzle, 3u);
  const uint32_t first[5] = {2, 0}, last[5] = {3, 2}, box[5] = {64, 256};
  EXPECT_EQ(std::memcmp(b.dim_first, first, sizeof first), 0);
  EXPECT_EQ(std::memcmp(b.dim_last, last, sizeof last), 0);
  EXPECT_EQ(std::memcmp(b.box, box, sizeof box), 0);
}

//===-- Reader: strings and names -----------------------------------------===//

TEST(BundleReader, RejectsStringOffsetsOutsideTheTable) {
  std::vector<uint8_t> bytes = smallBundle();
  auto header = readAt<tessel_bundle_header>(bytes, 0);
  auto size = static_cast<uint32_t>(header.strings_size);
  using K = tessel_bundle_kernel;
  const std::pair<size_t, const char *> fields[] = {
      {offsetof(K, name), "kernel 0 name"},
      {offsetof(K, op), "kernel 0 op"},
      {offsetof(K, target), "kernel 0 target"},
      {offsetof(K, entry), "kernel 0 entry"},
  };
  for (const auto &field : fields) {
    std::vector<uint8_t> bad = bytes;
    patch<uint32_t>(bad, kernelAt(bad, 0) + field.first, size);
    std::string expected =
        std::string(field.second) + ": string offset " + std::to_string(size) +
        " is outside the string table (" + std::to_string(size) + " bytes)";
    EXPECT_TRUE(parseFails(bad, ParseError::Corrupt, {expected.c_str()}));
  }
  std::vector<uint8_t> bad = bytes;
  patch<uint32_t>(bad, argAt(bad, 0, 0), UINT32_MAX);
  EXPECT_TRUE(parseFails(bad, ParseError::Corrupt,
                         {"kernel 0 ('first') arg 0 name: string offset "
                          "4294967295 is outside"}));
  bad = bytes;
  auto rec = readAt<tessel_bundle_kernel>(bad, kernelAt(bad, 0));
  patch<uint32_t>(bad, rec.symbols_offset, size + 1);
  EXPECT_TRUE(parseFails(bad, ParseError::Corrupt,
                         {"kernel 0 ('first') symbol 0: string offset"}));
  bad = bytes;
  patch<uint32_t>(bad, paramAt(bad, 1, 0), size + 100);
  EXPECT_TRUE(parseFails(bad, ParseError::Corrupt,
                         {"kernel 1 ('second') param 0 key: string offset"}));
}

TEST(BundleReader, RejectsUnterminatedStrings) {
  std::vector<uint8_t> bytes = smallBundle();
  auto header = readAt<tessel_bundle_header>(bytes, 0);
  // The table's last byte is the NUL of the last string written.
  patch<uint8_t>(bytes, header.strings_offset + header.strings_size - 1, 'x');
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"is not NUL-terminated within the string table"}));
  // Shrinking the table cuts the last string's NUL off too.
  bytes = smallBundle();
  patch<uint64_t>(bytes, offsetof(tessel_bundle_header, strings_size),
                  header.strings_size - 1);
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt, {"not NUL-terminated"}));
}

TEST(BundleReader, RejectsEmptyNames) {
  std::vector<uint8_t> bytes = smallBundle();
  auto rec = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, 0));
  // Point the entry at the NUL that ends the kernel's name: "".
  patch<uint32_t>(bytes,
                  kernelAt(bytes, 0) + offsetof(tessel_bundle_kernel, entry),
                  rec.name + 5 /* strlen("first") */);
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"kernel 0 ('first', target 'sm80'): entry is "
                          "empty"}));
}

TEST(BundleReader, RejectsUnknownTargetAsUnsupported) {
  std::vector<uint8_t> bytes = smallBundle();
  auto header = readAt<tessel_bundle_header>(bytes, 0);
  auto rec = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, 0));
  size_t at = header.strings_offset + rec.target; // "sm80"
  ASSERT_EQ(std::memcmp(bytes.data() + at, "sm80", 5), 0);
  patch<uint8_t>(bytes, at + 2, '7');
  patch<uint8_t>(bytes, at + 3, '5');
  EXPECT_TRUE(parseFails(bytes, ParseError::Unsupported,
                         {"kernel 0 ('first', target 'sm75'): unknown target "
                          "'sm75' (known: host, sm80, sm90, sm90a, gfx942, "
                          "gfx950, emu-gfx942, emu-gfx950, emu-sm80)"}));
}

TEST(BundleReader, RejectsDuplicateKernels) {
  std::vector<uint8_t> bytes =
      pack({fakeKernel("a", "sm80"), fakeKernel("b", "sm80"),
            fakeKernel("b", "gfx942")});
  // Kernel 2 is "b" for gfx942 (fine); renaming kernel 1 to "a" is not.
  auto rec0 = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, 0));
  patch<uint32_t>(bytes,
                  kernelAt(bytes, 1) + offsetof(tessel_bundle_kernel, name),
                  rec0.name);
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"duplicate kernel 'a' for target 'sm80' (kernels 0 "
                          "and 1)"}));
}

TEST(BundleReader, RejectsDuplicateArgNames) {
  bundle::Kernel k = fakeKernel("k", "sm80");
  k.args.push_back(k.args[0]);
  k.args[1].name = "y";
  std::vector<uint8_t> bytes = pack({k});
  auto first = readAt<tessel_bundle_arg>(bytes, argAt(bytes, 0, 0));
  patch<uint32_t>(bytes, argAt(bytes, 0, 1), first.name);
  EXPECT_TRUE(parseFails(bytes, ParseError::Corrupt,
                         {"args 0 and 1 are both named 'x'"}));
}

} // namespace
