//===- test/test_support.cpp - Helpers shared by the runtime tests --------===//

#include "test_support.h"

#include "fake_drivers.h"

#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <sys/resource.h>

namespace tessel::test {

namespace {

std::vector<uint8_t> readFile(const char *path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                              std::istreambuf_iterator<char>());
}

} // namespace

const std::vector<uint8_t> &hostKernelsObject() {
  static const std::vector<uint8_t> bytes = readFile(TESSEL_TEST_HOST_KERNELS);
  return bytes;
}

namespace {

bundle::Arg arg(const char *name, tessel_dtype dtype, bool isOutput,
                std::vector<bundle::Dim> dims) {
  bundle::Arg a;
  a.name = name;
  a.dtype = dtype;
  a.isOutput = isOutput;
  a.dims = std::move(dims);
  return a;
}

bundle::Kernel hostKernel(const char *name, const char *entry,
                          tessel_dtype dtype) {
  bundle::Kernel k;
  k.name = name;
  k.op = std::string("test.") + name;
  k.target = "host";
  k.entry = entry;
  k.dtype = dtype;
  k.binary = hostKernelsObject();
  return k;
}

} // namespace

bundle::Kernel addKernel() {
  bundle::Kernel k = hostKernel("add", "add_entry", TESSEL_DTYPE_F32);
  auto n = bundle::Dim::symbol(0);
  k.args = {arg("a", TESSEL_DTYPE_F32, false, {n}),
            arg("b", TESSEL_DTYPE_F32, false, {n}),
            arg("c", TESSEL_DTYPE_F32, true, {n})};
  k.symbols = {"N"};
  k.params = {{"vector_width", 1}};
  return k;
}

bundle::Kernel sumPairsKernel() {
  bundle::Kernel k =
      hostKernel("sum_pairs", "sum_pairs_entry", TESSEL_DTYPE_F32);
  k.args = {arg("x", TESSEL_DTYPE_F32, false, {bundle::Dim::symbol(0, 2)}),
            arg("y", TESSEL_DTYPE_F32, true, {bundle::Dim::symbol(0)})};
  k.symbols = {"N"};
  return k;
}

bundle::Kernel rowSumKernel() {
  bundle::Kernel k = hostKernel("row_sum", "row_sum_entry", TESSEL_DTYPE_I32);
  auto r = bundle::Dim::symbol(0);
  k.args = {arg("x", TESSEL_DTYPE_I32, false, {r, bundle::Dim::constant(4)}),
            arg("y", TESSEL_DTYPE_I64, true, {r})};
  k.symbols = {"R"};
  k.params = {{"cols", 4}};
  return k;
}

const std::vector<uint8_t> &emuKernelsObject() {
  static const std::vector<uint8_t> bytes = readFile(TESSEL_TEST_EMU_KERNELS);
  return bytes;
}

bundle::Kernel emuKernel(const EmuLaunch &launch) {
  bundle::Kernel k;
  k.name = launch.entry;
  k.op = "test." + launch.entry;
  k.target = launch.device;
  k.entry = launch.entry + "_entry";
  k.dtype = TESSEL_DTYPE_F32;
  for (const EmuBuffer &buffer : launch.buffers)
    k.args.push_back(arg(buffer.name, buffer.dtype, false,
                         {bundle::Dim::constant(buffer.elements)}));
  k.params = launch.params;
  for (int axis = 0; axis < 3; ++axis)
    k.grid[axis] = bundle::Dim::constant(launch.grid[axis]);
  k.block = launch.block;
  k.sharedBytes = launch.sharedBytes;
  k.binary = emuKernelsObject();
  return k;
}

tessel_status runEmu(tessel_device device, const EmuLaunch &launch) {
  std::vector<uint8_t> bytes = pack({emuKernel(launch)});
  tessel_bundle bundle = nullptr;
  if (tessel_status status = tessel_bundle_load_memory(device, bytes.data(),
                                                       bytes.size(), &bundle))
    return status;
  BundlePtr owner(bundle);
  std::vector<tessel_tensor> args;
  for (const EmuBuffer &buffer : launch.buffers)
    args.push_back(tensor(buffer.data, buffer.dtype, {buffer.elements}));
  return tessel_kernel_launch(tessel_bundle_kernel_at(bundle, 0), args.data(),
                              args.size(), nullptr);
}

tessel_status runEmu(const EmuLaunch &launch) {
  tessel_device device = nullptr;
  if (tessel_status status =
          tessel_device_open(launch.device.c_str(), 0, &device))
    return status;
  DevicePtr owner(device);
  return runEmu(device, launch);
}

