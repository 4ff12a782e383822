//===- emulator/nvidia_ops.cpp - NVIDIA warp32 ops ------------------------===//
//
// The PTX ISA semantics of the warp-level instructions Tessel's sm80
// templates use, as tessel/emulator_abi.h states them. Reads from lanes that
// returned (or do not exist) give 0; the PTX ISA leaves them undefined.
//
//===----------------------------------------------------------------------===//

#include "half.h"
#include "ops.h"

#include <cstring>

namespace tessel::runtime::emulator {

namespace {

constexpr uint32_t kWarp = 32;

template <typename Io> Io *ioOf(const WaveCall &call, uint32_t lane) {
  return static_cast<Io *>(call.io[lane]);
}

uint32_t liveMask(const WaveCall &call) {
  uint32_t mask = 0;
  for (uint32_t lane = 0; lane < kWarp; ++lane)
    if (call.io[lane])
      mask |= 1u << lane;
  return mask;
}

/// The two 16-bit elements of a register, the lower first.
uint16_t low(uint32_t pair) { return uint16_t(pair); }
uint16_t high(uint32_t pair) { return uint16_t(pair >> 16); }

} // namespace

bool shfl(const WaveCall &call, OpFailure &failure) {
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    auto *io = ioOf<tessel_emu_shfl_io>(call, lane);
    if (!io)
      continue;
    if (!(io->member >> lane & 1))
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "the lane is not in its own membermask 0x%08x", io->member);
    // The PTX ISA's pseudocode: c packs the clamp value (bits 4:0) and the
    // segment mask (bits 12:8); a lane's segment is the lanes that agree
    // with it on the segment mask's bits.
    const int offset = int(io->offset & 31);
    const int clamp = int(io->clamp & 31);
    const int segment = int((io->clamp >> 8) & 31);
    const int self = int(lane);
    const int maxLane = (self & segment) | (clamp & ~segment);
    const int minLane = self & segment;
    int source = 0;
    bool valid = false;
    switch (call.op) {
    case TESSEL_EMU_SHFL_UP:
      source = self - offset;
      valid = source >= maxLane;
      break;
    case TESSEL_EMU_SHFL_DOWN:
      source = self + offset;
      valid = source <= maxLane;
      break;
    case TESSEL_EMU_SHFL_BFLY:
      source = self ^ offset;
      valid = source <= maxLane;
      break;
    default: // TESSEL_EMU_SHFL_IDX
      source = minLane | (offset & ~segment);
      valid = source <= maxLane;
      break;
    }
    if (!valid)
      source = self;
    const auto *from = ioOf<tessel_emu_shfl_io>(call, uint32_t(source));
    io->result = from ? from->value : 0;
    io->valid = valid;
  }
  return true;
}

bool voteBallot(const WaveCall &call, OpFailure &failure) {
  const uint32_t live = liveMask(call);
  uint32_t mask = 0;
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    const auto *io = ioOf<tessel_emu_ballot_io>(call, lane);
    if (!io)
      continue;
    if ((io->member & live) != live)
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "membermask 0x%08x leaves out live lanes (0x%08x are "
                  "live): every lane that has not returned must take part",
                  io->member, live);
    if (io->predicate)
      mask |= 1u << lane;
  }
  for (uint32_t lane = 0; lane < kWarp; ++lane)
    if (auto *io = ioOf<tessel_emu_ballot_io>(call, lane))
      io->mask = mask;
  return true;
}

