// Which impairment each generated frame gets: a pure function of (seed, stream, position), so a
// run is reproducible from its seed and arguments, and stopping early never changes the fate of
// the frames already sent.
#pragma once

#include <cstdint>
#include <string>

namespace rocecap::tools {

// Probabilities per frame; their sum must not exceed 1 (each frame gets at most one).
struct ImpairmentRates {
  uint64_t drop_every = 0;  // every K-th frame of each stream dropped (positions K-1, 2K-1, ...)
  double drop = 0;
  double swap = 0;
  double duplicate = 0;
  double bad_sync = 0;
  double truncate = 0;
  double invalid = 0;
  double foreign = 0;  // only on the streams of antenna 0, and only with a foreign source

  // Empty when usable, else what is wrong, naming the option.
  std::string check() const;
};

enum class Fate : uint8_t {
  plain,
  dropped,
  swapped,  // this position and the next are sent in reverse order
  duplicated,
  bad_sync,
  truncated,
  invalid,
  foreign,  // sent intact, plus a copy from the foreign source
};

const char* to_string(Fate f) noexcept;

// Decides fates. The caller walks positions 0, 1, ... of a stream in order; a swap at
// position p makes position p + 1 plain (swaps are disjoint from everything), and the
// last position of a stream never starts a swap.
class ImpairmentPlan {
 public:
  ImpairmentPlan(uint64_t seed, const ImpairmentRates& rates, uint64_t frames_per_stream)
      : seed_(seed), rates_(rates), frames_(frames_per_stream) {}

  // Fate of `position` in stream `stream`, ignoring what the previous position got.
  // `foreign_allowed`: the stream is antenna 0's and a foreign source exists.
  Fate raw_fate(uint32_t stream, uint64_t position, bool foreign_allowed) const noexcept;

  // --drop-every's positions: dropped whatever else is drawn.
  bool forced_drop(uint64_t position) const noexcept {
    return rates_.drop_every != 0 && (position + 1) % rates_.drop_every == 0;
  }

  uint64_t frames_per_stream() const noexcept { return frames_; }

 private:
  double uniform(uint32_t stream, uint64_t position) const noexcept;

  uint64_t seed_;
  ImpairmentRates rates_;
  uint64_t frames_;
};

// Walks one stream's positions and resolves swaps against the raw fates.
class FateWalker {
 public:
  FateWalker(const ImpairmentPlan& plan, uint32_t stream, bool foreign_allowed)
      : plan_(&plan), stream_(stream), foreign_allowed_(foreign_allowed) {}

  // Fate of the next position (0, 1, ... in order).
  Fate next() noexcept;

 private:
  const ImpairmentPlan* plan_;
  uint32_t stream_;
  bool foreign_allowed_;
  uint64_t position_ = 0;
  bool partner_of_swap_ = false;
};

}  // namespace rocecap::tools
