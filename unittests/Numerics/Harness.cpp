//===- Harness.cpp - Run generated kernels on host tensors ----------------===//

#include "Harness.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

namespace tessel::numerics {

//===----------------------------------------------------------------------===//
// 16-bit floats
//===----------------------------------------------------------------------===//

static uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

static float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t u = bitsOf(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet and a NaN
    return static_cast<uint16_t>((u >> 16) | 0x40);
  // Adding 0x7fff plus the lowest kept bit rounds half to even; a carry out
  // of the mantissa correctly bumps the exponent (up to infinity).
  uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

float bf16ToFloat(uint16_t h) {
  return floatOf(static_cast<uint32_t>(h) << 16);
}

uint16_t floatToF16(float f) {
  uint32_t u = bitsOf(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) // NaN
    return sign | 0x7e00u;
  if (mag >= 0x477ff000u) // >= 65520 rounds to infinity (65504 is the max)
    return sign | 0x7c00u;
  if (mag < 0x38800000u) { // below 2^-14: an f16 subnormal (or zero)
    // The subnormal unit is 2^-24; scaling by 2^24 is exact in f32 and
    // nearbyint rounds half to even in the default rounding mode. 1024 is
    // the encoding of the smallest normal, so rounding up into it is right.
    float scaled = floatOf(mag) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t exponent = (mag >> 23) - 112; // rebias 127 -> 15
  uint32_t mantissa = mag & 0x7fffffu;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // a carry into the exponent is the correct result
  return sign | static_cast<uint16_t>(h);
}

float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) // zero or subnormal: mantissa * 2^-24, exact in f32
    return floatOf(sign | bitsOf(static_cast<float>(mantissa) * 0x1p-24f));
  if (exponent == 31)
    return floatOf(sign | 0x7f800000u | (mantissa << 13));
  return floatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

double roundTo(tessel_dtype dtype, double v) {
  switch (dtype) {
  case TESSEL_DTYPE_F32:
    return static_cast<float>(v);
  case TESSEL_DTYPE_BF16:
    return bf16ToFloat(floatToBf16(static_cast<float>(v)));
  case TESSEL_DTYPE_F16:
    return f16ToFloat(floatToF16(static_cast<float>(v)));
  default:
    return v;
  }
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

Tensor::Tensor(tessel_dtype dtype, std::vector<int64_t> shape)
    : type(dtype), dims(std::move(shape)), count(1) {
  for (int64_t d : dims)
    count *= static_cast<size_t>(d);
  // +1: never a null data().
  storage.assign(bytes() / sizeof(Chunk) + 1, Chunk{});
}

Tensor Tensor::poisoned(tessel_dtype dtype, std::vector<int64_t> shape) {
  Tensor t(dtype, std::move(shape));
  t.poison();
  return t;
}

Tensor Tensor::scalar(float value) {
  Tensor t(TESSEL_DTYPE_F32, {});
  std::memcpy(t.data(), &value, sizeof value);
  return t;
}

Tensor Tensor::i32(std::vector<int64_t> shape, const std::vector<int32_t> &v) {
  Tensor t(TESSEL_DTYPE_I32, std::move(shape));
  EXPECT_EQ(t.numel(), v.size()) << "Tensor::i32: wrong number of values";
  std::memcpy(t.data(), v.data(), std::min(t.numel(), v.size()) * 4);
  return t;
}

bool Tensor::isFloat() const {
  return type == TESSEL_DTYPE_F32 || type == TESSEL_DTYPE_BF16 ||
         type == TESSEL_DTYPE_F16;
}

double Tensor::at(size_t i) const {
  const auto *p = reinterpret_cast<const uint8_t *>(storage.data());
  switch (type) {
  case TESSEL_DTYPE_F32: {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  case TESSEL_DTYPE_BF16:
  case TESSEL_DTYPE_F16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return type == TESSEL_DTYPE_BF16 ? bf16ToFloat(h) : f16ToFloat(h);
  }
  case TESSEL_DTYPE_I32:
    return i32()[i];
  case TESSEL_DTYPE_I64:
    return static_cast<double>(reinterpret_cast<const int64_t *>(p)[i]);
  default:
    return std::numeric_limits<double>::quiet_NaN();
  }
}

void Tensor::set(size_t i, double v) {
  auto *p = reinterpret_cast<uint8_t *>(storage.data());
  switch (type) {
  case TESSEL_DTYPE_F32: {
    float f = static_cast<float>(v);
    std::memcpy(p + 4 * i, &f, 4);
    return;
  }
  case TESSEL_DTYPE_BF16:
  case TESSEL_DTYPE_F16: {
    float f = static_cast<float>(v);
    uint16_t h = type == TESSEL_DTYPE_BF16 ? floatToBf16(f) : floatToF16(f);
    std::memcpy(p + 2 * i, &h, 2);
    return;
  }
  case TESSEL_DTYPE_I32:
    i32()[i] = static_cast<int32_t>(v);
    return;
  case TESSEL_DTYPE_I64:
    i64()[i] = static_cast<int64_t>(v);
    return;
  default:
    ADD_FAILURE() << "Tensor::set on an invalid dtype";
  }
}

size_t Tensor::index(std::initializer_list<int64_t> idx) const {
  EXPECT_EQ(idx.size(), dims.size()) << "Tensor::index: wrong rank";
  size_t flat = 0, d = 0;
  for (int64_t i : idx)
    flat = flat * static_cast<size_t>(dims[d++]) + static_cast<size_t>(i);
  return flat;
}

std::string Tensor::indexString(size_t flat) const {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = static_cast<int64_t>(flat % static_cast<size_t>(dims[d]));
    flat /= static_cast<size_t>(dims[d]);
  }
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < idx.size(); ++d)
    os << (d ? ", " : "") << idx[d];
  os << "]";
  return os.str();
}

void Tensor::poison() {
  std::memset(storage.data(), isFloat() ? 0xff : 0xa5, bytes());
}

std::vector<double> Tensor::values() const {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = at(i);
  return v;
}

tessel_tensor Tensor::arg() const {
  tessel_tensor t{};
  t.data = const_cast<Chunk *>(storage.data());
  t.dtype = type;
  t.rank = static_cast<int32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d)
    t.shape[d] = dims[d];
  return t;
}

