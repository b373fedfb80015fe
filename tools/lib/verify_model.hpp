// What a capture of a generated run must contain, derived from the generator's summary alone:
// the order in which the receiver saw each stream's frames (the generator's impairment
// semantics, gen_summary.hpp) run through the sequencing rules of doc/codif.md with the run's
// reorder window. Independent of the capture code, so it can judge it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tools/lib/gen_summary.hpp"

namespace rocecap::tools {

// Per frame index of a stream, what the stream's files must hold.
enum class Slot : uint8_t {
  missing,  // never placed: a fill frame (or nothing without fill_gaps)
  frame,    // the generator's frame
  invalid,  // the generator's frame, CODIF invalid bit set
};

struct StreamExpectation {
  // Counts as the run manifest reports them.
  uint64_t packets = 0;  // frames handed to the sequencer (duplicates and late ones included)
  uint64_t lost = 0;     // missing indices strictly between the first and last placed index
  uint64_t duplicate = 0, late = 0, late_dropped = 0, invalid = 0;
  // Rejected before sequencing (counted per interface).
  uint64_t bad_sync = 0, size_mismatch = 0;

  bool any = false;         // some frame was placed
  uint64_t first = 0;       // first placed index (= first received: nothing is placed before it)
  uint64_t last = 0;        // highest placed index
  std::vector<Slot> slots;  // slots[i] is index first + i, for i in [0, last - first]
  std::vector<std::pair<uint64_t, uint64_t>> gaps;  // [first missing index, count]

  uint64_t placed() const noexcept { return packets - duplicate - late_dropped; }
};

// `reorder_window` as the sequencer applies it (>= 1). Throws std::invalid_argument when the
// summary's impairment lists are inconsistent (an index outside the stream, a swap at its end).
StreamExpectation expect_stream(const GenStream& s, uint32_t reorder_window);

}  // namespace rocecap::tools
