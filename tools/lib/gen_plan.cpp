#include "tools/lib/gen_plan.hpp"

#include <cmath>

namespace rocecap::tools {
namespace {

constexpr uint64_t mix(uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

bool bad_probability(double p) {
  return !(p >= 0 && p <= 1);
}

}  // namespace

std::string ImpairmentRates::check() const {
  const struct {
    const char* option;
    double p;
  } all[] = {{"--drop", drop},           {"--swap", swap},         {"--duplicate", duplicate},
             {"--bad-sync", bad_sync},   {"--truncate", truncate}, {"--invalid", invalid},
             {"--foreign-prob", foreign}};
  double sum = 0;
  for (const auto& a : all) {
    if (bad_probability(a.p)) return std::string(a.option) + ": probability must be in [0, 1]";
    sum += a.p;
  }
  if (sum > 1 + 1e-12) {
    return "--drop, --swap, --duplicate, --bad-sync, --truncate, --invalid and --foreign-prob "
           "add up to more than 1 (each frame gets at most one impairment)";
  }
  return {};
}

const char* to_string(Fate f) noexcept {
  switch (f) {
    case Fate::plain:
      return "plain";
    case Fate::dropped:
      return "dropped";
    case Fate::swapped:
      return "swapped";
    case Fate::duplicated:
      return "duplicated";
    case Fate::bad_sync:
      return "bad_sync";
    case Fate::truncated:
      return "truncated";
    case Fate::invalid:
      return "invalid";
    case Fate::foreign:
      return "foreign";
  }
  return "unknown";
}

double ImpairmentPlan::uniform(uint32_t stream, uint64_t position) const noexcept {
  const uint64_t z = mix(mix(seed_ ^ 0x243F6A8885A308D3ULL) + mix(uint64_t{stream} + 1) + position);
  return static_cast<double>(z >> 11) * 0x1.0p-53;  // [0, 1), 53 random bits
}

Fate ImpairmentPlan::raw_fate(uint32_t stream, uint64_t position,
                              bool foreign_allowed) const noexcept {
  if (forced_drop(position)) return Fate::dropped;
  double u = uniform(stream, position);
  const struct {
    double p;
    Fate fate;
  } order[] = {{rates_.drop, Fate::dropped},
               {rates_.swap, Fate::swapped},
               {rates_.duplicate, Fate::duplicated},
               {rates_.bad_sync, Fate::bad_sync},
               {rates_.truncate, Fate::truncated},
               {rates_.invalid, Fate::invalid},
               {foreign_allowed ? rates_.foreign : 0.0, Fate::foreign}};
  for (const auto& o : order) {
    if (u < o.p) return o.fate;
    u -= o.p;
  }
  return Fate::plain;
}

Fate FateWalker::next() noexcept {
  const uint64_t p = position_++;
  if (partner_of_swap_) {
    partner_of_swap_ = false;
    return Fate::plain;
  }
  const Fate f = plan_->raw_fate(stream_, p, foreign_allowed_);
  if (f != Fate::swapped) return f;
  // A swap needs a partner that exists and that --drop-every does not claim (its count is exact).
  if (p + 1 >= plan_->frames_per_stream() || plan_->forced_drop(p + 1)) return Fate::plain;
  partner_of_swap_ = true;
  return Fate::swapped;
}

}  // namespace rocecap::tools
