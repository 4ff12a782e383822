//===- bundle/crc32.cpp - CRC-32 of bundle contents -----------------------===//
//
// The bundle checksum is the IEEE 802.3 CRC-32 (reflected polynomial
// 0xEDB88320, the one zlib and `cksum -a crc32b` use), so a bundle can be
// checked with standard tools.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <array>
#include <cstddef>

namespace tessel::bundle {
namespace {

constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit)
      c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = makeTable();

/// Advances the (pre-inverted) CRC register over `size` bytes.
uint32_t update(uint32_t crc, const uint8_t *data, size_t size) {
  for (size_t i = 0; i < size; ++i)
    crc = kTable[(crc ^ data[i]) & 0xFFu] ^ (crc >> 8);
  return crc;
}

} // namespace

uint32_t crc32(const uint8_t *data, size_t size) {
  return update(0xFFFFFFFFu, data, size) ^ 0xFFFFFFFFu;
}

uint32_t bundleChecksum(const uint8_t *file, size_t size) {
  // The checksum covers the header as well, so that a flipped count or offset
  // in the header cannot pass unnoticed; its own field reads as zero.
  constexpr size_t fieldAt = offsetof(tessel_bundle_header, crc32);
  constexpr size_t fieldEnd = fieldAt + sizeof(uint32_t);
  static const uint8_t zeros[sizeof(uint32_t)] = {};
  uint32_t crc = update(0xFFFFFFFFu, file, fieldAt);
  crc = update(crc, zeros, sizeof zeros);
  crc = update(crc, file + fieldEnd, size - fieldEnd);
  return crc ^ 0xFFFFFFFFu;
}

} // namespace tessel::bundle
