#include "writers/dump_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>

#include "writers/codif_header_writer.hpp"
#include "writers/pcap_writer.hpp"
#include "writers/raw_writer.hpp"
#include "writers/vdif_header_writer.hpp"

namespace rocecap::writers {
namespace {

namespace codif = capture::codif;
using capture::SlotId;
using capture::SlotMeta;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kBatch = 256;         // slots staged at once
constexpr uint64_t kBurstBytes = 1u << 20;  // RateLimiter: written before the bound applies
constexpr auto kPollInterval = std::chrono::milliseconds(5);  // waiting for future frames

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The frame's UDP payload (CODIF header + data, or VTP number + VDIF header + data) as two
// spans: the end of the header slot and the staged payload (the split may fall anywhere).
struct Frame {
  std::span<const std::byte> head, tail;
  std::size_t size() const noexcept { return head.size() + tail.size(); }
  // The bytes from `offset` on, as two spans.
  std::pair<std::span<const std::byte>, std::span<const std::byte>> from(
      std::size_t offset) const noexcept {
    if (offset <= head.size()) return {head.subspan(offset), tail};
    return {{}, tail.subspan(std::min(tail.size(), offset - head.size()))};
  }
  // Copies the bytes from `offset` into `out` (what there is of them); returns how many.
  std::size_t gather(std::size_t offset, std::span<std::byte> out) const noexcept {
    const auto [a, b] = from(offset);
    const std::size_t n = std::min(a.size(), out.size());
    std::memcpy(out.data(), a.data(), n);
    const std::size_t m = std::min(b.size(), out.size() - n);
    std::memcpy(out.data() + n, b.data(), m);
    return n + m;
  }
};

Frame frame_of(const capture::StreamRing& ring, SlotId id, std::span<const std::byte> payload) {
  const SlotMeta& m = ring.meta(id);
  const auto hs = std::span<const std::byte>(ring.header(id)).first(m.header_bytes);
  Frame f;
  if (m.udp_payload_offset >= hs.size()) {
    f.head =
        payload.subspan(std::min<std::size_t>(m.udp_payload_offset - hs.size(), payload.size()));
  } else {
    f.head = hs.subspan(m.udp_payload_offset);
    f.tail = payload;
  }
  return f;
}

class Sink {
 public:
  Sink(const StreamDumpRequest& r, StreamDumpResult& out, RateLimiter& rate)
      : r_(r), out_(out), rate_(rate), next_(r.first_index) {
    if (!r.files.raw.empty()) raw_.emplace(dump_path_maker(r.files.raw), dump_rotation());
    if (!r.files.codifhdr.empty()) hdr_.emplace(dump_path_maker(r.files.codifhdr), dump_rotation());
    if (!r.files.vdifhdr.empty()) vhdr_.emplace(dump_path_maker(r.files.vdifhdr), dump_rotation());
    if (!r.files.pcap.empty()) pcap_.emplace(dump_path_maker(r.files.pcap), dump_rotation());
  }

  bool done() const noexcept { return next_ > r_.last_index || unreadable_; }
  uint64_t next() const noexcept { return next_; }

  // One retained frame, in retention order. Frames before the window are skipped; the first
  // frame after it ends the dump (the frames still missing were lost by the stream).
  void frame(const capture::StreamRing& ring, SlotId id, std::span<const std::byte> payload) {
    const SlotMeta& m = ring.meta(id);
    if (done() || m.frame_index < next_) return;
    const Frame f = frame_of(ring, id, payload);
    if (!timing_known_ && !learn_timing(f)) {
      // Retained frames were validated as the stream's format when captured: a frame that
      // does not read as that format means the request names the wrong one. Waiting for a
      // frame that reads would last until the deadline; give up now, with the reason.
      give_up(fmt::format("retained frame {} is not a {} frame: the dump cannot place it",
                          m.frame_index, vdif() ? "VDIF" : "CODIF"));
      unreadable_ = true;
      return;
    }
    if (m.frame_index > r_.last_index) {
      fill(r_.last_index + 1 - next_);
      return;
    }
    fill(m.frame_index - next_);
    uint64_t bytes = vdif() ? write_vdif(f, m.frame_index) : write_codif(f, m.frame_index);
    if (pcap_) {
      pcap_->set_next_index(m.frame_index);  // write-error losses are listed by frame index
      const auto hs = std::span<const std::byte>(ring.header(id)).first(m.header_bytes);
      check(pcap_->write_packet(m.timestamp_ns, hs, payload, m.wire_bytes));
      bytes += m.wire_bytes;
    }
    ++out_.frames;
    next_ = m.frame_index + 1;
    handed_ += bytes;
    rate_.spend(bytes);
  }

  // What is left of the window when the wait ends.
  void give_up(const std::string& why) {
    if (done()) return;
    out_.not_written = {next_, r_.last_index};
    out_.not_written_reason = why;
  }

