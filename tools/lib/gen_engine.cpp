#include "tools/lib/gen_engine.hpp"

#include <cmath>

#include "capture/net/packet.hpp"

namespace rocecap::tools {
namespace {

std::string dotted(uint32_t ip) {
  return capture::net::format_ipv4(ip).data();
}

// What one stream position produced: committed to the summary once its batch is delivered.
struct Unit {
  uint32_t stream = 0;
  uint64_t position = 0;
  Fate fate = Fate::plain;
  uint32_t datagrams = 0;  // the stream's own, foreign copy excluded
  bool foreign_copy = false;
  uint64_t bytes = 0;  // all datagrams' UDP payload bytes
};

class Engine {
 public:
  Engine(const GenSetup& setup, const FrameBuilder& frames, DatagramSink& sink,
         const std::atomic<bool>& stop, GenSummary& summary)
      : setup_(setup),
        frames_(frames),
        sink_(sink),
        stop_(stop),
        summary_(summary),
        plan_(setup.seed, setup.rates, setup.frames_per_stream),
        nsrc_(static_cast<uint32_t>(setup.sources.size())),
        nthreads_(frames.threads()),
        nstreams_(static_cast<uint32_t>(setup.groups.size()) * nsrc_ * nthreads_),
        ns_per_datagram_slot_(1e9 / (setup.rate_per_stream * nstreams_)),
        batch_(batch_size_for(setup.rate_per_stream * nstreams_)),
        buffers_((batch_ + 2) * frames.frame_bytes()) {
    for (uint32_t s = 0; s < nstreams_; ++s) {
      walkers_.emplace_back(plan_, s, setup.foreign.has_value() && antenna(s) == 0);
    }
    pending_swap_.assign(nstreams_, false);
    out_.reserve(batch_ + 2);
    units_.reserve(batch_ + 2);
    init_summary();
  }

  void run() {
    for (uint64_t j = 0; j < setup_.frames_per_stream && !stop_.load(); ++j) {
      for (uint32_t s = 0; s < nstreams_; ++s) {
        step(s, j);
        if (out_.size() >= batch_) {
          flush();
          if (stop_.load()) {
            finish_swaps();
            return;
          }
        }
      }
    }
    flush();
    finish_swaps();
  }

 private:
  // Stream s = (group x sources + antenna) x threads + thread; threads is 1 for CODIF.
  uint32_t antenna(uint32_t s) const noexcept { return (s / nthreads_) % nsrc_; }
  uint32_t thread(uint32_t s) const noexcept { return s % nthreads_; }
  // Also the stream's pulse group: a pulse's groups come in setup_.groups order.
  uint32_t group_index(uint32_t s) const noexcept { return s / (nsrc_ * nthreads_); }
  const GroupAddress& group(uint32_t s) const noexcept { return setup_.groups[group_index(s)]; }

  void init_summary() {
    for (uint32_t s = 0; s < nstreams_; ++s) {
      GenStream st;
      st.group = dotted(group(s).ip);
      st.port = group(s).port;
      st.source = dotted(setup_.sources[antenna(s)]);
      st.antenna = antenna(s);
      if (const VdifFrameBuilder* v = frames_.vdif()) st.thread = v->thread_id(thread(s));
      st.first_index = frames_.first_index();
      summary_.streams.push_back(std::move(st));
    }
    if (setup_.foreign) {
      for (const auto& g : setup_.groups) {
        summary_.foreign.push_back(GenForeign{dotted(*setup_.foreign), dotted(g.ip), g.port, {}});
      }
    }
  }

  int64_t offset(uint32_t s, uint64_t j) const noexcept {
    return std::llround(static_cast<double>(j * nstreams_ + s) * ns_per_datagram_slot_);
  }

  std::span<const std::byte> emit(uint32_t s, uint64_t position, Fate fate, uint64_t j) {
    std::span<std::byte> buf(buffers_.data() + out_.size() * frames_.frame_bytes(),
                             frames_.frame_bytes());
    // VTP: the flow's source numbers its packets; its threads interleave frame by frame.
    const uint64_t psn = position * nthreads_ + thread(s);
    const std::size_t n = frames_.build(group_index(s), antenna(s), thread(s),
                                        frames_.first_index() + position, psn, fate, buf);
    out_.push_back(OutDatagram{antenna(s), setup_.sources[antenna(s)], group(s).ip, group(s).port,
                               offset(s, j), buf.first(n)});
    return buf.first(n);
  }

