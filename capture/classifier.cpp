#include "capture/classifier.hpp"

#include <bit>
#include <stdexcept>
#include <string>

namespace rocecap::capture {

StreamClassifier::StreamClassifier(const std::vector<StreamKey>& keys, bool shared_keys) {
  const std::size_t capacity = std::bit_ceil(keys.size() * 2 + 2);
  table_.assign(capacity, Entry{});
  mask_ = static_cast<uint32_t>(capacity - 1);
  for (const StreamKey& key : keys) {
    if (find(key) != kNoStream && shared_keys) {
      ++count_;  // the flow's first stream answers for it
      continue;
    }
    if (find(key) != kNoStream) {
      throw std::invalid_argument("stream configured twice (group, port, source) #" +
                                  std::to_string(count_));
    }
    uint32_t slot = hash(key) & mask_;
    while (table_[slot].stream != kNoStream)
      slot = (slot + 1) & mask_;
    table_[slot] = Entry{key, count_++};
  }
}

}  // namespace rocecap::capture
