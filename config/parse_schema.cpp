// Pass 1 of the loader: the schema of a run file (config/README.md documents it).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "config/schema.hpp"
#include "config/schema_keys.hpp"
#include "config/units.hpp"

namespace rocecap::config {
namespace {

// [A-Za-z0-9] first, then [A-Za-z0-9 plus extra], at most max characters: safe in file
// names (never "." or ".."), metric labels and shell output.
bool is_safe_name(std::string_view s, std::string_view extra, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(s.front())) return false;
  for (char c : s) {
    if (!alnum(c) && extra.find(c) == std::string_view::npos) return false;
  }
  return true;
}

std::optional<std::string> read_name(Context& ctx, const std::optional<Field>& f,
                                     std::string_view extra, std::size_t max) {
  auto text = read_string(ctx, f);
  if (text && !is_safe_name(*text, extra, max)) {
    ctx.report(f->pos, f->path,
               fmt::format("'{}' is not a valid name: 1 to {} characters from A-Z a-z 0-9 {}, "
                           "starting with a letter or digit",
                           *text, max, extra));
    return std::nullopt;
  }
  return text;
}

std::optional<unsigned> read_cpu(Context& ctx, const std::optional<Field>& f) {
  const auto v = read_uint(ctx, f, 0, kMaxCpuId);
  if (!v) return std::nullopt;
  return static_cast<unsigned>(*v);
}

void parse_run(Context& ctx, const Field& f, RunSection& run) {
  const MapView m(ctx, f, schema::kRun);
  if (!m.valid()) return;
  if (auto v = read_name(ctx, m.require("name"), "._-", 64)) run.name = *v;
  if (auto text = read_string(ctx, m.get("duration"))) {
    std::string error;
    const auto d = parse_duration(*text, error);
    if (!d) ctx.report(m.get("duration")->path, error);
    if (d && d->count() == 0) ctx.report(m.get("duration")->path, "must be longer than 0s");
    if (d && d->count() > 0) run.duration = *d;
  }
  if (auto v = read_uint(ctx, m.get("packets"), 1, UINT64_MAX)) run.packets = *v;
  if (auto text = read_string(ctx, m.get("start"))) {
    std::string error;
    run.start = parse_utc_second(*text, error);
    if (!run.start) ctx.report(m.get("start")->path, error);
  }
}

void parse_group(Context& ctx, const Field& f, GroupConfig& g) {
  if (f.node.IsScalar()) {  // shorthand "239.17.0.1:36001"
    std::string error;
    const auto e = parse_endpoint(f.node.Scalar(), error);
    if (!e) ctx.report(f.pos, f.path, error + " (write group:port or {address, port})");
    if (e) g = GroupConfig{e->address, e->port};
    return;
  }
  const MapView m(ctx, f, schema::kGroup);
  if (!m.valid()) return;
  if (auto v = read_ipv4(ctx, m.require("address"))) g.address = *v;
  if (auto v = read_uint(ctx, m.require("port"), 1, 65535)) g.port = static_cast<uint16_t>(*v);
}

void parse_interface(Context& ctx, const Field& f, InterfaceConfig& itf) {
  const MapView m(ctx, f, schema::kInterface);
  if (!m.valid()) return;
  // IFNAMSIZ - 1 characters; no '/' or spaces (they appear in file names).
  if (auto v = read_name(ctx, m.require("name"), "._:-", 15)) itf.name = *v;
  if (auto v = read_name(ctx, m.get("device"), "._-", 63)) itf.device = *v;
  if (auto v = read_cpu(ctx, m.get("capture_cpu"))) itf.capture_cpu = *v;
  const auto groups = m.require("groups", "a list of {address, port} multicast groups");
  const auto items = list_items(ctx, groups);
  if (groups && groups->node.IsSequence() && items.empty()) {
    ctx.report(groups->pos, groups->path, "needs at least one group");
  }
  for (const Field& item : items)
    parse_group(ctx, item, itf.groups.emplace_back());
}

constexpr EnumName<Backend> kBackends[] = {
    {"verbs", Backend::verbs}, {"pcap", Backend::pcap}, {"pcap-file", Backend::pcap_file}};
constexpr EnumName<PayloadMemory> kPayloadMemories[] = {
    {"auto", PayloadMemory::automatic}, {"host", PayloadMemory::host}, {"gpu", PayloadMemory::gpu}};
constexpr EnumName<PollMode> kPollModes[] = {{"busy_poll", PollMode::busy_poll},
                                             {"event", PollMode::event}};
constexpr EnumName<ReplayPace> kPaces[] = {{"fast", ReplayPace::fast},
                                           {"recorded", ReplayPace::recorded}};
constexpr EnumName<PcapReader> kPcapReaders[] = {{"libpcap", PcapReader::libpcap},
                                                 {"packet_ring", PcapReader::packet_ring}};

// capture.gpu: a CUDA device index (0..9999) or a PCI bus id, [DDDD[DDDD]:]BB:DD.F in hex (as
// nvidia-smi and lspci -D print it). Whether it exists is decided at start-up.
bool valid_gpu(const std::string& s) {
  if (!s.empty() && s.size() <= 4 && s.find_first_not_of("0123456789") == std::string::npos) {
    return true;
  }
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  const bool full = std::sscanf(s.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) == 4;
  const bool brief = !full && std::sscanf(s.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3;
  return (full || brief) && s.find_first_of(" +-xX") == std::string::npos && domain <= 0xffff &&
         bus <= 0xff && dev <= 0x1f && fn <= 7;
}

void parse_capture(Context& ctx, const Field& f, CaptureSection& c) {
  const MapView m(ctx, f, schema::kCapture);
  if (!m.valid()) return;
  if (auto v = read_enum(ctx, m.require("backend", "one of verbs, pcap, pcap-file"), kBackends))
    c.backend = *v;
  const auto interfaces = m.require("interfaces");
  const auto items = list_items(ctx, interfaces);
  if (interfaces && interfaces->node.IsSequence() && items.empty()) {
    ctx.report(interfaces->pos, interfaces->path, "needs at least one interface");
  }
  for (const Field& item : items)
    parse_interface(ctx, item, c.interfaces.emplace_back());
  if (auto v = read_uint(ctx, m.get("ring_depth"), 16, kMaxRingDepth))
    c.ring_depth = static_cast<uint32_t>(*v);
  if (auto v = read_size(ctx, m.get("header_split"), kMinHeaderSplit, 4096))
    c.header_split = static_cast<uint32_t>(*v);
  if (auto v = read_size(ctx, m.get("max_frame"), 128, 65536))
    c.max_frame = static_cast<uint32_t>(*v);
  if (auto v = read_enum(ctx, m.get("payload_memory"), kPayloadMemories)) c.payload_memory = *v;
  if (auto v = read_string(ctx, m.get("gpu"))) {
    if (valid_gpu(*v)) {
      c.gpu = *v;
    } else {
      ctx.report(m.get("gpu")->pos, m.get("gpu")->path,
                 fmt::format("'{}' is neither a CUDA device index (0, 1, ...) nor a PCI bus id "
                             "(0000:3b:00.0)",
                             *v));
    }
  }
  if (auto v = read_uint(ctx, m.get("cq_size"), 1, kMaxCqSize))
    c.cq_size = static_cast<uint32_t>(*v);
  if (auto v = read_enum(ctx, m.get("poll_mode"), kPollModes)) c.poll_mode = *v;
  if (auto v = read_string(ctx, m.get("pcap_file"))) c.pcap_file = *v;
  if (auto v = read_enum(ctx, m.get("replay_pace"), kPaces)) c.replay_pace = *v;
  if (auto v = read_enum(ctx, m.get("pcap_reader"), kPcapReaders)) c.pcap_reader = *v;
  if (auto v = read_bool(ctx, m.get("zero_copy"))) c.zero_copy = *v;
}

constexpr EnumName<StreamFormat> kStreamFormats[] = {
    {"codif", StreamFormat::codif}, {"udp", StreamFormat::udp}, {"vdif", StreamFormat::vdif}};
constexpr EnumName<CodifLayout> kLayouts[] = {{"v3", CodifLayout::v3}, {"v1", CodifLayout::v1}};

void parse_sync(Context& ctx, const Field& f, std::vector<SyncWord>& out) {
  std::optional<Field> word_field = f;
  std::optional<CodifLayout> layout;
  if (!f.node.IsScalar()) {
    const MapView m(ctx, f, schema::kSync);
    if (!m.valid()) return;
    word_field = m.require("word");
    layout = read_enum(ctx, m.require("layout"), kLayouts);
    if (!layout) return;
  }
  const auto text = read_string(ctx, word_field);
  if (!text) return;
  std::string error;
  const auto word = parse_hex32(*text, error);
  if (!word) {
    ctx.report(word_field->pos, word_field->path, error);
    return;
  }
  if (!layout && *word == 0xFEEDCAFE) layout = CodifLayout::v3;
  if (!layout && *word == 0xABADDEED) layout = CodifLayout::v1;
  if (!layout) {
    ctx.report(f.pos, f.path,
               fmt::format("the layout of sync word {} is not known; write {{word: {}, layout: "
                           "v1}} or v3",
                           *text, *text));
    return;
  }
  out.push_back(SyncWord{*word, *layout});
}

void parse_antenna(Context& ctx, const Field& f, Antenna& a) {
  const MapView m(ctx, f, schema::kAntenna);
  if (!m.valid()) return;
  if (auto v = read_name(ctx, m.require("name"), "_-", 32)) a.name = *v;
  if (auto v = read_ipv4(ctx, m.require("source"))) a.source = *v;
}

void parse_streams(Context& ctx, const Field& f, StreamsSection& s) {
  const MapView m(ctx, f, schema::kStreams);
  if (!m.valid()) return;
  if (auto v = read_enum(ctx, m.get("format"), kStreamFormats)) s.format = *v;
  // VDIF (doc/vdif.md): frame numbers are 24 bits, thread ids 10 bits.
  if (auto v = read_uint(ctx, m.get("frames_per_second"), 1, uint64_t{1} << 24))
    s.frames_per_second = *v;
  if (auto v = read_uint(ctx, m.get("sample_rate"), 1, uint64_t{1} << 40)) s.sample_rate = *v;
  if (auto v = read_bool(ctx, m.get("vtp"))) s.vtp = *v;
  // An empty list would mean "every thread" like no list at all: refused rather than guessed.
  const auto threads = m.get("threads");
  if (threads && threads->node.IsSequence() && threads->node.size() == 0) {
    ctx.report(threads->pos, threads->path,
               "needs at least one VDIF thread id; leave threads out to record every thread as "
               "one stream");
  }
  for (const Field& item : list_items(ctx, threads)) {
    const auto v = read_uint(ctx, item, 0, 1023);
    if (v && std::find(s.threads.begin(), s.threads.end(), *v) != s.threads.end()) {
      ctx.report(item.pos, item.path, "listed twice");
    } else if (v) {
      s.threads.push_back(static_cast<uint16_t>(*v));
    }
  }
  parse_frequencies(ctx, m.get("frequencies"), s);
  const auto sync = m.get("sync");
  for (const Field& item : list_items(ctx, sync))
    parse_sync(ctx, item, s.sync);
  const auto antennas = m.require("antennas", "a list of {name, source}");
  const auto items = list_items(ctx, antennas);
  if (antennas && antennas->node.IsSequence() && items.empty()) {
    ctx.report(antennas->pos, antennas->path, "needs at least one antenna");
  }
  for (const Field& item : items)
    parse_antenna(ctx, item, s.antennas.emplace_back());
}

constexpr EnumName<OutputFormat> kOutputFormats[] = {{"raw", OutputFormat::raw},
                                                     {"codifhdr", OutputFormat::codifhdr},
                                                     {"pcap", OutputFormat::pcap},
                                                     {"vdifhdr", OutputFormat::vdifhdr}};

// output.directory (one target) or output.directories (several), never both.
void parse_output_directories(Context& ctx, const MapView& m, OutputSection& o) {
  const auto one = m.get("directory");
  const auto many = m.get("directories");
  if (one && many) {
    ctx.report(many->pos, many->path,
               "give output.directory (one target) or output.directories (several), not both");
  }
  if (!many || one) {
    if (auto v = read_string(ctx, m.require("directory", "or output.directories"))) {
      o.directory = *v;
      o.directories = {*v};
    }
    return;
  }
  const auto items = list_items(ctx, many);
  if (many->node.IsSequence() && items.empty()) {
    ctx.report(many->pos, many->path, "needs at least one directory");
  }
  for (const Field& item : items) {
    const auto v = read_string(ctx, item);
    if (!v) continue;
    if (std::find(o.directories.begin(), o.directories.end(), *v) != o.directories.end()) {
      ctx.report(item.pos, item.path, "listed twice");
      continue;
    }
    o.directories.push_back(*v);
  }
  if (!o.directories.empty()) o.directory = o.directories.front();
}

void parse_output(Context& ctx, const Field& f, OutputSection& o) {
  const MapView m(ctx, f, schema::kOutput);
  if (!m.valid()) return;
  parse_output_directories(ctx, m, o);
  const auto formats = m.get("formats");
  if (formats) {
    const auto items = list_items(ctx, formats);
    // Empty: nothing written continuously, allowed with retention (check_retention).
    for (const Field& item : items) {
      const auto v = read_enum(ctx, item, kOutputFormats);
      if (v && has_format(o, *v)) ctx.report(item.pos, item.path, "listed twice");
      if (v && !has_format(o, *v)) o.formats.push_back(*v);
    }
  } else {
    o.formats = {OutputFormat::raw};
  }
  if (auto v = read_size(ctx, m.get("rotate"), uint64_t{1} << 20, uint64_t{1} << 50))
    o.rotate_bytes = *v;
  if (auto v = read_string(ctx, m.get("name_template"))) o.name_template = *v;
  if (auto v = read_string(ctx, m.get("pcap_name_template"))) o.pcap_name_template = *v;
  if (auto v = read_bool(ctx, m.get("fill_gaps"))) o.fill_gaps = *v;
  if (auto v = read_bool(ctx, m.get("strip_headers"))) o.strip_headers = *v;
  if (auto v = read_uint(ctx, m.get("reorder_window"), 0, kMaxReorderWindow))
    o.reorder_window = static_cast<uint32_t>(*v);
  if (auto v = read_bool(ctx, m.get("direct_io"))) o.direct_io = *v;
  if (auto v = read_cpu(ctx, m.get("writer_cpu"))) o.writer_cpu = *v;
  if (auto v = read_uint(ctx, m.get("writer_threads"), 0, 256))
    o.writer_threads = static_cast<uint32_t>(*v);
  if (const auto cpus = m.get("writer_cpus")) {
    for (const Field& item : list_items(ctx, cpus)) {
      if (auto v = read_cpu(ctx, item)) o.writer_cpus.push_back(*v);
    }
  }
  if (auto v = read_bool(ctx, m.get("io_uring"))) o.io_uring = *v;
  if (auto v = read_bool(ctx, m.get("preallocate"))) o.preallocate = *v;
  if (auto v = read_bool(ctx, m.get("fsync_rotated"))) o.fsync_rotated = *v;
}

void parse_metrics(Context& ctx, const Field& f, MetricsSection& metrics) {
  const MapView m(ctx, f, schema::kMetrics);
  if (!m.valid()) return;
  if (auto v = read_bool(ctx, m.get("enabled"))) metrics.enabled = *v;
  if (auto text = read_string(ctx, m.get("listen"))) {
    std::string error;
    const auto e = parse_endpoint(*text, error);
    if (!e) ctx.report(m.get("listen")->path, error);
    if (e) metrics.address = e->address;
    if (e) metrics.port = e->port;
  }
}

constexpr EnumName<LogLevel> kLevels[] = {
    {"trace", LogLevel::trace}, {"debug", LogLevel::debug}, {"info", LogLevel::info},
    {"warn", LogLevel::warn},   {"error", LogLevel::error}, {"critical", LogLevel::critical},
    {"off", LogLevel::off}};

void parse_logging(Context& ctx, const Field& f, LoggingSection& logging) {
  const MapView m(ctx, f, schema::kLogging);
  if (!m.valid()) return;
  if (auto v = read_enum(ctx, m.get("level"), kLevels)) logging.level = *v;
}

}  // namespace

void parse_document(Context& ctx, const Field& root, RunConfig& out) {
  const MapView m(ctx, root, schema::kRoot);
  if (!m.valid()) return;
  if (auto f = m.require("run")) parse_run(ctx, *f, out.run);
  if (auto f = m.require("capture")) parse_capture(ctx, *f, out.capture);
  if (auto f = m.require("streams")) parse_streams(ctx, *f, out.streams);
  if (auto f = m.require("output")) parse_output(ctx, *f, out.output);
  if (auto f = m.get("metrics")) parse_metrics(ctx, *f, out.metrics);
  if (auto f = m.get("logging")) parse_logging(ctx, *f, out.logging);
  if (auto f = m.get("retention")) parse_retention(ctx, *f, out.retention);
  if (auto f = m.get("consumers")) parse_consumers(ctx, *f, out.consumers);
}

}  // namespace rocecap::config
