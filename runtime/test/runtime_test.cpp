//===- test/runtime_test.cpp - Devices, statuses, loading and lookups -----===//

#include "test_support.h"

#include "../src/host/x86_level.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <unistd.h>

using namespace tessel;
using namespace tessel::test;

namespace {

//===-- Statuses and dtypes -----------------------------------------------===//

TEST(Status, NullIsSuccess) {
  EXPECT_EQ(tessel_status_get_code(nullptr), TESSEL_OK);
  EXPECT_STREQ(tessel_status_message(nullptr), "");
  tessel_status_free(nullptr);
}

TEST(Status, CodeNames) {
  EXPECT_STREQ(tessel_status_code_name(TESSEL_OK), "OK");
  EXPECT_STREQ(tessel_status_code_name(TESSEL_CORRUPT_BUNDLE),
               "CORRUPT_BUNDLE");
  EXPECT_STREQ(tessel_status_code_name(TESSEL_INTERNAL), "INTERNAL");
}

TEST(Dtype, SizesAndNames) {
  EXPECT_EQ(tessel_dtype_size(TESSEL_DTYPE_F32), 4u);
  EXPECT_EQ(tessel_dtype_size(TESSEL_DTYPE_BF16), 2u);
  EXPECT_EQ(tessel_dtype_size(TESSEL_DTYPE_I64), 8u);
  EXPECT_EQ(tessel_dtype_size(TESSEL_DTYPE_INVALID), 0u);
  EXPECT_STREQ(tessel_dtype_name(TESSEL_DTYPE_F16), "f16");
  EXPECT_STREQ(tessel_dtype_name(TESSEL_DTYPE_I32), "i32");
  EXPECT_STREQ(tessel_dtype_name(TESSEL_DTYPE_INVALID), "invalid");
  // A C caller can pass any integer; the runtime must not trust the enum.
  tessel_dtype bogus;
  const uint32_t value = 77;
  std::memcpy(&bogus, &value, sizeof bogus);
  EXPECT_STREQ(tessel_dtype_name(bogus), "unknown");
  EXPECT_EQ(tessel_dtype_size(bogus), 0u);
  EXPECT_STREQ(bundle::dtypeName(TESSEL_DTYPE_BF16), "bf16");
  EXPECT_STREQ(bundle::dtypeName(TESSEL_DTYPE_I64), "i64");
}

//===-- Devices -----------------------------------------------------------===//

TEST(Device, OpensHost) {
  DevicePtr device = openHost();
  ASSERT_TRUE(device);
  EXPECT_STREQ(tessel_device_target(device.get()), "host");
  EXPECT_STREQ(tessel_device_target_at(device.get(), 0), "host");
  EXPECT_EQ(tessel_device_target_at(device.get(), 1), nullptr);
  EXPECT_EQ(tessel_device_target_at(nullptr, 0), nullptr);
}

TEST(Device, UnknownBackendListsTheValidOnes) {
  tessel_device device = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_device_open("metal", 0, &device), TESSEL_NOT_FOUND,
      {"unknown backend 'metal'", "valid backends: host, cuda, hip"}));
}

TEST(Device, RejectsBadArguments) {
  tessel_device device = nullptr;
  EXPECT_TRUE(failsWith(tessel_device_open("host", 1, &device),
                        TESSEL_NOT_FOUND,
                        {"host backend has one device (ordinal 0); got "
                         "ordinal 1"}));
  EXPECT_TRUE(failsWith(tessel_device_open("host", -1, &device),
                        TESSEL_INVALID_ARGUMENT,
                        {"device ordinal -1 is negative"}));
  EXPECT_TRUE(failsWith(tessel_device_open(nullptr, 0, &device),
                        TESSEL_INVALID_ARGUMENT, {"backend name is null"}));
  EXPECT_TRUE(failsWith(tessel_device_open("host", 0, nullptr),
                        TESSEL_INVALID_ARGUMENT, {"out_device is null"}));
  tessel_device_release(nullptr);
  EXPECT_STREQ(tessel_device_target(nullptr), "");
}

//===-- Loading -----------------------------------------------------------===//

