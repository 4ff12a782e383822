//===- core/dtype.cpp - Element type sizes and the dtype C API ------------===//

#include "dtype.h"

namespace tessel::runtime {

size_t dtypeSize(DtypeValue value) {
  return value <= TESSEL_DTYPE_I64
             ? bundle::dtypeSize(static_cast<tessel_dtype>(value))
             : 0;
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
