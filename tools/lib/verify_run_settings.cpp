#include "tools/lib/verify_run_settings.hpp"

#include <vector>

#include "config/loader.hpp"

namespace rocecap::tools {

RunSettings settings_from_config_text(const std::string& text) {
  RunSettings s;
  if (text.empty()) {
    s.note = "the manifest has no config snapshot: default output settings assumed";
    return s;
  }
  const config::LoadResult r = config::load_snapshot(text, "manifest config");
  if (!r.ok()) {
    s.note = "the manifest's config snapshot does not load (" +
             config::format_problem(r.problems.front()) + "): default output settings assumed";
    return s;
  }
  const config::OutputSection& o = r.config->output;
  s.raw = config::has_format(o, config::OutputFormat::raw);
  s.codifhdr = config::has_format(o, config::OutputFormat::codifhdr);
  s.pcap = config::has_format(o, config::OutputFormat::pcap);
  s.fill_gaps = o.fill_gaps;
  s.strip_headers = o.strip_headers;
  s.reorder_window = o.reorder_window;
  return s;
}

}  // namespace rocecap::tools
