//===- test/emulator_ops_test.cpp - The emulated intrinsics' semantics ----===//
//
// Each op of tessel/emulator_abi.h, run through emu_kernels.c on an emulated
// device and checked against a computation written from the op's documented
// meaning (for the matrix ops, a plain matmul of matrices the kernels lay
// out in the documented fragments), including lanes that returned early.
//
//===----------------------------------------------------------------------===//

#include "test_support.h"

#include "tessel/emulator_abi.h"

#include <bitset>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>

using namespace tessel;
using namespace tessel::test;

namespace {

constexpr uint32_t kUnwritten = 0xdeadbeef;

/// Whether the exit rule (lane_id % modulus == lane) makes thread t return.
bool exits(uint32_t t, uint32_t waveSize, int32_t modulus, int32_t lane) {
  return modulus && int32_t(t % waveSize % modulus) == lane;
}

/// Runs u32_op: op on a and b, one thread each, in blocks of `threads`.
std::vector<uint32_t> runU32Op(const char *device, int32_t op,
                               std::vector<uint32_t> a, std::vector<uint32_t> b,
                               uint32_t threads, int32_t exitModulus = 0,
                               int32_t exitLane = 0) {
  std::vector<int32_t> config = {op, exitModulus, exitLane};
  std::vector<uint32_t> out(a.size(), kUnwritten);
  EmuLaunch launch;
  launch.device = device;
  launch.entry = "u32_op";
  launch.grid = {uint32_t(a.size()) / threads, 1, 1};
  launch.block = {threads, 1, 1};
  launch.buffers = {emuBuffer("config", config), emuBuffer("a", a),
                    emuBuffer("b", b), emuBuffer("out", out)};
  EXPECT_TRUE(succeeds(runEmu(launch)));
  return out;
}

std::vector<uint32_t> sequence(size_t n, uint32_t first) {
  std::vector<uint32_t> values(n);
  for (size_t i = 0; i < n; ++i)
    values[i] = first + uint32_t(i);
  return values;
}

//===-- AMD ---------------------------------------------------------------===//

/// The lane ds_swizzle makes `lane` read, from the ISA's description.
uint32_t swizzleSource(uint32_t pattern, uint32_t lane) {
  if (pattern & 0x8000) // quad mode: two selector bits per lane of a quad
    return lane / 4 * 4 + ((pattern >> (2 * (lane % 4))) & 3);
  const uint32_t andMask = pattern & 0x1f, orMask = (pattern >> 5) & 0x1f,
                 xorMask = (pattern >> 10) & 0x1f;
  return lane / 32 * 32 + (((lane % 32 & andMask) | orMask) ^ xorMask);
}

TEST(EmulatedAmdOps, DsSwizzleBitAndQuadModes) {
  const uint32_t threads = 128;
  std::vector<uint32_t> values = sequence(threads, 1000);
  // Swap neighbours, reverse 32 lanes, broadcast lane 31, a mixed one; quad
  // reverse, broadcast, identity, a mixed one.
  for (uint32_t pattern : {0x041fu, 0x7c1fu, 0x03e0u, 0x2a35u, 0x801bu, 0x8000u,
                           0x80e4u, 0x8072u}) {
    std::vector<uint32_t> out =
        runU32Op("emu-gfx942", TESSEL_EMU_DS_SWIZZLE, values,
                 std::vector<uint32_t>(threads, pattern), threads);
    for (uint32_t t = 0; t < threads; ++t)
      ASSERT_EQ(out[t], values[t / 64 * 64 + swizzleSource(pattern, t % 64)])
          << "pattern 0x" << std::hex << pattern << " thread " << std::dec << t;
  }
  // Two patterns spelled out.
  std::vector<uint32_t> swapped =
      runU32Op("emu-gfx942", TESSEL_EMU_DS_SWIZZLE, values,
               std::vector<uint32_t>(threads, 0x041f), threads);
  EXPECT_EQ(swapped[0], 1001u);
  EXPECT_EQ(swapped[1], 1000u);
  EXPECT_EQ(swapped[65], 1064u);
  std::vector<uint32_t> reversed =
      runU32Op("emu-gfx950", TESSEL_EMU_DS_SWIZZLE, values,
               std::vector<uint32_t>(threads, 0x801b), threads);
  EXPECT_EQ(
      std::vector<uint32_t>(reversed.begin(), reversed.begin() + 8),
      (std::vector<uint32_t>{1003, 1002, 1001, 1000, 1007, 1006, 1005, 1004}));
}

TEST(EmulatedAmdOps, DsSwizzleReadsZeroFromReturnedLanes) {
  const uint32_t threads = 64;
  std::vector<uint32_t> values = sequence(threads, 1000);
  std::vector<uint32_t> out =
      runU32Op("emu-gfx942", TESSEL_EMU_DS_SWIZZLE, values,
               std::vector<uint32_t>(threads, 0x041f), threads, 3, 1);
  for (uint32_t t = 0; t < threads; ++t) {
    if (exits(t, 64, 3, 1)) {
      EXPECT_EQ(out[t], kUnwritten);
      continue;
    }
    const uint32_t source = t ^ 1;
    EXPECT_EQ(out[t], exits(source, 64, 3, 1) ? 0 : values[source])
        << "thread " << t;
  }
}

TEST(EmulatedAmdOps, DsBpermute) {
  const uint32_t threads = 128;
  std::mt19937 random(7);
  std::vector<uint32_t> addresses(threads), values(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    addresses[t] = random() % 1024; // beyond 256: the lane wraps mod 64
    values[t] = random();
  }
  std::vector<uint32_t> out = runU32Op("emu-gfx942", TESSEL_EMU_DS_BPERMUTE,
                                       addresses, values, threads, 4, 3);
  for (uint32_t t = 0; t < threads; ++t) {
    if (exits(t, 64, 4, 3))
      continue;
    const uint32_t source = t / 64 * 64 + addresses[t] / 4 % 64;
    EXPECT_EQ(out[t], exits(source, 64, 4, 3) ? 0 : values[source])
        << "thread " << t;
  }
}

/// Runs update_dpp with one control and masks: old = a, src = b.
std::vector<uint32_t> runDpp(const char *device, uint32_t control,
                             const std::vector<uint32_t> &old,
                             const std::vector<uint32_t> &src,
                             uint32_t rowMask = 0xf, uint32_t bankMask = 0xf,
                             bool boundCtrl = true, int32_t exitModulus = 0,
                             int32_t exitLane = 0) {
  std::vector<int32_t> config = {exitModulus,       exitLane,
                                 int32_t(control),  int32_t(rowMask),
                                 int32_t(bankMask), boundCtrl};
  std::vector<uint32_t> a = old, b = src, out(old.size(), kUnwritten);
  EmuLaunch launch;
  launch.device = device;
  launch.entry = "dpp";
  launch.grid = {uint32_t(old.size()) / 64, 1, 1};
  launch.buffers = {emuBuffer("config", config), emuBuffer("a", a),
                    emuBuffer("b", b), emuBuffer("out", out)};
  EXPECT_TRUE(succeeds(runEmu(launch)));
  return out;
}

TEST(EmulatedAmdOps, DppQuadPermAndMirrors) {
  std::vector<uint32_t> old = sequence(128, 5000), src = sequence(128, 0);
  // Quad reverse, swap pairs, broadcast lane 2, row_mirror, row_half_mirror.
  const std::pair<uint32_t, std::function<uint32_t(uint32_t)>> cases[] = {
      {0x1b, [](uint32_t l) { return l / 4 * 4 + 3 - l % 4; }},
      {0xb1, [](uint32_t l) { return l ^ 1; }},
      {0xaa, [](uint32_t l) { return l / 4 * 4 + 2; }},
      {0x140, [](uint32_t l) { return l / 16 * 16 + 15 - l % 16; }},
      {0x141, [](uint32_t l) { return l / 8 * 8 + 7 - l % 8; }},
  };
  for (const auto &[control, source] : cases) {
    std::vector<uint32_t> out = runDpp("emu-gfx942", control, old, src);
    for (uint32_t t = 0; t < 128; ++t)
      ASSERT_EQ(out[t], t / 64 * 64 + source(t % 64))
          << "control 0x" << std::hex << control << " thread " << std::dec << t;
  }
  // Spelled out: row_mirror's first row, row_half_mirror's second half-row.
  std::vector<uint32_t> mirrored = runDpp("emu-gfx950", 0x140, old, src);
  EXPECT_EQ(mirrored[0], 15u);
  EXPECT_EQ(mirrored[17], 30u);
  std::vector<uint32_t> halves = runDpp("emu-gfx950", 0x141, old, src);
  EXPECT_EQ(std::vector<uint32_t>(halves.begin() + 8, halves.begin() + 12),
            (std::vector<uint32_t>{15, 14, 13, 12}));
}

TEST(EmulatedAmdOps, DppShiftsAndRowBroadcasts) {
  std::vector<uint32_t> old = sequence(128, 5000), src = sequence(128, 0);
  // Source lane within the wave, or -1 for none; the row mask of the
  // control as the scan uses it (rows it leaves out keep `old`).
  struct Case {
    uint32_t control, rowMask;
    std::function<int(uint32_t)> source;
  };
  const Case cases[] = {
      {0x111, 0xf, [](uint32_t l) { return l % 16 < 1 ? -1 : int(l - 1); }},
      {0x114, 0xf, [](uint32_t l) { return l % 16 < 4 ? -1 : int(l - 4); }},
      {0x11f, 0xf, [](uint32_t l) { return l % 16 < 15 ? -1 : int(l - 15); }},
      {0x138, 0xf, [](uint32_t l) { return l == 0 ? -1 : int(l - 1); }},
      {0x142, 0xf,
       [](uint32_t l) { return l < 16 ? -1 : int(l / 16 * 16 - 1); }},
      {0x142, 0xa,
       [](uint32_t l) { return l < 16 ? -1 : int(l / 16 * 16 - 1); }},
      {0x143, 0xc, [](uint32_t l) { return l < 32 ? -1 : 31; }},
  };
  for (const Case &c : cases)
    for (bool bound : {true, false}) {
      std::vector<uint32_t> out =
          runDpp("emu-gfx942", c.control, old, src, c.rowMask, 0xf, bound);
      for (uint32_t t = 0; t < 128; ++t) {
        const uint32_t lane = t % 64;
        const int source = c.source(lane);
        uint32_t expected = old[t];
        if ((c.rowMask >> (lane / 16)) & 1)
          expected = source >= 0 ? t / 64 * 64 + uint32_t(source)
                                 : (bound ? 0 : old[t]);
        ASSERT_EQ(out[t], expected)
            << "control 0x" << std::hex << c.control << " rows 0x" << c.rowMask
            << std::dec << " bound " << bound << " thread " << t;
      }
    }
  // Spelled out: row_bcast:15 gives row 2 lane 31, row_bcast:31 row 3 lane
  // 31; wave_shr:1 crosses rows (lane 16 reads 15), row_shr does not.
  std::vector<uint32_t> rows =
      runDpp("emu-gfx950", 0x142, old, src, 0xf, 0xf, false);
  EXPECT_EQ(rows[40], 31u);
  EXPECT_EQ(rows[5], old[5]);
  EXPECT_EQ(runDpp("emu-gfx950", 0x143, old, src, 0xc)[50], 31u);
  EXPECT_EQ(runDpp("emu-gfx950", 0x138, old, src)[16], 15u);
  EXPECT_EQ(runDpp("emu-gfx950", 0x111, old, src)[16], 0u);
}

TEST(EmulatedAmdOps, DppMasksAndBoundControl) {
  std::vector<uint32_t> old = sequence(64, 5000), src = sequence(64, 0);
  // Rows 1 and 3 and bank 2 (lanes 8-11 of each row) keep `old`.
  std::vector<uint32_t> out = runDpp("emu-gfx942", 0x140, old, src,
                                     /*rowMask=*/0x5, /*bankMask=*/0xb);
  for (uint32_t t = 0; t < 64; ++t) {
    const bool written = (t / 16) % 2 == 0 && t % 16 / 4 != 2;
    EXPECT_EQ(out[t], written ? t / 16 * 16 + 15 - t % 16 : old[t])
        << "thread " << t;
  }
  // Lanes 3, 7, ... return: who reads them gets 0 with bound_ctrl, else
  // its own `old`.
  for (bool bound : {true, false}) {
    out = runDpp("emu-gfx942", 0xb1, old, src, 0xf, 0xf, bound, 4, 3);
    for (uint32_t t = 0; t < 64; ++t) {
      if (t % 4 == 3)
        EXPECT_EQ(out[t], kUnwritten);
      else if (t % 4 == 2)
        EXPECT_EQ(out[t], bound ? 0 : old[t]) << "thread " << t;
      else
        EXPECT_EQ(out[t], t ^ 1) << "thread " << t;
    }
  }
}

/// Runs swap on gfx950: out[2t] = old_result, out[2t + 1] = src_result.
std::vector<uint32_t> runSwap(int32_t op, const std::vector<uint32_t> &old,
                              const std::vector<uint32_t> &src) {
  std::vector<int32_t> config = {op, 0, 0};
  std::vector<uint32_t> a = old, b = src, out(2 * old.size(), kUnwritten);
  EmuLaunch launch;
  launch.device = "emu-gfx950";
  launch.entry = "swap";
  launch.grid = {uint32_t(old.size()) / 64, 1, 1};
  launch.buffers = {emuBuffer("config", config), emuBuffer("a", a),
                    emuBuffer("b", b), emuBuffer("out", out)};
  EXPECT_TRUE(succeeds(runEmu(launch)));
  return out;
}

TEST(EmulatedAmdOps, PermlaneSwaps) {
  std::vector<uint32_t> old = sequence(128, 0), src = sequence(128, 1000);
  std::vector<uint32_t> out = runSwap(TESSEL_EMU_PERMLANE32_SWAP, old, src);
  // Lanes 32-63 of old trade places with lanes 0-31 of src.
  for (uint32_t t = 0; t < 128; ++t) {
    const uint32_t wave = t / 64 * 64, lane = t % 64;
    const uint32_t oldResult = lane < 32 ? old[t] : src[wave + lane - 32];
    const uint32_t srcResult = lane < 32 ? old[wave + lane + 32] : src[t];
    EXPECT_EQ(out[2 * t], oldResult) << "thread " << t;
    EXPECT_EQ(out[2 * t + 1], srcResult) << "thread " << t;
  }
  EXPECT_EQ(out[2 * 32], 1000u);
  EXPECT_EQ(out[2 * 0 + 1], 32u);

  out = runSwap(TESSEL_EMU_PERMLANE16_SWAP, old, src);
  // Rows 1 and 3 of old trade places with rows 0 and 2 of src.
  for (uint32_t t = 0; t < 128; ++t) {
    const uint32_t lane = t % 64, row = lane / 16;
    const bool oddRow = row == 1 || row == 3;
    EXPECT_EQ(out[2 * t], oddRow ? src[t - 16] : old[t]) << "thread " << t;
    EXPECT_EQ(out[2 * t + 1], oddRow ? src[t] : old[t + 16]) << "thread " << t;
  }
  EXPECT_EQ(out[2 * 16], 1000u);
  EXPECT_EQ(out[2 * 48], 1032u);
  EXPECT_EQ(out[2 * 32 + 1], 48u);
}

TEST(EmulatedAmdOps, BallotLeavesOutReturnedAndMissingLanes) {
  // 100 threads: wave 1 has lanes 0-35 only.
  const uint32_t threads = 100;
  std::vector<int32_t> config = {TESSEL_EMU_BALLOT, 5, 1, 0};
  std::vector<uint32_t> predicates(threads);
  for (uint32_t t = 0; t < threads; ++t)
    predicates[t] = t % 3 == 0 ? 1 + t : 0; // any non-zero value is true
  std::vector<int64_t> out(threads, -1);
  EmuLaunch launch;
  launch.entry = "ballot";
  launch.block = {threads, 1, 1};
  launch.buffers = {emuBuffer("config", config),
                    emuBuffer("predicates", predicates), emuBuffer("out", out)};
  ASSERT_TRUE(succeeds(runEmu(launch)));
  uint64_t expected[2] = {};
  for (uint32_t t = 0; t < threads; ++t)
    if (!exits(t, 64, 5, 1) && predicates[t])
      expected[t / 64] |= uint64_t(1) << (t % 64);
  for (uint32_t t = 0; t < threads; ++t)
    EXPECT_EQ(uint64_t(out[t]),
              exits(t, 64, 5, 1) ? ~uint64_t(0) : expected[t / 64])
        << "thread " << t;
}

/// Runs ds_read_b64_tr_b16 over a table of 64 quads of b16: lane l reads
/// quad quads[l]; `config` = {exit rule, byte offset, its lane}.
tessel_status runDsReadTr16(const std::vector<uint16_t> &table,
                            const std::vector<int32_t> &quads,
                            std::vector<int32_t> config,
                            std::vector<uint16_t> &out,
                            const char *device = "emu-gfx950") {
  std::vector<uint16_t> tableCopy = table;
  std::vector<int32_t> quadsCopy = quads;
  out.assign(4 * 64, 0xdead);
  EmuLaunch launch;
  launch.device = device;
  launch.entry = "ds_read_tr16";
  launch.sharedBytes = 512;
  launch.buffers = {emuBuffer("config", config), emuBuffer("table", tableCopy),
                    emuBuffer("quads", quadsCopy), emuBuffer("out", out)};
  return runEmu(launch);
}

TEST(EmulatedAmdOps, DsReadTr16TransposesEachGroupOf16Lanes) {
  std::mt19937 random(23);
  std::vector<uint16_t> table(256);
  for (uint16_t &element : table)
    element = uint16_t(random());
  std::vector<int32_t> quads(64);
  for (int32_t &quad : quads)
    quad = int32_t(random() % 64);
  std::vector<uint16_t> out;
  ASSERT_TRUE(succeeds(runDsReadTr16(table, quads, {0, 0, 0, -1}, out)));
  // Lane 16 g + j reads row j / 4, columns 4 (j % 4)..+3 of group g's
  // 4 x 16 block; lane 16 g + i gets column i.
  for (uint32_t lane = 0; lane < 64; ++lane) {
    const uint32_t group = lane / 16 * 16, i = lane % 16;
    for (uint32_t e = 0; e < 4; ++e)
      EXPECT_EQ(out[4 * lane + e],
                table[4 * quads[group + 4 * e + i / 4] + i % 4])
          << "lane " << lane << " element " << e;
  }
}

TEST(EmulatedErrors, DsReadTr16Operands) {
  std::vector<uint16_t> table(256, 0), out;
  std::vector<int32_t> quads(64, 0);
  EXPECT_TRUE(failsWith(runDsReadTr16(table, quads, {0, 0, 2, 7}, out),
                        TESSEL_INTERNAL,
                        {"ds_read_b64_tr_b16: address",
                         "is not 8-byte aligned"}));
  quads[9] = 64; // one quad past the table: outside shared memory
  EXPECT_TRUE(failsWith(runDsReadTr16(table, quads, {0, 0, 0, -1}, out),
                        TESSEL_INTERNAL,
                        {"(wave 0, lane 9): ds_read_b64_tr_b16: address",
                         "is outside shared memory"}));
  quads[9] = 0;
  // Lane 5 of each 16 returns: its group's block misses a row.
  EXPECT_TRUE(failsWith(runDsReadTr16(table, quads, {16, 5, 0, -1}, out),
                        TESSEL_INTERNAL,
                        {"ds_read_b64_tr_b16: the lane gives row 1, columns "
                         "4-7 of its group's block but has returned"}));
  // gfx942 has no transpose reads.
  EXPECT_TRUE(failsWith(
      runDsReadTr16(table, quads, {0, 0, 0, -1}, out, "emu-gfx942"),
      TESSEL_INTERNAL, {"ds_read_b64_tr_b16: not an op of gfx942"}));
}

TEST(EmulatedAmdOps, ReadFirstLaneTakesTheLowestLiveLane) {
  // Lanes 0, 4, 8, ... of each wave return (exit rule 4, 0): lane 1 of
  // each wave is the lowest live one.
  const uint32_t threads = 128;
  std::vector<uint32_t> values = sequence(threads, 500);
  std::vector<uint32_t> out =
      runU32Op("emu-gfx942", TESSEL_EMU_READFIRSTLANE, values,
               std::vector<uint32_t>(threads), threads, 4, 0);
  for (uint32_t t = 0; t < threads; ++t)
    EXPECT_EQ(out[t], exits(t, 64, 4, 0) ? kUnwritten : values[t / 64 * 64 + 1])
        << "thread " << t;
}

TEST(EmulatedAmdOps, ReadLaneGivesEveryLaneOneLanesValue) {
  // Wave 0 reads lane 37, wave 1 lane 2; lanes 3, 7, ... return.
  const uint32_t threads = 128;
  std::vector<uint32_t> values = sequence(threads, 900), lanes(threads);
  for (uint32_t t = 0; t < threads; ++t)
    lanes[t] = t < 64 ? 37 : 2;
  std::vector<uint32_t> out =
      runU32Op("emu-gfx950", TESSEL_EMU_READLANE, values, lanes, threads, 4, 3);
  for (uint32_t t = 0; t < threads; ++t)
    EXPECT_EQ(out[t],
              exits(t, 64, 4, 3) ? kUnwritten : values[t / 64 * 64 + lanes[t]])
        << "thread " << t;
}

TEST(EmulatedAmdOps, MbcntCountsTheLanesBelow) {
  const uint32_t threads = 64;
  std::mt19937 random(11);
  std::vector<uint32_t> masks(threads), addends(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    masks[t] = random();
    addends[t] = 7 * t;
  }
  std::vector<uint32_t> low =
      runU32Op("emu-gfx942", TESSEL_EMU_MBCNT_LO, masks, addends, threads);
  std::vector<uint32_t> high =
      runU32Op("emu-gfx942", TESSEL_EMU_MBCNT_HI, masks, addends, threads);
  for (uint32_t t = 0; t < threads; ++t) {
    // The bits of the lanes below t, of lanes 0-31 and of lanes 32-63.
    uint32_t belowLow = 0, belowHigh = 0;
    for (uint32_t lane = 0; lane < t; ++lane)
      lane < 32 ? belowLow += masks[t] >> lane & 1
                : belowHigh += masks[t] >> (lane - 32) & 1;
    EXPECT_EQ(low[t], addends[t] + belowLow) << "thread " << t;
    EXPECT_EQ(high[t], addends[t] + belowHigh) << "thread " << t;
  }
}

//===-- Matrices ----------------------------------------------------------===//

/// A row-major matrix of values exact in bf16 and f16 (multiples of 1/8 in
/// [-2, 2]), with their encodings in either type.
struct Matrix {
  uint32_t rows, columns;
  std::vector<float> values;

