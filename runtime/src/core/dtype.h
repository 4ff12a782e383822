//===- core/dtype.h - Element types from untrusted callers ------*- C++ -*-===//
//
// A C caller may put any integer in a tessel_dtype field. In C++, loading an
// enum object that holds a value outside the enum's range is undefined, so the
// runtime reads dtypes from callers as plain integers through these helpers.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CORE_DTYPE_H
#define TESSEL_RUNTIME_CORE_DTYPE_H

#include "tessel/bundle.hpp"
#include "tessel/runtime.h"

#include <cstring>
#include <type_traits>

namespace tessel::runtime {

using DtypeValue = std::underlying_type_t<tessel_dtype>;

/// The integer stored in `dtype`, read without an enum load.
inline DtypeValue dtypeValue(const tessel_dtype &dtype) {
  DtypeValue value;
  std::memcpy(&value, &dtype, sizeof value);
  return value;
}

/// bundle::dtypeName of a caller's dtype value; "unknown" for a value outside
/// the enum, which is never converted to tessel_dtype.
inline const char *dtypeValueName(DtypeValue value) {
  return value <= TESSEL_DTYPE_I64
             ? bundle::dtypeName(static_cast<tessel_dtype>(value))
             : "unknown";
}
/// Bytes per element; 0 for invalid and unknown values.
size_t dtypeSize(DtypeValue value);

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_CORE_DTYPE_H
