//===- bundle/dtype.cpp - Element type names and sizes --------------------===//
//
// The one table of dtype names: the runtime's messages and tessel_dtype_name,
// and tessel-aot's listings, all print dtypes through it. Sizes live here too:
// the tensor-map rules of the format are in bytes.
//
//===----------------------------------------------------------------------===//

#include "tessel/bundle.hpp"

namespace tessel::bundle {

const char *dtypeName(tessel_dtype dtype) {
  switch (dtype) {
  case TESSEL_DTYPE_INVALID:
    return "invalid";
  case TESSEL_DTYPE_F32:
    return "f32";
  case TESSEL_DTYPE_F16:
    return "f16";
  case TESSEL_DTYPE_BF16:
    return "bf16";
  case TESSEL_DTYPE_I32:
    return "i32";
  case TESSEL_DTYPE_I64:
    return "i64";
  }
  return "unknown";
}

size_t dtypeSize(tessel_dtype dtype) {
  switch (dtype) {
  case TESSEL_DTYPE_F32:
  case TESSEL_DTYPE_I32:
    return 4;
  case TESSEL_DTYPE_F16:
  case TESSEL_DTYPE_BF16:
    return 2;
  case TESSEL_DTYPE_I64:
    return 8;
  case TESSEL_DTYPE_INVALID:
    break;
  }
  return 0;
}

} // namespace tessel::bundle