  Matrix(uint32_t rows, uint32_t columns, std::mt19937 &random)
      : rows(rows), columns(columns), values(rows * columns) {
    for (float &value : values)
      value = float(int(random() % 33) - 16) / 8;
  }
  float at(uint32_t row, uint32_t column) const {
    return values[row * columns + column];
  }
  std::vector<uint16_t> bits(uint32_t elem) const {
    std::vector<uint16_t> out;
    for (float value : values)
      out.push_back(elem == TESSEL_EMU_BF16 ? bf16Bits(value) : f16Bits(value));
    return out;
  }
  Matrix transposed() const {
    Matrix out = *this;
    std::swap(out.rows, out.columns);
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < columns; ++c)
        out.values[c * rows + r] = at(r, c);
    return out;
  }

  static uint16_t bf16Bits(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return uint16_t(bits >> 16);
  }
  /// Zero or a normal number with at most 11 significant bits.
  static uint16_t f16Bits(float value) {
    if (value == 0)
      return 0;
    int exponent = 0;
    const float fraction = std::frexp(std::fabs(value), &exponent);
    const uint16_t sign = value < 0 ? 0x8000 : 0;
    return uint16_t(sign | (exponent + 14) << 10 |
                    uint16_t((fraction * 2 - 1) * 1024));
  }
};

