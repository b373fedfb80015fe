#include "tools/lib/verify_model.hpp"

#include <stdexcept>
#include <string>

namespace rocecap::tools {
namespace {

enum class Mark : uint8_t { plain, dropped, swapped, duplicated, bad_sync, truncated, invalid };

std::vector<Mark> marks_of(const GenStream& s) {
  std::vector<Mark> marks(s.frames, Mark::plain);
  auto apply = [&](const std::vector<uint64_t>& list, Mark m, const char* name) {
    for (const uint64_t index : list) {
      if (index < s.first_index || index - s.first_index >= s.frames) {
        throw std::invalid_argument(std::string(name) + " index " + std::to_string(index) +
                                    " lies outside the stream");
      }
      Mark& slot = marks[index - s.first_index];
      if (slot != Mark::plain) {
        throw std::invalid_argument(std::string(name) + " index " + std::to_string(index) +
                                    " has two impairments");
      }
      slot = m;
    }
  };
  apply(s.dropped, Mark::dropped, "dropped");
  apply(s.swapped, Mark::swapped, "swapped");
  apply(s.duplicated, Mark::duplicated, "duplicated");
  apply(s.bad_sync, Mark::bad_sync, "bad_sync");
  apply(s.truncated, Mark::truncated, "truncated");
  apply(s.invalid, Mark::invalid, "invalid");
  return marks;
}

// doc/codif.md's sequencing rules over one stream's arrivals (no resynchronisation: the
// generator never jumps).
class Model {
 public:
  Model(const GenStream& s, uint32_t window)
      : base_(s.first_index),
        window_(window),
        seen_(s.frames + 1, false),
        invalid_(s.frames + 1, false) {}

  void arrive(uint64_t index, bool invalid, StreamExpectation& e) {
    ++e.packets;
    if (invalid) ++e.invalid;
    const uint64_t i = index - base_;
    if (!started_) {
      started_ = true;
      first_ = high_ = i;
      place(i, invalid);
    } else if (i > high_) {
      high_ = i;
      place(i, invalid);
    } else if (seen_[i]) {
      ++e.duplicate;
    } else if (i >= first_ && i + window_ > high_) {
      ++e.late;
      place(i, invalid);
    } else {
      ++e.late_dropped;
    }
  }

  void finish(StreamExpectation& e) const {
    e.any = started_;
    if (!started_) return;
    e.first = base_ + first_;
    e.last = base_ + high_;
    e.slots.reserve(high_ - first_ + 1);
    for (uint64_t i = first_; i <= high_; ++i) {
      const Slot slot = !seen_[i] ? Slot::missing : invalid_[i] ? Slot::invalid : Slot::frame;
      e.slots.push_back(slot);
      if (slot != Slot::missing) continue;
      ++e.lost;
      if (!e.gaps.empty() && e.gaps.back().first + e.gaps.back().second == base_ + i) {
        ++e.gaps.back().second;
      } else {
        e.gaps.emplace_back(base_ + i, 1);
      }
    }
  }

 private:
  void place(uint64_t i, bool invalid) {
    seen_[i] = true;
    invalid_[i] = invalid;
  }

  uint64_t base_;
  uint64_t window_;
  std::vector<bool> seen_, invalid_;
  bool started_ = false;
  uint64_t first_ = 0, high_ = 0;
};

}  // namespace

StreamExpectation expect_stream(const GenStream& s, uint32_t reorder_window) {
  const std::vector<Mark> marks = marks_of(s);
  StreamExpectation e;
  Model model(s, reorder_window == 0 ? 1 : reorder_window);
  for (uint64_t p = 0; p < s.frames; ++p) {
    const uint64_t index = s.first_index + p;
    switch (marks[p]) {
      case Mark::dropped:
        break;
      case Mark::bad_sync:
        ++e.bad_sync;
        break;
      case Mark::truncated:
        ++e.size_mismatch;
        break;
      case Mark::swapped:
        if (p + 1 >= s.frames || marks[p + 1] != Mark::plain) {
          throw std::invalid_argument("swapped index " + std::to_string(index) +
                                      " has no plain successor");
        }
        model.arrive(index + 1, false, e);
        model.arrive(index, false, e);
        ++p;
        break;
      case Mark::duplicated:
        model.arrive(index, false, e);
        model.arrive(index, false, e);
        break;
      case Mark::invalid:
        model.arrive(index, true, e);
        break;
      case Mark::plain:
        model.arrive(index, false, e);
        break;
    }
  }
  model.finish(e);
  return e;
}

}  // namespace rocecap::tools