/// Runs the add kernel on `n` elements and checks c = a + b.
void expectAddWorks(tessel_kernel add, int64_t n) {
  std::vector<float> a(n), b(n), c(n, -1.0f);
  std::iota(a.begin(), a.end(), 0.0f);
  std::iota(b.begin(), b.end(), 1000.0f);
  tessel_tensor args[] = {tensor(a.data(), TESSEL_DTYPE_F32, {n}),
                          tensor(b.data(), TESSEL_DTYPE_F32, {n}),
                          tensor(c.data(), TESSEL_DTYPE_F32, {n})};
  ASSERT_TRUE(succeeds(tessel_kernel_launch(add, args, 3, nullptr)));
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(c[i], a[i] + b[i]) << "element " << i;
}

tessel_kernel findOrFail(tessel_bundle bundle, const char *name) {
  tessel_kernel kernel = nullptr;
  EXPECT_TRUE(succeeds(tessel_bundle_find_kernel(bundle, name, &kernel)));
  return kernel;
}

TEST(Load, FromMemoryThenLaunch) {
  DevicePtr device = openHost();
  BundlePtr bundle = loadOrFail(device.get(), pack({addKernel()}));
  ASSERT_TRUE(bundle);
  ASSERT_EQ(tessel_bundle_kernel_count(bundle.get()), 1u);
  expectAddWorks(findOrFail(bundle.get(), "add"), 1000);
}

TEST(Load, FromFileThenLaunch) {
  std::vector<uint8_t> bytes =
      pack({addKernel(), sumPairsKernel(), rowSumKernel()});
  char path[] = "/tmp/tessel-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
  DevicePtr device = openHost();
  tessel_bundle raw = nullptr;
  ASSERT_TRUE(succeeds(tessel_bundle_load_file(device.get(), path, &raw)));
  BundlePtr bundle(raw);
  unlink(path);
  EXPECT_EQ(tessel_bundle_kernel_count(raw), 3u);
  expectAddWorks(findOrFail(raw, "add"), 37);
}

TEST(Load, MissingFileIsNotFound) {
  DevicePtr device = openHost();
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_bundle_load_file(device.get(), "/nonexistent/k.tsb", &bundle),
      TESSEL_NOT_FOUND,
      {"cannot open bundle '/nonexistent/k.tsb': No such file or "
       "directory"}));
  EXPECT_TRUE(failsWith(tessel_bundle_load_file(device.get(), "/", &bundle),
                        TESSEL_INVALID_ARGUMENT,
                        {"cannot read bundle '/': not a regular file"}));
}

TEST(Load, CorruptFileNamesThePath) {
  std::vector<uint8_t> bytes = pack({addKernel()});
  bytes[bytes.size() / 2] ^= 0x10;
  char path[] = "/tmp/tessel-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
  DevicePtr device = openHost();
  tessel_bundle bundle = nullptr;
  std::string expected = std::string(path) + ": invalid bundle: checksum "
                                             "mismatch";
  EXPECT_TRUE(failsWith(tessel_bundle_load_file(device.get(), path, &bundle),
                        TESSEL_CORRUPT_BUNDLE, {expected.c_str()}));
  unlink(path);
}

TEST(Load, ValidatesBeforeLoading) {
  DevicePtr device = openHost();
  std::vector<uint8_t> bytes = pack({addKernel()});
  tessel_bundle bundle = nullptr;
  bytes[100] ^= 1;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_CORRUPT_BUNDLE,
                        {"invalid bundle: checksum mismatch"}));
  bytes = pack({addKernel()});
  patch<uint32_t>(bytes, offsetof(tessel_bundle_header, version), 7);
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNSUPPORTED,
                        {"bundle version 7 is newer than this runtime "
                         "(supports 2)"}));
  EXPECT_EQ(bundle, nullptr);
}

TEST(Load, RejectsBadArguments) {
  DevicePtr device = openHost();
  std::vector<uint8_t> bytes = pack({addKernel()});
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_bundle_load_memory(nullptr, bytes.data(), bytes.size(), &bundle),
      TESSEL_INVALID_ARGUMENT, {"device is null"}));
  EXPECT_TRUE(
      failsWith(tessel_bundle_load_memory(device.get(), nullptr, 10, &bundle),
                TESSEL_INVALID_ARGUMENT, {"data is null"}));
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), nullptr),
                        TESSEL_INVALID_ARGUMENT, {"out_bundle is null"}));
  EXPECT_TRUE(failsWith(tessel_bundle_load_file(device.get(), nullptr, &bundle),
                        TESSEL_INVALID_ARGUMENT, {"path is null"}));
  tessel_bundle_release(nullptr);
}

