//===- emulator/amd_ops.cpp - AMD wave64 ops ------------------------------===//
//
// The CDNA3/CDNA4 ISA semantics of the cross-lane ops Tessel's AMD templates
// use, as tessel/emulator_abi.h states them. Reads from lanes that returned
// (or do not exist) give 0, as reads from disabled lanes do on the chip.
//
//===----------------------------------------------------------------------===//

#include "cp_async.h"
#include "half.h"
#include "ops.h"

#include <cstring>

namespace tessel::runtime::emulator {

namespace {

constexpr uint32_t kWave = 64;

template <typename Io> Io *ioOf(const WaveCall &call, uint32_t lane) {
  return static_cast<Io *>(call.io[lane]);
}

/// The lane ds_swizzle's `pattern` makes `lane` read, or -1 with `failure`
/// filled if the pattern is not one the emulator implements.
int swizzleSource(uint32_t pattern, uint32_t lane, OpFailure &failure) {
  if (pattern > 0xffff) {
    fail(failure, TESSEL_INTERNAL, int(lane),
         "pattern 0x%x does not fit the instruction's 16-bit offset", pattern);
    return -1;
  }
  if (pattern >= 0xc000) {
    // The ISA's rotate (0xc000) and FFT (0xe000) modes; no Tessel template
    // uses them.
    fail(failure, TESSEL_UNSUPPORTED, int(lane),
         "pattern 0x%04x selects the rotate or FFT mode, which the emulator "
         "does not implement (it knows quad mode, 0x8000 | selectors, and "
         "bit mode, patterns below 0x8000)",
         pattern);
    return -1;
  }
  if (pattern & 0x8000) {
    if (pattern & 0x7f00) {
      fail(failure, TESSEL_INTERNAL, int(lane),
           "pattern 0x%04x: quad mode takes its four lane selectors from "
           "bits 7:0, but bits 14:8 are set too",
           pattern);
      return -1;
    }
    const uint32_t selector = (pattern >> (2 * (lane % 4))) & 3;
    return int((lane & ~3u) | selector);
  }
  const uint32_t andMask = pattern & 31, orMask = (pattern >> 5) & 31,
                 xorMask = (pattern >> 10) & 31;
  return int((lane & 32) | (((lane & andMask) | orMask) ^ xorMask));
}

/// dppSource's answer for a lane the control gives no source (lanes below
/// the shift, rows before a broadcast's).
constexpr int kNoSource = -2;

/// The lane that DPP `control` makes `lane` read, kNoSource, or -1 with
/// `failure` filled if the control is not one the emulator implements.
int dppSource(uint32_t control, uint32_t lane, OpFailure &failure) {
  const uint32_t rowStart = lane & ~15u, inRow = lane % 16, row = lane / 16;
  if (control <= 0xff)
    return int((lane & ~3u) | ((control >> (2 * (lane % 4))) & 3));
  if (control > 0x110 && control < 0x120) {
    const uint32_t shift = control - 0x110;
    return inRow < shift ? kNoSource : int(lane - shift);
  }
  if (control == 0x138)
    return lane == 0 ? kNoSource : int(lane - 1);
  if (control == 0x140)
    return int(rowStart + 15 - inRow);
  if (control == 0x141)
    return int(rowStart + (inRow & 8) + 7 - inRow % 8);
  if (control == 0x142)
    return row == 0 ? kNoSource : int(rowStart - 1);
  if (control == 0x143)
    return row < 2 ? kNoSource : 31;
  fail(failure, TESSEL_UNSUPPORTED, int(lane),
       "DPP control 0x%03x is not one the emulator implements (it knows "
       "quad_perm, 0x00-0xff, row_shr, 0x111-0x11f, wave_shr:1, 0x138, "
       "row_mirror, 0x140, row_half_mirror, 0x141, row_bcast:15, 0x142, and "
       "row_bcast:31, 0x143)",
       control);
  return -1;
}

} // namespace

bool updateDpp(const WaveCall &call, OpFailure &failure) {
  for (uint32_t lane = 0; lane < kWave; ++lane) {
    auto *io = ioOf<tessel_emu_dpp_io>(call, lane);
    if (!io)
      continue;
    int source = dppSource(io->control, lane, failure);
    if (source == -1)
      return false;
    const bool written = (io->row_mask >> (lane / 16)) & 1 &&
                         (io->bank_mask >> (lane % 16 / 4)) & 1;
    const auto *from = source == kNoSource
                           ? nullptr
                           : ioOf<tessel_emu_dpp_io>(call, uint32_t(source));
    if (!written)
      io->result = io->old_value;
    else if (from)
      io->result = from->src_value;
    else
      io->result = io->bound_ctrl ? 0 : io->old_value;
  }
  return true;
}

bool dsSwizzle(const WaveCall &call, OpFailure &failure) {
  for (uint32_t lane = 0; lane < kWave; ++lane) {
    auto *io = ioOf<tessel_emu_u32_io>(call, lane);
    if (!io)
      continue;
    int source = swizzleSource(io->b, lane, failure);
    if (source < 0)
      return false;
    const auto *from = ioOf<tessel_emu_u32_io>(call, uint32_t(source));
    io->result = from ? from->a : 0;
  }
  return true;
}

bool dsBpermute(const WaveCall &call, OpFailure &) {
  for (uint32_t lane = 0; lane < kWave; ++lane) {
    auto *io = ioOf<tessel_emu_u32_io>(call, lane);
    if (!io)
      continue;
    const auto *from = ioOf<tessel_emu_u32_io>(call, (io->a / 4) % kWave);
    io->result = from ? from->b : 0;
  }
  return true;
}

bool permlaneSwap(const WaveCall &call, OpFailure &) {
  // Rows of 16 lanes (permlane16) or halves of 32 (permlane32): the odd
  // ones of `old` trade places with the even ones of `src`.
  const uint32_t rows = call.op == TESSEL_EMU_PERMLANE16_SWAP ? 16 : 32;
  auto oldOf = [&](uint32_t lane) {
    const auto *io = ioOf<tessel_emu_swap_io>(call, lane);
    return io ? io->old_value : 0u;
  };
  auto srcOf = [&](uint32_t lane) {
    const auto *io = ioOf<tessel_emu_swap_io>(call, lane);
    return io ? io->src_value : 0u;
  };
  for (uint32_t lane = 0; lane < kWave; ++lane) {
    auto *io = ioOf<tessel_emu_swap_io>(call, lane);
    if (!io)
      continue;
    const bool oddRow = (lane / rows) % 2 == 1;
    io->old_result = oddRow ? srcOf(lane - rows) : io->old_value;
    io->src_result = oddRow ? io->src_value : oldOf(lane + rows);
  }
  return true;
}

bool dsReadTr16(const WaveCall &call, OpFailure &failure) {
  // Each group of 16 lanes reads a 4 x 16 block of 16-bit elements, lane j
  // its row j / 4, columns 4 (j % 4)..+3; lane i receives column i.
  for (uint32_t group = 0; group < kWave; group += 16) {
    uint16_t block[16][4];
    for (uint32_t j = 0; j < 16; ++j) {
      const auto *io = ioOf<tessel_emu_ds_read_tr_io>(call, group + j);
      if (!io)
        return fail(failure, TESSEL_INTERNAL, int(group + j),
                    "the lane gives row %u, columns %u-%u of its group's "
                    "block but has returned",
                    j / 4, 4 * (j % 4), 4 * (j % 4) + 3);
      if (!call.shared.contains(io->address, 8))
        return fail(failure, TESSEL_INTERNAL, int(group + j),
                    "address %p is outside shared memory [%p, %p + %zu)",
                    io->address, static_cast<void *>(call.shared.base),
                    static_cast<void *>(call.shared.base), call.shared.size);
      if (reinterpret_cast<uintptr_t>(io->address) % 8 != 0)
        return fail(failure, TESSEL_INTERNAL, int(group + j),
                    "address %p is not 8-byte aligned", io->address);
      std::memcpy(block[j], io->address, 8);
    }
    for (uint32_t i = 0; i < 16; ++i) {
      auto *io = ioOf<tessel_emu_ds_read_tr_io>(call, group + i);
      for (uint32_t e = 0; e < 4; ++e)
        io->result[e] = block[4 * e + i / 4][i % 4];
    }
  }
  return true;
}

bool amdBallot(const WaveCall &call, OpFailure &) {
  uint64_t mask = 0;
  for (uint32_t lane = 0; lane < kWave; ++lane) {
    const auto *io = ioOf<tessel_emu_ballot_io>(call, lane);
    if (io && io->predicate)
      mask |= uint64_t(1) << lane;
  }
  for (uint32_t lane = 0; lane < kWave; ++lane)
    if (auto *io = ioOf<tessel_emu_ballot_io>(call, lane))
      io->mask = mask;
  return true;
}

bool readFirstLane(const WaveCall &call, OpFailure &) {
  const tessel_emu_u32_io *first = nullptr;
  for (uint32_t lane = 0; lane < kWave && !first; ++lane)
    first = ioOf<tessel_emu_u32_io>(call, lane);
  for (uint32_t lane = 0; lane < kWave; ++lane)
    if (auto *io = ioOf<tessel_emu_u32_io>(call, lane))
      io->result = first->a;
  return true;
}

bool readLane(const WaveCall &call, OpFailure &failure) {
  // The lane index is one SGPR on the chip: every live lane names the same.
  const tessel_emu_u32_io *first = nullptr;
  uint32_t firstLane = 0;
  for (uint32_t lane = 0; lane < kWave; ++lane) {
    const auto *io = ioOf<tessel_emu_u32_io>(call, lane);
    if (!io)
      continue;
    if (!first) {
      first = io;
      firstLane = lane;
    } else if (io->b != first->b) {
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "the lane reads lane %u but lane %u reads "
                  "lane %u (the index must be the same in the whole wave)",
                  io->b, firstLane, first->b);
    }
  }
  if (first->b >= kWave)
    return fail(failure, TESSEL_INTERNAL, int(firstLane),
                "lane %u is not a lane of the wave of 64", first->b);
  const auto *from = ioOf<tessel_emu_u32_io>(call, first->b);
  if (!from)
    return fail(failure, TESSEL_INTERNAL, int(firstLane),
                "lane %u has returned", first->b);
  for (uint32_t lane = 0; lane < kWave; ++lane)
    if (auto *io = ioOf<tessel_emu_u32_io>(call, lane))
      io->result = from->a;
  return true;
}