  // The counts so far into `p` (after a batch); `final`: the files are closed, their sizes.
  void publish(StreamDumpProgress* p, bool final) const {
    if (p == nullptr) return;
    p->frames.store(out_.frames, std::memory_order_relaxed);
    p->fill_frames.store(out_.fill_frames, std::memory_order_relaxed);
    p->bytes.store(final ? out_.bytes : handed_, std::memory_order_relaxed);
    p->phase.store(final ? StreamDumpProgress::done : StreamDumpProgress::writing,
                   std::memory_order_release);
  }

  void close() {
    if (raw_) close_dump_writer(*raw_, "raw", out_);
    if (hdr_) close_dump_writer(*hdr_, "codifhdr", out_);
    if (vhdr_) close_dump_writer(*vhdr_, "vdifhdr", out_);
    if (pcap_) close_dump_writer(*pcap_, "pcap", out_);
    settle_dump_counts(out_, raw_ ? "raw" : hdr_ ? "codifhdr" : vhdr_ ? "vdifhdr" : "pcap");
  }

 private:
  bool vdif() const noexcept { return r_.format == capture::StreamFormat::vdif; }
  std::size_t vtp() const noexcept { return r_.vdif.vtp ? capture::vdif::kVtpBytes : 0; }

  bool learn_timing(const Frame& f) {
    if (vdif()) {
      std::array<std::byte, capture::vdif::kHeaderBytes> h{};
      const std::size_t n = f.gather(vtp(), h);
      timing_known_ = f.size() >= vtp() &&
                      capture::vdif::decode(std::span<const std::byte>(h).first(n), vtemplate_) &&
                      capture::vdif::validate(vtemplate_, f.size() - vtp(), r_.vdif.rate,
                                              vtiming_) == capture::vdif::Invalid::ok;
      return timing_known_;
    }
    std::array<std::byte, codif::kHeaderBytes> h{};
    f.gather(0, h);
    timing_known_ = codif::decode(h, r_.syncs, template_) &&
                    codif::validate(template_, f.size(), timing_) == codif::Invalid::ok;
    return timing_known_;
  }

  uint64_t write_codif(const Frame& f, uint64_t index) {
    std::array<std::byte, codif::kHeaderBytes> header{};
    f.gather(0, header);
    const auto [d0, d1] = f.from(codif::kHeaderBytes);
    uint64_t bytes = 0;
    if (raw_) {
      raw_->set_next_index(index);
      check(raw_->write_frame(header, d0, d1));
      bytes += f.size();
    }
    if (hdr_) {
      hdr_->set_next_index(index);
      check(hdr_->write_frame(header));
      bytes += codif::kHeaderBytes;
    }
    return bytes;
  }

  // The frame as the continuous writer writes it: its header form (16 or 32 bytes) from the
  // template learnt on the stream (validated at capture), without the VTP number.
  uint64_t write_vdif(const Frame& f, uint64_t index) {
    std::array<std::byte, capture::vdif::kHeaderBytes> header{};
    f.gather(vtp(), header);
    const std::size_t hb = vtemplate_.header_bytes();
    const auto hdr = std::span<const std::byte>(header).first(hb);
    const auto [d0, d1] = f.from(vtp() + hb);
    uint64_t bytes = 0;
    if (raw_) {
      raw_->set_next_index(index);
      check(raw_->write_vdif_frame(hdr, d0, d1));
      bytes += f.size() - vtp();
    }
    if (vhdr_) {
      vhdr_->set_next_index(index);
      check(vhdr_->write_frame(hdr));
      bytes += hb;
    }
    return bytes;
  }

  void fill(uint64_t count) {
    if (count == 0) return;
    if (raw_) raw_->set_next_index(next_);
    if (hdr_) hdr_->set_next_index(next_);
    if (vhdr_) vhdr_->set_next_index(next_);
    uint64_t frame_bytes = 0, header_bytes = 0;
    int64_t first_ns = 0;
    if (vdif()) {
      if (raw_) check(raw_->write_vdif_fill(vtemplate_, vtiming_, next_, count));
      if (vhdr_) check(vhdr_->write_fill(vtemplate_, vtiming_, next_, count));
      frame_bytes = vtemplate_.frame_bytes();
      header_bytes = vtemplate_.header_bytes();
      first_ns = capture::vdif::frame_start_unix_ns(
          capture::vdif::at_index(vtemplate_, vtiming_, next_), vtiming_);
    } else {
      const codif::Header first = codif::at_index(template_, timing_, next_);
      if (raw_) check(raw_->write_fill(first, timing_, count));
      if (hdr_) check(hdr_->write_fill(first, timing_, count));
      frame_bytes = template_.frame_bytes();
      header_bytes = codif::kHeaderBytes;
      first_ns = codif::frame_start_unix_ns(first, timing_);
    }
    out_.gaps.push_back({next_, count, first_ns});
    out_.fill_frames += count;
    next_ += count;
    handed_ += count * ((raw_ ? frame_bytes : 0) + (hdr_ || vhdr_ ? header_bytes : 0));
    rate_.spend(count * (raw_ ? frame_bytes : header_bytes));
  }

