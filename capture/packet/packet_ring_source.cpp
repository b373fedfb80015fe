#include "capture/packet/packet_ring_source.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "capture/ingest.hpp"

namespace rocecap::capture::packet {
namespace {

// Loans are counted against this bias while a block is being read, so the reader adds its
// loans once per block (in close_block) instead of one atomic add per frame; the writer's
// releases may run ahead of that add without the count reaching zero.
constexpr uint32_t kReadingBias = 1u << 31;
constexpr uint16_t kVlanTagBytes = 4;
constexpr std::size_t kMacBytes = 12;  // destination + source MAC: where a tag goes
// wait_holding's sleep: well below the block retire timeout (8 ms), so a retired block waits
// at most about 1 ms; shorter steps cost a context switch each (BENCHMARKS.md, "Kernel path").
constexpr long kHoldingStepNs = 1'000'000;

[[noreturn]] void fail(const std::string& what, int err) {
  throw std::runtime_error(what + ": " + std::strerror(err));
}

int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

template <class T>
void set_option(int fd, int level, int name, const T& value, const std::string& what) {
  if (setsockopt(fd, level, name, &value, sizeof value) != 0) fail(what, errno);
}

// The filter libpcap would install: compiled against a handle activated on the interface, so
// `vlan` tests read the kernel's tag metadata (libpcap gencode.c, gen_vlan with
// BPF_SPECIAL_VLAN_HANDLING) as they do for PcapSource. The kernel strips tags before the
// filter runs on most NICs and on veth, so an in-packet test would never match.
void attach_filter(int fd, const RingOptions& o) {
  const std::string what = "packet ring on " + o.interface;
  char err[PCAP_ERRBUF_SIZE] = {};
  std::unique_ptr<pcap_t, pcap::PcapCloser> p(pcap_create(o.interface.c_str(), err));
  if (!p) throw std::runtime_error(what + ": " + err);
  pcap_set_snaplen(p.get(), o.snaplen);
  pcap_set_buffer_size(p.get(), 1 << 16);  // compiled with, never read from
  if (pcap_activate(p.get()) < 0) {
    throw std::runtime_error(what + ": compiling the filter: " + pcap_geterr(p.get()));
  }
  if (pcap_datalink(p.get()) != DLT_EN10MB) {
    throw std::runtime_error(what + ": not an Ethernet interface");
  }
  bpf_program prog{};
  const std::string filter = pcap::build_filter(o.groups);
  if (pcap_compile(p.get(), &prog, filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
    throw std::runtime_error(what + ": filter '" + filter + "': " + pcap_geterr(p.get()));
  }
  // struct bpf_insn and the kernel's struct sock_filter have the same layout (linux/filter.h).
  sock_fprog fprog{static_cast<unsigned short>(prog.bf_len),
                   reinterpret_cast<sock_filter*>(prog.bf_insns)};
  const int rc = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog);
  const int e = errno;
  pcap_freecode(&prog);
  if (rc != 0) fail(what + ": attaching the filter", e);
}

}  // namespace

PacketRingSource::PacketRingSource(const RingOptions& o)
    : name_(o.interface),
      timeout_ms_(o.timeout_ms),
      zero_copy_(o.zero_copy),
      max_hold_ns_(int64_t{o.max_hold_ms} * 1'000'000) {}

PacketRingSource::~PacketRingSource() {
  if (map_ != nullptr) munmap(map_, map_bytes_);
  if (fd_ >= 0) close(fd_);
}

std::unique_ptr<PacketRingSource> PacketRingSource::open(const RingOptions& o) {
  std::unique_ptr<PacketRingSource> s(new PacketRingSource(o));
  s->setup(o);
  return s;
}

void PacketRingSource::setup(const RingOptions& o) {
  const std::string what = "packet ring on " + o.interface;
  const unsigned ifindex = if_nametoindex(o.interface.c_str());
  if (ifindex == 0) fail(what, errno);
  // Protocol 0: the socket receives nothing until bind(), so no frame passes before the filter.
  fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail(what + ": socket", errno);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, o.interface.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd_, SIOCGIFHWADDR, &ifr) != 0) fail(what + ": SIOCGIFHWADDR", errno);
  if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
    throw std::runtime_error(what + ": not an Ethernet interface");
  }
  set_option(fd_, SOL_PACKET, PACKET_VERSION, int{TPACKET_V3}, what + ": TPACKET_V3");
  // Room before each frame to put a stripped VLAN tag back (libpcap does the same).
  set_option(fd_, SOL_PACKET, PACKET_RESERVE, unsigned{kVlanTagBytes}, what + ": reserve");
  block_bytes_ = o.block_bytes;
  block_count_ = static_cast<uint32_t>(std::max<std::size_t>(o.buffer_bytes / block_bytes_, 2));
  tpacket_req3 req{};
  req.tp_block_size = block_bytes_;
  req.tp_block_nr = block_count_;
  req.tp_frame_size = 1u << 14;  // V3 packs frames by size; this only sizes tp_frame_nr
  req.tp_frame_nr = block_bytes_ / req.tp_frame_size * block_count_;
  req.tp_retire_blk_tov = o.block_timeout_ms;
  set_option(fd_, SOL_PACKET, PACKET_RX_RING, req, what + ": PACKET_RX_RING");
  map_bytes_ = std::size_t{block_bytes_} * block_count_;
  void* m = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
  if (m == MAP_FAILED) fail(what + ": mmap of the ring", errno);
  map_ = static_cast<std::byte*>(m);
  blocks_ = std::make_unique<Block[]>(block_count_);
  max_lent_ = o.max_lent_blocks != 0 ? std::min(o.max_lent_blocks, block_count_ - 1)
                                     : std::max(block_count_ / 2, 1u);
  attach_filter(fd_, o);
  // Our own transmissions are not captures (PcapSource: pcap_setdirection PCAP_D_IN).
  set_option(fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, what + ": PACKET_IGNORE_OUTGOING");
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(ifindex);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) fail(what + ": bind", errno);
}