/// C + A B with f32 products summed in k order.
std::vector<float> matmul(const Matrix &a, const Matrix &b,
                          const std::vector<float> &c) {
  std::vector<float> d(a.rows * b.columns);
  for (uint32_t i = 0; i < a.rows; ++i)
    for (uint32_t j = 0; j < b.columns; ++j) {
      float sum = c[i * b.columns + j];
      for (uint32_t k = 0; k < a.columns; ++k) {
        const float product = a.at(i, k) * b.at(k, j);
        sum += product;
      }
      d[i * b.columns + j] = sum;
    }
  return d;
}

/// Runs mfma on `device`; the status, and D in `d`.
tessel_status runMfma(const char *device, uint32_t m, uint32_t k, uint32_t elem,
                      const Matrix &a, const Matrix &b, std::vector<float> c,
                      std::vector<float> &d) {
  std::vector<int32_t> config = {int32_t(m), int32_t(m), int32_t(k),
                                 int32_t(elem)};
  std::vector<uint16_t> aBits = a.bits(elem), bBits = b.bits(elem);
  const tessel_dtype dtype =
      elem == TESSEL_EMU_F16 ? TESSEL_DTYPE_F16 : TESSEL_DTYPE_BF16;
  d.assign(c.size(), -99.0f);
  EmuLaunch launch;
  launch.device = device;
  launch.entry = "mfma";
  launch.buffers = {emuBuffer("config", config), emuBuffer("a", aBits, dtype),
                    emuBuffer("b", bBits, dtype), emuBuffer("c", c),
                    emuBuffer("d", d)};
  return runEmu(launch);
}