bundle::Kernel fakeKernel(const std::string &name, const std::string &target) {
  bundle::Kernel k;
  k.name = name;
  k.op = "test.fake";
  k.target = target;
  k.entry = name + "_entry";
  k.dtype = TESSEL_DTYPE_F16;
  k.args = {arg("x", TESSEL_DTYPE_F16, false, {bundle::Dim::symbol(0)})};
  k.symbols = {"T"};
  k.grid = {bundle::Dim::symbol(0), bundle::Dim::constant(1),
            bundle::Dim::constant(1)};
  k.gridDiv = {128, 1, 1};
  k.block = {128, 1, 1};
  k.binary = {0xDE, 0xAD, 0xBE, 0xEF};
  return k;
}

bundle::Kernel gpuKernel(const std::string &name, const std::string &target) {
  bundle::Kernel k = addKernel();
  k.name = name;
  k.target = target;
  k.entry = name + "_entry";
  k.grid = {bundle::Dim::symbol(0), bundle::Dim::constant(1),
            bundle::Dim::constant(1)};
  k.gridDiv = {256, 1, 1};
  k.block = {256, 1, 1};
  std::string image = FAKE_IMAGE_PREFIX + target + ":" + name;
  k.binary.assign(image.begin(), image.end());
  // The fake CUDA driver reads a C string, like PTX: the runtime must add
  // the NUL. HIP takes ELF code objects, which the runtime passes as is.
  if (target.compare(0, 3, "gfx") == 0)
    k.binary.push_back(0);
  return k;
}

bundle::Kernel tmaKernel(const std::string &name, const std::string &target) {
  bundle::Kernel k = gpuKernel(name, target);
  k.op = "tessel.grouped_matmul";
  k.dtype = TESSEL_DTYPE_BF16;
  auto t = bundle::Dim::symbol(0), g = bundle::Dim::symbol(1),
       kd = bundle::Dim::symbol(2), n = bundle::Dim::constant(256);
  k.args = {arg("a", TESSEL_DTYPE_BF16, false, {t, kd}),
            arg("b", TESSEL_DTYPE_BF16, false, {g, n, kd}),
            arg("offsets", TESSEL_DTYPE_I32, false, {g}),
            arg("c", TESSEL_DTYPE_BF16, true, {t, n})};
  k.args[2].elementwise = true;
  k.symbols = {"T", "G", "K"};
  k.params = {{"n", 256}};
  k.grid = {t, bundle::Dim::constant(1), bundle::Dim::constant(1)};
  k.gridDiv = {128, 1, 1};
  k.block = {384, 1, 1};
  bundle::TensorMap a, b;
  a.arg = 0;
  a.dims = {{1, 2}, {0, 1}};
  a.box = {64, 128};
  a.swizzle = 3;
  b.arg = 1;
  b.dims = {{2, 3}, {0, 2}};
  b.box = {64, 256};
  b.swizzle = 3;
  k.tensorMaps = {a, b};
  return k;
}

std::vector<uint8_t> pack(const std::vector<bundle::Kernel> &kernels) {
  std::vector<uint8_t> bytes;
  std::string error = bundle::serializeBundle(kernels, bytes);
  EXPECT_EQ(error, "");
  return bytes;
}

::testing::AssertionResult succeeds(tessel_status status) {
  if (!status)
    return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure()
                 << tessel_status_code_name(tessel_status_get_code(status))
                 << ": " << tessel_status_message(status);
  tessel_status_free(status);
  return failure;
}

namespace {

/// Checks `message` contains every one of `parts`.
::testing::AssertionResult contains(const std::string &message,
                                    std::initializer_list<const char *> parts) {
  for (const char *part : parts)
    if (message.find(part) == std::string::npos)
      return ::testing::AssertionFailure()
             << "message \"" << message << "\" lacks \"" << part << "\"";
  return ::testing::AssertionSuccess();
}

} // namespace

::testing::AssertionResult
failsWith(tessel_status status, tessel_status_code code,
          std::initializer_list<const char *> parts) {
  if (!status)
    return ::testing::AssertionFailure()
           << "succeeded, expected " << tessel_status_code_name(code);
  tessel_status_code actual = tessel_status_get_code(status);
  std::string message = tessel_status_message(status);
  tessel_status_free(status);
  if (actual != code)
    return ::testing::AssertionFailure()
           << "code " << tessel_status_code_name(actual) << ", expected "
           << tessel_status_code_name(code) << " (message: " << message << ")";
  return contains(message, parts);
}

