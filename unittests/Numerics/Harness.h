//===- Harness.h - Run generated kernels on host tensors --------*- C++ -*-===//
//
// What every numerical test needs and nothing op-specific: host tensors of
// any kernel dtype (with round-to-nearest-even bf16/f16 conversion), a
// fixed-seed random source, kernels looked up in the bundles the build made,
// launches that bind buffers by operand name, and a comparison against a
// double-precision reference that reports the worst element.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_UNITTESTS_NUMERICS_HARNESS_H
#define TESSEL_UNITTESTS_NUMERICS_HARNESS_H

#include "tessel/runtime.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace tessel::numerics {

//===----------------------------------------------------------------------===//
// 16-bit floats
//===----------------------------------------------------------------------===//

/// f32 -> bf16 / f16, rounding to nearest even; NaN stays NaN, overflow
/// becomes infinity.
uint16_t floatToBf16(float f);
uint16_t floatToF16(float f);
float bf16ToFloat(uint16_t h);
float f16ToFloat(uint16_t h);

/// `v` rounded to the nearest value of `dtype` (a float dtype), as a double.
double roundTo(tessel_dtype dtype, double v);

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

/// A dense row-major host buffer with a runtime dtype. Float elements are read
/// and written as doubles: set() rounds to the dtype, at() returns exactly
/// what the kernel sees.
class Tensor {
public:
  Tensor() = default;
  Tensor(tessel_dtype dtype, std::vector<int64_t> shape);

  /// A tensor whose bytes are garbage a kernel must overwrite: NaN for float
  /// dtypes (all bits set), 0xA5A5... for integers (not 0 and not -1, the
  /// values a lazy kernel might leave behind).
  static Tensor poisoned(tessel_dtype dtype, std::vector<int64_t> shape);
  static Tensor i32(std::vector<int64_t> shape, const std::vector<int32_t> &v);
  /// A rank-0 f32 tensor: a scalar argument (the softmax scale).
  static Tensor scalar(float value);

  tessel_dtype dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t dim(size_t d) const { return dims[d]; }
  size_t numel() const { return count; }
  bool isFloat() const;

  double at(size_t i) const;
  void set(size_t i, double v);
  int32_t *i32() { return reinterpret_cast<int32_t *>(storage.data()); }
  const int32_t *i32() const {
    return reinterpret_cast<const int32_t *>(storage.data());
  }
  int64_t *i64() { return reinterpret_cast<int64_t *>(storage.data()); }
  void *data() { return storage.data(); }
  const void *data() const { return storage.data(); }
  size_t bytes() const { return count * tessel_dtype_size(type); }

  /// Row-major flat index of a multi-index.
  size_t index(std::initializer_list<int64_t> idx) const;
  std::string indexString(size_t flat) const;

  void poison();
  /// All elements as doubles (floats exact, integers converted).
  std::vector<double> values() const;
  /// The runtime's view of this buffer.
  tessel_tensor arg() const;

private:
  tessel_dtype type = TESSEL_DTYPE_INVALID;
  std::vector<int64_t> dims;
  size_t count = 0;
  /// 16-byte chunks keep every dtype aligned, and the buffer as aligned as
  /// GPU kernels (and so the emulated devices) require.
  struct alignas(16) Chunk {
    unsigned char bytes[16];
  };
  std::vector<Chunk> storage;
};

//===----------------------------------------------------------------------===//
// Random data
//===----------------------------------------------------------------------===//

/// A fixed-seed source: every test draws the same numbers on every run.
class Rng {
public:
  explicit Rng(uint64_t seed) : engine(seed) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine);
  }
  int64_t integer(int64_t lo, int64_t hi) { // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(engine);
  }
  std::mt19937_64 &raw() { return engine; }

private:
  std::mt19937_64 engine;
};

/// Fills a float tensor with values drawn from [lo, hi), rounded to its
/// dtype and redrawn while they round to zero: no test input is zero.
void fillRandom(Tensor &t, Rng &rng, double lo = -1.0, double hi = 1.0);
Tensor randomTensor(tessel_dtype dtype, std::vector<int64_t> shape, Rng &rng,
                    double lo = -1.0, double hi = 1.0);