bool waveBarrier(const WaveCall &, OpFailure &) { return true; }

bool mbcnt(const LaneCall &call, OpFailure &) {
  auto &io = *static_cast<tessel_emu_u32_io *>(call.io);
  const uint64_t below = (uint64_t(1) << call.lane.lane_id) - 1;
  const uint32_t half =
      call.op == TESSEL_EMU_MBCNT_LO ? uint32_t(below) : uint32_t(below >> 32);
  io.result = io.b + uint32_t(__builtin_popcount(io.a & half));
  return true;
}

namespace {

/// Reads `bytes` bytes through a raw buffer resource as buffer_load does
/// (a word out of range reads 0) into `words`.
bool readBuffer(const LaneCall &call,
                const tessel_emu_buffer_resource &resource, uint32_t offset,
                uint32_t soffset, uint32_t bytes, uint32_t *words,
                OpFailure &failure) {
  if (resource.stride != 0)
    return fail(failure, TESSEL_INTERNAL, int(call.lane.lane_id),
                "buffer load through a resource of stride %u: only raw "
                "buffers (stride 0) are modelled",
                resource.stride);
  // 64-bit sums: the hardware's 32-bit offsets do not wrap here.
  const uint64_t records = resource.num_records;
  for (uint32_t w = 0; w < bytes / 4; ++w) {
    const uint64_t at = uint64_t(offset) + 4 * w;
    const bool inside = at < records;
    if (inside != (at + soffset < records))
      return fail(failure, TESSEL_INTERNAL, int(call.lane.lane_id),
                  "buffer load at offset %llu + soffset %u of a %u-byte "
                  "buffer is %s bounds only if soffset is not checked: the "
                  "chips differ there",
                  static_cast<unsigned long long>(at), soffset,
                  resource.num_records, inside ? "in" : "out of");
    words[w] = 0;
    if (inside)
      std::memcpy(&words[w],
                  static_cast<const char *>(resource.base) + soffset + at, 4);
  }
  return true;
}

} // namespace