::testing::AssertionResult
parseFails(const std::vector<uint8_t> &bytes, bundle::ParseError kind,
           std::initializer_list<const char *> parts) {
  std::vector<bundle::Kernel> kernels;
  bundle::ParseError actual = bundle::ParseError::None;
  std::string error =
      bundle::parseBundle(bytes.data(), bytes.size(), kernels, &actual);
  if (error.empty())
    return ::testing::AssertionFailure() << "the bundle parsed";
  if (actual != kind)
    return ::testing::AssertionFailure()
           << "wrong ParseError " << static_cast<int>(actual)
           << " (message: " << error << ")";
  return contains(error, parts);
}

DevicePtr openHost() {
  tessel_device device = nullptr;
  EXPECT_TRUE(succeeds(tessel_device_open("host", 0, &device)));
  return DevicePtr(device);
}

BundlePtr loadOrFail(tessel_device device, const std::vector<uint8_t> &bytes) {
  tessel_bundle bundle = nullptr;
  EXPECT_TRUE(succeeds(
      tessel_bundle_load_memory(device, bytes.data(), bytes.size(), &bundle)));
  return BundlePtr(bundle);
}

size_t kernelAt(const std::vector<uint8_t> &bytes, size_t kernel) {
  auto header = readAt<tessel_bundle_header>(bytes, 0);
  return header.kernels_offset + kernel * sizeof(tessel_bundle_kernel);
}

size_t argAt(const std::vector<uint8_t> &bytes, size_t kernel, size_t arg) {
  auto rec = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, kernel));
  return rec.args_offset + arg * sizeof(tessel_bundle_arg);
}

size_t dimAt(const std::vector<uint8_t> &bytes, size_t kernel, size_t arg,
             size_t dim) {
  auto rec = readAt<tessel_bundle_arg>(bytes, argAt(bytes, kernel, arg));
  return rec.dims_offset + dim * sizeof(tessel_bundle_dim);
}

size_t paramAt(const std::vector<uint8_t> &bytes, size_t kernel, size_t param) {
  auto rec = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, kernel));
  return rec.params_offset + param * sizeof(tessel_bundle_param);
}

size_t tensorMapAt(const std::vector<uint8_t> &bytes, size_t kernel,
                   size_t map) {
  auto rec = readAt<tessel_bundle_kernel>(bytes, kernelAt(bytes, kernel));
  return rec.tensor_maps_offset + map * sizeof(tessel_bundle_tensor_map);
}

fake_driver_state *resetFakeCudaState() {
  void *library = dlopen(TESSEL_TEST_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    ADD_FAILURE() << dlerror();
    return nullptr;
  }
  auto getState = reinterpret_cast<fake_driver_state *(*)()>(
      dlsym(library, "fake_cuda_state"));
  if (!getState) {
    ADD_FAILURE() << "the fake CUDA driver has no fake_cuda_state";
    return nullptr;
  }
  fake_driver_state *state = getState();
  std::memset(state, 0, sizeof *state);
  return state;
}

ScopedEnv::ScopedEnv(const char *name, const char *value) : name(name) {
  if (const char *old = getenv(name))
    saved = old, hadValue = true;
  setenv(name, value, 1);
}

ScopedEnv::~ScopedEnv() {
  if (hadValue)
    setenv(name, saved.c_str(), 1);
  else
    unsetenv(name);
}

std::vector<uint8_t> sharedRangeBundle(size_t count,
                                       const std::string &target) {
  std::vector<bundle::Kernel> kernels(count, fakeKernel("k", target));
  for (size_t i = 0; i < count; ++i)
    kernels[i].name = "k" + std::to_string(i);
  std::vector<uint8_t> bytes = pack(kernels);
  for (size_t i = 0; i < count; ++i) {
    size_t at = kernelAt(bytes, i);
    uint64_t offset = 0, size = bytes.size();
    std::memcpy(&bytes[at + offsetof(tessel_bundle_kernel, binary_offset)],
                &offset, sizeof offset);
    std::memcpy(&bytes[at + offsetof(tessel_bundle_kernel, binary_size)],
                &size, sizeof size);
  }
  // One checksum at the end: patch() would hash the file once per record.
  uint32_t crc = bundle::bundleChecksum(bytes.data(), bytes.size());
  std::memcpy(&bytes[offsetof(tessel_bundle_header, crc32)], &crc, sizeof crc);
  return bytes;
}

long peakRssKiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

tessel_tensor tensor(void *data, tessel_dtype dtype,
                     std::initializer_list<int64_t> shape) {
  tessel_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  size_t i = 0;
  for (int64_t s : shape)
    if (i < TESSEL_BUNDLE_MAX_RANK) // a longer shape only sets the rank
      t.shape[i++] = s;
  return t;
}

} // namespace tessel::test
