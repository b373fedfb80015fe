#include "writers/dump_writer.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>

#include "writers/codif_header_writer.hpp"
#include "writers/pcap_writer.hpp"
#include "writers/raw_writer.hpp"

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

// File `seq` of one dump file: the path itself, then (after a write error, when the writer
// retries in a new file) <stem>.<seq><ext> beside it, never the broken file again.
PathMaker numbered_path(const std::filesystem::path& p) {
  return [p](uint64_t seq, std::filesystem::path& out) {
    out = seq == 0 ? p
                   : p.parent_path() /
                         (p.stem().string() + "." + std::to_string(seq) + p.extension().string());
    return Status();
  };
}

RotationOptions one_file() {
  RotationOptions r;
  r.max_bytes = 0;  // a dump is one file per format
  return r;
}

// The frame's UDP payload (CODIF header + data) as two spans: the end of the header slot and
// the staged payload (the split may fall anywhere in it).
struct Frame {
  std::span<const std::byte> head, tail;
  std::array<std::byte, codif::kHeaderBytes> header{};
  std::span<const std::byte> data0, data1;
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
  const std::size_t first = std::min(f.head.size(), f.header.size());
  std::memcpy(f.header.data(), f.head.data(), first);
  const std::size_t rest = std::min(f.tail.size(), f.header.size() - first);
  std::memcpy(f.header.data() + first, f.tail.data(), rest);
  if (f.head.size() >= codif::kHeaderBytes) {
    f.data0 = f.head.subspan(codif::kHeaderBytes);
    f.data1 = f.tail;
  } else {
    f.data1 = f.tail.subspan(std::min(f.tail.size(), codif::kHeaderBytes - f.head.size()));
  }
  return f;
}

class Sink {
 public:
  Sink(const StreamDumpRequest& r, StreamDumpResult& out, RateLimiter& rate)
      : r_(r), out_(out), rate_(rate), next_(r.first_index) {
    if (!r.files.raw.empty()) raw_.emplace(numbered_path(r.files.raw), one_file());
    if (!r.files.codifhdr.empty()) hdr_.emplace(numbered_path(r.files.codifhdr), one_file());
    if (!r.files.pcap.empty()) pcap_.emplace(numbered_path(r.files.pcap), one_file());
  }

  bool done() const noexcept { return next_ > r_.last_index; }
  uint64_t next() const noexcept { return next_; }

  // One retained frame, in retention order. Frames before the window are skipped; the first
  // frame after it ends the dump (the frames still missing were lost by the stream).
  void frame(const capture::StreamRing& ring, SlotId id, std::span<const std::byte> payload) {
    const SlotMeta& m = ring.meta(id);
    if (done() || m.frame_index < next_) return;
    const Frame f = frame_of(ring, id, payload);
    if (!timing_known_ && !learn_timing(f.header, f.head.size() + f.tail.size())) return;
    if (m.frame_index > r_.last_index) {
      fill(r_.last_index + 1 - next_);
      return;
    }
    fill(m.frame_index - next_);
    uint64_t bytes = 0;
    if (raw_) {
      raw_->set_next_index(m.frame_index);
      check(raw_->write_frame(f.header, f.data0, f.data1));
      bytes += f.head.size() + f.tail.size();
    }
    if (hdr_) {
      hdr_->set_next_index(m.frame_index);
      check(hdr_->write_frame(f.header));
      bytes += codif::kHeaderBytes;
    }
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
    if (raw_) finish(*raw_, "raw");
    if (hdr_) finish(*hdr_, "codifhdr");
    if (pcap_) finish(*pcap_, "pcap");
    // What the files hold, not what was handed to them: the first format's losses come off.
    const char* first = raw_ ? "raw" : hdr_ ? "codifhdr" : "pcap";
    if (!out_.write_loss.empty() && out_.write_loss.front().first == first) {
      const WriteLoss& l = out_.write_loss.front().second;
      out_.frames -= std::min(out_.frames, l.frames);
      out_.fill_frames -= std::min(out_.fill_frames, l.fills);
    }
  }

 private:
  bool learn_timing(const std::array<std::byte, codif::kHeaderBytes>& bytes, std::size_t udp) {
    if (!codif::decode(bytes, r_.syncs, template_) ||
        codif::validate(template_, udp, timing_) != codif::Invalid::ok) {
      return false;
    }
    timing_known_ = true;
    return true;
  }

  void fill(uint64_t count) {
    if (count == 0) return;
    const codif::Header first = codif::at_index(template_, timing_, next_);
    if (raw_) {
      raw_->set_next_index(next_);
      check(raw_->write_fill(first, timing_, count));
    }
    if (hdr_) {
      hdr_->set_next_index(next_);
      check(hdr_->write_fill(first, timing_, count));
    }
    out_.gaps.push_back({next_, count, codif::frame_start_unix_ns(first, timing_)});
    out_.fill_frames += count;
    next_ += count;
    handed_ += count * ((raw_ ? template_.frame_bytes() : 0) + (hdr_ ? codif::kHeaderBytes : 0));
    rate_.spend(count * (raw_ ? template_.frame_bytes() : codif::kHeaderBytes));
  }

  void check(const Status& s) {
    if (s.ok()) return;
    if (out_.error_code == 0) out_.error_code = s.code();
    // Writers' messages name their file already ("write <path>: <strerror>").
    const std::string path = s.path().string();
    const bool named = path.empty() || s.message().find(path) != std::string::npos;
    out_.errors.push_back(named ? s.message() : path + ": " + s.message());
  }

  template <class W>
  void finish(W& w, const char* format) {
    check(w.close());
    for (const FileRecord& f : w.files()) {
      out_.bytes += f.bytes;
      out_.files.push_back(f);
    }
    const WriteLoss& l = w.stats().write_loss;
    if (l.frames + l.fills != 0) out_.write_loss.emplace_back(format, l);
  }

  const StreamDumpRequest& r_;
  StreamDumpResult& out_;
  RateLimiter& rate_;
  uint64_t next_;
  uint64_t handed_ = 0;  // bytes handed to the writers (every format)
  bool timing_known_ = false;
  codif::Header template_{};
  codif::Timing timing_{};
  std::optional<RawWriter> raw_;
  std::optional<CodifHeaderWriter> hdr_;
  std::optional<PcapWriter> pcap_;
};

}  // namespace

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