TEST(Load, WrongTargetSaysWhatTheBundleHas) {
  DevicePtr device = openHost();
  std::vector<uint8_t> sm80Only =
      pack({fakeKernel("decode", "sm80"), fakeKernel("prefill", "sm80")});
  tessel_bundle sm80Bundle = nullptr;
  EXPECT_TRUE(
      failsWith(tessel_bundle_load_memory(device.get(), sm80Only.data(),
                                          sm80Only.size(), &sm80Bundle),
                TESSEL_UNSUPPORTED,
                {"bundle has no kernels for target 'host' (it has: sm80)"}));
  EXPECT_EQ(sm80Bundle, nullptr);
  std::vector<uint8_t> bytes =
      pack({fakeKernel("decode", "sm80"), fakeKernel("prefill", "sm80"),
            fakeKernel("decode", "gfx942")});
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNSUPPORTED,
                        {"bundle has no kernels for target 'host' (it has: "
                         "sm80, gfx942)"}));
  bytes = pack({});
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNSUPPORTED,
                        {"bundle has no kernels for target 'host' (it has no "
                         "kernels)"}));
}

TEST(Load, KeepsOnlyTheDevicesTarget) {
  DevicePtr device = openHost();
  BundlePtr bundle = loadOrFail(
      device.get(), pack({fakeKernel("decode", "sm80"), addKernel(),
                          fakeKernel("decode", "gfx950"), sumPairsKernel()}));
  ASSERT_EQ(tessel_bundle_kernel_count(bundle.get()), 2u);
  EXPECT_STREQ(tessel_kernel_name(tessel_bundle_kernel_at(bundle.get(), 0)),
               "add");
  EXPECT_STREQ(tessel_kernel_name(tessel_bundle_kernel_at(bundle.get(), 1)),
               "sum_pairs");
  EXPECT_EQ(tessel_bundle_kernel_at(bundle.get(), 2), nullptr);
  tessel_kernel kernel = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_bundle_find_kernel(bundle.get(), "decode", &kernel),
      TESSEL_NOT_FOUND,
      {"kernel 'decode' is not built for target 'host' (the bundle has it "
       "for: sm80, gfx950)"}));
}

// See BundleFormat.ManyRecordsSharingOneRangeStayCheap: the loader hands
// backends a view of the bundle, so 65,536 records naming the whole file cost
// no copies; the first binary (a bundle, not ELF) is then refused quickly.
TEST(Load, ManyRecordsSharingOneRangeAreRefusedCheaply) {
  std::vector<uint8_t> bytes =
      sharedRangeBundle(TESSEL_BUNDLE_MAX_KERNELS, "host");
  DevicePtr device = openHost();
  long before = peakRssKiB();
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNAVAILABLE,
                        {"kernel 'k0': cannot load the host shared object"}));
  EXPECT_LT(peakRssKiB() - before, 512 * 1024) << "KiB of peak RSS growth";
}

// A file above TESSEL_BUNDLE_MAX_SIZE is refused from its size, before any
// buffer is allocated. The file is sparse: it uses no disk.
TEST(Load, OversizedFileIsRefusedBeforeReading) {
  char path[] = "/tmp/tessel-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(TESSEL_BUNDLE_MAX_SIZE + 1)), 0);
  close(fd);
  DevicePtr device = openHost();
  tessel_bundle bundle = nullptr;
  std::string expected = std::string("bundle '") + path +
                         "' is 4294967297 bytes, more than the limit of "
                         "4294967296 bytes (4 GiB)";
  EXPECT_TRUE(failsWith(tessel_bundle_load_file(device.get(), path, &bundle),
                        TESSEL_CORRUPT_BUNDLE, {expected.c_str()}));
  unlink(path);
}

//===-- x86-64 levels of host kernels -------------------------------------===//

TEST(X86Level, ListsTheFeaturesAFakeCpuLacks) {
  // A CPU with everything up to x86-64-v3 except fma and bmi2.
  auto v3WithoutFmaBmi2 = [](const char *feature) {
    return std::strncmp(feature, "avx512", 6) != 0 &&
           std::strcmp(feature, "fma") != 0 &&
           std::strcmp(feature, "bmi2") != 0;
  };
  EXPECT_EQ(runtime::missingX86Features(1, v3WithoutFmaBmi2), "");
  EXPECT_EQ(runtime::missingX86Features(2, v3WithoutFmaBmi2), "");
  EXPECT_EQ(runtime::missingX86Features(3, v3WithoutFmaBmi2), "bmi2, fma");
  EXPECT_EQ(runtime::missingX86Features(4, v3WithoutFmaBmi2),
            "bmi2, fma, avx512f, avx512bw, avx512cd, avx512dq, avx512vl");
  auto bare = [](const char *) { return false; };
  EXPECT_EQ(runtime::missingX86Features(1, bare), "");
  EXPECT_EQ(runtime::missingX86Features(2, bare),
            "sse3, ssse3, sse4.1, sse4.2, popcnt");
}

