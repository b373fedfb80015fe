// `rocecap gen`: sends (or writes to a pcap file) CODIF multicast streams, one per group and
// source address, with seeded impairments, and prints a JSON summary of exactly what went out.
#include <time.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/net/packet.hpp"
#include "tools/command.hpp"
#include "tools/lib/gen_engine.hpp"
#include "tools/lib/gen_sinks.hpp"
#include "tools/lib/pulse_plan.hpp"

namespace rocecap::tools {
namespace {

struct GenArgs {
  std::vector<std::string> groups, sources;
  uint64_t frames = 0;
  double duration = 0;
  double rate = 10000;
  double gbps = 0;
  std::string interface;
  unsigned ttl = 1;
  bool loopback = false;
  bool af_packet = false;
  unsigned payload_bytes = 8192, nchan = 1, nbits = 8, period = 1;
  bool complex = false;
  uint64_t total_samples = 0;
  unsigned epoch = 0, start_seconds = 0, start_frame = 0, thread_id = 0, group_id = 0;
  std::string station = "RC", layout = "v3";
  std::string format = "codif";
  uint64_t frames_per_second = 0;
  bool vtp = false, legacy = false;
  std::vector<uint16_t> threads;
  double tone = 0;
  unsigned tone_channel = 0;
  PulseRequest pulse;
  uint64_t seed = 0;
  ImpairmentRates rates;
  std::string foreign;
  bool foreign_prob_given = false;
  std::string pcap, summary;
};

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) {
  g_stop.store(true);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a sleeping sender wakes up at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

uint32_t parse_address(const std::string& text, const char* option) {
  uint32_t ip = 0;
  if (!capture::net::parse_ipv4(text, ip)) {
    throw std::invalid_argument(std::string(option) + ": '" + text + "' is not an IPv4 address");
  }
  return ip;
}

GroupAddress parse_group(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("--groups: '" + text + "' is not GROUP:PORT");
  }
  GroupAddress g{parse_address(text.substr(0, colon), "--groups"), 0};
  if (!capture::net::is_multicast(g.ip)) {
    throw std::invalid_argument("--groups: " + text.substr(0, colon) +
                                " is not a multicast address");
  }
  const std::string port = text.substr(colon + 1);
  char* end = nullptr;
  const unsigned long p = std::strtoul(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p == 0 || p > 65535) {
    throw std::invalid_argument("--groups: '" + port + "' in '" + text + "' is not a UDP port");
  }
  g.port = static_cast<uint16_t>(p);
  return g;
}

GenFrameParams frame_params(const GenArgs& a) {
  GenFrameParams p;
  p.payload_bytes = a.payload_bytes;
  p.nchan = static_cast<uint16_t>(a.nchan);
  p.nbits = static_cast<uint8_t>(a.nbits);
  p.complex = a.complex;
  p.period = static_cast<uint16_t>(a.period);
  p.total_samples = a.total_samples;
  p.epoch = static_cast<uint8_t>(a.epoch);
  p.start_seconds = a.start_seconds;
  p.start_frame = a.start_frame;
  p.thread_id = static_cast<uint16_t>(a.thread_id);
  p.group_id = static_cast<uint16_t>(a.group_id);
  p.station = a.station;
  p.layout = a.layout;
  p.format = a.format;
  p.frames_per_second = a.frames_per_second;
  p.vtp = a.vtp;
  p.legacy = a.legacy;
  p.threads = a.threads;
  p.tone = a.tone;
  p.tone_channel = static_cast<uint16_t>(a.tone_channel);
  return p;
}

// Streams must be distinguishable by (group, port, source), and foreign copies by source.
void check_distinct(const GenSetup& s) {
  for (std::size_t i = 0; i < s.sources.size(); ++i) {
    for (std::size_t j = i + 1; j < s.sources.size(); ++j) {
      if (s.sources[i] == s.sources[j]) {
        throw std::invalid_argument(
            "--sources: " + std::string(capture::net::format_ipv4(s.sources[i]).data()) +
            " is listed twice");
      }
    }
    if (s.foreign && *s.foreign == s.sources[i]) {
      throw std::invalid_argument("--foreign: must not be one of --sources");
    }
  }
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    for (std::size_t j = i + 1; j < s.groups.size(); ++j) {
      if (s.groups[i].ip == s.groups[j].ip && s.groups[i].port == s.groups[j].port) {
        throw std::invalid_argument(
            "--groups: " + std::string(capture::net::format_ipv4(s.groups[i].ip).data()) + ":" +
            std::to_string(s.groups[i].port) + " is listed twice");
      }
    }
  }
}