/// cu_seqlens of requests of these lengths: {0, l0, l0 + l1, ...}.
std::vector<int32_t> cumulative(const std::vector<int32_t> &lengths);

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// The bundles the build made from NumericsKernels.mlir.
struct BundleVariant {
  const char *name; // a gtest-safe name: "Default", "SmallBudget", "Direct"
  const char *path;
};
const BundleVariant &defaultBundle();
const BundleVariant &smallBudgetBundle();
const BundleVariant &directBundle();
std::vector<BundleVariant> allBundles();
/// How gtest prints a bundle parameter.
void PrintTo(const BundleVariant &bundle, std::ostream *os);

/// The device every test runs on: "host", or the emulated GPU that
/// TESSEL_NUMERICS_DEVICE names ("emu-gfx942", "emu-gfx950", "emu-sm80"),
/// which runs the chip's kernels lane by lane. ctest runs the suite once per
/// device.
const char *testDevice();
bool onEmulatedGPU();

/// A bundle of the test device, loaded once and kept until exit; null (and
/// a test failure) if it cannot be loaded.
tessel_bundle sharedBundle(const char *path);

/// The message of `status` ("" for success), which it frees; `code`
/// receives its code if not null.
std::string consume(tessel_status status, tessel_status_code *code = nullptr);

/// One argument of a launch: the operand name the kernel must report at this
/// position, and the buffer.
using NamedArg = std::pair<const char *, Tensor *>;

/// A kernel of a bundle (bundles and the host device live until exit).
class Kernel {
public:
  /// Looks `name` up in the bundle at `bundlePath`; a test fails (and the
  /// kernel is null) if either is missing.
  Kernel(const char *bundlePath, const char *name);

  bool valid() const { return kernel != nullptr; }
  /// On an emulated GPU: why the bundle has no kernel of this name for it
  /// (its GPU template does not exist, f32 attention say); "" otherwise.
  const std::string &missingOnDevice() const { return missing; }
  tessel_kernel handle() const { return kernel; }

  /// Launches on `args`, checking first that the names match the kernel's
  /// operand names in order. Success, or the runtime's message.
  ::testing::AssertionResult run(const std::vector<NamedArg> &args) const;

  /// Launches raw tensors and returns the status message ("" on success),
  /// for the error-path tests. `code` receives the status code.
  std::string runRaw(const std::vector<tessel_tensor> &args,
                     tessel_status_code *code = nullptr) const;

private:
  std::string name;
  std::string missing;
  tessel_kernel kernel = nullptr;
};

/// Declares kernel `var` (see Kernel). On an emulated GPU without that
/// kernel the test is skipped, and the function this is in returns: ctest
/// reports the test as skipped, never as passed.
#define TESSEL_KERNEL_OR_SKIP(var, bundlePath, name)                           \
  Kernel var(bundlePath, name);                                                \
  if (!var.missingOnDevice().empty())                                          \
  GTEST_SKIP() << var.missingOnDevice()

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

/// Element i passes when |got_i - ref_i| <= rtol * (|ref_i| + floor * M),
/// M = max_j |ref_j|. `floor` keeps near-zero elements of a tensor whose
/// values come from sums of mixed-sign terms (attention outputs, matmul
/// results) from demanding a relative accuracy that fp32 accumulation cannot
/// give them: their absolute error scales with the tensor's magnitude, not
/// with their own. Infinite references must be matched exactly; NaN never
/// passes.
struct Tolerance {
  double rtol;
  double floor;
};

/// The tolerance of an output of this dtype (see Harness.cpp for why).
Tolerance toleranceFor(tessel_dtype dtype);
/// LSE outputs: an absolute error in log space is a relative error of the
/// softmax denominator, so |got - ref| <= rtol * max(1, |ref|).
Tolerance lseTolerance();

::testing::AssertionResult near(const char *what, const Tensor &got,
                                const std::vector<double> &ref, Tolerance tol);
::testing::AssertionResult near(const char *what, const Tensor &got,
                                const std::vector<double> &ref);
/// LSE tensors (see lseTolerance).
::testing::AssertionResult nearLse(const char *what, const Tensor &got,
                                   const std::vector<double> &ref);
/// Bitwise equality with `ref` rounded to got's dtype (copies, exact cases).
::testing::AssertionResult exact(const char *what, const Tensor &got,
                                 const std::vector<double> &ref);

} // namespace tessel::numerics

#endif // TESSEL_UNITTESTS_NUMERICS_HARNESS_H