//===----------------------------------------------------------------------===//
// Random data
//===----------------------------------------------------------------------===//

void fillRandom(Tensor &t, Rng &rng, double lo, double hi) {
  for (size_t i = 0; i < t.numel(); ++i) {
    double v;
    do
      v = roundTo(t.dtype(), rng.uniform(lo, hi));
    while (v == 0.0);
    t.set(i, v);
  }
}

Tensor randomTensor(tessel_dtype dtype, std::vector<int64_t> shape, Rng &rng,
                    double lo, double hi) {
  Tensor t(dtype, std::move(shape));
  fillRandom(t, rng, lo, hi);
  return t;
}

std::vector<int32_t> cumulative(const std::vector<int32_t> &lengths) {
  std::vector<int32_t> cu{0};
  for (int32_t l : lengths)
    cu.push_back(cu.back() + l);
  return cu;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

const BundleVariant &defaultBundle() {
  static const BundleVariant v{"Default", TESSEL_NUMERICS_BUNDLE_DEFAULT};
  return v;
}
const BundleVariant &smallBudgetBundle() {
  static const BundleVariant v{"SmallBudget", TESSEL_NUMERICS_BUNDLE_SMALL};
  return v;
}
const BundleVariant &directBundle() {
  static const BundleVariant v{"Direct", TESSEL_NUMERICS_BUNDLE_DIRECT};
  return v;
}
std::vector<BundleVariant> allBundles() {
  return {defaultBundle(), smallBudgetBundle(), directBundle()};
}
void PrintTo(const BundleVariant &bundle, std::ostream *os) {
  *os << bundle.name << " (" << bundle.path << ")";
}

namespace {
/// Takes ownership of a status and returns its message ("" for success).

/// The test device and every bundle loaded so far; they live until exit, so
/// kernels stay valid across tests.
class Registry {
public:
  static Registry &get() {
    static Registry *r = new Registry;
    return *r;
  }

  /// The bundle at `path` on the test device, or with `host` on the host
  /// device (where it has every kernel).
  tessel_bundle bundle(const std::string &path, std::string &error,
                       bool host = false) {
    std::lock_guard<std::mutex> lock(mutex);
    Loaded &on = host ? hostDevice : testDevice_;
    if (!on.device) {
      error = consume(
          tessel_device_open(host ? "host" : testDevice(), 0, &on.device));
      if (!error.empty())
        return nullptr;
    }
    auto it = on.bundles.find(path);
    if (it != on.bundles.end())
      return it->second;
    tessel_bundle b = nullptr;
    error = consume(tessel_bundle_load_file(on.device, path.c_str(), &b));
    if (!error.empty())
      return nullptr;
    return on.bundles[path] = b;
  }

private:
  struct Loaded {
    tessel_device device = nullptr;
    std::map<std::string, tessel_bundle> bundles;
  };
  std::mutex mutex;
  Loaded testDevice_, hostDevice;
};
} // namespace

const char *testDevice() {
  static const char *device = [] {
    const char *name = std::getenv("TESSEL_NUMERICS_DEVICE");
    return name && *name ? name : "host";
  }();
  return device;
}

bool onEmulatedGPU() { return std::strncmp(testDevice(), "emu-", 4) == 0; }

std::string consume(tessel_status status, tessel_status_code *code) {
  if (code)
    *code = tessel_status_get_code(status);
  std::string message = status ? tessel_status_message(status) : "";
  if (status && message.empty())
    message = "(a failing status with an empty message)";
  tessel_status_free(status);
  return message;
}

tessel_bundle sharedBundle(const char *path) {
  std::string error;
  tessel_bundle bundle = Registry::get().bundle(path, error);
  if (!bundle)
    ADD_FAILURE() << "cannot load bundle " << path << ": " << error;
  return bundle;
}

Kernel::Kernel(const char *bundlePath, const char *name) : name(name) {
  tessel_bundle bundle = sharedBundle(bundlePath);
  if (!bundle)
    return;
  std::string error = consume(tessel_bundle_find_kernel(bundle, name, &kernel));
  // The numerics bundles hold every kernel for the host and, for each
  // emulated GPU, those its templates support (tessel-aot
  // --skip-unsupported). Only the kernels no GPU template is meant to take
  // may be missing there (f32 operands: no f32 MMA; extend: several GPU
  // kernels); any other gap is a template that stopped compiling.
  if (!error.empty() && onEmulatedGPU()) {
    kernel = nullptr;
    std::string hostError;
    tessel_bundle all = Registry::get().bundle(bundlePath, hostError, true);
    tessel_kernel onHost = nullptr;
    if (all)
      hostError = consume(tessel_bundle_find_kernel(all, name, &onHost));
    if (!onHost) {
      ADD_FAILURE() << "kernel " << name << " not in " << bundlePath << ": "
                    << hostError;
      return;
    }
    bool noTemplate =
        tessel_kernel_dtype(onHost) == TESSEL_DTYPE_F32 ||
        std::strcmp(tessel_kernel_op(onHost), "tessel.extend_attention") == 0;
    if (!noTemplate) {
      ADD_FAILURE() << "no " << testDevice() << " kernel '" << name << "' in "
                    << bundlePath << ", though its op ("
                    << tessel_kernel_op(onHost)
                    << ") has GPU templates for its dtype";
      return;
    }
    missing = "no " + std::string(testDevice()) + " kernel '" + name +
              "' (no GPU template takes f32 attention or matmuls, or extend "
              "as one kernel)";
    return;
  }
  if (!error.empty()) {
    ADD_FAILURE() << "kernel " << name << " not in " << bundlePath << ": "
                  << error;
    kernel = nullptr;
  }
}

::testing::AssertionResult
Kernel::run(const std::vector<NamedArg> &args) const {
  if (!kernel)
    return ::testing::AssertionFailure() << "kernel " << name << " not loaded";
  size_t numArgs = tessel_kernel_num_args(kernel);
  if (numArgs != args.size())
    return ::testing::AssertionFailure()
           << name << " takes " << numArgs << " args, the test binds "
           << args.size();
  std::vector<tessel_tensor> tensors;
  for (size_t i = 0; i < args.size(); ++i) {
    const char *expected = tessel_kernel_arg_name(kernel, i);
    if (std::strcmp(expected, args[i].first) != 0)
      return ::testing::AssertionFailure()
             << name << " arg " << i << " is '" << expected
             << "', the test binds '" << args[i].first << "'";
    tensors.push_back(args[i].second->arg());
  }
  std::string error = runRaw(tensors);
  if (!error.empty())
    return ::testing::AssertionFailure()
           << name << ": launch failed: " << error;
  return ::testing::AssertionSuccess();
}

std::string Kernel::runRaw(const std::vector<tessel_tensor> &args,
                           tessel_status_code *code) const {
  if (!kernel)
    return "kernel " + name + " not loaded";
  return consume(
      tessel_kernel_launch(kernel, args.data(), args.size(), nullptr), code);
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

// Why these numbers:
//  * f32 outputs are computed in f32 from inputs the reference sees exactly,
//    so the only differences are f32 rounding in dot products and sums of at
//    most a few thousand terms: about sqrt(n) * 2^-24 relative to the
//    magnitude of the terms, i.e. ~1e-6 of the tensor's largest value. 1e-5
//    (relative to |ref| + the tensor's max |ref|) leaves 10x headroom while a
//    one-key masking error or a wrong block (errors of 1e-3..1e-1) fails.
//  * bf16 outputs add one final rounding (2^-9 = 2e-3 relative); 1e-2 is
//    the documented bf16 tolerance. f16 rounds at 2^-11: 2e-3.
// The floor term is 1e-2 of the max for 16-bit outputs (their rounding error
// is relative to each element), and 1x for f32 outputs, where the absolute
// accumulation error does not shrink with the element (see Tolerance).
// On an emulated GPU every output, f32 ones too, carries the 16-bit rounding
// of the MMA operands (the softmax's P among them) under an f32 sum: the
// GPU suite's bound, 1e-2 relative to the element plus the tensor's max.
Tolerance toleranceFor(tessel_dtype dtype) {
  if (onEmulatedGPU())
    return {1e-2, 1.0};
  switch (dtype) {
  case TESSEL_DTYPE_BF16:
    return {1e-2, 1e-2};
  case TESSEL_DTYPE_F16:
    return {2e-3, 1e-2};
  default:
    return {1e-5, 1.0};
  }
}

Tolerance lseTolerance() { return {1e-5, 0.0}; }

static bool verbose() {
  static const bool v = [] {
    const char *e = std::getenv("TESSEL_NUMERICS_VERBOSE");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return v;
}

namespace {
enum class Mode { Scaled, Lse, Exact };
}

static ::testing::AssertionResult compare(const char *what, const Tensor &got,
                                          const std::vector<double> &ref,
                                          Tolerance tol, Mode mode) {
  if (got.numel() != ref.size())
    return ::testing::AssertionFailure()
           << what << ": " << got.numel() << " elements, reference has "
           << ref.size();
  double maxRef = 0;
  for (double r : ref)
    if (std::isfinite(r))
      maxRef = std::max(maxRef, std::fabs(r));

  size_t failures = 0, worst = 0;
  double worstRatio = 0; // error / bound; > 1 fails
  std::ostringstream first;
  first.precision(9);
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = got.at(i), r = ref[i];
    bool ok;
    double ratio = 0;
    if (mode == Mode::Exact) {
      double want = got.isFloat() ? roundTo(got.dtype(), r) : r;
      // A NaN kept where one was (a cache's stale slots) is exact too.
      ok = g == want || (std::isnan(g) && std::isnan(want));
      ratio = ok ? 0 : INFINITY;
    } else if (std::isnan(g) || std::isnan(r)) {
      ok = false;
      ratio = INFINITY;
    } else if (std::isinf(r) || std::isinf(g)) {
      ok = g == r;
      ratio = ok ? 0 : INFINITY;
    } else {
      double bound = mode == Mode::Lse
                         ? tol.rtol * std::max(1.0, std::fabs(r))
                         : tol.rtol * (std::fabs(r) + tol.floor * maxRef);
      double err = std::fabs(g - r);
      ok = err <= bound;
      ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
    }
    if (ratio > worstRatio) {
      worstRatio = ratio;
      worst = i;
    }
    if (!ok && failures++ < 5)
      first << "\n    " << got.indexString(i) << ": got " << g << ", want "
            << r;
  }
  if (verbose())
    std::printf("    [numerics] %-40s %8zu elements  max err/bound %.3g\n",
                what, ref.size(), worstRatio);
  if (failures == 0)
    return ::testing::AssertionSuccess();
  // One stream with a fixed precision: gtest's own prints 17 digits.
  std::ostringstream w;
  w.precision(9);
  w << what << ": " << failures << " of " << ref.size()
    << " elements out of tolerance";
  if (mode == Mode::Scaled)
    w << " (rtol " << tol.rtol << ", floor " << tol.floor << " * max|ref| "
      << maxRef << ")";
  w << "; worst " << got.indexString(worst) << ": got " << got.at(worst)
    << ", want " << ref[worst] << " (error/bound " << worstRatio << ")";
  return ::testing::AssertionFailure()
         << w.str() << "; first failures:" << first.str();
}

::testing::AssertionResult near(const char *what, const Tensor &got,
                                const std::vector<double> &ref, Tolerance tol) {
  return compare(what, got, ref, tol, Mode::Scaled);
}

::testing::AssertionResult near(const char *what, const Tensor &got,
                                const std::vector<double> &ref) {
  return compare(what, got, ref, toleranceFor(got.dtype()), Mode::Scaled);
}

::testing::AssertionResult nearLse(const char *what, const Tensor &got,
                                   const std::vector<double> &ref) {
  return compare(what, got, ref, lseTolerance(), Mode::Lse);
}

::testing::AssertionResult exact(const char *what, const Tensor &got,
                                 const std::vector<double> &ref) {
  return compare(what, got, ref, {0, 0}, Mode::Exact);
}

} // namespace tessel::numerics
