#include "tools/lib/pulse_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace rocecap::tools {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument(what);
}

bool parse_number(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(out);
}

std::pair<double, double> parse_band(const std::string& item, std::size_t position) {
  const std::string where = "--frequencies: '" + item + "' (item " + std::to_string(position) + ")";
  const auto colon = item.find(':');
  double low = 0, high = 0;
  if (colon == std::string::npos || !parse_number(item.substr(0, colon), low) ||
      !parse_number(item.substr(colon + 1), high)) {
    bad(where + " is not LOW:HIGH in MHz");
  }
  if (low <= 0 || high <= 0) bad(where + ": frequencies must be above 0 MHz");
  if (low >= high) bad(where + ": LOW must be below HIGH");
  return {low, high};
}

void check_request(const PulseRequest& r, std::size_t groups) {
  if (!r.at) {
    if (r.width) bad("--pulse-width: needs --pulse-at");
    if (r.dm) bad("--pulse-dm: needs --pulse-at");
    if (r.ref_mhz) bad("--pulse-ref-mhz: needs --pulse-at");
    if (!r.frequencies.empty()) bad("--frequencies: needs --pulse-at");
    return;
  }
  if (!(*r.at >= 0) || !std::isfinite(*r.at)) bad("--pulse-at: must be 0 or more seconds");
  if (r.width && (!(*r.width > 0) || !std::isfinite(*r.width)))
    bad("--pulse-width: must be more than 0 seconds");
  if (r.dm && (!(*r.dm >= 0) || !std::isfinite(*r.dm))) bad("--pulse-dm: must be 0 or more");
  if (r.ref_mhz && (!(*r.ref_mhz > 0) || !std::isfinite(*r.ref_mhz)))
    bad("--pulse-ref-mhz: must be more than 0 MHz");
  if (r.frequencies.empty()) {
    bad("--pulse-at: needs --frequencies (one LOW:HIGH pair in MHz per --groups entry, " +
        std::to_string(groups) + " here)");
  }
}

double top_of_band(const std::vector<std::pair<double, double>>& bands) {
  double top = 0;
  for (const auto& b : bands)
    top = std::max(top, b.second);
  return top;
}

// Channel c's span of a group's band, from its top edge's arrival to its bottom edge's end.
PulseSpan channel_span(const GenPulse& p, double low, double high, uint32_t c, uint32_t nchan,
                       const SampleClock& clock) {
  const double bw = high - low;
  const double bottom = low + bw * c / nchan;
  const double top = low + bw * (c + 1) / nchan;
  const int64_t first = sample_at(p.at + dispersion_delay(p.dm, top, p.ref_mhz), clock);
  const int64_t end = sample_at(p.at + p.width + dispersion_delay(p.dm, bottom, p.ref_mhz), clock);
  return {first, std::max(first, end)};
}

// The frames holding the group's pulse samples, and their header times.
void locate_frames(GenPulseGroup& g, const FrameBuilder& frames) {
  int64_t first = INT64_MAX, end = INT64_MIN;
  for (std::size_t c = 0; c < g.first_sample.size(); ++c) {
    if (g.first_sample[c] >= g.end_sample[c]) continue;
    first = std::min(first, g.first_sample[c]);
    end = std::max(end, g.end_sample[c]);
  }
  if (first >= end) return;  // no sample: frames 0
  const auto spf = static_cast<int64_t>(frames.samples_per_frame());
  g.first_index = frames.first_index() + static_cast<uint64_t>(first / spf);
  g.last_index = frames.first_index() + static_cast<uint64_t>((end - 1) / spf);
  g.frames = g.last_index - g.first_index + 1;
  g.first = frames.frame_time(g.first_index);
  g.last = frames.frame_time(g.last_index);
}

}  // namespace

std::vector<std::pair<double, double>> parse_frequencies(const std::string& list,
                                                         std::size_t groups) {
  std::vector<std::string> items;
  std::size_t from = 0;
  for (std::size_t comma; (comma = list.find(',', from)) != std::string::npos; from = comma + 1)
    items.push_back(list.substr(from, comma - from));
  items.push_back(list.substr(from));
  if (items.size() != groups) {
    bad("--frequencies: " + std::to_string(items.size()) + " LOW:HIGH pairs for " +
        std::to_string(groups) + " --groups entries (one pair per group, in the same order)");
  }
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out.push_back(parse_band(items[i], i + 1));
  return out;
}

double dispersion_delay(double dm, double f_mhz, double ref_mhz) noexcept {
  const double f = f_mhz / 1000, ref = ref_mhz / 1000;
  return kDispersionSecondsPerDm * dm * (1 / (f * f) - 1 / (ref * ref));
}

int64_t sample_at(double seconds, const SampleClock& clock) noexcept {
  double x = seconds * static_cast<double>(clock.samples) / static_cast<double>(clock.seconds);
  const double nearest = std::nearbyint(x);
  if (std::abs(x - nearest) <= 1e-6) x = nearest;
  x = std::ceil(x);
  if (!(x > 0)) return 0;
  return x >= 0x1p62 ? int64_t{1} << 62 : static_cast<int64_t>(x);
}

std::optional<GenPulse> plan_pulse(const PulseRequest& request,
                                   const std::vector<PulseGroupAddress>& groups,
                                   const FrameBuilder& frames) {
  check_request(request, groups.size());
  if (!request.at) return std::nullopt;
  const GenFrameParams& fp = frames.params();
  if (!pulse_nbits_supported(fp.nbits)) bad("--pulse-at: needs --nbits 2, 4 or 8");
  const auto bands = parse_frequencies(request.frequencies, groups.size());
  GenPulse p;
  p.at = *request.at;
  p.width = request.width.value_or(0.001);
  p.dm = request.dm.value_or(0);
  p.ref_mhz = request.ref_mhz.value_or(top_of_band(bands));
  p.unix_ns = frames.frame_unix_ns(frames.first_index()) + std::llround(p.at * 1e9);
  const SampleClock clock = frames.sample_clock();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    GenPulseGroup g;
    g.group = groups[i].group;
    g.port = groups[i].port;
    g.low_mhz = bands[i].first;
    g.high_mhz = bands[i].second;
    for (uint32_t c = 0; c < fp.nchan; ++c) {
      const PulseSpan s = channel_span(p, g.low_mhz, g.high_mhz, c, fp.nchan, clock);
      g.first_sample.push_back(s.first);
      g.end_sample.push_back(s.end);
    }
    locate_frames(g, frames);
    p.groups.push_back(std::move(g));
  }
  return p;
}

}  // namespace rocecap::tools
