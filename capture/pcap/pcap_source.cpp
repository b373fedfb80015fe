#include "capture/pcap/pcap_source.hpp"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "capture/ingest.hpp"
#include "capture/net/packet.hpp"

namespace rocecap::capture::pcap {
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
  // In immediate mode libpcap's TPACKET_V3 reader loops on its own poll timeout until a
  // packet comes, so a quiet interface would never give the thread back (no stop, no idle
  // flush). Non-blocking reads plus our own bounded poll() below keep the loop responsive.
  if (pcap_setnonblock(raw, 1, err) != 0) fail(what + ": non-blocking mode", err);
  src.poll_fd_ = pcap_get_selectable_fd(raw);
  if (src.poll_fd_ < 0) fail(what, "no selectable file descriptor");
  src.timeout_ms_ = o.timeout_ms;
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
  // libpcap reads records with fread(). With stdio's default buffer (st_blksize: 4 KiB on tmpfs
  // and ext4) each 8 KB frame costs two read() calls; with 1 MiB, one call per ~120 frames
  // (BENCHMARKS.md, "Capture pipeline end to end").
  constexpr std::size_t kFileBuffer = std::size_t{1} << 20;
  auto buffer = std::make_unique<char[]>(kFileBuffer);
  FILE* fp = std::fopen(path.c_str(), "rb");
  if (fp == nullptr) fail(path, std::strerror(errno));
  std::setvbuf(fp, buffer.get(), _IOFBF, kFileBuffer);
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_t* raw = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, err);
  if (raw == nullptr) {
    std::fclose(fp);
    fail(path, err);
  }
  PcapSource src(raw, path, false, pace);
  src.file_buffer_ = std::move(buffer);
  if (pcap_datalink(raw) != DLT_EN10MB) {
    fail(path, std::string("link type ") + pcap_datalink_val_to_name(pcap_datalink(raw)) +
                   " is not Ethernet");
  }
  if (auto reader = PcapFileReader::open(path))
    src.reader_ = std::make_unique<PcapFileReader>(std::move(*reader));
  return src;
}

bool PcapSource::due_after_wait(int64_t timestamp_ns) noexcept {
  if (pace_ != Pace::recorded) return true;
  if (first_ts_ns_ < 0) {
    first_ts_ns_ = timestamp_ns;
    start_mono_ns_ = monotonic_ns();
    return true;
  }
  const int64_t due = start_mono_ns_ + (timestamp_ns - first_ts_ns_);
  const int64_t now = monotonic_ns();
  if (due <= now) return true;
  // At most one slice per call: a recording with an hour's gap must not sleep through a stop
  // request, which the caller checks between calls (the same bound as a live capture's poll).
  const int64_t until = std::min(due, now + kPaceSliceNs);
  const timespec ts{static_cast<time_t>(until / 1'000'000'000),
                    static_cast<long>(until % 1'000'000'000)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
  return until == due;
}

template <class Sink>
void PcapSource::deliver(Sink& sink, const Held& h) noexcept {
  if (h.captured.size() < h.wire_bytes) ++truncated_;
  sink.on_frame(h.captured, h.wire_bytes, h.timestamp_ns);
  ++frames_;
}

template <class Sink>
int PcapSource::dispatch_classic(Sink& sink, int max_frames) {
  using Next = PcapFileReader::Next;
  int delivered = 0;
  while (delivered < max_frames) {
    if (!held_.valid) {
      PcapRecord r;
      const Next n = reader_->next(r);
      if (n == Next::end) return delivered == 0 ? -1 : delivered;
      // As with libpcap, a bad record is an error, not the end of the file.
      const std::string at = " at byte offset " + std::to_string(reader_->offset());
      if (n == Next::truncated)
        fail(name_, "truncated dump file: record" + at + " runs past the end");
      if (n == Next::too_large) fail(name_, "record" + at + " is larger than any snapshot length");
      if (n == Next::read_error)
        fail(name_, "read" + at + ": " + std::strerror(reader_->read_errno()));
      held_ = {r.captured, r.wire_bytes, r.timestamp_ns, true};  // valid until the next next()
    }
    if (!due_after_wait(held_.timestamp_ns)) break;  // not due yet: kept for the next call
    held_.valid = false;
    deliver(sink, held_);
    ++delivered;
  }
  return delivered;
}

int PcapSource::dispatch(FrameSink& sink, int max_frames) {
  return dispatch_to(sink, max_frames);
}

int PcapSource::poll(int max) noexcept {
  if (failed()) return kFailed;
  int n = 0;
  try {
    if (ingest_ == nullptr) fail(name_, "no Ingest attached to the source");
    n = dispatch_to(*ingest_, max);
  } catch (const std::exception& e) {
    shared_->failure = e.what();
    shared_->failed.store(true, std::memory_order_release);
    n = kFailed;
  }
  shared_->frames.set(frames_);
  shared_->truncated.set(truncated_);
  return n;
}

std::optional<uint64_t> PcapSource::nic_drops() const noexcept {
  pcap_stat ps{};
  if (!live_ || pcap_stats(handle_.get(), &ps) != 0) return uint64_t{0};
  return uint64_t{ps.ps_drop} + ps.ps_ifdrop;
}

SourceReport PcapSource::report() const {
  SourceReport r;
  r.device = name_;
  r.frames = shared_->frames.get();
  r.truncated = shared_->truncated.get();
  r.time_source = "kernel";
  return r;
}

template <class Sink>
int PcapSource::dispatch_to(Sink& sink, int max_frames) {
  if (reader_) return dispatch_classic(sink, max_frames);
  int delivered = 0;
  bool waited = false;
  while (delivered < max_frames) {
    if (!held_.valid) {
      pcap_pkthdr* hdr = nullptr;
      const u_char* data = nullptr;
      const int rc = pcap_next_ex(handle_.get(), &hdr, &data);
      if (rc == 0) {  // live: nothing buffered now
        if (delivered != 0 || waited) break;
        waited = true;
        pollfd p{poll_fd_, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms_) <= 0) break;
        continue;
      }
      if (rc == PCAP_ERROR_BREAK) return delivered == 0 && !live_ ? -1 : delivered;
      if (rc < 0) fail(name_, pcap_geterr(handle_.get()));
      // Nanosecond precision was requested at open, so tv_usec holds nanoseconds.
      const int64_t ts = int64_t{hdr->ts.tv_sec} * 1'000'000'000 + hdr->ts.tv_usec;
      // libpcap's buffer stays valid until the next pcap_next_ex().
      held_ = {std::span(reinterpret_cast<const std::byte*>(data), hdr->caplen), hdr->len, ts,
               true};
    }
    if (!due_after_wait(held_.timestamp_ns)) break;  // not due yet: kept for the next call
    held_.valid = false;
    deliver(sink, held_);
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

}  // namespace rocecap::capture::pcap
