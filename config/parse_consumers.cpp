// Pass 1 and 2 of the loader for the `consumers` section (doc/consumers.md): processes that
// read the stream rings in place through a Unix socket.
#include <fmt/format.h>
#include <grp.h>

#include "config/retention_plan.hpp"
#include "config/schema.hpp"
#include "config/schema_keys.hpp"
#include "config/units.hpp"

namespace rocecap::config {
namespace {

std::optional<std::chrono::nanoseconds> read_positive_duration(Context& ctx,
                                                               const std::optional<Field>& f) {
  const auto text = read_string(ctx, f);
  if (!text) return std::nullopt;
  std::string error;
  const auto d = parse_duration(*text, error);
  if (d && d->count() > 0) return d;
  ctx.report(f->pos, f->path, d ? "must be longer than 0s" : error);
  return std::nullopt;
}

}  // namespace

void parse_consumers(Context& ctx, const Field& f, ConsumersSection& c) {
  const MapView m(ctx, f, schema::kConsumers);
  if (!m.valid()) return;
  c.enabled = true;
  if (auto v = read_string(ctx, m.require("socket", "the consumer socket's absolute path")))
    c.socket = *v;
  if (const auto streams = m.get("streams")) {
    for (const Field& item : list_items(ctx, streams)) {
      if (auto v = read_string(ctx, item)) c.streams.push_back(*v);
    }
  }
  if (auto v = read_uint(ctx, m.get("keep"), 1, uint64_t{1} << 23)) c.keep = *v;
  if (auto v = read_uint(ctx, m.get("hold_frames"), 1, uint64_t{1} << 23)) c.hold_frames = *v;
  if (auto d = read_positive_duration(ctx, m.get("hold_time"))) c.hold_time = *d;
  if (auto v = read_uint(ctx, m.get("max_consumers"), 1, 16)) c.max_consumers = *v;
  if (auto v = read_uint(ctx, m.get("log_frames"), 1024, uint64_t{1} << 24)) {
    if ((*v & (*v - 1)) != 0) {
      ctx.report(m.get("log_frames")->pos, "consumers.log_frames",
                 fmt::format("{} is not a power of two (1024 to 16777216)", *v));
    } else {
      c.log_frames = *v;
    }
  }
  if (auto v = read_string(ctx, m.get("group"))) c.group = *v;
  if (auto v = read_uint(ctx, m.get("wait_for"), 0, 16)) c.wait_for = *v;
  if (auto d = read_positive_duration(ctx, m.get("wait_time"))) c.wait_time = *d;
}

namespace {

// A name consumers may ask for: an antenna's, or a stream's "<antenna>@<a.b.c.d>:<port>"
// ("/t<thread>" added for VDIF streams split by thread), as rocecapd names its streams
// (daemon/lib/consumers/start_consumers.cpp).
bool names_a_stream(const RunConfig& cfg, const std::string& name) {
  for (const auto& a : cfg.streams.antennas) {
    if (name == a.name) return true;
    for (const auto& itf : cfg.capture.interfaces) {
      for (const auto& g : itf.groups) {
        const std::string stream =
            fmt::format("{}@{}.{}.{}.{}:{}", a.name, g.address >> 24, (g.address >> 16) & 255,
                        (g.address >> 8) & 255, g.address & 255, g.port);
        if (name == stream) return true;
        for (uint32_t t : cfg.streams.threads)
          if (name == stream + "/t" + std::to_string(t)) return true;
      }
    }
  }
  return false;
}

}  // namespace

void check_consumers(Context& ctx, const RunConfig& cfg) {
  const ConsumersSection& c = cfg.consumers;
  if (!c.enabled) return;
  if (!c.socket.empty() && (c.socket.front() != '/' || c.socket.size() > 107)) {
    ctx.report(
        "consumers.socket",
        fmt::format("'{}' must be an absolute path of at most 107 bytes (sun_path)", c.socket));
  }
  if (!c.socket.empty() && c.socket == cfg.retention.socket) {
    ctx.report("consumers.socket", "is retention.socket too; give each its own path");
  }
  for (const std::string& name : c.streams) {
    if (!ctx.failed("streams") && !names_a_stream(cfg, name)) {
      ctx.report("consumers.streams",
                 fmt::format("'{}' names no stream of this run (an antenna of streams.antennas, "
                             "or <antenna>@<group address>:<port> of capture.interfaces)",
                             name));
    }
  }
  if (!ctx.failed("consumers") && c.log_frames != 0 && c.log_frames <= consumer_hold_frames(cfg)) {
    ctx.report("consumers.log_frames",
               fmt::format("{} descriptors cannot cover the {} frames a hold-mode consumer may "
                           "pin (consumers.hold_frames): make it larger",
                           c.log_frames, consumer_hold_frames(cfg)));
  }
  if (cfg.retention.enabled && c.keep != 0) {
    ctx.report("consumers.keep",
               "is decided by retention.retain when the run has a retention section; remove "
               "consumers.keep");
  }
  if (!c.group.empty() && ::getgrnam(c.group.c_str()) == nullptr) {
    ctx.report("consumers.group", fmt::format("'{}' is no group of this host", c.group));
  }
}

}  // namespace rocecap::config
