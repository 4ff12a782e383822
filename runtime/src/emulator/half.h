//===- emulator/half.h - 16-bit floats to f32 -------------------*- C++ -*-===//
//
// The matrix ops take bf16 and f16 operands and compute in f32, where every
// value of either type (and every product of two) is exact. Written out
// rather than left to _Float16, which not every host compiler has.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_EMULATOR_HALF_H
#define TESSEL_RUNTIME_EMULATOR_HALF_H

#include "tessel/emulator_abi.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace tessel::runtime::emulator {

/// bf16 is the upper half of an f32.
inline float bf16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

/// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
inline float f16ToFloat(uint16_t bits) {
  const float sign = bits & 0x8000 ? -1.0f : 1.0f;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0x1f)
    return mantissa ? std::numeric_limits<float>::quiet_NaN()
                    : sign * std::numeric_limits<float>::infinity();
  if (exponent == 0) // zero and subnormals: mantissa * 2^-24
    return sign * std::ldexp(float(mantissa), -24);
  return sign * std::ldexp(float(mantissa | 0x400), exponent - 25);
}

/// An element of `elem` (tessel_emu_elem), checked by the caller.
inline float elementToFloat(uint32_t elem, uint16_t bits) {
  return elem == TESSEL_EMU_BF16 ? bf16ToFloat(bits) : f16ToFloat(bits);
}

} // namespace tessel::runtime::emulator

#endif // TESSEL_RUNTIME_EMULATOR_HALF_H