TEST(EmulatedAmdOps, MfmaMatchesAMatmul) {
  struct Shape {
    uint32_t m, k;
    bool gfx950Only;
  };
  std::mt19937 random(3);
  for (Shape shape : {Shape{32, 8, false}, Shape{16, 16, false},
                      Shape{32, 16, true}, Shape{16, 32, true}})
    for (uint32_t elem : {TESSEL_EMU_BF16, TESSEL_EMU_F16})
      for (const char *device : {"emu-gfx942", "emu-gfx950"}) {
        if (shape.gfx950Only && std::string(device) == "emu-gfx942")
          continue;
        Matrix a(shape.m, shape.k, random), b(shape.k, shape.m, random);
        Matrix c(shape.m, shape.m, random);
        std::vector<float> d;
        ASSERT_TRUE(succeeds(
            runMfma(device, shape.m, shape.k, elem, a, b, c.values, d)));
        EXPECT_EQ(d, matmul(a, b, c.values))
            << device << " " << shape.m << "x" << shape.m << "x" << shape.k
            << " elem " << elem;
      }
}

TEST(EmulatedAmdOps, MfmaSumsInKOrder) {
  // Row 0 of A is ones; column 0 of B is 2^24 and then ones: in k order
  // each 1 is lost to rounding (2^24 + 1 is a tie, rounded to even), in
  // any other order some survive.
  std::mt19937 random(5);
  Matrix a(16, 16, random), b(16, 16, random);
  for (uint32_t k = 0; k < 16; ++k) {
    a.values[k] = 1;
    b.values[k * 16] = k == 0 ? 16777216.0f : 1;
  }
  std::vector<float> c(256, 0.0f), d;
  ASSERT_TRUE(
      succeeds(runMfma("emu-gfx942", 16, 16, TESSEL_EMU_BF16, a, b, c, d)));
  EXPECT_EQ(d[0], 16777216.0f);
  EXPECT_EQ(d, matmul(a, b, c));
}