bool bufferLoad(const LaneCall &call, OpFailure &failure) {
  auto &io = *static_cast<tessel_emu_buffer_load_io *>(call.io);
  if (io.bytes == 0 || io.bytes > 16 || io.bytes % 4)
    return fail(failure, TESSEL_INTERNAL, int(call.lane.lane_id),
                "buffer load of %u bytes (4, 8, 12 or 16)", io.bytes);
  return readBuffer(call, *io.resource, io.offset, io.soffset, io.bytes,
                    io.result, failure);
}

bool bufferLoadLds(const LaneCall &call, OpFailure &failure) {
  auto &io = *static_cast<tessel_emu_buffer_load_lds_io *>(call.io);
  const int lane = int(call.lane.lane_id);
  if (io.bytes != 16)
    return fail(failure, TESSEL_UNSUPPORTED, lane,
                "buffer load to LDS of %u bytes: the emulator models the "
                "16-byte form (buffer_load_dwordx4 ... lds) only",
                io.bytes);
  char *dst = static_cast<char *>(io.lds) + 16 * call.lane.lane_id;
  if (!call.shared.contains(dst, 16) ||
      reinterpret_cast<uintptr_t>(dst) % 16 != 0)
    return fail(failure, TESSEL_INTERNAL, lane,
                "buffer load to LDS at %p (M0 %p + 16 x lane %d) is not a "
                "16-byte aligned slot of shared memory [%p, %p + %zu)",
                static_cast<void *>(dst), io.lds, lane,
                static_cast<void *>(call.shared.base),
                static_cast<void *>(call.shared.base), call.shared.size);
  uint32_t words[4];
  if (!readBuffer(call, *io.resource, io.offset, io.soffset, 16, words,
                  failure))
    return false;
  call.copies.addLoaded(dst, words, 16);
  return true;
}