bundle::Kernel addKernelForLevel(int64_t level) {
  bundle::Kernel k = addKernel();
  k.params.emplace_back("x86_64_level", level);
  return k;
}

TEST(X86Level, KernelsWithinTheCpusLevelLoad) {
  DevicePtr device = openHost();
  BundlePtr bundle = loadOrFail(device.get(), pack({addKernelForLevel(1)}));
  ASSERT_TRUE(bundle);
  expectAddWorks(findOrFail(bundle.get(), "add"), 100);
}

TEST(X86Level, KernelsAboveTheCpusLevelAreRefused) {
#if defined(__x86_64__)
  std::vector<uint8_t> bytes = pack({addKernelForLevel(4)});
  DevicePtr device = openHost();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    // This CPU is x86-64-v4: the kernel loads. The refusal itself is covered
    // by ListsTheFeaturesAFakeCpuLacks.
    BundlePtr bundle = loadOrFail(device.get(), bytes);
    EXPECT_TRUE(bundle);
    return;
  }
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNSUPPORTED,
                        {"kernel 'add': compiled for x86-64-v4, but this CPU "
                         "lacks ",
                         "avx512"}));
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(X86Level, UnknownLevelsAreRefused) {
  DevicePtr device = openHost();
  tessel_bundle bundle = nullptr;
  std::vector<uint8_t> bytes = pack({addKernelForLevel(5)});
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNSUPPORTED,
                        {"kernel 'add': compiled for x86-64 level 5, which "
                         "this runtime does not know"}));
  bytes = pack({addKernelForLevel(0)});
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_CORRUPT_BUNDLE,
                        {"kernel 'add': x86_64_level is 0; levels start at 1"}));
}

TEST(Load, BadBinaryCarriesTheLoaderError) {
  DevicePtr device = openHost();
  bundle::Kernel k = addKernel();
  k.binary = {'n', 'o', 't', ' ', 'e', 'l', 'f'};
  std::vector<uint8_t> bytes = pack({k});
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNAVAILABLE,
                        {"kernel 'add': cannot load the host shared object: "
                         "dlopen(/proc/self/fd/"}));
}

TEST(Load, MissingEntrySymbolIsCorrupt) {
  DevicePtr device = openHost();
  bundle::Kernel k = addKernel();
  k.entry = "no_such_entry";
  std::vector<uint8_t> bytes = pack({k});
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_CORRUPT_BUNDLE,
                        {"kernel 'add': entry symbol 'no_such_entry' not "
                         "found in the host shared object",
                         "undefined symbol: no_such_entry"}));
}

TEST(Load, TempFileFallbackWorks) {
  ScopedEnv noMemfd("TESSEL_HOST_NO_MEMFD", "1");
  DevicePtr device = openHost();
  BundlePtr bundle = loadOrFail(device.get(), pack({addKernel()}));
  ASSERT_TRUE(bundle);
  expectAddWorks(findOrFail(bundle.get(), "add"), 64);
}

TEST(Load, TempFileFailureIsReported) {
  ScopedEnv noMemfd("TESSEL_HOST_NO_MEMFD", "1");
  ScopedEnv tmp("TMPDIR", "/nonexistent-tessel-dir");
  DevicePtr device = openHost();
  std::vector<uint8_t> bytes = pack({addKernel()});
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(failsWith(tessel_bundle_load_memory(device.get(), bytes.data(),
                                                  bytes.size(), &bundle),
                        TESSEL_UNAVAILABLE,
                        {"kernel 'add': cannot load the host shared object: "
                         "mkstemp(/nonexistent-tessel-dir/tessel-kernel-",
                         "No such file or directory"}));
}