bool mmaM16N8K16(const WaveCall &call, OpFailure &failure) {
  uint32_t elem = 0;
  bool seen = false;
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    const auto *io = ioOf<tessel_emu_mma_io>(call, lane);
    if (!io)
      continue;
    if (io->elem != TESSEL_EMU_BF16 && io->elem != TESSEL_EMU_F16)
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "element type %u is neither bf16 (%d) nor f16 (%d)", io->elem,
                  TESSEL_EMU_BF16, TESSEL_EMU_F16);
    if (seen && io->elem != elem)
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "the lanes disagree on the element type (%u here, %u "
                  "before)",
                  io->elem, elem);
    elem = io->elem;
    seen = true;
  }

  // The fragments, by the ABI's formulas: g = lane / 4, t = lane % 4.
  float a[16][16] = {}, b[16][8] = {}, c[16][8] = {};
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    const auto *io = ioOf<tessel_emu_mma_io>(call, lane);
    if (!io)
      continue;
    const uint32_t g = lane / 4, t = lane % 4;
    for (uint32_t r = 0; r < 4; ++r) {
      const uint32_t row = g + 8 * (r % 2), column = 2 * t + 8 * (r / 2);
      a[row][column] = elementToFloat(elem, low(io->a[r]));
      a[row][column + 1] = elementToFloat(elem, high(io->a[r]));
    }
    for (uint32_t r = 0; r < 2; ++r) {
      b[2 * t + 8 * r][g] = elementToFloat(elem, low(io->b[r]));
      b[2 * t + 8 * r + 1][g] = elementToFloat(elem, high(io->b[r]));
    }
    for (uint32_t v = 0; v < 4; ++v)
      c[g + 8 * (v / 2)][2 * t + v % 2] = io->c[v];
  }
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    auto *io = ioOf<tessel_emu_mma_io>(call, lane);
    if (!io)
      continue;
    const uint32_t g = lane / 4, t = lane % 4;
    for (uint32_t v = 0; v < 4; ++v) {
      const uint32_t row = g + 8 * (v / 2), column = 2 * t + v % 2;
      float sum = c[row][column];
      for (uint32_t k = 0; k < 16; ++k) {
        // Exact products summed in k order; two statements so that no
        // compiler fuses them into an FMA.
        const float product = a[row][k] * b[k][column];
        sum += product;
      }
      io->d[v] = sum;
    }
  }
  return true;
}

bool ldmatrix(const WaveCall &call, OpFailure &failure) {
  const tessel_emu_ldmatrix_io *first = nullptr;
  for (uint32_t lane = 0; lane < kWarp && !first; ++lane)
    first = ioOf<tessel_emu_ldmatrix_io>(call, lane);
  const uint32_t count = first->count, transpose = first->transpose;
  if (count != 1 && count != 2 && count != 4)
    return fail(failure, TESSEL_INTERNAL, -1,
                "count %u: ldmatrix loads 1, 2 or 4 matrices (.x1, .x2, .x4)",
                count);
  if (transpose > 1)
    return fail(failure, TESSEL_INTERNAL, -1,
                "transpose is %u; it must be 0 or 1", transpose);
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    const auto *io = ioOf<tessel_emu_ldmatrix_io>(call, lane);
    if (io && (io->count != count || io->transpose != transpose))
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "the lanes disagree on the instruction: .x%u%s here, "
                  ".x%u%s in the first lane",
                  io->count, io->transpose ? ".trans" : "", count,
                  transpose ? ".trans" : "");
  }

  // Lanes 8i..8i+7 give the rows of matrix i: 8 b16 elements, 16 bytes.
  uint16_t matrices[4][8][8];
  for (uint32_t lane = 0; lane < 8 * count; ++lane) {
    const auto *io = ioOf<tessel_emu_ldmatrix_io>(call, lane);
    if (!io)
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "the lane gives row %u of matrix %u but has returned",
                  lane % 8, lane / 8);
    if (!call.shared.contains(io->address, 16))
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "row address %p is outside shared memory [%p, %p + %zu)",
                  io->address, static_cast<void *>(call.shared.base),
                  static_cast<void *>(call.shared.base), call.shared.size);
    if (reinterpret_cast<uintptr_t>(io->address) % 16 != 0)
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "row address %p is not 16-byte aligned", io->address);
    std::memcpy(matrices[lane / 8][lane % 8], io->address, 16);
  }
  for (uint32_t lane = 0; lane < kWarp; ++lane) {
    auto *io = ioOf<tessel_emu_ldmatrix_io>(call, lane);
    if (!io)
      continue;
    // Lane l holds row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 (with
    // .trans the same of the transposed matrix).
    const uint32_t outer = lane / 4, inner = 2 * (lane % 4);
    for (uint32_t i = 0; i < count; ++i) {
      const auto &matrix = matrices[i];
      const uint16_t lo =
          transpose ? matrix[inner][outer] : matrix[outer][inner];
      const uint16_t hi =
          transpose ? matrix[inner + 1][outer] : matrix[outer][inner + 1];
      io->result[i] = uint32_t(lo) | uint32_t(hi) << 16;
    }
  }
  return true;
}

} // namespace tessel::runtime::emulator