bool vmcntWait(const LaneCall &call, OpFailure &) {
  call.copies.wait(static_cast<const tessel_emu_u32_io *>(call.io)->a);
  return true;
}

bool mfma(const WaveCall &call, OpFailure &failure) {
  const tessel_emu_mfma_io *shape = nullptr;
  for (uint32_t lane = 0; lane < kWave && !shape; ++lane)
    shape = ioOf<tessel_emu_mfma_io>(call, lane);
  const uint32_t m = shape->m, n = shape->n, k = shape->k, elem = shape->elem;
  const bool gfx942Shape = (m == 32 && k == 8) || (m == 16 && k == 16);
  const bool gfx950Shape = (m == 32 && k == 16) || (m == 16 && k == 32);
  if (m != n || !(gfx942Shape || gfx950Shape))
    return fail(failure, TESSEL_INTERNAL, -1,
                "shape %ux%ux%u is none of the MFMAs the ABI lists "
                "(32x32x8, 16x16x16; on gfx950 also 32x32x16, 16x16x32)",
                m, n, k);
  if (gfx950Shape && !call.chip.hasGfx950Ops)
    return fail(failure, TESSEL_INTERNAL, -1,
                "v_mfma_f32_%ux%ux%u exists on gfx950 only; this is %s", m, n,
                k, call.chip.description);
  if (elem != TESSEL_EMU_BF16 && elem != TESSEL_EMU_F16)
    return fail(failure, TESSEL_INTERNAL, -1,
                "element type %u is neither bf16 (%d) nor f16 (%d)", elem,
                TESSEL_EMU_BF16, TESSEL_EMU_F16);
  for (uint32_t lane = 0; lane < kWave; ++lane) {
    const auto *io = ioOf<tessel_emu_mfma_io>(call, lane);
    if (io && (io->m != m || io->n != n || io->k != k || io->elem != elem))
      return fail(failure, TESSEL_INTERNAL, int(lane),
                  "the lanes disagree on the instruction: %ux%ux%u elem %u "
                  "here, %ux%ux%u elem %u in the first lane",
                  io->m, io->n, io->k, io->elem, m, n, k, elem);
  }

  // The documented layout: G lane groups of M lanes, each lane holding
  // `perLane` consecutive k of one row of A and one column of B.
  const uint32_t groups = kWave / m, perLane = k / groups;
  float a[32][32], b[32][32]; // [row][k], [k][column]
  for (uint32_t kk = 0; kk < k; ++kk) {
    for (uint32_t i = 0; i < m; ++i) {
      const auto *io = ioOf<tessel_emu_mfma_io>(call, i + m * (kk / perLane));
      a[i][kk] = io ? elementToFloat(elem, io->a[kk % perLane]) : 0.0f;
    }
    for (uint32_t j = 0; j < n; ++j) {
      const auto *io = ioOf<tessel_emu_mfma_io>(call, j + n * (kk / perLane));
      b[kk][j] = io ? elementToFloat(elem, io->b[kk % perLane]) : 0.0f;
    }
  }
  // D[i][j] lives in lane j + N g, value v, for i = 4 G (v / 4) + 4 g + v % 4.
  for (uint32_t i = 0; i < m; ++i) {
    const uint32_t group = (i / 4) % groups;
    const uint32_t value = 4 * (i / (4 * groups)) + i % 4;
    for (uint32_t j = 0; j < n; ++j) {
      auto *io = ioOf<tessel_emu_mfma_io>(call, j + n * group);
      if (!io)
        continue;
      float sum = io->c[value];
      for (uint32_t kk = 0; kk < k; ++kk) {
        // Two statements: the product is exact, and must not be fused
        // into an FMA by a compiler that contracts within expressions.
        const float product = a[i][kk] * b[kk][j];
        sum += product;
      }
      io->d[value] = sum;
    }
  }
  return true;
}

} // namespace tessel::runtime::emulator
