//===- support/format.h - printf-style std::string formatting ---*- C++ -*-===//
//
// Every error message in the runtime is built with `format`, so that messages
// can name the values that were wrong without a dependency on fmt or LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_SUPPORT_FORMAT_H
#define TESSEL_RUNTIME_SUPPORT_FORMAT_H

#include <cstdarg>
#include <cstdio>
#include <string>

namespace tessel {

/// Formats like vsnprintf into a std::string.
inline std::string formatv(const char *fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0)
    return std::string();
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(&out[0], out.size() + 1, fmt, args);
  return out;
}

/// Formats like snprintf into a std::string.
__attribute__((format(printf, 1, 2))) inline std::string format(const char *fmt,
                                                                ...) {
  va_list args;
  va_start(args, fmt);
  std::string out = formatv(fmt, args);
  va_end(args);
  return out;
}

/// Joins `items` with ", ", showing at most `limit` of them and then
/// "(and N more)", so that messages stay readable for large bundles.
template <typename Range, typename ToString>
std::string joinLimited(const Range &items, size_t limit, ToString toString) {
  std::string out;
  size_t count = 0;
  for (const auto &item : items) {
    if (count < limit) {
      if (count)
        out += ", ";
      out += toString(item);
    }
    ++count;
  }
  if (count > limit)
    out += format(" (and %zu more)", count - limit);
  return out;
}

} // namespace tessel

#endif // TESSEL_RUNTIME_SUPPORT_FORMAT_H
