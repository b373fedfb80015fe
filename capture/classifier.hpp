// Maps a parsed frame's (destination group, destination port, source address) to the index of
// the configured stream it belongs to. Built once at start-up; lookups on the hot path are
// a hash and at most a few probes into a fixed open-addressing table: no allocation, no locks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace rocecap::capture {

struct StreamKey {
  uint32_t group = 0;  // IPv4, host byte order
  uint16_t port = 0;
  uint32_t source = 0;  // antenna's IPv4 source address, host byte order
  friend bool operator==(const StreamKey&, const StreamKey&) = default;
};

class StreamClassifier {
 public:
  static constexpr uint32_t kNoStream = UINT32_MAX;

  // keys[i] becomes stream i. Throws std::invalid_argument on a duplicate key (start-up only),
  // unless shared_keys: then a key maps to the first stream that has it (VDIF thread streams
  // share their flow's key; frame_check routes by thread from there).
  explicit StreamClassifier(const std::vector<StreamKey>& keys, bool shared_keys = false);

  // Stream index, or kNoStream for a frame of no configured stream.
  uint32_t find(const StreamKey& key) const noexcept {
    for (uint32_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      const Entry& e = table_[slot];
      if (e.stream == kNoStream) return kNoStream;
      if (e.key == key) return e.stream;
    }
  }

  uint32_t size() const noexcept { return count_; }

 private:
  struct Entry {
    StreamKey key;
    uint32_t stream = kNoStream;
  };
  static uint32_t hash(const StreamKey& k) noexcept {
    uint64_t x = (uint64_t{k.group} << 32 | k.source) ^ (uint64_t{k.port} * 0x9E3779B97F4A7C15ULL);
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    return static_cast<uint32_t>(x);
  }

  std::vector<Entry> table_;  // power-of-two size, at most half full: probes stay short
  uint32_t mask_ = 0;
  uint32_t count_ = 0;
};

}  // namespace rocecap::capture