TEST(Load, BundleKeepsTheDeviceAlive) {
  tessel_device device = nullptr;
  ASSERT_TRUE(succeeds(tessel_device_open("host", 0, &device)));
  std::vector<uint8_t> bytes = pack({addKernel()});
  tessel_bundle bundle = nullptr;
  ASSERT_TRUE(succeeds(
      tessel_bundle_load_memory(device, bytes.data(), bytes.size(), &bundle)));
  tessel_device_release(device); // the bundle still holds it
  expectAddWorks(tessel_bundle_kernel_at(bundle, 0), 10);
  tessel_bundle_release(bundle); // releases the device too (ASan checks)
}

TEST(Load, ConcurrentLoadsAndLaunches) {
  DevicePtr device = openHost();
  std::vector<uint8_t> bytes = pack({addKernel()});
  BundlePtr shared = loadOrFail(device.get(), bytes);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      BundlePtr own = loadOrFail(device.get(), bytes);
      for (int i = 0; i < 50; ++i) {
        expectAddWorks(tessel_bundle_kernel_at(shared.get(), 0), 100 + t);
        expectAddWorks(tessel_bundle_kernel_at(own.get(), 0), 10 + t);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
}

//===-- Lookups and introspection -----------------------------------------===//

TEST(Lookup, FindKernelListsWhatExists) {
  DevicePtr device = openHost();
  std::vector<bundle::Kernel> kernels = {addKernel(), sumPairsKernel()};
  BundlePtr bundle = loadOrFail(device.get(), pack(kernels));
  tessel_kernel kernel = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_bundle_find_kernel(bundle.get(), "mul", &kernel), TESSEL_NOT_FOUND,
      {"no kernel 'mul' for target 'host' in this bundle; it has: add, "
       "sum_pairs"}));
  EXPECT_TRUE(
      failsWith(tessel_bundle_find_kernel(bundle.get(), nullptr, &kernel),
                TESSEL_INVALID_ARGUMENT, {"kernel name is null"}));
  EXPECT_TRUE(failsWith(tessel_bundle_find_kernel(nullptr, "add", &kernel),
                        TESSEL_INVALID_ARGUMENT, {"bundle is null"}));
}

TEST(Lookup, FindKernelListsAtMostEightNames) {
  std::vector<bundle::Kernel> kernels;
  for (int i = 0; i < 12; ++i) {
    kernels.push_back(addKernel());
    kernels.back().name = "add" + std::to_string(i);
  }
  DevicePtr device = openHost();
  BundlePtr bundle = loadOrFail(device.get(), pack(kernels));
  tessel_kernel kernel = nullptr;
  EXPECT_TRUE(failsWith(
      tessel_bundle_find_kernel(bundle.get(), "add12", &kernel),
      TESSEL_NOT_FOUND,
      {"it has: add0, add1, add2, add3, add4, add5, add6, add7 (and 4 "
       "more)"}));
}

TEST(Lookup, Introspection) {
  DevicePtr device = openHost();
  BundlePtr bundle = loadOrFail(device.get(), pack({rowSumKernel()}));
  tessel_kernel k = findOrFail(bundle.get(), "row_sum");
  EXPECT_STREQ(tessel_kernel_name(k), "row_sum");
  EXPECT_STREQ(tessel_kernel_op(k), "test.row_sum");
  EXPECT_STREQ(tessel_kernel_target(k), "host");
  EXPECT_STREQ(tessel_kernel_target(nullptr), "");
  EXPECT_EQ(tessel_kernel_dtype(k), TESSEL_DTYPE_I32);
  EXPECT_EQ(tessel_kernel_num_args(k), 2u);
  EXPECT_STREQ(tessel_kernel_arg_name(k, 0), "x");
  EXPECT_STREQ(tessel_kernel_arg_name(k, 1), "y");
  EXPECT_EQ(tessel_kernel_arg_name(k, 2), nullptr);
  EXPECT_EQ(tessel_kernel_arg_is_output(k, 0), 0);
  EXPECT_EQ(tessel_kernel_arg_is_output(k, 1), 1);
  EXPECT_EQ(tessel_kernel_arg_is_output(k, 2), 0);
  int64_t value = 0;
  EXPECT_EQ(tessel_kernel_param(k, "cols", &value), 0);
  EXPECT_EQ(value, 4);
  EXPECT_NE(tessel_kernel_param(k, "rows", &value), 0);
  EXPECT_EQ(tessel_kernel_num_params(k), 1u);
  value = 0;
  EXPECT_STREQ(tessel_kernel_param_at(k, 0, &value), "cols");
  EXPECT_EQ(value, 4);
  EXPECT_STREQ(tessel_kernel_param_at(k, 0, nullptr), "cols");
  EXPECT_EQ(tessel_kernel_param_at(k, 1, &value), nullptr);
  EXPECT_STREQ(tessel_kernel_name(nullptr), "");
  EXPECT_EQ(tessel_kernel_num_args(nullptr), 0u);
  EXPECT_EQ(tessel_kernel_num_params(nullptr), 0u);
  EXPECT_EQ(tessel_kernel_param_at(nullptr, 0, &value), nullptr);
  EXPECT_EQ(tessel_kernel_arg_is_output(nullptr, 0), 0);
}

