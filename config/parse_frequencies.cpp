// streams.frequencies (doc/dumps.md, "Frequencies"): the sky frequencies of each group, for
// dispersion-aware dumps. Pass 1 reads each entry's form (centre and bandwidth, or channel edges
// with the sideband) and derives the range it spans; pass 2 checks the entries against the
// groups, VDIF threads and each other.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "config/schema.hpp"
#include "config/schema_keys.hpp"
#include "config/units.hpp"

namespace rocecap::config {
namespace {

// Sky frequencies are above 0 and below 1 THz (no radio receiver reaches it); a value outside
// is a unit mistake (Hz or GHz written where MHz is meant).
constexpr double kMaxMhz = 1e6;

std::optional<double> read_mhz(Context& ctx, const std::optional<Field>& f, bool width) {
  const auto text = read_string(ctx, f);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (text->empty() || end != text->c_str() + text->size() || !std::isfinite(v) || v <= 0 ||
      v >= kMaxMhz) {
    ctx.report(f->pos, f->path,
               fmt::format("'{}' is not a {} in MHz: a number above 0 and below 1e6 (1 THz)", *text,
                           width ? "bandwidth" : "frequency"));
    return std::nullopt;
  }
  return v;
}

constexpr EnumName<Sideband> kSidebands[] = {{"upper", Sideband::upper},
                                             {"lower", Sideband::lower}};

// The channel form: every channel's edge frequency, its width and the sideband.
bool read_channels(Context& ctx, const MapView& m, GroupFrequencies& g) {
  const auto list = m.get("channels_mhz");
  const auto items = list_items(ctx, list);
  if (list && list->node.IsSequence() && items.empty())
    ctx.report(list->pos, list->path, "needs at least one channel frequency");
  bool ok = !items.empty();
  for (const Field& item : items) {
    const auto v = read_mhz(ctx, item, false);
    if (v) g.channels_mhz.push_back(*v);
    ok = ok && v.has_value();
  }
  const auto width = read_mhz(ctx, m.require("channel_bandwidth_mhz", "with channels_mhz"), true);
  if (auto s = read_enum(ctx, m.get("sideband"), kSidebands)) g.sideband = *s;
  if (!ok || !width) return false;
  g.channel_bandwidth_mhz = *width;
  const auto [lo, hi] = std::minmax_element(g.channels_mhz.begin(), g.channels_mhz.end());
  g.low_mhz = g.sideband == Sideband::upper ? *lo : *lo - *width;
  g.high_mhz = g.sideband == Sideband::upper ? *hi + *width : *hi;
  return true;
}

// The centre form.
bool read_centre(Context& ctx, const MapView& m, GroupFrequencies& g) {
  const auto centre = read_mhz(ctx, m.require("centre_mhz", "or channels_mhz"), false);
  const auto width = read_mhz(ctx, m.require("bandwidth_mhz", "with centre_mhz"), true);
  if (m.get("sideband")) {
    ctx.report(m.get("sideband")->pos, m.get("sideband")->path,
               "goes with channels_mhz (the centre form needs no sideband)");
  }
  if (!centre || !width) return false;
  g.centre_mhz = *centre;
  g.bandwidth_mhz = *width;
  g.low_mhz = *centre - *width / 2;
  g.high_mhz = *centre + *width / 2;
  return true;
}

void parse_frequency(Context& ctx, const Field& f, std::vector<GroupFrequencies>& out) {
  const MapView m(ctx, f, schema::kFrequency);
  if (!m.valid()) return;
  GroupFrequencies g;
  bool ok = false;
  if (auto text = read_string(ctx, m.require("group", "address:port, as in capture"))) {
    std::string error;
    const auto e = parse_endpoint(*text, error);
    if (!e) ctx.report(m.get("group")->pos, m.get("group")->path, error);
    if (e) g.address = e->address, g.port = e->port, ok = true;
  }
  if (auto t = read_uint(ctx, m.get("thread"), 0, 1023)) g.thread = static_cast<uint16_t>(*t);
  const bool channels = m.get("channels_mhz").has_value();
  if (channels && (m.get("centre_mhz") || m.get("bandwidth_mhz"))) {
    ctx.report(f.pos, f.path,
               "give either centre_mhz and bandwidth_mhz, or channels_mhz with "
               "channel_bandwidth_mhz, not both");
    return;
  }
  ok = (channels ? read_channels(ctx, m, g) : read_centre(ctx, m, g)) && ok;
  if (ok && g.low_mhz <= 0) {
    ctx.report(
        f.pos, f.path,
        fmt::format("the band reaches down to {} MHz: frequencies must stay above 0", g.low_mhz));
    ok = false;
  }
  if (ok) out.push_back(std::move(g));
}

}  // namespace

void parse_frequencies(Context& ctx, const std::optional<Field>& f, StreamsSection& s) {
  for (const Field& item : list_items(ctx, f))
    parse_frequency(ctx, item, s.frequencies);
}

void check_frequencies(Context& ctx, const RunConfig& cfg) {
  const auto& list = cfg.streams.frequencies;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const GroupFrequencies& g = list[i];
    const std::string path = fmt::format("streams.frequencies[{}]", i);
    const std::string name = format_ipv4(g.address) + ":" + std::to_string(g.port);
    bool known = false;
    for (const InterfaceConfig& itf : cfg.capture.interfaces) {
      for (const GroupConfig& c : itf.groups)
        known = known || (c.address == g.address && c.port == g.port);
    }
    if (!known) ctx.report(path + ".group", fmt::format("no interface has group {}", name));
    const auto& threads = cfg.streams.threads;
    if (g.thread && std::find(threads.begin(), threads.end(), *g.thread) == threads.end()) {
      ctx.report(path + ".thread",
                 fmt::format("thread {} is not in streams.threads (a thread of its own needs "
                             "VDIF with listed threads)",
                             *g.thread));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (list[j].address == g.address && list[j].port == g.port && list[j].thread == g.thread) {
        ctx.report(path, fmt::format("group {}{} already has its frequencies (entry {})", name,
                                     g.thread ? fmt::format(" thread {}", *g.thread) : "", j));
      }
    }
  }
}

}  // namespace rocecap::config
