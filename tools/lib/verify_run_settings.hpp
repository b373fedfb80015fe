// The settings of a run that shape its files, read back from the manifest's config snapshot.
#pragma once

#include <cstdint>
#include <string>

namespace rocecap::tools {

struct RunSettings {
  bool raw = true, codifhdr = false, pcap = false;
  bool fill_gaps = true, strip_headers = false;
  uint32_t reorder_window = 8;  // as configured; the sequencer uses max(1, this)
  std::string note;             // why the defaults were used, when they were
};

// Parses the run file text (not this host's checks: the run may come from another host).
RunSettings settings_from_config_text(const std::string& text);

}  // namespace rocecap::tools