TEST(Lookup, FindKernelByParams) {
  std::vector<bundle::Kernel> kernels;
  for (int64_t heads : {8, 32})
    for (tessel_dtype dtype : {TESSEL_DTYPE_F16, TESSEL_DTYPE_BF16}) {
      bundle::Kernel k = addKernel();
      k.name = "attn_h" + std::to_string(heads) + tessel_dtype_name(dtype);
      k.op = "tessel.decode_attention";
      k.dtype = dtype;
      k.params = {{"num_q_heads", heads}, {"head_dim", 128}};
      kernels.push_back(k);
    }
  DevicePtr device = openHost();
  BundlePtr bundle = loadOrFail(device.get(), pack(kernels));
  tessel_kernel k = nullptr;

  tessel_param want[] = {{"num_q_heads", 32}, {"head_dim", 128}};
  ASSERT_TRUE(succeeds(tessel_bundle_find_kernel_by_params(
      bundle.get(), "tessel.decode_attention", TESSEL_DTYPE_BF16, want, 2,
      &k)));
  EXPECT_STREQ(tessel_kernel_name(k), "attn_h32bf16");
  // Any dtype: the first in bundle order.
  ASSERT_TRUE(succeeds(tessel_bundle_find_kernel_by_params(
      bundle.get(), "tessel.decode_attention", TESSEL_DTYPE_INVALID, want, 1,
      &k)));
  EXPECT_STREQ(tessel_kernel_name(k), "attn_h32f16");
  // No params: the first kernel of the op.
  ASSERT_TRUE(succeeds(tessel_bundle_find_kernel_by_params(
      bundle.get(), "tessel.decode_attention", TESSEL_DTYPE_INVALID, nullptr, 0,
      &k)));
  EXPECT_STREQ(tessel_kernel_name(k), "attn_h8f16");

  tessel_param missing[] = {{"num_q_heads", 64}};
  EXPECT_TRUE(failsWith(
      tessel_bundle_find_kernel_by_params(bundle.get(),
                                          "tessel.decode_attention",
                                          TESSEL_DTYPE_F16, missing, 1, &k),
      TESSEL_NOT_FOUND,
      {"no kernel matches op 'tessel.decode_attention', dtype f16, params "
       "{num_q_heads=64}; kernels of this op: attn_h8f16 (f16, "
       "{num_q_heads=8, head_dim=128})"}));
  EXPECT_EQ(k, nullptr);
  tessel_param unknownKey[] = {{"window", 128}};
  EXPECT_TRUE(failsWith(tessel_bundle_find_kernel_by_params(
                            bundle.get(), "tessel.decode_attention",
                            TESSEL_DTYPE_INVALID, unknownKey, 1, &k),
                        TESSEL_NOT_FOUND, {"params {window=128}"}));
  EXPECT_TRUE(failsWith(
      tessel_bundle_find_kernel_by_params(bundle.get(), "tessel.mla",
                                          TESSEL_DTYPE_INVALID, nullptr, 0, &k),
      TESSEL_NOT_FOUND,
      {"the bundle has no kernel of op 'tessel.mla' for target 'host'"}));
  EXPECT_TRUE(failsWith(
      tessel_bundle_find_kernel_by_params(bundle.get(), "x",
                                          TESSEL_DTYPE_INVALID, nullptr, 2, &k),
      TESSEL_INVALID_ARGUMENT, {"params is null but num_params is 2"}));
  tessel_param nullKey[] = {{nullptr, 1}};
  EXPECT_TRUE(
      failsWith(tessel_bundle_find_kernel_by_params(
                    bundle.get(), "x", TESSEL_DTYPE_INVALID, nullKey, 1, &k),
                TESSEL_INVALID_ARGUMENT, {"params[0].key is null"}));
}

} // namespace