TEST(EmulatedErrors, MfmaShapes) {
  std::mt19937 random(1);
  Matrix a(32, 16, random), b(16, 32, random);
  std::vector<float> c(32 * 32, 0.0f), d;
  EXPECT_TRUE(
      failsWith(runMfma("emu-gfx942", 32, 16, TESSEL_EMU_F16, a, b, c, d),
                TESSEL_INTERNAL,
                {"block (0, 0, 0), wave 0: mfma: v_mfma_f32_32x32x16 "
                 "exists on gfx950 only; this is gfx942 (MI300X)"}));
  EXPECT_TRUE(failsWith(
      runMfma("emu-gfx950", 16, 8, TESSEL_EMU_F16, a, b, c, d), TESSEL_INTERNAL,
      {"mfma: shape 16x16x8 is none of the MFMAs the ABI "
       "lists"}));
  EXPECT_TRUE(failsWith(runMfma("emu-gfx950", 16, 16, 2, a, b, c, d),
                        TESSEL_INTERNAL,
                        {"mfma: element type 2 is neither bf16 (0) nor f16 "
                         "(1)"}));
}

/// Runs mma: D = A B + C through ldmatrix, B stored transposed or not.
tessel_status runMma(uint32_t elem, bool bAsIs, const Matrix &a,
                     const Matrix &b, std::vector<float> c,
                     std::vector<float> &d) {
  std::vector<int32_t> config = {int32_t(elem), bAsIs ? 1 : 0};
  std::vector<uint16_t> aBits = a.bits(elem);
  std::vector<uint16_t> bBits =
      bAsIs ? b.bits(elem) : b.transposed().bits(elem);
  const tessel_dtype dtype =
      elem == TESSEL_EMU_F16 ? TESSEL_DTYPE_F16 : TESSEL_DTYPE_BF16;
  d.assign(c.size(), -99.0f);
  EmuLaunch launch;
  launch.device = "emu-sm80";
  launch.entry = "mma";
  launch.block = {32, 1, 1};
  launch.sharedBytes = 2 * (256 + 128);
  launch.buffers = {emuBuffer("config", config), emuBuffer("a", aBits, dtype),
                    emuBuffer("b", bBits, dtype), emuBuffer("c", c),
                    emuBuffer("d", d)};
  return runEmu(launch);
}

TEST(EmulatedNvidiaOps, MmaWithLdmatrixMatchesAMatmul) {
  std::mt19937 random(9);
  for (uint32_t elem : {TESSEL_EMU_BF16, TESSEL_EMU_F16})
    for (bool bAsIs : {false, true}) {
      Matrix a(16, 16, random), b(16, 8, random), c(16, 8, random);
      std::vector<float> d;
      ASSERT_TRUE(succeeds(runMma(elem, bAsIs, a, b, c.values, d)));
      EXPECT_EQ(d, matmul(a, b, c.values))
          << "elem " << elem << (bAsIs ? ", ldmatrix.trans" : "");
    }
}

TEST(EmulatedNvidiaOps, MmaSumsInKOrder) {
  std::mt19937 random(13);
  Matrix a(16, 16, random), b(16, 8, random);
  for (uint32_t k = 0; k < 16; ++k) {
    a.values[k] = 1;
    b.values[k * 8] = k == 0 ? 16777216.0f : 1;
  }
  std::vector<float> c(128, 0.0f), d;
  ASSERT_TRUE(succeeds(runMma(TESSEL_EMU_BF16, true, a, b, c, d)));
  EXPECT_EQ(d[0], 16777216.0f);
  EXPECT_EQ(d, matmul(a, b, c));
}

/// Runs ldmatrix over a table of 32 random rows: lane l names row rows[l].
tessel_status runLdmatrix(uint32_t count, uint32_t transpose,
                          const std::vector<uint16_t> &table,
                          const std::vector<int32_t> &rows,
                          std::vector<uint32_t> &out) {
  std::vector<int32_t> config = {int32_t(count), int32_t(transpose)};
  std::vector<uint16_t> tableCopy = table;
  std::vector<int32_t> rowsCopy = rows;
  out.assign(4 * 32, kUnwritten);
  EmuLaunch launch;
  launch.device = "emu-sm80";
  launch.entry = "ldmatrix";
  launch.block = {32, 1, 1};
  launch.sharedBytes = 512;
  launch.buffers = {emuBuffer("config", config), emuBuffer("table", tableCopy),
                    emuBuffer("rows", rowsCopy), emuBuffer("out", out)};
  return runEmu(launch);
}

TEST(EmulatedNvidiaOps, LdmatrixFragments) {
  std::mt19937 random(17);
  std::vector<uint16_t> table(32 * 8);
  for (uint16_t &element : table)
    element = uint16_t(random());
  std::vector<int32_t> rows(32);
  for (int32_t &row : rows)
    row = int32_t(random() % 32);
  for (uint32_t count : {1u, 2u, 4u})
    for (uint32_t transpose : {0u, 1u}) {
      std::vector<uint32_t> out;
      ASSERT_TRUE(succeeds(runLdmatrix(count, transpose, table, rows, out)));
      for (uint32_t i = 0; i < 4; ++i) {
        // Matrix i: the rows lanes 8i..8i+7 named, possibly transposed.
        uint16_t matrix[8][8];
        for (uint32_t r = 0; r < 8; ++r)
          for (uint32_t col = 0; col < 8; ++col) {
            const uint16_t element =
                i < count ? table[8 * rows[8 * i + r] + col] : 0;
            (transpose ? matrix[col][r] : matrix[r][col]) = element;
          }
        for (uint32_t lane = 0; lane < 32; ++lane) {
          const uint32_t expected =
              i < count
                  ? uint32_t(matrix[lane / 4][2 * (lane % 4)]) |
                        uint32_t(matrix[lane / 4][2 * (lane % 4) + 1]) << 16
                  : 0; // registers past count stay as the kernel set them
          EXPECT_EQ(out[4 * lane + i], expected)
              << ".x" << count << (transpose ? ".trans" : "") << " lane "
              << lane << " register " << i;
        }
      }
    }
}

TEST(EmulatedErrors, LdmatrixOperands) {
  std::vector<uint16_t> table(32 * 8, 0);
  std::vector<int32_t> rows(32, 0);
  std::vector<uint32_t> out;
  EXPECT_TRUE(failsWith(runLdmatrix(3, 0, table, rows, out), TESSEL_INTERNAL,
                        {"emu-sm80: block (0, 0, 0), wave 0: ldmatrix: count "
                         "3: ldmatrix loads 1, 2 or 4 matrices"}));
  EXPECT_TRUE(failsWith(runLdmatrix(1, 2, table, rows, out), TESSEL_INTERNAL,
                        {"ldmatrix: transpose is 2"}));
  rows[5] = 32; // one row past the table: outside shared memory
  EXPECT_TRUE(failsWith(runLdmatrix(1, 0, table, rows, out), TESSEL_INTERNAL,
                        {"thread (5, 0, 0) (wave 0, lane 5): ldmatrix: row "
                         "address",
                         "is outside shared memory"}));
}

//===-- NVIDIA warp ops ---------------------------------------------------===//