GenSetup make_setup(const GenArgs& a, const FrameBuilder& frames) {
  GenSetup s;
  for (const auto& g : a.groups)
    s.groups.push_back(parse_group(g));
  for (const auto& src : a.sources)
    s.sources.push_back(parse_address(src, "--sources"));
  if (!a.foreign.empty()) s.foreign = parse_address(a.foreign, "--foreign");
  check_distinct(s);
  s.seed = a.seed;
  s.rates = a.rates;
  if (!a.foreign.empty() && !a.foreign_prob_given) s.rates.foreign = 0.01;
  if (a.foreign.empty()) s.rates.foreign = 0;
  if (const std::string why = s.rates.check(); !why.empty()) throw std::invalid_argument(why);
  s.rate_per_stream = a.gbps > 0 ? frames_per_second_for_gbps(a.gbps, frames.frame_bytes(),
                                                              s.groups.size() * s.sources.size())
                                 : a.rate;
  s.frames_per_stream = a.frames != 0
                            ? a.frames
                            : static_cast<uint64_t>(std::llround(a.duration * s.rate_per_stream));
  if (s.frames_per_stream == 0) {
    throw std::invalid_argument("--duration: too short for one frame at the chosen rate");
  }
  return s;
}

int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void write_summary(const GenSummary& summary, const std::string& path) {
  const std::string text = nlohmann::json(summary).dump(2) + "\n";
  if (path.empty()) {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write the summary to " + path);
}

// Opening the sink is set-up: when it fails nothing was sent (and no summary is printed).
std::unique_ptr<DatagramSink> open_sink(const GenArgs& a, const GenSetup& setup) {
  std::vector<uint32_t> senders = setup.sources;
  if (setup.foreign) senders.push_back(*setup.foreign);
  if (a.pcap.empty() && a.af_packet) {
    return std::make_unique<PacketSink>(a.interface, senders, static_cast<uint8_t>(a.ttl));
  }
  if (a.pcap.empty()) {
    return std::make_unique<UdpSink>(senders,
                                     UdpOptions{a.interface, static_cast<int>(a.ttl), a.loopback});
  }
  return std::make_unique<PcapSink>(a.pcap, senders, realtime_ns(), static_cast<uint8_t>(a.ttl));
}

// --pulse-at: the pulse placed over the groups (in --groups order) and given to the frames.
std::optional<GenPulse> place_pulse(const GenArgs& a, const GenSetup& setup, FrameBuilder& frames) {
  std::vector<PulseGroupAddress> groups;
  for (const GroupAddress& g : setup.groups)
    groups.push_back({std::string(capture::net::format_ipv4(g.ip).data()), g.port});
  std::optional<GenPulse> pulse = plan_pulse(a.pulse, groups, frames);
  if (pulse) frames.set_pulse(*pulse);
  return pulse;
}

GenSummary summary_head(const GenArgs& a, const FrameBuilder& frames) {
  GenSummary s;
  s.version = ROCECAP_VERSION;
  s.output = a.pcap.empty() ? "udp" : "pcap";
  s.pcap_file = a.pcap;
  s.interface = a.interface;
  s.seed = a.seed;
  s.frame = frames.params();
  return s;
}

int run_gen(const GenArgs& a) {
  std::unique_ptr<FrameBuilder> frames;
  GenSetup setup;
  std::unique_ptr<DatagramSink> sink;
  std::optional<GenPulse> pulse;
  try {
    frames = std::make_unique<FrameBuilder>(frame_params(a));
    setup = make_setup(a, *frames);
    pulse = place_pulse(a, setup, *frames);
    sink = open_sink(a, setup);
  } catch (const std::invalid_argument& e) {
    std::cerr << "rocecap gen: " << e.what() << "\n";
    return 2;
  } catch (const std::runtime_error& e) {
    std::cerr << "rocecap gen: " << e.what() << "\n";
    return 1;
  }
  GenSummary summary = summary_head(a, *frames);
  summary.pulse = std::move(pulse);
  install_stop_handlers();
  int rc = 0;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    run_generator(setup, *frames, *sink, g_stop, summary);
    sink->finish();
  } catch (const std::runtime_error& e) {
    // The summary still says what was delivered before the failure.
    std::cerr << "rocecap gen: " << e.what() << "\n";
    rc = 1;
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_summary(summary, a.summary);
  return rc;
}

void add_impairments(CLI::App& gen, GenArgs& a) {
  const auto prob = CLI::Range(0.0, 1.0);
  gen.add_option("--seed", a.seed, "Seed of the impairment choices (same seed and args, same run)");
  gen.add_option("--drop-every", a.rates.drop_every, "Drop every K-th frame of each stream");
  gen.add_option("--drop", a.rates.drop, "Probability a frame is not sent")->check(prob);
  gen.add_option("--swap", a.rates.swap, "Probability a frame is sent after its successor")
      ->check(prob);
  gen.add_option("--duplicate", a.rates.duplicate, "Probability a frame is sent twice")
      ->check(prob);
  gen.add_option("--bad-sync", a.rates.bad_sync, "Probability of a corrupted sync word")
      ->check(prob);
  gen.add_option("--truncate", a.rates.truncate, "Probability the data is cut to half")
      ->check(prob);
  gen.add_option("--invalid", a.rates.invalid, "Probability the CODIF invalid bit is set")
      ->check(prob);
  gen.add_option("--foreign", a.foreign,
                 "Source address of extra copies of antenna 0's frames (no stream's source)");
  gen.add_option_function<double>(
         "--foreign-prob",
         [&a](const double& p) {
           a.rates.foreign = p;
           a.foreign_prob_given = true;
         },
         "Probability an antenna-0 frame is also sent from --foreign (default 0.01)")
      ->check(prob);
}

void add_frame_options(CLI::App& gen, GenArgs& a) {
  gen.add_option("--payload-bytes", a.payload_bytes, "CODIF data bytes per frame (multiple of 8)")
      ->capture_default_str();
  gen.add_option("--nchan", a.nchan, "Channels")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  gen.add_option("--nbits", a.nbits, "Bits per sample component")
      ->check(CLI::Range(1, 255))
      ->capture_default_str();
  gen.add_flag("--complex", a.complex, "Complex samples");
  gen.add_option("--period", a.period, "Period in seconds")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  gen.add_option("--total-samples", a.total_samples,
                 "Samples per channel per period (default: 10000 frames per period)");
  gen.add_option("--epoch", a.epoch, "Reference epoch (half-years since 2000)")
      ->check(CLI::Range(0, 255));
  gen.add_option("--start-seconds", a.start_seconds, "Seconds of the first frame's period");
  gen.add_option("--start-frame", a.start_frame, "Frame number of the first frame");
  gen.add_option("--station", a.station, "Station id, two characters")->capture_default_str();
  gen.add_option("--thread-id", a.thread_id, "Thread id of antenna 0 (antenna k: + k)")
      ->check(CLI::Range(0, 65535));
  gen.add_option("--group-id", a.group_id, "Group id")->check(CLI::Range(0, 65535));
  gen.add_option("--layout", a.layout, "Header layout")
      ->check(CLI::IsMember({"v3", "v1"}))
      ->capture_default_str();
  // VDIF (doc/vdif.md): --payload-bytes is the data array, the header (32, or 16 with
  // --legacy) comes on top; --bad-sync makes the length field lie (VDIF has no sync word).
  gen.add_option("--format", a.format, "Frame format")
      ->check(CLI::IsMember({"codif", "vdif"}))
      ->capture_default_str();
  gen.add_option("--frames-per-second", a.frames_per_second,
                 "VDIF frames per second (frame numbers count 0 .. this - 1 each second)");
  gen.add_flag("--vtp", a.vtp, "VDIF: an 8-byte VTP packet sequence number before each frame");
  gen.add_flag("--legacy", a.legacy, "VDIF: 16-byte legacy headers");
  gen.add_option("--threads", a.threads,
                 "VDIF thread ids each source sends, frames interleaved (default: --thread-id)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1023));
  // A known spectral line for `rocecap quicklook` (tools/lib/tone.hpp).
  gen.add_option("--tone", a.tone,
                 "Payload: a sinusoid of F cycles per sample (0 < F < 0.5; complex: -0.5 < F < "
                 "0.5) over low noise, 8-bit samples (--nbits 8)");
  gen.add_option("--tone-channel", a.tone_channel, "Channel that carries --tone (default 0)")
      ->check(CLI::Range(0, 65535));
}

// A dispersed pulse (tools/lib/pulse_plan.hpp); each option is kept only when given.
void add_pulse_options(CLI::App& gen, GenArgs& a) {
  PulseRequest& p = a.pulse;
  gen.add_option_function<double>(
      "--pulse-at", [&p](const double& v) { p.at = v; },
      "Payload: a dispersed pulse arriving at the reference frequency this many seconds after "
      "the start of the run's first frame (>= 0); needs --frequencies and --nbits 2, 4 or 8");
  gen.add_option_function<double>(
      "--pulse-width", [&p](const double& v) { p.width = v; },
      "Pulse width in seconds (> 0; default 0.001)");
  gen.add_option_function<double>(
      "--pulse-dm", [&p](const double& v) { p.dm = v; },
      "Pulse dispersion measure in pc cm^-3 (>= 0; default 0): delay 4.148808 ms x DM x "
      "(f_GHz^-2 - ref_GHz^-2)");
  gen.add_option_function<double>(
      "--pulse-ref-mhz", [&p](const double& v) { p.ref_mhz = v; },
      "Pulse reference frequency in MHz (default: the highest of --frequencies)");
  gen.add_option("--frequencies", p.frequencies,
                 "Band of each --groups entry, same order: LOW:HIGH in MHz, comma-separated "
                 "(e.g. 1200:1264,1264:1328); channels split it evenly, upper sideband");
}

}  // namespace

void add_gen_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<GenArgs>();
  GenArgs& a = *args;
  CLI::App* gen = app.add_subcommand("gen", "Send CODIF multicast streams (groups x sources)");
  gen->add_option("--groups", a.groups, "Multicast GROUP:PORT list")->required()->delimiter(',');
  gen->add_option("--sources", a.sources, "Source address per antenna (local addresses)")
      ->required()
      ->delimiter(',');
  auto* frames = gen->add_option("--frames", a.frames, "Frames per stream")
                     ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  auto* duration =
      gen->add_option("--duration", a.duration, "Seconds of traffic")->check(CLI::PositiveNumber);
  frames->excludes(duration);
  auto* rate = gen->add_option("--rate", a.rate, "Frames per second per stream")
                   ->check(CLI::PositiveNumber)
                   ->capture_default_str();
  auto* gbps = gen->add_option("--gbps", a.gbps, "Total rate in Gbit/s of UDP payload")
                   ->check(CLI::PositiveNumber);
  rate->excludes(gbps);
  gen->add_option("--interface", a.interface, "Send through this interface (IP_MULTICAST_IF)");
  gen->add_option("--ttl", a.ttl, "Multicast TTL")
      ->check(CLI::Range(0, 255))
      ->capture_default_str();
  gen->add_flag("--loopback", a.loopback, "Deliver to local listeners too (IP_MULTICAST_LOOP)");
  auto* af_packet = gen->add_flag(
      "--af-packet", a.af_packet,
      "Send prebuilt Ethernet frames through an AF_PACKET socket on --interface, bypassing the "
      "UDP/IP stack and the qdisc: the same datagrams at several times the rate per CPU (UDP "
      "source port 49152+antenna, UDP checksum 0); needs CAP_NET_RAW");
  af_packet->needs(gen->get_option("--interface"));
  add_frame_options(*gen, a);
  add_impairments(*gen, a);
  add_pulse_options(*gen, a);
  gen->add_option("--pcap", a.pcap, "Write the traffic to this pcap file instead of sending")
      ->excludes(af_packet);
  gen->add_option("--summary", a.summary, "Write the JSON summary here (default: stdout)");
  gen->callback([args, frames, duration, &action] {
    if (frames->count() == 0 && duration->count() == 0) {
      throw CLI::RequiredError("--frames or --duration");
    }
    action = [args] { return run_gen(*args); };
  });
}

}  // namespace rocecap::tools
