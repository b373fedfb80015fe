// Shared by the codif_*_test.cpp files: little-endian word <-> byte helpers written
// independently of the codec, and the ASKAP-style stream used throughout.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "capture/codif/header.hpp"

namespace rocecap::capture::codif::test {

inline std::array<std::byte, kHeaderBytes> to_bytes(const std::array<uint64_t, 8>& words) {
  std::array<std::byte, kHeaderBytes> b{};
  for (std::size_t w = 0; w < 8; ++w) {
    for (std::size_t i = 0; i < 8; ++i)
      b[w * 8 + i] = static_cast<std::byte>(words[w] >> (8 * i));
  }
  return b;
}

inline std::array<uint64_t, 8> to_words(const std::array<std::byte, kHeaderBytes>& b) {
  std::array<uint64_t, 8> words{};
  for (std::size_t w = 0; w < 8; ++w) {
    for (std::size_t i = 0; i < 8; ++i)
      words[w] |= std::to_integer<uint64_t>(b[w * 8 + i]) << (8 * i);
  }
  return words;
}

// ASKAP numbers: period 27 s and 32,000,000 samples per channel per period. With 8192 payload
// bytes, 4 channels of 16-bit complex samples: 8192 * 8 / (4 * 16 * 2) = 512 samples per frame,
// and 32,000,000 / 512 = 62,500 frames per period, each 27 s / 62,500 = 432 us long.
inline Header askap(Layout layout = Layout::v3) {
  Header h;
  h.layout = layout;
  h.sync = layout == Layout::v3 ? kSyncV3 : kSyncV1;
  h.version = layout == Layout::v3 ? 3 : 1;
  h.epoch = 40;  // 2020-01-01
  h.nbits = 16;
  h.complex = true;
  h.nchan = 4;
  h.period = 27;
  h.data_words = 8192 / 8;
  h.total_samples = 32'000'000;
  h.station_id = station_id('A', 'K');
  h.thread_id = 3;
  h.group_id = 7;
  return h;
}

// A UDP payload: the encoded header followed by a zero data array.
inline std::vector<std::byte> payload(const Header& h) {
  std::vector<std::byte> p(static_cast<std::size_t>(h.frame_bytes()));
  encode(h, std::span<std::byte, kHeaderBytes>(p.data(), kHeaderBytes));
  return p;
}

}  // namespace rocecap::capture::codif::test