  void check(const Status& s) { note_dump_error(out_, s); }

  const StreamDumpRequest& r_;
  StreamDumpResult& out_;
  RateLimiter& rate_;
  uint64_t next_;
  uint64_t handed_ = 0;  // bytes handed to the writers (every format)
  bool timing_known_ = false;
  bool unreadable_ = false;  // a frame in the window did not read as the stream's format
  codif::Header template_{};
  codif::Timing timing_{};
  capture::vdif::Header vtemplate_{};
  capture::vdif::Timing vtiming_{};
  std::optional<RawWriter> raw_;
  std::optional<CodifHeaderWriter> hdr_;
  std::optional<VdifHeaderWriter> vhdr_;
  std::optional<PcapWriter> pcap_;
};

}  // namespace

// File `seq` of one dump file: the path itself, then (after a write error, when the writer
// retries in a new file) <stem>.<seq><ext> beside it, never the broken file again.
PathMaker dump_path_maker(const std::filesystem::path& p) {
  return [p](uint64_t seq, std::filesystem::path& out) {
    out = seq == 0 ? p
                   : p.parent_path() /
                         (p.stem().string() + "." + std::to_string(seq) + p.extension().string());
    return Status();
  };
}

RotationOptions dump_rotation() {
  RotationOptions r;
  r.max_bytes = 0;  // a dump is one file per format
  return r;
}

void note_dump_error(StreamDumpResult& out, const Status& s) {
  if (s.ok()) return;
  if (out.error_code == 0) out.error_code = s.code();
  // Writers' messages name their file already ("write <path>: <strerror>").
  const std::string path = s.path().string();
  const bool named = path.empty() || s.message().find(path) != std::string::npos;
  out.errors.push_back(named ? s.message() : path + ": " + s.message());
}

void settle_dump_counts(StreamDumpResult& out, const char* first) {
  if (out.write_loss.empty() || out.write_loss.front().first != first) return;
  const WriteLoss& l = out.write_loss.front().second;
  out.frames -= std::min(out.frames, l.frames);
  out.fill_frames -= std::min(out.fill_frames, l.fills);
}

RateLimiter::RateLimiter(uint64_t bytes_per_second)
    : rate_(bytes_per_second), start_(Clock::now()) {}

void RateLimiter::spend(uint64_t bytes) {
  spent_ += bytes;
  if (rate_ == 0 || spent_ <= kBurstBytes) return;
  const auto due = start_ + std::chrono::nanoseconds(static_cast<int64_t>(
                                (static_cast<long double>(spent_ - kBurstBytes) * 1e9L) / rate_));
  if (due > Clock::now()) std::this_thread::sleep_until(due);
}

StreamDumpResult StreamDumper::run(const StreamDumpRequest& r, const std::atomic<bool>& stop) {
  StreamDumpResult out;
  Sink sink(r, out, rate_);
  capture::Retention& ret = *r.retention;
  const capture::StreamRing& ring = ret.ring();
  std::vector<staging::StageItem> items;
  items.reserve(kBatch);
  uint64_t pos = r.from_pos;
  bool copy_failed = false;
  sink.publish(r.progress, false);
  while (!sink.done() && !copy_failed) {
    const capture::Retention::Range range = ret.range();
    pos = std::max(pos, range.head);  // never below the pin: only if the caller pinned later
    items.clear();
    for (; pos < range.tail && items.size() < kBatch; ++pos) {
      const SlotId id = ret.at(pos);
      if (ring.meta(id).frame_index < sink.next()) continue;
      items.push_back({&ring, id, 0});
      if (ring.meta(id).frame_index > r.last_index) break;
    }
    if (!items.empty()) {
      stager_.stage(items,
                    [&](const staging::StageItem& it, std::span<const std::byte> p, bool ok) {
                      if (ok) sink.frame(ring, it.slot, p);
                      copy_failed = copy_failed || !ok;
                    });
      if (copy_failed)
        sink.give_up("payload copy out of the ring failed: " + stager_.engine().last_error());
      if (!r.hold_pin) ret.move_pin(r.pin, pos);
      sink.publish(r.progress, false);
      continue;
    }
    if (stop.load(std::memory_order_relaxed)) {
      sink.give_up("the run stopped before these frames arrived");
      break;
    }
    if ((r.now_ns ? r.now_ns() : unix_now_ns()) >= r.wait_until_ns) {
      sink.give_up(r.wait_until_ns == 0 ? "not in the retention when the dump ran"
                                        : "not received before the dump's deadline");
      break;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  sink.close();
  sink.publish(r.progress, true);
  return out;
}

}  // namespace rocecap::writers
