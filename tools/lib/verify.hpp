// `rocecap verify`: checks what a rocecapd run wrote (manifest.json and the files it lists)
// against what `rocecap gen` sent (its JSON summary). Streams are matched by
// (group, port, source); each one's counters, gap list and files are compared with the
// expectation of verify_model.hpp, byte for byte for raw and codifhdr files.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rocecap::tools {

// An input that cannot be read or parsed (exit code 2), as opposed to a mismatch (1).
class VerifyInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct VerifyOptions {
  // nullopt: as the manifest's config snapshot says (its defaults when it says nothing).
  std::optional<bool> strip_headers;
  std::optional<uint32_t> reorder_window;
};

struct StreamVerdict {
  std::string name;  // "rec0 239.17.0.1:36001 ak01 (192.0.2.11)"
  std::vector<std::string> problems;
  nlohmann::json expected, actual;   // the compared counters
  std::vector<std::string> checked;  // what was compared, e.g. "raw: 2 files, 16.4 MB"
  bool ok() const noexcept { return problems.empty(); }
};

struct VerifyResult {
  std::string manifest, summary;
  std::vector<StreamVerdict> streams;
  std::vector<std::string> run_problems;  // run state, interfaces, rejected frames, pcap files
  std::vector<std::string> run_checked;
  bool partial = false;  // a killed attempt: files checked per attempt window (verify_partial.hpp)
  bool ok() const noexcept;
};

// Throws VerifyInputError when the manifest or the summary cannot be read or parsed.
VerifyResult verify_run(const std::filesystem::path& manifest, const std::filesystem::path& summary,
                        const VerifyOptions& options = {});

nlohmann::json to_json(const VerifyResult& r);
void print_report(const VerifyResult& r, std::ostream& out);

}  // namespace rocecap::tools