/// Runs shfl with `op`, `offset` and `c` over two warps of values
/// 5000 + t: out[2t] = result, out[2t + 1] = valid.
std::vector<uint32_t> runShfl(int32_t op, uint32_t offset, uint32_t c,
                              int32_t exitModulus = 0, int32_t exitLane = 0,
                              uint32_t member = 0xffffffff) {
  std::vector<int32_t> config = {op,         int32_t(member), int32_t(offset),
                                 int32_t(c), exitModulus,     exitLane};
  std::vector<uint32_t> in = sequence(64, 5000), out(128, kUnwritten);
  EmuLaunch launch;
  launch.device = "emu-sm80";
  launch.entry = "shfl";
  launch.buffers = {emuBuffer("config", config), emuBuffer("in", in),
                    emuBuffer("out", out)};
  EXPECT_TRUE(succeeds(runEmu(launch)));
  return out;
}

/// Checks a shfl's results: `source(lane)` is the lane it reads, or -1 if
/// it is out of range (then it keeps its own value and valid is 0).
template <typename Source>
void expectShfl(const std::vector<uint32_t> &out, Source source,
                const std::string &what) {
  for (uint32_t t = 0; t < 64; ++t) {
    const int from = source(t % 32);
    const uint32_t lane = from < 0 ? t : t / 32 * 32 + uint32_t(from);
    EXPECT_EQ(out[2 * t], 5000 + lane) << what << ", thread " << t;
    EXPECT_EQ(out[2 * t + 1], from < 0 ? 0u : 1u) << what << ", thread " << t;
  }
}

TEST(EmulatedNvidiaOps, ShflModesAsCudaUsesThem) {
  // The c operand CUDA's __shfl_*_sync(mask, v, x, width) pass: the segment
  // mask selects width-lane segments; the clamp is 31, or 0 for up.
  for (int width : {32, 16, 8, 4}) {
    const uint32_t segments = uint32_t(32 - width) << 8;
    for (int source : {0, 3, 7, 13, 31})
      expectShfl(
          runShfl(TESSEL_EMU_SHFL_IDX, source, segments | 31),
          [&](int lane) { return lane / width * width + source % width; },
          "idx " + std::to_string(source) + " width " + std::to_string(width));
    for (int delta : {1, 3, 5}) {
      expectShfl(
          runShfl(TESSEL_EMU_SHFL_UP, delta, segments),
          [&](int lane) { return lane % width >= delta ? lane - delta : -1; },
          "up " + std::to_string(delta) + " width " + std::to_string(width));
      expectShfl(
          runShfl(TESSEL_EMU_SHFL_DOWN, delta, segments | 31),
          [&](int lane) {
            return lane % width + delta < width ? lane + delta : -1;
          },
          "down " + std::to_string(delta) + " width " + std::to_string(width));
    }
    // xor may reach into earlier segments, not later ones.
    for (int mask : {1, 2, 16, 31})
      expectShfl(
          runShfl(TESSEL_EMU_SHFL_BFLY, mask, segments | 31),
          [&](int lane) {
            int other = lane ^ mask;
            return other < (lane / width + 1) * width ? other : -1;
          },
          "bfly " + std::to_string(mask) + " width " + std::to_string(width));
  }
}

TEST(EmulatedNvidiaOps, ShflClamps) {
  // No segments, lanes clamped to 0..15 going down and 8.. going up.
  expectShfl(
      runShfl(TESSEL_EMU_SHFL_DOWN, 4, 15),
      [](int lane) { return lane + 4 <= 15 ? lane + 4 : -1; },
      "down 4 clamp 15");
  expectShfl(
      runShfl(TESSEL_EMU_SHFL_UP, 3, 8),
      [](int lane) { return lane - 3 >= 8 ? lane - 3 : -1; }, "up 3 clamp 8");
  expectShfl(
      runShfl(TESSEL_EMU_SHFL_IDX, 20, 15), [](int) { return -1; },
      "idx 20 clamp 15");
  // Only the offset's low five bits count.
  expectShfl(
      runShfl(TESSEL_EMU_SHFL_IDX, 40, 31), [](int) { return 8; }, "idx 40");
}

TEST(EmulatedNvidiaOps, ShflReadsZeroFromReturnedLanes) {
  std::vector<uint32_t> out = runShfl(TESSEL_EMU_SHFL_BFLY, 1, 31, 3, 0);
  for (uint32_t t = 0; t < 64; ++t) {
    if (exits(t, 32, 3, 0)) {
      EXPECT_EQ(out[2 * t], kUnwritten);
      continue;
    }
    EXPECT_EQ(out[2 * t], exits(t ^ 1, 32, 3, 0) ? 0 : 5000 + (t ^ 1))
        << "thread " << t;
    EXPECT_EQ(out[2 * t + 1], 1u);
  }
}

TEST(EmulatedErrors, ShflLaneOutsideItsMembermask) {
  std::vector<int32_t> config = {
      TESSEL_EMU_SHFL_IDX, int32_t(0xfffffffe), 0, 31, 0, 0};
  std::vector<uint32_t> in(32), out(64);
  EmuLaunch launch;
  launch.device = "emu-sm80";
  launch.entry = "shfl";
  launch.block = {32, 1, 1};
  launch.buffers = {emuBuffer("config", config), emuBuffer("in", in),
                    emuBuffer("out", out)};
  EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_INTERNAL,
                        {"thread (0, 0, 0) (wave 0, lane 0): shfl.sync.idx: "
                         "the lane is not in its own membermask 0xfffffffe"}));
}

/// Runs ballot with VOTE_BALLOT on two warps.
tessel_status runVote(const std::vector<uint32_t> &predicates, uint32_t member,
                      int32_t exitModulus, int32_t exitLane,
                      std::vector<int64_t> &out) {
  std::vector<int32_t> config = {TESSEL_EMU_VOTE_BALLOT, exitModulus, exitLane,
                                 int32_t(member)};
  std::vector<uint32_t> in = predicates;
  out.assign(predicates.size(), -1);
  EmuLaunch launch;
  launch.device = "emu-sm80";
  launch.entry = "ballot";
  launch.block = {uint32_t(predicates.size()), 1, 1};
  launch.buffers = {emuBuffer("config", config), emuBuffer("in", in),
                    emuBuffer("out", out)};
  return runEmu(launch);
}

TEST(EmulatedNvidiaOps, VoteBallot) {
  std::mt19937 random(19);
  std::vector<uint32_t> predicates(64);
  for (uint32_t &predicate : predicates)
    predicate = random() % 2;
  std::vector<int64_t> out;
  ASSERT_TRUE(succeeds(runVote(predicates, 0xffffffff, 4, 2, out)));
  uint64_t expected[2] = {};
  for (uint32_t t = 0; t < 64; ++t)
    if (!exits(t, 32, 4, 2) && predicates[t])
      expected[t / 32] |= uint64_t(1) << (t % 32);
  for (uint32_t t = 0; t < 64; ++t)
    EXPECT_EQ(uint64_t(out[t]),
              exits(t, 32, 4, 2) ? ~uint64_t(0) : expected[t / 32])
        << "thread " << t;
}

TEST(EmulatedErrors, VoteBallotMembermaskMustNameEveryLiveLane) {
  std::vector<uint32_t> predicates(32, 1);
  std::vector<int64_t> out;
  EXPECT_TRUE(failsWith(runVote(predicates, 0x0000ffff, 0, 0, out),
                        TESSEL_INTERNAL,
                        {"vote.sync.ballot: membermask 0x0000ffff leaves out "
                         "live lanes (0xffffffff are live)"}));
  // Returned lanes may be left out.
  ASSERT_TRUE(succeeds(runVote(predicates, 0x55555555, 2, 1, out)));
  EXPECT_EQ(uint64_t(out[0]), 0x55555555u);
}