  void step(uint32_t s, uint64_t j) {
    Unit u{s, j, walkers_[s].next(), 0, false, 0};
    auto add = [&](std::span<const std::byte> p) {
      ++u.datagrams;
      u.bytes += p.size();
    };
    if (pending_swap_[s]) {  // the earlier frame of a swapped pair goes second
      pending_swap_[s] = false;
      add(emit(s, j - 1, Fate::plain, j));
    } else if (u.fate == Fate::swapped) {
      pending_swap_[s] = true;
      add(emit(s, j + 1, Fate::plain, j));
    } else if (u.fate == Fate::duplicated) {
      add(emit(s, j, Fate::plain, j));
      add(emit(s, j, Fate::plain, j));
    } else if (u.fate == Fate::foreign) {
      const auto p = emit(s, j, Fate::plain, j);
      add(p);
      out_.push_back(
          OutDatagram{nsrc_, *setup_.foreign, group(s).ip, group(s).port, offset(s, j), p});
      u.foreign_copy = true;
      u.bytes += p.size();
    } else if (u.fate != Fate::dropped) {
      add(emit(s, j, u.fate, j));
    }
    units_.push_back(u);
  }

  // After a stop, send the held partner of every swap already begun, so the summary's swaps
  // stay true. Runs with an empty batch: each stream's committed frame count is its next position.
  void finish_swaps() {
    for (uint32_t s = 0; s < nstreams_; ++s) {
      if (pending_swap_[s]) step(s, summary_.streams[s].frames);
    }
    flush();
  }

  void flush() {
    if (!out_.empty()) sink_.deliver(out_, stop_);
    for (const auto& u : units_)
      commit(u);
    out_.clear();
    units_.clear();
  }

  void commit(const Unit& u) {
    GenStream& st = summary_.streams[u.stream];
    st.frames = u.position + 1;
    st.datagrams += u.datagrams;
    summary_.datagrams += u.datagrams + (u.foreign_copy ? 1 : 0);
    summary_.bytes += u.bytes;
    const uint64_t index = frames_.first_index() + u.position;
    switch (u.fate) {
      case Fate::plain:
        break;
      case Fate::dropped:
        st.dropped.push_back(index);
        break;
      case Fate::swapped:
        st.swapped.push_back(index);
        break;
      case Fate::duplicated:
        st.duplicated.push_back(index);
        break;
      case Fate::bad_sync:
        st.bad_sync.push_back(index);
        break;
      case Fate::truncated:
        st.truncated.push_back(index);
        break;
      case Fate::invalid:
        st.invalid.push_back(index);
        break;
      case Fate::foreign:
        summary_.foreign[u.stream / (nsrc_ * nthreads_)].indices.push_back(index);
        break;
    }
  }

  const GenSetup& setup_;
  const FrameBuilder& frames_;
  DatagramSink& sink_;
  const std::atomic<bool>& stop_;
  GenSummary& summary_;
  ImpairmentPlan plan_;
  uint32_t nsrc_;
  uint32_t nthreads_;
  uint32_t nstreams_;
  double ns_per_datagram_slot_;
  std::size_t batch_;
  std::vector<std::byte> buffers_;
  std::vector<FateWalker> walkers_;
  std::vector<bool> pending_swap_;
  std::vector<OutDatagram> out_;
  std::vector<Unit> units_;
};

}  // namespace

double frames_per_second_for_gbps(double gbps, std::size_t frame_bytes,
                                  std::size_t streams) noexcept {
  return gbps * 1e9 / (static_cast<double>(frame_bytes) * 8.0 * static_cast<double>(streams));
}

std::size_t batch_size_for(double datagrams_per_second) noexcept {
  const double n = std::floor(datagrams_per_second / 1000.0);
  if (!(n >= 1)) return 1;
  return n > kMaxBatch ? kMaxBatch : static_cast<std::size_t>(n);
}

void run_generator(const GenSetup& setup, const FrameBuilder& frames, DatagramSink& sink,
                   const std::atomic<bool>& stop, GenSummary& summary) {
  Engine(setup, frames, sink, stop, summary).run();
}

}  // namespace rocecap::tools
