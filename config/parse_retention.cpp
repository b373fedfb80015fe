// Pass 1 of the loader for the `retention` section (triggered dumps, doc/dumps.md).
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "config/retention_plan.hpp"
#include "config/schema.hpp"
#include "config/schema_keys.hpp"
#include "config/units.hpp"

namespace rocecap::config {
namespace {

std::optional<std::chrono::nanoseconds> read_duration(Context& ctx, const std::optional<Field>& f,
                                                      bool zero_ok) {
  const auto text = read_string(ctx, f);
  if (!text) return std::nullopt;
  std::string error;
  const auto d = parse_duration(*text, error);
  if (!d) ctx.report(f->pos, f->path, error);
  if (d && !zero_ok && d->count() == 0) ctx.report(f->pos, f->path, "must be longer than 0s");
  if (!d || (!zero_ok && d->count() == 0)) return std::nullopt;
  return d;
}

// Frames per second of one stream: CODIF frames_per_period / period, often not whole
// (ASKAP: 62500 / 27 s = 2314.81...), so a decimal number is accepted.
std::optional<double> read_rate(Context& ctx, const std::optional<Field>& f) {
  const auto text = read_string(ctx, f);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (text->empty() || end != text->c_str() + text->size() || !std::isfinite(v) || v <= 0 ||
      v > 1e8) {
    ctx.report(f->pos, f->path,
               fmt::format("'{}' is not a frame rate: frames per second per stream, a number "
                           "above 0 and at most 1e8 (CODIF: frames per period / period)",
                           *text));
    return std::nullopt;
  }
  return v;
}

constexpr EnumName<OutputFormat> kDumpFormats[] = {{"raw", OutputFormat::raw},
                                                   {"codifhdr", OutputFormat::codifhdr},
                                                   {"vdifhdr", OutputFormat::vdifhdr},
                                                   {"pcap", OutputFormat::pcap}};

}  // namespace

void parse_retention(Context& ctx, const Field& f, RetentionSection& r) {
  const MapView m(ctx, f, schema::kRetention);
  if (!m.valid()) return;
  r.enabled = true;
  if (auto d = read_duration(ctx, m.require("retain", "a duration, e.g. 2s"), false)) r.retain = *d;
  if (auto v = read_rate(ctx, m.require("frame_rate", "frames per second per stream"))) {
    r.frame_rate = *v;
  }
  r.pin_headroom = r.retain / 4;
  if (auto d = read_duration(ctx, m.get("pin_headroom"), true)) r.pin_headroom = *d;
  if (auto d = read_duration(ctx, m.get("max_future"), true)) r.max_future = *d;
  if (auto v = read_size(ctx, m.get("write_rate"), uint64_t{1} << 20, uint64_t{1} << 40)) {
    r.write_rate = *v;
  }
  if (const auto formats = m.get("formats")) {
    const auto items = list_items(ctx, formats);
    if (formats->node.IsSequence() && items.empty()) {
      ctx.report(formats->pos, formats->path,
                 "needs at least one of raw, codifhdr (CODIF), vdifhdr (VDIF), pcap");
    }
    r.formats.clear();
    for (const Field& item : items) {
      const auto v = read_enum(ctx, item, kDumpFormats);
      bool twice = false;
      for (OutputFormat have : r.formats)
        twice = twice || (v && have == *v);
      if (twice) ctx.report(item.pos, item.path, "listed twice");
      if (v && !twice) r.formats.push_back(*v);
    }
  }
  if (auto v = read_string(ctx, m.get("socket"))) r.socket = *v;
  if (auto v = read_string(ctx, m.get("http_token_file"))) r.http_token_file = *v;
}

void check_retention(Context& ctx, const RunConfig& cfg) {
  const RetentionSection& r = cfg.retention;
  if (!r.enabled) {
    // An empty list as written; a missing section or a wrong value was reported already.
    if (cfg.output.formats.empty() && ctx.present("output.formats") &&
        !ctx.failed("output.formats")) {
      ctx.report("output.formats",
                 "is empty: nothing would be written; list raw, codifhdr or pcap, or add a "
                 "retention section (then the run keeps the last seconds for triggered dumps)");
    }
    return;
  }
  if (cfg.streams.format == StreamFormat::udp && !ctx.failed("streams.format")) {
    ctx.report("retention",
               "triggered dumps need streams.format codif or vdif (windows are frame time)");
  }
  for (std::size_t i = 0; i < r.formats.size(); ++i) {
    const bool codif_only = r.formats[i] == OutputFormat::codifhdr;
    const bool vdif_only = r.formats[i] == OutputFormat::vdifhdr;
    if ((codif_only && cfg.streams.format != StreamFormat::codif) ||
        (vdif_only && cfg.streams.format != StreamFormat::vdif)) {
      ctx.report(fmt::format("retention.formats[{}]", i),
                 fmt::format("{} needs streams.format {}", to_string(r.formats[i]),
                             codif_only ? "codif" : "vdif"));
    }
  }
  if (!r.socket.empty() && (r.socket.front() != '/' || r.socket.size() > 107)) {
    ctx.report(
        "retention.socket",
        fmt::format("'{}' must be an absolute path of at most 107 bytes (sun_path)", r.socket));
  }
  if (!ctx.failed("retention") && !ctx.failed("capture")) {
    const RetentionPlan p = plan_retention(cfg);
    const uint64_t max_slots =
        cfg.capture.backend == Backend::verbs ? kMaxVerbsRingDepth : kMaxRetentionRingSlots;
    if (p.ring_slots > max_slots) {
      ctx.report("retention.retain",
                 fmt::format("keeps {} frames per stream ({} at {} frames/s) plus {} of pin "
                             "headroom: with capture.ring_depth {} a ring of {} slots, more than "
                             "{}{}",
                             p.keep_frames, format_duration(r.retain), r.frame_rate, p.pin_frames,
                             cfg.capture.ring_depth, p.ring_slots, max_slots,
                             cfg.capture.backend == Backend::verbs
                                 ? " (verbs: a receive queue holds every slot, mlx5 max_qp_wr)"
                                 : ""));
    }
  }
  if (!r.http_token_file.empty() && r.http_token_file.front() != '/') {
    ctx.report("retention.http_token_file",
               fmt::format("'{}' is relative; use an absolute path", r.http_token_file));
  }
}

}  // namespace rocecap::config
