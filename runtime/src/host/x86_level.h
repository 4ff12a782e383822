//===- host/x86_level.h - x86-64 microarchitecture levels -------*- C++ -*-===//
//
// tessel-aot compiles host kernels for an x86-64 microarchitecture level and
// records it as the kernel parameter `x86_64_level` (1..4: x86-64, -v2, -v3,
// -v4). Running such code on a CPU without the level's features dies with
// SIGILL at the first such instruction, so the host backend checks the level
// before it loads the kernel.
//
// The check is a pure function of the level and a feature predicate, so tests
// can run it against a made-up CPU whatever CPU they run on.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_HOST_X86_LEVEL_H
#define TESSEL_RUNTIME_HOST_X86_LEVEL_H

#include <cstring>
#include <string>

namespace tessel::runtime {

/// The name of the kernel parameter that holds the level.
constexpr const char kX86LevelParam[] = "x86_64_level";
/// The highest level there is.
constexpr int kMaxX86Level = 4;

/// The features of x86-64-v`level` (cumulative) that `has` says the CPU
/// lacks, comma-separated; "" if it has them all. Level 1 needs nothing
/// beyond x86-64 itself. Only features __builtin_cpu_supports can test are
/// listed (not cx16, lahf_lm, xsave, osxsave): every CPU that has the rest
/// of a level has those too.
template <typename HasFeature>
std::string missingX86Features(int level, HasFeature has) {
  struct Feature {
    int level;
    const char *name;
  };
  static constexpr Feature kFeatures[] = {
      {2, "sse3"},     {2, "ssse3"},    {2, "sse4.1"},   {2, "sse4.2"},
      {2, "popcnt"},   {3, "avx"},      {3, "avx2"},     {3, "bmi"},
      {3, "bmi2"},     {3, "f16c"},     {3, "fma"},      {3, "lzcnt"},
      {3, "movbe"},    {4, "avx512f"},  {4, "avx512bw"}, {4, "avx512cd"},
      {4, "avx512dq"}, {4, "avx512vl"},
  };
  std::string missing;
  for (const Feature &feature : kFeatures) {
    if (feature.level > level || has(feature.name))
      continue;
    if (!missing.empty())
      missing += ", ";
    missing += feature.name;
  }
  return missing;
}

/// Whether this CPU has `feature`, one of the names missingX86Features
/// asks about. __builtin_cpu_supports takes only string literals, hence the
/// chain.
inline bool cpuHasFeature(const char *feature) {
#if defined(__x86_64__)
  __builtin_cpu_init();
#define TESSEL_CPU_FEATURE(name)                                               \
  if (std::strcmp(feature, name) == 0)                                         \
    return __builtin_cpu_supports(name);
  TESSEL_CPU_FEATURE("sse3")
  TESSEL_CPU_FEATURE("ssse3")
  TESSEL_CPU_FEATURE("sse4.1")
  TESSEL_CPU_FEATURE("sse4.2")
  TESSEL_CPU_FEATURE("popcnt")
  TESSEL_CPU_FEATURE("avx")
  TESSEL_CPU_FEATURE("avx2")
  TESSEL_CPU_FEATURE("bmi")
  TESSEL_CPU_FEATURE("bmi2")
  TESSEL_CPU_FEATURE("f16c")
  TESSEL_CPU_FEATURE("fma")
  TESSEL_CPU_FEATURE("lzcnt")
  TESSEL_CPU_FEATURE("movbe")
  TESSEL_CPU_FEATURE("avx512f")
  TESSEL_CPU_FEATURE("avx512bw")
  TESSEL_CPU_FEATURE("avx512cd")
  TESSEL_CPU_FEATURE("avx512dq")
  TESSEL_CPU_FEATURE("avx512vl")
#undef TESSEL_CPU_FEATURE
#endif
  (void)feature;
  return false;
}

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_HOST_X86_LEVEL_H
