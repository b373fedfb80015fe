// Fill frames (doc/codif.md): the header a missing frame would have had, marked invalid.
#pragma once

#include <cstdint>

#include "capture/codif/header.hpp"

namespace rocecap::writers {

// Header of the frame `n` frames after `first_missing`, with the invalid bit set.
inline capture::codif::Header fill_header(const capture::codif::Header& first_missing,
                                          const capture::codif::Timing& timing,
                                          uint64_t n) noexcept {
  capture::codif::Header h = capture::codif::advance(first_missing, timing, n);
  h.invalid = true;
  return h;
}

}  // namespace rocecap::writers
