#include "capture/pcap/pcap_source.hpp"

#include <time.h>

#include <stdexcept>

#include "capture/net/packet.hpp"

namespace rocecap::pcapsrc {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& detail) {
  throw std::runtime_error(what + ": " + detail);
}

void check(int rc, pcap_t* p, const std::string& what) {
  if (rc < 0) fail(what, pcap_statustostr(rc) + std::string(" (") + pcap_geterr(p) + ")");
}

int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

std::string build_filter(const std::vector<GroupPort>& groups) {
  std::string terms;
  for (const GroupPort& g : groups) {
    if (!terms.empty()) terms += " or ";
    terms += "(dst host " + std::string(net::format_ipv4(g.group).data()) + " and udp dst port " +
             std::to_string(g.port) + ")";
  }
  if (terms.empty()) terms = "udp";
  // Each "vlan" keyword moves the offsets past one tag for the rest of the whole expression,
  // `or` branches included, so the two-tag case must be nested inside the one-tag case.
  return "(" + terms + ") or (vlan and ((" + terms + ") or (vlan and (" + terms + "))))";
}

PcapSource::PcapSource(pcap_t* handle, std::string name, bool live, Pace pace)
    : handle_(handle), name_(std::move(name)), live_(live), pace_(pace) {}

PcapSource PcapSource::open_live(const LiveOptions& o) {
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_t* raw = pcap_create(o.interface.c_str(), err);
  if (raw == nullptr) fail("pcap on " + o.interface, err);
  PcapSource src(raw, o.interface, true, Pace::fast);
  const std::string what = "pcap on " + o.interface;
  check(pcap_set_snaplen(raw, o.snaplen), raw, what + ": snaplen");
  check(pcap_set_promisc(raw, 0), raw, what + ": promiscuous mode");
  check(pcap_set_immediate_mode(raw, 1), raw, what + ": immediate mode");
  check(pcap_set_buffer_size(raw, o.buffer_bytes), raw, what + ": buffer size");
  check(pcap_set_timeout(raw, o.timeout_ms), raw, what + ": timeout");
  check(pcap_set_tstamp_precision(raw, PCAP_TSTAMP_PRECISION_NANO), raw, what + ": ns timestamps");
  check(pcap_activate(raw), raw, what);
  if (pcap_datalink(raw) != DLT_EN10MB) fail(what, "not an Ethernet interface");
  // Our own transmissions are not captures.
  check(pcap_setdirection(raw, PCAP_D_IN), raw, what + ": direction");
  bpf_program prog{};
  const std::string filter = build_filter(o.groups);
  check(pcap_compile(raw, &prog, filter.c_str(), 1, PCAP_NETMASK_UNKNOWN), raw,
        what + ": filter '" + filter + "'");
  const int rc = pcap_setfilter(raw, &prog);
  pcap_freecode(&prog);
  check(rc, raw, what + ": setfilter");
  return src;
}

PcapSource PcapSource::open_file(const std::string& path, Pace pace) {
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_t* raw =
      pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  if (raw == nullptr) fail(path, err);
  PcapSource src(raw, path, false, pace);
  if (pcap_datalink(raw) != DLT_EN10MB) {
    fail(path, std::string("link type ") + pcap_datalink_val_to_name(pcap_datalink(raw)) +
                   " is not Ethernet");
  }
  return src;
}

void PcapSource::wait_for_recorded_time(int64_t timestamp_ns) noexcept {
  if (first_ts_ns_ < 0) {
    first_ts_ns_ = timestamp_ns;
    start_mono_ns_ = monotonic_ns();
    return;
  }
  const int64_t due = start_mono_ns_ + (timestamp_ns - first_ts_ns_);
  if (due <= monotonic_ns()) return;
  const timespec ts{static_cast<time_t>(due / 1'000'000'000),
                    static_cast<long>(due % 1'000'000'000)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

int PcapSource::dispatch(FrameSink& sink, int max_frames) {
  int delivered = 0;
  while (delivered < max_frames) {
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(handle_.get(), &hdr, &data);
    if (rc == 0) break;  // live timeout
    if (rc == PCAP_ERROR_BREAK) return delivered == 0 && !live_ ? -1 : delivered;
    if (rc < 0) fail(name_, pcap_geterr(handle_.get()));
    // Nanosecond precision was requested at open, so tv_usec holds nanoseconds.
    const int64_t ts = int64_t{hdr->ts.tv_sec} * 1'000'000'000 + hdr->ts.tv_usec;
    if (pace_ == Pace::recorded) wait_for_recorded_time(ts);
    if (hdr->caplen < hdr->len) ++truncated_;
    sink.on_frame(std::span(reinterpret_cast<const std::byte*>(data), hdr->caplen), hdr->len, ts);
    ++frames_;
    ++delivered;
  }
  return delivered;
}

SourceStats PcapSource::stats() const noexcept {
  SourceStats s;
  s.frames = frames_;
  s.truncated = truncated_;
  pcap_stat ps{};
  if (live_ && pcap_stats(handle_.get(), &ps) == 0) {
    s.kernel_drops = ps.ps_drop;
    s.interface_drops = ps.ps_ifdrop;
  }
  return s;
}

}  // namespace rocecap::pcapsrc
