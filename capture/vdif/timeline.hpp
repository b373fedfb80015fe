// The sequencer's view of a VDIF frame.
//
// The Sequencer (capture/sequencer.hpp) works on the CODIF timing model: an absolute index
// (seconds / period) x frames per period + frame number, an epoch in half-years since 2000, and
// a stream signature (period, frame size, frames per period, epoch, channels, bits). VDIF is that
// model with a period of one second and frames per second as frames per period (doc/vdif.md), so
// a VDIF frame enters the same sequencer, with the same lost / duplicate / late / resync rules,
// as a CODIF header carrying its time, its invalid bit and its signature fields. The CODIF path
// is untouched by this: no branch or conversion is added to it.
#pragma once

#include "capture/codif/header.hpp"
#include "capture/vdif/header.hpp"

namespace rocecap::capture::vdif {

// Fields of `h` the sequencer reads, in the CODIF model; everything else stays default.
inline void sequencer_view(const Header& h, const Timing& t, codif::Header& out,
                           codif::Timing& out_t) noexcept {
  out.frame = h.frame;
  out.seconds = h.seconds;
  out.epoch = h.epoch;
  out.nbits = h.nbits;
  out.nchan = static_cast<uint32_t>(h.nchan());
  out.complex = h.complex;
  out.invalid = h.invalid;
  out.thread_id = h.thread_id;
  out.station_id = h.station_id;
  out.data_words = static_cast<uint32_t>(h.payload_bytes() / 8);
  out.period = 1;
  out_t.samples_per_frame = t.samples_per_frame;
  out_t.frames_per_period = t.frames_per_second;
  out_t.period = 1;
  out_t.header_bytes = static_cast<uint32_t>(h.header_bytes());
}

}  // namespace rocecap::capture::vdif
