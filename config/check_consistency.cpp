// Pass 2 of the loader: rules that involve more than one value.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "config/name_template.hpp"
#include "config/retention_plan.hpp"
#include "config/schema.hpp"
#include "config/units.hpp"

namespace rocecap::config {
namespace {

std::string at(std::string_view base, std::size_t i) {
  return fmt::format("{}[{}]", base, i);
}
std::string itf_path(std::size_t i) {
  return at("capture.interfaces", i);
}

void check_backend_keys(Context& ctx, CaptureSection& c) {
  if (ctx.failed("capture.backend")) return;
  const std::string_view backend = to_string(c.backend);
  auto only_for = [&](const std::string& path, std::string_view wanted) {
    if (ctx.present(path)) {
      ctx.report(path,
                 fmt::format("only used with backend {} (this run uses {})", wanted, backend));
    }
  };
  if (c.backend != Backend::verbs) {
    only_for("capture.cq_size", "verbs");
    for (std::size_t i = 0; i < c.interfaces.size(); ++i)
      only_for(itf_path(i) + ".device", "verbs");
  }
  if (c.backend == Backend::verbs && c.ring_depth > kMaxVerbsRingDepth) {
    ctx.report("capture.ring_depth",
               fmt::format("{} is too large for backend verbs (at most {}, the mlx5 receive "
                           "queue limit)",
                           c.ring_depth, kMaxVerbsRingDepth));
  }
  if (c.backend != Backend::pcap) {
    only_for("capture.pcap_reader", "pcap");
    only_for("capture.zero_copy", "pcap");
  }
  if (c.backend != Backend::pcap_file) {
    only_for("capture.pcap_file", "pcap-file");
    only_for("capture.replay_pace", "pcap-file");
    return;
  }
  if (!ctx.present("capture.pcap_file")) {
    ctx.report("capture.pcap_file", "missing (required with backend pcap-file)");
  } else if (!ctx.failed("capture.pcap_file") &&
             (c.pcap_file.empty() || c.pcap_file.front() != '/')) {
    ctx.report("capture.pcap_file",
               fmt::format("'{}' is relative; use an absolute path", c.pcap_file));
  }
}

void check_ring_geometry(Context& ctx, const CaptureSection& c, StreamFormat format) {
  if ((c.ring_depth & (c.ring_depth - 1)) != 0) {
    ctx.report("capture.ring_depth", fmt::format("{} is not a power of two", c.ring_depth));
  }
  if (format == StreamFormat::codif && c.header_split < kCodifHeadersBytes &&
      ctx.present("capture.header_split")) {
    ctx.report("capture.header_split",
               fmt::format("{} bytes cannot hold the Ethernet, IPv4, UDP and CODIF headers ({} "
                           "bytes); use 128, which also covers a VLAN tag",
                           c.header_split, kCodifHeadersBytes));
  }
  if (c.header_split >= c.max_frame) {
    ctx.report("capture.header_split", fmt::format("{} is not smaller than capture.max_frame ({})",
                                                   c.header_split, c.max_frame));
  }
}

// The shared CQ of a device collects the completions of every receive queue on it. A stream's
// receive queue holds its whole ring (capture/verbs/verbs_source.cpp): ring_depth slots, plus
// the retained frames and pin headroom with retention (daemon/lib/run/run_assembly.cpp).
void check_cq_size(Context& ctx, RunConfig& cfg) {
  CaptureSection& c = cfg.capture;
  if (c.backend != Backend::verbs || ctx.failed("capture")) return;
  const std::size_t antennas = cfg.streams.antennas.size();
  const uint64_t ring = keeps_frames(cfg) && !ctx.failed("retention") && !ctx.failed("consumers")
                            ? plan_retention(cfg).ring_slots
                            : uint64_t{c.ring_depth};
  std::map<std::string, uint64_t> slots_per_device;  // device (or interface) -> RQ slots
  for (const InterfaceConfig& itf : c.interfaces) {
    const std::string& key = itf.device.empty() ? itf.name : itf.device;
    slots_per_device[key] += ring * itf.groups.size() * antennas;
  }
  const auto busiest =
      std::max_element(slots_per_device.begin(), slots_per_device.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (busiest == slots_per_device.end()) return;
  const auto& [device, slots] = *busiest;
  if (slots > kMaxCqSize) {
    ctx.report("capture.ring_depth",
               fmt::format("{} receive slots on device {} exceed the largest CQ ({}); lower "
                           "ring_depth (or retention.retain) or spread the groups over more "
                           "devices",
                           slots, device, kMaxCqSize));
  } else if (!ctx.present("capture.cq_size")) {
    c.cq_size = static_cast<uint32_t>(slots);
  } else if (c.cq_size < slots) {
    ctx.report("capture.cq_size",
               fmt::format("{} is smaller than the {} receive slots on device {} (groups x "
                           "antennas x ring slots): the CQ could overrun; use at least {} or "
                           "leave cq_size out",
                           c.cq_size, slots, device, slots));
  }
}

void check_groups(Context& ctx, const InterfaceConfig& itf, std::size_t i) {
  for (std::size_t g = 0; g < itf.groups.size(); ++g) {
    const std::string path = at(itf_path(i) + ".groups", g);
    if (ctx.failed(path)) continue;
    const GroupConfig& group = itf.groups[g];
    const std::string text = format_ipv4(group.address);
    if ((group.address >> 28) != 0xE) {
      ctx.report(path + ".address", fmt::format("{} is not a multicast group (224.0.0.0/4)", text));
    } else if ((group.address >> 8) == 0xE00000) {
      ctx.report(path + ".address",
                 fmt::format("{} is in 224.0.0.0/24, reserved for local network control", text));
    }
    for (std::size_t k = 0; k < g; ++k) {
      if (itf.groups[k].address == group.address && itf.groups[k].port == group.port) {
        ctx.report(path, fmt::format("duplicate group {}:{} (first at line {})", text, group.port,
                                     ctx.line_of(at(itf_path(i) + ".groups", k))));
        break;
      }
    }
  }
}

void check_interfaces(Context& ctx, const CaptureSection& c) {
  for (std::size_t i = 0; i < c.interfaces.size(); ++i) {
    const InterfaceConfig& itf = c.interfaces[i];
    check_groups(ctx, itf, i);
    for (std::size_t k = 0; k < i && !itf.name.empty(); ++k) {
      if (c.interfaces[k].name == itf.name) {
        ctx.report(itf_path(i) + ".name",
                   fmt::format("duplicate interface '{}' (first at line {}); list all its groups "
                               "under one entry",
                               itf.name, ctx.line_of(itf_path(k))));
        break;
      }
    }
  }
}

// Busy-polling threads each need a core of their own; interfaces of one verbs device share
// one capture thread.
void check_cpu_plan(Context& ctx, const RunConfig& cfg) {
  const auto& itfs = cfg.capture.interfaces;
  const bool verbs = cfg.capture.backend == Backend::verbs;
  const bool busy = cfg.capture.poll_mode == PollMode::busy_poll;
  for (std::size_t i = 0; i < itfs.size(); ++i) {
    if (!itfs[i].capture_cpu) continue;
    const std::string path = itf_path(i) + ".capture_cpu";
    for (std::size_t k = 0; k < i; ++k) {
      const bool same_thread = verbs && !itfs[i].device.empty() && itfs[i].device == itfs[k].device;
      if (same_thread && itfs[k].capture_cpu && itfs[k].capture_cpu != itfs[i].capture_cpu) {
        ctx.report(path, fmt::format("interfaces on device {} share one capture thread; give "
                                     "them the same capture_cpu (line {} says {})",
                                     itfs[i].device, ctx.line_of(itf_path(k) + ".capture_cpu"),
                                     *itfs[k].capture_cpu));
        break;
      }
      if (!same_thread && busy && itfs[k].capture_cpu == itfs[i].capture_cpu) {
        ctx.report(path, fmt::format("CPU {} already runs the busy-polling capture thread of "
                                     "{} (line {})",
                                     *itfs[i].capture_cpu, itfs[k].name,
                                     ctx.line_of(itf_path(k) + ".capture_cpu")));
        break;
      }
    }
    if (busy && cfg.output.writer_cpu == itfs[i].capture_cpu) {
      ctx.report("output.writer_cpu",
                 fmt::format("CPU {} already runs the busy-polling capture thread of {} (line {})",
                             *cfg.output.writer_cpu, itfs[i].name, ctx.line_of(path)));
    }
    for (std::size_t w = 0; busy && w < cfg.output.writer_cpus.size(); ++w) {
      if (cfg.output.writer_cpus[w] != *itfs[i].capture_cpu) continue;
      ctx.report(fmt::format("output.writer_cpus[{}]", w),
                 fmt::format("CPU {} already runs the busy-polling capture thread of {} (line {})",
                             cfg.output.writer_cpus[w], itfs[i].name, ctx.line_of(path)));
    }
  }
}

bool loopback_or_unspecified(uint32_t address) {
  return (address >> 24) == 127 || address == 0;
}

// Linear in the antennas: each name and source is looked up in a hash map of the first
// antenna that had it (pairwise comparison took 7 s for 16k antennas, minutes for 200k).
void check_antennas(Context& ctx, const StreamsSection& s) {
  std::unordered_map<std::string_view, std::size_t> first_name;
  std::unordered_map<uint32_t, std::size_t> first_source;
  first_name.reserve(s.antennas.size());
  first_source.reserve(s.antennas.size());
  for (std::size_t a = 0; a < s.antennas.size(); ++a) {
    const std::string path = at("streams.antennas", a);
    const Antenna& antenna = s.antennas[a];
    if (ctx.failed(path)) continue;
    const uint32_t src = antenna.source;
    if ((src >> 28) >= 0xE || src == 0) {
      ctx.report(path + ".source",
                 fmt::format("{} cannot be a packet source (multicast, reserved, broadcast or "
                             "0.0.0.0)",
                             format_ipv4(src)));
    } else if (loopback_or_unspecified(src)) {
      ctx.report(path + ".source",
                 fmt::format("{} is a loopback address: no antenna sends from it; use the "
                             "address its packets carry",
                             format_ipv4(src)));
    }
    const auto [name_it, new_name] = first_name.emplace(antenna.name, a);
    if (!new_name) {
      ctx.report(path + ".name",
                 fmt::format("duplicate antenna '{}' (first at line {})", antenna.name,
                             ctx.line_of(at("streams.antennas", name_it->second))));
    }
    const auto [src_it, new_src] = first_source.emplace(src, a);
    if (!new_src) {
      const std::string first = at("streams.antennas", src_it->second);
      ctx.report(path + ".source",
                 fmt::format("{} is already the source of antenna '{}' (line {})", format_ipv4(src),
                             s.antennas[src_it->second].name, ctx.line_of(first)));
    }
  }
}

void check_sync_words(Context& ctx, StreamsSection& s) {
  if (s.format != StreamFormat::codif) {
    if (ctx.present("streams.sync")) ctx.report("streams.sync", "only used with format codif");
    s.sync.clear();
    return;
  }
  if (!ctx.present("streams.sync")) {
    s.sync = {SyncWord{0xFEEDCAFE, CodifLayout::v3}, SyncWord{0xABADDEED, CodifLayout::v1}};
    return;
  }
  if (s.sync.empty() && !ctx.failed("streams.sync")) {
    ctx.report("streams.sync", "needs at least one sync word (or leave sync out)");
  }
  if (s.sync.size() > kMaxSyncWords) {
    ctx.report("streams.sync",
               fmt::format("{} sync words; at most {}", s.sync.size(), kMaxSyncWords));
  }
  for (std::size_t i = 0; i < s.sync.size(); ++i) {
    for (std::size_t k = 0; k < i; ++k) {
      if (s.sync[k].word == s.sync[i].word) {
        ctx.report("streams.sync", fmt::format("sync word 0x{:08X} listed twice", s.sync[i].word));
      }
    }
  }
}

void check_format_options(Context& ctx, RunConfig& cfg) {
  OutputSection& o = cfg.output;
  if (ctx.failed("streams.format")) return;
  if (cfg.streams.format != StreamFormat::codif && has_format(o, OutputFormat::codifhdr)) {
    ctx.report("output.formats", "codifhdr needs streams.format codif");
  }
  if (cfg.streams.format != StreamFormat::udp) return;
  if (ctx.present("output.fill_gaps") && o.fill_gaps) {
    ctx.report("output.fill_gaps", "fill frames need streams.format codif");
  }
  if (ctx.present("output.strip_headers") && o.strip_headers) {
    ctx.report("output.strip_headers", "only CODIF headers can be stripped (streams.format codif)");
  }
  o.fill_gaps = false;
  o.strip_headers = false;
}

// Each target absolute, none the same as another or inside another (a file placed on one
// would be inside the other's run directory too): check_targets.cpp.
void check_output_targets(Context& ctx, const OutputSection& o) {
  for (std::size_t i = 0; i < o.directories.size(); ++i) {
    const std::string path = fmt::format("output.directories[{}]", i);
    const std::string& d = o.directories[i];
    if (!ctx.failed(path) && (d.empty() || d.front() != '/')) {
      ctx.report(path, fmt::format("'{}' is relative; use an absolute path", d));
    }
  }
  check_target_identity(ctx, o, false);
}

void check_output_sizes(Context& ctx, const RunConfig& cfg) {
  const OutputSection& o = cfg.output;
  if (ctx.present("output.directory") && !ctx.failed("output.directory") &&
      (o.directory.empty() || o.directory.front() != '/')) {
    ctx.report("output.directory",
               fmt::format("'{}' is relative; use an absolute path", o.directory));
  }
  if (ctx.present("output.directories")) check_output_targets(ctx, o);
  if (o.rotate_bytes < cfg.capture.max_frame) {
    ctx.report("output.rotate", "is smaller than one frame (capture.max_frame)");
  }
  if (o.reorder_window >= cfg.capture.ring_depth) {
    ctx.report("output.reorder_window",
               fmt::format("{} frames do not fit in a ring of {} slots (capture.ring_depth)",
                           o.reorder_window, cfg.capture.ring_depth));
  }
}

// Expands every file name the run can write (seq 0) and reports the first clash.
void check_file_names(Context& ctx, const RunConfig& cfg) {
  const OutputSection& o = cfg.output;
  const std::string stream_error = check_name_template(o.name_template, TemplateScope::stream);
  if (!stream_error.empty()) ctx.report("output.name_template", stream_error);
  const std::string pcap_error =
      check_name_template(o.pcap_name_template, TemplateScope::interface);
  if (!pcap_error.empty()) ctx.report("output.pcap_name_template", pcap_error);
  // Only the values that make up names matter; anything wrong there was reported already.
  for (const char* input : {"run.name", "capture.interfaces", "streams.format", "streams.antennas",
                            "output.formats", "output.strip_headers"}) {
    if (ctx.failed(input)) return;
  }
  if (!stream_error.empty() || !pcap_error.empty()) return;
  std::map<std::string, std::string> writers;  // file name -> what writes it
  auto claim = [&](const std::string& name, const std::string& who, const char* key) {
    const auto [it, fresh] = writers.emplace(name, who);
    if (fresh) return true;
    // A pcap template may only use {interface} of the placeholders that tell writers apart.
    const bool pcap = std::string_view(key) == "output.pcap_name_template";
    ctx.report(key, fmt::format("{} and {} would both write '{}'; add a placeholder that tells "
                                "them apart ({})",
                                it->second, who, name,
                                pcap ? "{interface}"
                                     : "{interface}, {group}, {port}, {antenna}, {thread}, {ext}"));
    return false;
  };
  for (const StreamRef& s : enumerate_streams(cfg)) {
    for (OutputFormat f : o.formats) {
      if (f == OutputFormat::pcap) continue;
      const auto& itf = cfg.capture.interfaces[s.interface];
      const auto& g = itf.groups[s.group];
      const std::string who =
          fmt::format("{} {}:{} {} ({})", itf.name, format_ipv4(g.address), g.port,
                      cfg.streams.antennas[s.antenna].name, to_string(f));
      if (!claim(stream_file_name(cfg, s, f, 0), who, "output.name_template")) return;
    }
  }
  if (!has_format(o, OutputFormat::pcap)) return;
  for (std::size_t i = 0; i < cfg.capture.interfaces.size(); ++i) {
    const std::string who = fmt::format("{} (pcap)", cfg.capture.interfaces[i].name);
    if (!claim(pcap_file_name(cfg, i, 0), who, "output.pcap_name_template")) return;
  }
}

}  // namespace

void check_consistency(Context& ctx, RunConfig& cfg) {
  check_backend_keys(ctx, cfg.capture);
  check_ring_geometry(ctx, cfg.capture, cfg.streams.format);
  check_interfaces(ctx, cfg.capture);
  check_antennas(ctx, cfg.streams);
  if (!ctx.failed("streams.antennas")) check_cq_size(ctx, cfg);
  check_cpu_plan(ctx, cfg);
  check_writer_plan(ctx, cfg);
  check_sync_words(ctx, cfg.streams);
  check_vdif(ctx, cfg);
  check_format_options(ctx, cfg);
  check_output_sizes(ctx, cfg);
  check_file_names(ctx, cfg);
  check_frequencies(ctx, cfg);
  check_retention(ctx, cfg);
  check_consumers(ctx, cfg);
}

}  // namespace rocecap::config
