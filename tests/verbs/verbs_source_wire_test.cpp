// VerbsSource receiving into StreamRings through softverbs' synthetic wire (valid CODIF v3
// frames for every flow rule; ctest paces them at their own clock with SOFTVERBS_WIRE_PACE,
// run alone they come at full speed): slots come back split at the configured point and
// sequenced; a stalled consumer makes the NIC drop (out_of_buffer rises, frames counted lost)
// and capture recovers once slots are released; frames longer than the posted slot are QP
// errors of reason oversize, recovered and bounded. Needs CAP_NET_RAW (exit 77 otherwise) and
// softverbs on the loader path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "capture/codif/header.hpp"
#include "capture/ingest.hpp"
#include "capture/verbs/device_finder.hpp"
#include "capture/verbs/verbs_source.hpp"
#include "daemon/lib/run/privileges.hpp"

namespace rocecap::capture::verbs {
namespace {

using Clock = std::chrono::steady_clock;

const char* sysfs_root() {
  const char* r = std::getenv("SOFTVERBS_SYSFS_ROOT");
  return r != nullptr ? r : "/nonexistent";
}

StreamSpec spec(uint32_t source, uint32_t payload_slot) {
  StreamSpec s;
  s.key = {0xEF110001u, 36001, source};  // 239.17.0.1:36001
  s.ring.slots = 256;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = payload_slot;
  s.sequencer.reorder_window = 4;
  s.sequencer.history = 4096;
  s.sequencer.resync_frames = 1u << 20;
  return s;
}

struct Rig {
  std::vector<std::unique_ptr<StreamPipeline>> pipes;
  std::unique_ptr<Ingest> ingest;
  std::unique_ptr<VerbsSource> source;

  explicit Rig(uint32_t payload_slot) {
    std::vector<StreamPipeline*> ptrs;
    for (uint32_t src : {0xC000020Bu, 0xC000020Cu}) {  // 192.0.2.11, 192.0.2.12
      pipes.push_back(std::make_unique<StreamPipeline>(spec(src, payload_slot)));
      ptrs.push_back(pipes.back().get());
    }
    ingest = std::make_unique<Ingest>(ptrs, false);
    VerbsOptions o;
    o.device = "svw";
    o.interface = "wire";
    o.sysfs_root = sysfs_root();
    source = std::make_unique<VerbsSource>(o, *ingest);
  }

