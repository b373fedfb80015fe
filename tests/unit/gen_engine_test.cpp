#include "tools/lib/gen_engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "capture/net/packet.hpp"
#include "tools/lib/payload_pattern.hpp"

namespace rocecap::tools {
namespace {

struct Sent {
  uint32_t sender, src_ip, dst_ip;
  uint16_t dst_port;
  int64_t offset_ns;
  std::vector<std::byte> bytes;
};

// Keeps every datagram; raises `stop` after `stop_after` batches when asked to.
class RecordingSink final : public DatagramSink {
 public:
  std::vector<Sent> sent;
  std::size_t batches = 0;
  std::size_t stop_after = 0;
  std::atomic<bool>* stop = nullptr;

  void deliver(std::span<const OutDatagram> batch, const std::atomic<bool>&) override {
    for (const auto& d : batch) {
      sent.push_back(Sent{d.sender,
                          d.src_ip,
                          d.dst_ip,
                          d.dst_port,
                          d.offset_ns,
                          {d.payload.begin(), d.payload.end()}});
    }
    if (++batches == stop_after && stop != nullptr) stop->store(true);
  }
};

uint32_t ip(const char* text) {
  uint32_t v = 0;
  EXPECT_TRUE(capture::net::parse_ipv4(text, v));
  return v;
}

GenSetup setup(uint64_t frames) {
  GenSetup s;
  s.groups = {{ip("239.17.0.1"), 36001}, {ip("239.17.0.2"), 36002}};
  s.sources = {ip("192.0.2.11"), ip("192.0.2.12"), ip("192.0.2.13")};
  s.foreign = ip("192.0.2.99");
  s.frames_per_stream = frames;
  s.rate_per_stream = 1000;
  s.seed = 2024;
  s.rates.drop = 0.04;
  s.rates.swap = 0.04;
  s.rates.duplicate = 0.04;
  s.rates.bad_sync = 0.04;
  s.rates.truncate = 0.04;
  s.rates.invalid = 0.04;
  s.rates.foreign = 0.04;
  return s;
}

GenFrameParams small_frames() {
  GenFrameParams p;
  p.payload_bytes = 256;
  p.total_samples = 0;  // default: 10000 frames per period
  p.start_seconds = 3;
  p.start_frame = 9990;  // crosses a period boundary after 10 frames
  p.thread_id = 10;
  return p;
}

GenSummary run(const GenSetup& s, const FrameBuilder& b, RecordingSink& sink,
               std::atomic<bool>& stop) {
  GenSummary summary;
  run_generator(s, b, sink, stop, summary);
  return summary;
}

// One received datagram of a stream, as a receiver sees it.
struct Seen {
  bool decoded = false;
  uint64_t index = 0;
  bool invalid = false;
  std::size_t size = 0;
};

std::vector<Seen> stream_view(const std::vector<Sent>& sent, uint32_t sender, uint32_t group,
                              const FrameBuilder& b) {
  std::vector<Seen> out;
  for (const auto& d : sent) {
    if (d.sender != sender || d.dst_ip != group) continue;
    Seen s;
    s.size = d.bytes.size();
    capture::codif::Header h;
    s.decoded = capture::codif::decode(std::span<const std::byte>(d.bytes),
                                       capture::codif::SyncSet::defaults(), h);
    if (s.decoded) {
      s.index = capture::codif::absolute_index(h, b.timing());
      s.invalid = h.invalid;
      EXPECT_EQ(h.thread_id, 10 + sender);
      EXPECT_EQ(first_pattern_mismatch(sender, s.index, 0,
                                       std::span<const std::byte>(d.bytes).subspan(64)),
                d.bytes.size() - 64);
    }
    out.push_back(s);
  }
  return out;
}

TEST(GenEngine, DatagramsMatchTheSummaryExactly) {
  const FrameBuilder b(small_frames());
  const GenSetup s = setup(400);
  RecordingSink sink;
  std::atomic<bool> stop{false};
  const GenSummary sum = run(s, b, sink, stop);

  ASSERT_EQ(sum.streams.size(), 6u);
  EXPECT_EQ(sum.datagrams, sink.sent.size());
  uint64_t bytes = 0;
  for (const auto& d : sink.sent)
    bytes += d.bytes.size();
  EXPECT_EQ(sum.bytes, bytes);

  uint64_t stream_datagrams = 0;
  for (uint32_t st = 0; st < 6; ++st) {
    const GenStream& g = sum.streams[st];
    const uint32_t k = st % 3;
    EXPECT_EQ(g.antenna, k);
    EXPECT_EQ(g.frames, 400u);
    EXPECT_EQ(g.first_index, 3 * 10000u + 9990);
    EXPECT_EQ(g.source, std::string(capture::net::format_ipv4(s.sources[k]).data()));
    // Every listed index lies in range, and no index is in two lists.
    std::map<uint64_t, int> claims;
    for (const auto* list : {&g.dropped, &g.duplicated, &g.bad_sync, &g.truncated, &g.invalid}) {
      for (uint64_t i : *list)
        ++claims[i];
    }
    for (uint64_t i : g.swapped)
      ++claims[i], ++claims[i + 1];
    if (k == 0) {
      for (uint64_t i : sum.foreign[st / 3].indices)
        ++claims[i];
    }
    for (const auto& [i, n] : claims) {
      EXPECT_EQ(n, 1) << "index " << i << " of stream " << st << " has " << n << " impairments";
      EXPECT_GE(i, g.first_index);
      EXPECT_LT(i, g.first_index + g.frames);
    }
    for (const auto* list :
         {&g.dropped, &g.swapped, &g.duplicated, &g.bad_sync, &g.truncated, &g.invalid}) {
      EXPECT_FALSE(list->empty()) << "rates of 4% over 400 frames must hit every kind";
    }

    // Rebuild what a receiver of this stream sees and compare with the lists.
    const auto seen = stream_view(sink.sent, k, s.groups[st / 3].ip, b);
    EXPECT_EQ(seen.size(), g.datagrams);
    stream_datagrams += g.datagrams;
    const std::set<uint64_t> dropped(g.dropped.begin(), g.dropped.end()),
        dup(g.duplicated.begin(), g.duplicated.end()), inval(g.invalid.begin(), g.invalid.end()),
        swapped(g.swapped.begin(), g.swapped.end());
    std::vector<uint64_t> order;
    std::size_t bad = 0, cut = 0;
    for (const Seen& x : seen) {
      if (!x.decoded) {
        ++bad;
        continue;
      }
      if (x.size != b.frame_bytes()) {
        EXPECT_EQ(x.size, b.truncated_bytes());
        ++cut;
        continue;
      }
      EXPECT_EQ(x.invalid, inval.count(x.index) == 1) << x.index;
      order.push_back(x.index);
    }
    EXPECT_EQ(bad, g.bad_sync.size());
    EXPECT_EQ(cut, g.truncated.size());
    // Expected order of intact frames: every index not lost, swaps reversed, copies twice.
    const std::set<uint64_t> lost_set = [&] {
      std::set<uint64_t> l(dropped);
      l.insert(g.bad_sync.begin(), g.bad_sync.end());
      l.insert(g.truncated.begin(), g.truncated.end());
      return l;
    }();
    std::vector<uint64_t> expect;
    for (uint64_t i = g.first_index; i < g.first_index + g.frames; ++i) {
      if (lost_set.count(i)) continue;
      if (swapped.count(i)) {
        expect.push_back(i + 1);
        expect.push_back(i);
        ++i;
        continue;
      }
      expect.push_back(i);
      if (dup.count(i)) expect.push_back(i);
    }
    EXPECT_EQ(order, expect) << "stream " << st;
  }
  // Foreign copies: antenna 0's frames, from the foreign source, to the group.
  for (std::size_t gi = 0; gi < 2; ++gi) {
    std::vector<uint64_t> idx;
    for (const auto& d : sink.sent) {
      if (d.sender != 3 || d.dst_ip != s.groups[gi].ip) continue;
      EXPECT_EQ(d.src_ip, *s.foreign);
      EXPECT_EQ(d.dst_port, s.groups[gi].port);
      capture::codif::Header h;
      ASSERT_TRUE(capture::codif::decode(std::span<const std::byte>(d.bytes),
                                         capture::codif::SyncSet::defaults(), h));
      idx.push_back(capture::codif::absolute_index(h, b.timing()));
    }
    EXPECT_EQ(idx, sum.foreign[gi].indices);
    EXPECT_FALSE(idx.empty());
    stream_datagrams += idx.size();
  }
  EXPECT_EQ(stream_datagrams, sum.datagrams);
}

TEST(GenEngine, ScheduleIsRoundRobinAtTheRate) {
  const FrameBuilder b(small_frames());
  GenSetup s = setup(50);
  s.rates = ImpairmentRates{};
  s.foreign.reset();
  RecordingSink sink;
  std::atomic<bool> stop{false};
  run(s, b, sink, stop);
  ASSERT_EQ(sink.sent.size(), 300u);
  // Datagram n (stream n % 6, slot n / 6) is due at n / (1000 fps x 6 streams).
  for (std::size_t n = 0; n < sink.sent.size(); ++n) {
    EXPECT_EQ(sink.sent[n].offset_ns, std::llround(static_cast<double>(n) * 1e9 / 6000.0)) << n;
    EXPECT_EQ(sink.sent[n].sender, n % 3);
    EXPECT_EQ(sink.sent[n].dst_ip, s.groups[(n % 6) / 3].ip);
  }
}

TEST(GenEngine, SameSeedSameRun) {
  const FrameBuilder b(small_frames());
  RecordingSink s1, s2;
  std::atomic<bool> stop{false};
  const auto a = nlohmann::json(run(setup(300), b, s1, stop));
  const auto c = nlohmann::json(run(setup(300), b, s2, stop));
  EXPECT_EQ(a, c);
  ASSERT_EQ(s1.sent.size(), s2.sent.size());
  for (std::size_t i = 0; i < s1.sent.size(); ++i)
    EXPECT_EQ(s1.sent[i].bytes, s2.sent[i].bytes);
}

TEST(GenEngine, DropEveryCountsAreExact) {
  const FrameBuilder b(small_frames());
  GenSetup s = setup(100);
  s.rates = ImpairmentRates{};
  s.rates.drop_every = 10;
  RecordingSink sink;
  std::atomic<bool> stop{false};
  const GenSummary sum = run(s, b, sink, stop);
  for (const auto& g : sum.streams) {
    ASSERT_EQ(g.dropped.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i)
      EXPECT_EQ(g.dropped[i], g.first_index + 10 * i + 9);
    EXPECT_EQ(g.datagrams, 90u);
  }
  EXPECT_EQ(sink.sent.size(), 6u * 90);
}

// Stops after `stop_after` batches; checks the summary against what was sent. Returns whether
// swap partners were still held at the stop (and then sent in one more batch).
bool stop_and_check(std::size_t stop_after) {
  const FrameBuilder b(small_frames());
  GenSetup s = setup(100000);
  s.rates.swap = 0.3;
  RecordingSink sink;
  std::atomic<bool> stop{false};
  sink.stop = &stop;
  sink.stop_after = stop_after;
  const GenSummary sum = run(s, b, sink, stop);
  EXPECT_EQ(sum.datagrams, sink.sent.size());
  EXPECT_LE(sink.batches, stop_after + 1);
  for (uint32_t st = 0; st < 6; ++st) {
    const GenStream& g = sum.streams[st];
    EXPECT_GT(g.frames, 0u);
    EXPECT_LT(g.frames, 1000u);
    const auto seen = stream_view(sink.sent, st % 3, s.groups[st / 3].ip, b);
    EXPECT_EQ(seen.size(), g.datagrams);
    std::multiset<uint64_t> got;
    for (const auto& x : seen) {
      if (x.decoded) got.insert(x.index);
    }
    for (uint64_t i : g.swapped) {
      EXPECT_EQ(got.count(i), 1u) << "swapped " << i << " sent only in part";
      EXPECT_EQ(got.count(i + 1), 1u) << "swapped " << i << " sent only in part";
      EXPECT_LT(i + 1, g.first_index + g.frames);
    }
    for (uint64_t i : got)
      EXPECT_LT(i, g.first_index + g.frames);
  }
  return sink.batches == stop_after + 1;
}

TEST(GenEngine, StopKeepsTheSummaryTrue) {
  int held = 0;
  for (std::size_t n = 1; n <= 24; ++n)
    held += stop_and_check(n);
  EXPECT_GT(held, 0) << "no stop hit a held swap partner: the case is not exercised";
}

TEST(GenEngine, GbpsCountsUdpPayloadBitsOfAllStreams) {
  // 8256-byte frames = 66048 bits; 10 Gbit/s over 6 streams.
  EXPECT_DOUBLE_EQ(frames_per_second_for_gbps(10, 8256, 6), 1e10 / 66048.0 / 6.0);
}

TEST(GenEngine, BatchSizeIsAboutAMillisecond) {
  EXPECT_EQ(batch_size_for(10), 1u);
  EXPECT_EQ(batch_size_for(20000), 20u);
  EXPECT_EQ(batch_size_for(1e7), kMaxBatch);
}

}  // namespace
}  // namespace rocecap::tools