bool PacketRingSource::block_ready(uint32_t b) const noexcept {
  auto* d = reinterpret_cast<tpacket_block_desc*>(block_base(b));
  // Acquire: the frames the kernel wrote before setting TP_STATUS_USER are visible.
  return (__atomic_load_n(&d->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0;
}

bool PacketRingSource::may_lend(int64_t now_ns) const noexcept {
  if (!zero_copy_ || lent_out_ >= max_lent_) return false;
  const Block& oldest = blocks_[oldest_];
  return !(out_ != 0 && oldest.lent && now_ns - oldest.opened_ns > max_hold_ns_);
}

bool PacketRingSource::open_block() noexcept {
  // Every block read and not handed back: the next one in ring order is the oldest, still
  // ours (its status still says TP_STATUS_USER), so the kernel has nowhere to write.
  if (out_ == block_count_) {
    if (!stalled_) ++zc_.held_block_stalls;
    stalled_ = true;
    return false;
  }
  if (!block_ready(next_)) return false;
  auto* d = reinterpret_cast<tpacket_block_desc*>(block_base(next_));
  Block& b = blocks_[next_];
  b.opened_ns = monotonic_ns();
  lending_ = may_lend(b.opened_ns);
  b.loans.store(kReadingBias, std::memory_order_relaxed);
  left_ = d->hdr.bh1.num_pkts;
  frame_ = reinterpret_cast<tpacket3_hdr*>(block_base(next_) + d->hdr.bh1.offset_to_first_pkt);
  lends_ = 0;
  in_block_ = true;
  ++out_;
  ++zc_.blocks;
  return true;
}

void PacketRingSource::close_block() noexcept {
  const uint32_t b = (next_);
  Block& blk = blocks_[b];
  blk.lent = lends_ != 0;
  if (blk.lent) ++lent_out_;
  blk.loans.fetch_sub(kReadingBias - lends_, std::memory_order_acq_rel);
  in_block_ = false;
  next_ = (next_ + 1) % block_count_;
}

void PacketRingSource::hand_back() noexcept {
  const uint32_t reading = in_block_ ? 1 : 0;
  while (out_ > reading && blocks_[oldest_].loans.load(std::memory_order_acquire) == 0) {
    auto* d = reinterpret_cast<tpacket_block_desc*>(block_base(oldest_));
    // Release: our reads of the block (and the writer's, ordered by the acquire above) come
    // before the kernel may write it again.
    __atomic_store_n(&d->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    if (blocks_[oldest_].lent) --lent_out_;
    blocks_[oldest_].lent = false;
    oldest_ = (oldest_ + 1) % block_count_;
    --out_;
    stalled_ = false;
  }
}

template <class Sink>
void PacketRingSource::deliver(Sink& sink, tpacket3_hdr* h) noexcept {
  auto* mac = reinterpret_cast<std::byte*>(h) + h->tp_mac;
  uint32_t captured = h->tp_snaplen;
  uint32_t wire = h->tp_len;
  // A tag the kernel took out of the frame goes back in front of the EtherType, as libpcap
  // does (pcap-linux.c, pcap_handle_packet_mmap: VLAN_VALID and VLAN_TPID), into the
  // PACKET_RESERVE room before the frame.
  const tpacket_hdr_variant1& hv = h->hv1;
  if ((hv.tp_vlan_tci != 0 || (h->tp_status & TP_STATUS_VLAN_VALID) != 0) &&
      captured >= kMacBytes) {
    const bool tpid_valid = hv.tp_vlan_tpid != 0 || (h->tp_status & TP_STATUS_VLAN_TPID_VALID);
    const uint16_t tag[2] = {htons(tpid_valid ? hv.tp_vlan_tpid : ETH_P_8021Q),
                             htons(hv.tp_vlan_tci)};
    mac -= kVlanTagBytes;
    std::memmove(mac, mac + kVlanTagBytes, kMacBytes);
    std::memcpy(mac + kMacBytes, tag, sizeof tag);
    captured += kVlanTagBytes;
    wire += kVlanTagBytes;
  }
  const std::span<const std::byte> frame(mac, captured);
  const int64_t ts = int64_t{h->tp_sec} * 1'000'000'000 + h->tp_nsec;
  if (captured < wire) ++truncated_;
  ++frames_;
  if (!lending_) {
    sink.on_frame(frame, wire, ts);
    if (zero_copy_) ++zc_.copied_frames;
    return;
  }
  if (sink.on_frame_lent(frame, wire, ts, blocks_[next_].loans)) {
    ++lends_;
    ++zc_.lent_frames;
  }
}

template <class Sink>
int PacketRingSource::poll_to(Sink& sink, int max_frames) noexcept {
  int n = 0;
  while (n < max_frames) {
    if (!in_block_) {
      hand_back();
      if (!open_block()) break;
    }
    if (left_ == 0) {
      close_block();
      continue;
    }
    tpacket3_hdr* h = frame_;
    if (--left_ != 0)
      frame_ = reinterpret_cast<tpacket3_hdr*>(reinterpret_cast<std::byte*>(h) + h->tp_next_offset);
    deliver(sink, h);
    ++n;
  }
  if (in_block_ && left_ == 0) close_block();
  hand_back();
  publish();
  return n;
}

int PacketRingSource::poll(LendingSink& sink, int max_frames) noexcept {
  return poll_to(sink, max_frames);
}

int PacketRingSource::poll(int max) noexcept {
  if (failed()) return kFailed;
  const int n = poll_to(*ingest_, max);
  return n == 0 && failed() ? kFailed : n;
}

void PacketRingSource::set_failed(std::string why) noexcept {
  if (failed()) return;
  failure_ = std::move(why);
  failed_.store(true, std::memory_order_release);
}

void PacketRingSource::publish() noexcept {
  pub_frames_.set(frames_);
  pub_truncated_.set(truncated_);
  pub_lent_.set(zc_.lent_frames);
  pub_copied_.set(zc_.copied_frames);
  pub_stalls_.set(zc_.held_block_stalls);
}

SourceReport PacketRingSource::report() const {
  SourceReport r;
  r.device = name_;
  r.frames = pub_frames_.get();
  r.truncated = pub_truncated_.get();
  r.time_source = "kernel";
  r.zero_copy = zero_copy_;
  r.zero_copy_lent = pub_lent_.get();
  r.zero_copy_copied = pub_copied_.get();
  r.held_block_stalls = pub_stalls_.get();
  return r;
}

bool PacketRingSource::ready() const noexcept {
  return in_block_ || (out_ < block_count_ && block_ready(next_));
}

bool PacketRingSource::wait_for_block(int timeout_ms) noexcept {
  hand_back();
  if (ready()) return true;
  if (out_ != 0) return wait_holding(timeout_ms);
  pollfd p{fd_, POLLIN, 0};
  const int rc = ::poll(&p, 1, timeout_ms);
  if (rc < 0 && errno != EINTR) set_failed(name_ + ": poll: " + std::strerror(errno));
  if (rc > 0 && (p.revents & (POLLERR | POLLNVAL)) != 0) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    // ENETDOWN: the interface went down; the ring stays and capture resumes when it is up.
    if (err != 0 && err != ENETDOWN) set_failed(name_ + ": " + std::strerror(err));
  }
  return ready();
}

bool PacketRingSource::wait_holding(int timeout_ms) noexcept {
  // poll() says readable as long as the block before the kernel's current one is not the
  // kernel's (net/packet/af_packet.c, packet_poll -> packet_previous_rx_frame): while we hold
  // the last block read it returns at once, and waiting on it would spin. Sleep in short steps
  // instead (well below a block's retire timeout), handing back what the writer released.
  const int64_t until = monotonic_ns() + int64_t{timeout_ms} * 1'000'000;
  const timespec step{0, kHoldingStepNs};
  while (monotonic_ns() < until) {
    nanosleep(&step, nullptr);
    hand_back();
    if (ready()) return true;
  }
  return false;
}

int PacketRingSource::dispatch(LendingSink& sink, int max_frames) noexcept {
  const int n = poll_to(sink, max_frames);
  if (n != 0 || !wait_for_block(timeout_ms_)) return n;
  return poll_to(sink, max_frames);
}

int PacketRingSource::dispatch(Ingest& ingest, int max_frames) noexcept {
  const int n = poll_to(ingest, max_frames);
  if (n != 0 || !wait_for_block(timeout_ms_)) return n;
  return poll_to(ingest, max_frames);
}

pcap::SourceStats PacketRingSource::stats() const noexcept {
  pcap::SourceStats s;
  s.frames = frames_;
  s.truncated = truncated_;
  // Read-and-clear in the kernel (net/packet/af_packet.c, packet_getsockopt PACKET_STATISTICS),
  // so the drops are summed here, as libpcap sums them for ps_drop.
  tpacket_stats_v3 st{};
  socklen_t len = sizeof st;
  if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) kernel_drops_ += st.tp_drops;
  s.kernel_drops = kernel_drops_;
  return s;
}

ZeroCopyStats PacketRingSource::zero_copy_stats() const noexcept {
  ZeroCopyStats z = zc_;
  z.blocks_out = out_;
  return z;
}

}  // namespace rocecap::capture::packet
