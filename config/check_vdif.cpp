// Pass 2 of the loader, VDIF streams (doc/vdif.md).
#include <fmt/format.h>

#include "config/schema.hpp"

namespace rocecap::config {
namespace {

constexpr const char* kVdifKeys[] = {"streams.frames_per_second", "streams.sample_rate",
                                     "streams.vtp", "streams.threads"};

void check_rate(Context& ctx, const StreamsSection& s) {
  const bool fps = ctx.present("streams.frames_per_second");
  const bool rate = ctx.present("streams.sample_rate");
  if (fps && rate) {
    ctx.report("streams.sample_rate",
               "give frames_per_second or sample_rate, not both (frames per second follow from "
               "the sample rate and the frame size)");
  }
  if (!fps && !rate && !ctx.failed("streams")) {
    ctx.report("streams",
               "format vdif needs frames_per_second (or sample_rate, samples per second per "
               "channel): VDIF headers do not carry it");
  }
  (void)s;
}

}  // namespace

void check_vdif(Context& ctx, RunConfig& cfg) {
  if (ctx.failed("streams.format")) return;
  StreamsSection& s = cfg.streams;
  if (s.format != StreamFormat::vdif) {
    for (const char* key : kVdifKeys) {
      if (ctx.present(key)) ctx.report(key, "only used with format vdif");
    }
    if (has_format(cfg.output, OutputFormat::vdifhdr))
      ctx.report("output.formats", "vdifhdr needs streams.format vdif");
    s.frames_per_second = s.sample_rate = 0;
    s.vtp = false;
    s.threads.clear();
    return;
  }
  check_rate(ctx, s);
  const uint32_t need = kVdifHeadersBytes + (s.vtp ? kVtpBytes : 0);
  if (cfg.capture.header_split < need && ctx.present("capture.header_split")) {
    ctx.report("capture.header_split",
               fmt::format("{} bytes cannot hold the Ethernet, IPv4, UDP{} and VDIF headers ({} "
                           "bytes); use 128, which also covers a VLAN tag",
                           cfg.capture.header_split, s.vtp ? ", VTP" : "", need));
  }
  // A verbs receive queue takes one flow (group, port, source) into one ring: it cannot split
  // the flow's threads into rings of their own.
  if (cfg.capture.backend == Backend::verbs && s.threads.size() > 1) {
    ctx.report("streams.threads",
               fmt::format("{} threads of one flow need backend pcap or pcap-file: a verbs "
                           "receive queue steers a whole flow into one ring",
                           s.threads.size()));
  }
  // Several threads write several files per (group, antenna): the default names tell them apart.
  if (s.threads.size() > 1 && !ctx.present("output.name_template")) {
    cfg.output.name_template = "{run}/{group}_{port}_{antenna}_t{thread}.{seq:04}.{ext}";
  }
}

}  // namespace rocecap::config