//===-- buffer loads ------------------------------------------------------===//

/// Runs buffer_load: 64 threads, thread t loading `bytes` at offset 4 t of a
/// buffer of `records` bytes over `data` (128 words), soffset `soffset`.
tessel_status runBufferLoad(int32_t records, int32_t stride, int32_t bytes,
                            int32_t soffset, std::vector<uint32_t> &data,
                            std::vector<uint32_t> &out) {
  std::vector<int32_t> config = {records, stride, bytes, soffset};
  out.assign(4 * 64, kUnwritten);
  EmuLaunch launch;
  launch.device = "emu-gfx942";
  launch.entry = "buffer_load";
  launch.block = {64, 1, 1};
  launch.buffers = {emuBuffer("config", config), emuBuffer("data", data),
                    emuBuffer("out", out)};
  return runEmu(launch);
}

TEST(EmulatedAmdOps, BufferLoadReadsZerosPastTheBuffer) {
  std::vector<uint32_t> data = sequence(128, 1000), out;
  // 100 bytes: words 0-24 exist; a 16-byte load straddling the end keeps
  // its words below it.
  ASSERT_TRUE(succeeds(runBufferLoad(100, 0, 16, 0, data, out)));
  for (uint32_t t = 0; t < 64; ++t)
    for (uint32_t w = 0; w < 4; ++w)
      EXPECT_EQ(out[4 * t + w], t + w < 25 ? data[t + w] : 0u)
          << "thread " << t << ", word " << w;
  // soffset moves the reads, where both readings of the check agree.
  ASSERT_TRUE(succeeds(runBufferLoad(512, 0, 8, 8, data, out)));
  for (uint32_t t = 0; t < 64; ++t) {
    EXPECT_EQ(out[4 * t], data[t + 2]) << "thread " << t;
    EXPECT_EQ(out[4 * t + 1], data[t + 3]) << "thread " << t;
    EXPECT_EQ(out[4 * t + 2], kUnwritten) << "thread " << t;
  }
}

TEST(EmulatedErrors, BufferLoads) {
  std::vector<uint32_t> data = sequence(128, 1000), out;
  EXPECT_TRUE(failsWith(runBufferLoad(512, 16, 16, 0, data, out),
                        TESSEL_INTERNAL,
                        {"buffer_load: buffer load through a resource of "
                         "stride 16: only raw buffers (stride 0) are "
                         "modelled"}));
  EXPECT_TRUE(failsWith(runBufferLoad(512, 0, 6, 0, data, out), TESSEL_INTERNAL,
                        {"buffer load of 6 bytes (4, 8, 12 or 16)"}));
  // Thread 61's word 1 is at 248 < 256, but 248 + 8 is not.
  EXPECT_TRUE(failsWith(runBufferLoad(256, 0, 8, 8, data, out), TESSEL_INTERNAL,
                        {"thread (61, 0, 0)",
                         "buffer load at offset 248 + "
                         "soffset 8 of a 256-byte buffer is in bounds only "
                         "if soffset is not checked"}));
}

/// Runs `launch`, whose `records` buffer holds 64 bytes a thread, and
/// copies those bytes to `out`.
tessel_status runRecordingBytes(EmuLaunch &launch,
                                const std::vector<uint32_t> &records,
                                std::vector<uint8_t> &out) {
  tessel_status status = runEmu(launch);
  out.resize(64 * launch.block[0]);
  std::memcpy(out.data(), records.data(), out.size());
  return status;
}

/// Runs buffer_load_lds (emu_kernels.c) on 128 threads over 1024 words of
/// random `data`, the buffer `records` bytes long; `mode` 1 puts wave 0's
/// first slots past shared memory, 2 loads 12 bytes.
tessel_status runBufferLoadLds(const char *device, int32_t records,
                               int32_t mode, std::vector<uint32_t> &data,
                               std::vector<uint8_t> &out) {
  const uint32_t threads = 128;
  std::vector<int32_t> config = {records, mode};
  std::mt19937 random(29);
  data.resize(1024);
  for (uint32_t &word : data)
    word = random();
  std::vector<uint32_t> recorded(16 * threads, kUnwritten);
  EmuLaunch launch;
  launch.device = device;
  launch.entry = "buffer_load_lds";
  launch.block = {threads, 1, 1};
  launch.sharedBytes = 2 * 16 * threads;
  launch.buffers = {emuBuffer("config", config), emuBuffer("data", data),
                    emuBuffer("out", recorded)};
  return runRecordingBytes(launch, recorded, out);
}

TEST(EmulatedAmdOps, BufferLoadToLdsLandsAtM0PlusTheLaneWhenAWaitRetiresIt) {
  std::vector<uint32_t> data;
  std::vector<uint8_t> out;
  // 3000 bytes: the second loads past 3000 read zeros.
  ASSERT_TRUE(succeeds(runBufferLoadLds("emu-gfx950", 3000, 0, data, out)));
  const auto *bytes = reinterpret_cast<const uint8_t *>(data.data());
  const std::vector<uint8_t> poison(16, 0xff);
  for (uint32_t t = 0; t < 128; ++t) {
    auto part = [&](int i) {
      return std::vector<uint8_t>(&out[64 * t + 16 * i],
                                  &out[64 * t + 16 * i + 16]);
    };
    auto loaded = [&](uint32_t at) {
      std::vector<uint8_t> expected(16, 0);
      for (uint32_t i = 0; i < 16; ++i)
        if (at + i < 3000)
          expected[i] = bytes[at + i];
      return expected;
    };
    EXPECT_EQ(part(0), poison) << "thread " << t;
    EXPECT_EQ(part(1), loaded(16 * t)) << "thread " << t;
    EXPECT_EQ(part(2), poison) << "thread " << t;
    EXPECT_EQ(part(3), loaded(16 * t + 2048)) << "thread " << t;
  }
}

TEST(EmulatedErrors, BufferLoadToLds) {
  std::vector<uint32_t> data;
  std::vector<uint8_t> out;
  EXPECT_TRUE(failsWith(runBufferLoadLds("emu-gfx950", 4096, 1, data, out),
                        TESSEL_INTERNAL,
                        {"(wave 0, lane 0): buffer_load_lds: buffer load to "
                         "LDS at",
                         "(M0",
                         "+ 16 x lane 0) is not a 16-byte aligned "
                         "slot of shared memory"}));
  EXPECT_TRUE(failsWith(runBufferLoadLds("emu-gfx950", 4096, 2, data, out),
                        TESSEL_UNSUPPORTED,
                        {"buffer load to LDS of 12 bytes: the emulator models "
                         "the 16-byte form"}));
  // gfx942 has the 4-byte form only, which the templates do not use.
  EXPECT_TRUE(failsWith(runBufferLoadLds("emu-gfx942", 4096, 0, data, out),
                        TESSEL_INTERNAL, {"buffer_load_lds: not an op of"}));
}