  void poll_for(std::chrono::milliseconds d) {
    const auto end = Clock::now() + d;
    while (Clock::now() < end)
      ASSERT_GE(source->poll(64), 0) << source->failure();
  }
};

// Pops and checks every published slot of one ring; returns how many.
uint64_t drain(StreamPipeline& sp, uint64_t& last_index, bool& ordered) {
  StreamRing& ring = sp.ring();
  uint64_t n = 0;
  SlotId id;
  while (ring.pop(id)) {
    const SlotMeta& m = ring.meta(id);
    EXPECT_EQ(m.header_bytes, 128u);
    EXPECT_EQ(m.header_bytes + m.payload_bytes, m.wire_bytes);
    capture::codif::Header h;
    const auto hdr = ring.header(id).subspan(m.udp_payload_offset, capture::codif::kHeaderBytes);
    EXPECT_TRUE(capture::codif::decode(hdr, sp.spec().syncs, h));
    if (n + last_index != 0 && m.frame_index <= last_index) ordered = false;
    last_index = m.frame_index;
    ring.release(id);
    ++n;
  }
  return n;
}

TEST(VerbsSourceWire, SlotsArriveSplitSequencedAndReposted) {
  Rig rig(2048);
  uint64_t got[2] = {0, 0}, last[2] = {0, 0};
  bool ordered = true;
  const auto end = Clock::now() + std::chrono::milliseconds(800);
  while (Clock::now() < end) {
    ASSERT_GE(rig.source->poll(64), 0) << rig.source->failure();
    for (int s = 0; s < 2; ++s)
      got[s] += drain(*rig.pipes[s], last[s], ordered);
  }
  rig.ingest->flush_all();
  for (int s = 0; s < 2; ++s) {
    got[s] += drain(*rig.pipes[s], last[s], ordered);
    // Far more frames than slots: released slots were posted again.
    EXPECT_GT(got[s], 4u * 256) << "stream " << s;
    EXPECT_EQ(rig.pipes[s]->sequencer().stats().delivered, got[s]);
  }
  EXPECT_TRUE(ordered);
  for (std::size_t r = 0; r < kRejectReasonCount; ++r)
    EXPECT_EQ(rig.ingest->rejected(r), 0u) << reject_name(r);
  const VerbsStats st = rig.source->stats();
  EXPECT_GT(st.polls, 0u);
  EXPECT_EQ(st.completions, rig.ingest->frames_seen());
  EXPECT_EQ(st.wc_errors, 0u);
}

TEST(VerbsSourceWire, StalledConsumerDropsInNicAndRecovers) {
  Rig rig(2048);
  const auto before = rig.source->nic_drops();
  if (!before) GTEST_SKIP() << "no out_of_buffer file under SOFTVERBS_SYSFS_ROOT";
  rig.poll_for(std::chrono::milliseconds(300));  // nothing released: every slot fills
  uint64_t last[2] = {0, 0};
  bool ordered = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // counter file refresh
  const uint64_t stalled = rig.source->nic_drops().value_or(0);
  EXPECT_GT(stalled, *before);
  uint64_t after_resume[2] = {0, 0};
  const auto end = Clock::now() + std::chrono::milliseconds(500);
  while (Clock::now() < end) {
    ASSERT_GE(rig.source->poll(64), 0);
    for (int s = 0; s < 2; ++s)
      after_resume[s] += drain(*rig.pipes[s], last[s], ordered);
  }
  for (int s = 0; s < 2; ++s) {
    EXPECT_GT(after_resume[s], 2u * 256) << "capture did not recover on stream " << s;
    EXPECT_GT(rig.pipes[s]->sequencer().stats().lost, 0u) << "NIC drops are gaps";
  }
  EXPECT_TRUE(ordered);
}

// Every frame longer than the slot (a max_frame the MTU outgrew): each one is a QP error of
// reason oversize (IBV_WC_LOC_LEN_ERR), recovered three times within 10 s; the fourth fails
// the source with the reason. The same whether the device stops the QP (mlx5,
// SOFTVERBS_LOC_LEN=error) or lets it go on (SOFTVERBS_LOC_LEN=continue): ctest runs both.
TEST(VerbsSourceWire, FramesLongerThanTheSlotAreOversizeQpErrors) {
  Rig rig(256);  // 128 + 256 bytes posted; the wire's frames are longer
  const auto end = Clock::now() + std::chrono::seconds(5);
  while (!rig.source->failed() && Clock::now() < end)
    rig.source->poll(64);
  ASSERT_TRUE(rig.source->failed()) << "every frame oversize, yet the source goes on";
  const std::string why = rig.source->failure();
  EXPECT_NE(why.find("RDMA device svw (wire): stream 239.17.0.1:36001 from 192.0.2.1"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find(": oversize frame (local length error: longer than the 384-byte slot, "
                     "capture.max_frame) (vendor_err 0x51) on the QP again: 4 errors within 10 s "
                     "(at most 3 recoveries)"),
            std::string::npos)
      << why;
  const VerbsStats st = rig.source->stats();
  EXPECT_GE(st.oversize, 4u);
  EXPECT_EQ(rig.ingest->rejected(kRejectOversize), st.oversize);
  EXPECT_EQ(st.wc_errors, 0u) << "oversize counted as another completion error";
  EXPECT_GE(st.qp_recoveries, 3u);
  EXPECT_LE(st.qp_recoveries, 6u);  // at most 3 per stream
  EXPECT_NE(rig.source->first_error().find("receive oversize frame (local length error"),
            std::string::npos)
      << rig.source->first_error();
  for (auto& p : rig.pipes)
    EXPECT_EQ(p->sequencer().stats().received, 0u);
}

TEST(VerbsSourceWire, UnknownDeviceIsAClearError) {
  std::vector<StreamPipeline*> none;
  Ingest ingest(none, false);
  VerbsOptions o;
  o.device = "nosuchdev";
  o.interface = "eth9";
  try {
    VerbsSource s(o, ingest);
    FAIL() << "opened a device that does not exist";
  } catch (const VerbsError& e) {
    EXPECT_NE(std::string(e.what()).find("nosuchdev not found"), std::string::npos) << e.what();
  }
}

TEST(VerbsDeviceFinder, DeviceOfANetdevFromSysfs) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("rocecap-sysfs-" + std::to_string(getpid()));
  fs::create_directories(root / "class/net/enp65s0f0/device/infiniband/mlx5_3");
  fs::create_directories(root / "class/net/veth0");
  EXPECT_EQ(find_rdma_device(root.string(), "enp65s0f0"), "mlx5_3");
  try {
    (void)find_rdma_device(root.string(), "veth0");
    ADD_FAILURE() << "found an RDMA device for a plain netdev";
  } catch (const VerbsError& e) {
    EXPECT_NE(std::string(e.what()).find("capture.interfaces[].device"), std::string::npos);
  }
  EXPECT_EQ(out_of_buffer_path(root.string(), "mlx5_3", 1),
            root.string() + "/class/infiniband/mlx5_3/ports/1/hw_counters/out_of_buffer");
  fs::remove_all(root);
}

TEST(VerbsWrId, StreamAndSlotRoundTrip) {
  const uint64_t id = VerbsSource::wr_id(7, 0xABCDEFu);
  EXPECT_EQ(id >> 32, 7u);
  EXPECT_EQ(static_cast<uint32_t>(id), 0xABCDEFu);
}

}  // namespace
}  // namespace rocecap::capture::verbs

int main(int argc, char** argv) {
  if (!rocecap::daemon::check_privileges("verbs", 0).empty()) {
    std::puts("SKIP: needs CAP_NET_RAW");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
