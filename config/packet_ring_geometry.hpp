// How large the kernel's receive ring of `capture.pcap_reader: packet_ring` must be
// (capture/packet/), for the daemon that maps it and for the memory check of --check-config.
// Pure arithmetic.
//
// With zero copy a frame's payload stays in its kernel block until the writer has written it,
// and the kernel fills blocks strictly in ring order (net/packet/af_packet.c,
// packet_current_rx_frame -> __packet_lookup_frame_in_block), so a stalled writer holds the
// ring from its oldest unwritten frame onwards. The ring must therefore hold every frame the
// stream rings can hold, or `capture.ring_depth` would buy nothing beyond it: the kernel would
// drop (nic_drops) while ring slots were still free.
#pragma once

#include <algorithm>
#include <cstdint>

namespace rocecap::config {

// One block: the unit handed between kernel and reader, and of lending.
inline constexpr uint64_t kPacketBlockBytes = uint64_t{1} << 20;
// The ring never shrinks below this: 256 x 8 ms blocks keep at least 2 s of a quiet stream.
inline constexpr uint64_t kPacketRingMinBytes = uint64_t{256} << 20;

// TPACKET_V3's layout (net/packet/af_packet.c; include/uapi/linux/if_packet.h):
// - a block starts with its descriptor: BLK_PLUS_PRIV(0) = ALIGN(sizeof(tpacket_block_desc), 8)
//   = 48 bytes;
// - a frame starts with tpacket3_hdr and sockaddr_ll, TPACKET3_HDRLEN = TPACKET_ALIGN(48) + 20
//   = 68 bytes; tpacket_rcv puts the network header at netoff = TPACKET_ALIGN(68 + max(14, 16))
//   + PACKET_RESERVE (4: room to put a stripped VLAN tag back, packet_ring_source.cpp) = 100,
//   so the Ethernet header at tp_mac = 100 - 14 = 86;
// - the next frame starts tp_mac + tp_snaplen further, rounded up to 8 bytes
//   (prb_fill_curr_block: TOTAL_PKT_LEN_INCL_ALIGN, V3_ALIGNMENT), and a frame never spans two
//   blocks (__packet_lookup_frame_in_block retires the block instead).
inline constexpr uint64_t kTpacketBlockHeaderBytes = 48;
inline constexpr uint64_t kTpacketFrameLeadBytes = 86;
inline constexpr uint64_t kTpacketAlign = 8;

// Bytes one frame of `captured` bytes takes in a block.
constexpr uint64_t packet_ring_frame_bytes(uint64_t captured) noexcept {
  return (kTpacketFrameLeadBytes + captured + kTpacketAlign - 1) / kTpacketAlign * kTpacketAlign;
}

// A ring that holds `frames` frames of up to `snaplen` bytes with every block full, plus the
// block the kernel is filling and the one the reader is reading; at least `min_bytes`.
constexpr uint64_t packet_ring_bytes(uint64_t frames, uint64_t snaplen,
                                     uint64_t block_bytes = kPacketBlockBytes,
                                     uint64_t min_bytes = kPacketRingMinBytes) noexcept {
  const uint64_t fit = (block_bytes - kTpacketBlockHeaderBytes) / packet_ring_frame_bytes(snaplen);
  const uint64_t per_block = std::max<uint64_t>(fit, 1);
  const uint64_t blocks = (frames + per_block - 1) / per_block + 2;
  return std::max(min_bytes, blocks * block_bytes);
}

}  // namespace rocecap::config