//===-- cp.async ----------------------------------------------------------===//

tessel_status runCpAsync(int32_t mode, std::vector<uint8_t> &out,
                         std::vector<uint32_t> &first,
                         std::vector<uint32_t> &second) {
  const uint32_t threads = 64;
  std::vector<int32_t> config = {mode};
  std::mt19937 random(23);
  first.resize(4 * threads);
  second.resize(4 * threads);
  for (uint32_t &word : first)
    word = random();
  for (uint32_t &word : second)
    word = random();
  std::vector<uint32_t> records(16 * threads, kUnwritten);
  EmuLaunch launch;
  launch.device = "emu-sm80";
  launch.entry = "cp_async";
  launch.block = {threads, 1, 1};
  launch.sharedBytes = 32 * threads;
  launch.buffers = {emuBuffer("config", config), emuBuffer("first", first),
                    emuBuffer("second", second), emuBuffer("out", records)};
  return runRecordingBytes(launch, records, out);
}

TEST(EmulatedNvidiaOps, CpAsyncCopiesWhenAWaitRetiresItsGroup) {
  std::vector<uint8_t> out;
  std::vector<uint32_t> first, second;
  ASSERT_TRUE(succeeds(runCpAsync(0, out, first, second)));
  const std::vector<uint8_t> poison(16, 0xff);
  for (uint32_t t = 0; t < 64; ++t) {
    const uint8_t *record = &out[64 * t];
    auto bytes = [&](int part) {
      return std::vector<uint8_t>(record + 16 * part, record + 16 * part + 16);
    };
    const auto *firstBytes = reinterpret_cast<const uint8_t *>(first.data());
    const auto *secondBytes = reinterpret_cast<const uint8_t *>(second.data());
    // Before any wait: what shared memory held.
    EXPECT_EQ(bytes(0), poison) << "thread " << t;
    // wait_group 1 completed the first group only: src-size bytes, then
    // zeros.
    std::vector<uint8_t> copied(firstBytes + 16 * t,
                                firstBytes + 16 * t + 4 * (t % 5));
    copied.resize(16, 0);
    EXPECT_EQ(bytes(1), copied) << "thread " << t;
    EXPECT_EQ(bytes(2), poison) << "thread " << t;
    // wait_group 0 completed the second.
    EXPECT_EQ(bytes(3), std::vector<uint8_t>(secondBytes + 16 * t,
                                             secondBytes + 16 * t + 16))
        << "thread " << t;
  }
}

TEST(EmulatedErrors, CpAsyncOutsideSharedMemory) {
  std::vector<uint8_t> out;
  std::vector<uint32_t> first, second;
  EXPECT_TRUE(failsWith(runCpAsync(1, out, first, second), TESSEL_INTERNAL,
                        {"block (0, 0, 0), thread (5, 0, 0) (wave 0, lane "
                         "5): cp.async: destination",
                         "is outside shared memory"}));
}

//===-- Bad operands ------------------------------------------------------===//

TEST(EmulatedErrors, DsSwizzlePatternsOutsideTheKnownModes) {
  struct Case {
    uint32_t pattern;
    tessel_status_code code;
    const char *message;
  };
  for (Case c :
       {Case{0xc000, TESSEL_UNSUPPORTED,
             "ds_swizzle: pattern 0xc000 selects the rotate or FFT mode"},
        Case{0xe01f, TESSEL_UNSUPPORTED,
             "ds_swizzle: pattern 0xe01f selects the rotate or FFT mode"},
        Case{0x10000, TESSEL_INTERNAL,
             "ds_swizzle: pattern 0x10000 does not fit the instruction's "
             "16-bit offset"},
        Case{0x8100, TESSEL_INTERNAL,
             "ds_swizzle: pattern 0x8100: quad mode takes its four lane "
             "selectors from bits 7:0, but bits 14:8 are set too"}}) {
    std::vector<int32_t> config = {TESSEL_EMU_DS_SWIZZLE, 0, 0};
    std::vector<uint32_t> a(64), b(64, c.pattern), out(64);
    EmuLaunch launch;
    launch.entry = "u32_op";
    launch.buffers = {emuBuffer("config", config), emuBuffer("a", a),
                      emuBuffer("b", b), emuBuffer("out", out)};
    EXPECT_TRUE(failsWith(runEmu(launch), c.code,
                          {"emu-gfx942: block (0, 0, 0), thread (0, 0, 0) "
                           "(wave 0, lane 0): ",
                           c.message}));
  }
}

TEST(EmulatedErrors, ReadLaneOfDifferentOrMissingLanes) {
  struct Case {
    std::vector<uint32_t> lanes;
    const char *message;
  };
  std::vector<uint32_t> differ(64, 5);
  differ[9] = 6;
  for (const Case &c :
       {Case{differ, "(wave 0, lane 9): v_readlane: the lane reads lane "
                     "6 but lane 0 reads lane 5 (the index must be the same "
                     "in the whole wave)"},
        Case{std::vector<uint32_t>(64, 64),
             "(wave 0, lane 0): v_readlane: lane 64 is not a lane of "
             "the wave of 64"},
        // Lanes 3, 7, ... return.
        Case{std::vector<uint32_t>(64, 7),
             "(wave 0, lane 0): v_readlane: lane 7 has returned"}}) {
    std::vector<int32_t> config = {TESSEL_EMU_READLANE, 4, 3};
    std::vector<uint32_t> a(64), b = c.lanes, out(64);
    EmuLaunch launch;
    launch.device = "emu-gfx942";
    launch.entry = "u32_op";
    launch.buffers = {emuBuffer("config", config), emuBuffer("a", a),
                      emuBuffer("b", b), emuBuffer("out", out)};
    EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_INTERNAL, {c.message}));
  }
}

TEST(EmulatedErrors, DppControlsTheEmulatorDoesNotModel) {
  // wave_rol:1, row_shl 1: no Tessel template uses them.
  for (uint32_t control : {0x134u, 0x101u}) {
    std::vector<int32_t> config = {0, 0, int32_t(control), 0xf, 0xf, 1};
    std::vector<uint32_t> a(64), b(64), out(64);
    EmuLaunch launch;
    launch.device = "emu-gfx942";
    launch.entry = "dpp";
    launch.buffers = {emuBuffer("config", config), emuBuffer("a", a),
                      emuBuffer("b", b), emuBuffer("out", out)};
    char message[160];
    snprintf(message, sizeof message,
             "v_mov_b32_dpp: DPP control 0x%03x is not one the emulator "
             "implements (it knows quad_perm, 0x00-0xff, row_shr, "
             "0x111-0x11f, wave_shr:1, 0x138, row_mirror, 0x140, "
             "row_half_mirror, 0x141, row_bcast:15, 0x142, and row_bcast:31, "
             "0x143)",
             control);
    EXPECT_TRUE(failsWith(runEmu(launch), TESSEL_UNSUPPORTED,
                          {"emu-gfx942: block (0, 0, 0), thread (0, 0, 0) "
                           "(wave 0, lane 0): ",
                           message}));
  }
}

} // namespace
