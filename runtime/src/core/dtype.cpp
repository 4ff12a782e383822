//===- core/dtype.cpp - Element type sizes and the dtype C API ------------===//

#include "dtype.h"

namespace tessel::runtime {

size_t dtypeSize(DtypeValue value) {
  switch (value) {
  case TESSEL_DTYPE_F32:
  case TESSEL_DTYPE_I32:
    return 4;
  case TESSEL_DTYPE_F16:
  case TESSEL_DTYPE_BF16:
    return 2;
  case TESSEL_DTYPE_I64:
    return 8;
  }
  return 0;
}

} // namespace tessel::runtime

extern "C" {

size_t tessel_dtype_size(tessel_dtype dtype) {
  return tessel::runtime::dtypeSize(tessel::runtime::dtypeValue(dtype));
}

const char *tessel_dtype_name(tessel_dtype dtype) {
  return tessel::runtime::dtypeValueName(tessel::runtime::dtypeValue(dtype));
}

} // extern "C"
