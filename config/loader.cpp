#include "config/loader.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <numeric>
#include <tuple>

#include "config/schema.hpp"
#include "config/units.hpp"

namespace rocecap::config {
namespace {

// Owns the run file's descriptor while it is read.
class FileCloser {
 public:
  explicit FileCloser(int descriptor) noexcept : fd(descriptor) {}
  FileCloser(const FileCloser&) = delete;
  FileCloser& operator=(const FileCloser&) = delete;
  ~FileCloser() {
    if (fd >= 0) ::close(fd);
  }
  const int fd;
};

// YAML allows no C0 control character but tab, line feed and carriage return (YAML 1.2,
// production c-printable); yaml-cpp reported a NUL as "unknown escape character" followed by
// the raw byte. Reports the first one by line and column; false when there is one.
bool printable_text(std::string_view text, Context& ctx) {
  Pos pos;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      ctx.report(pos, "",
                 c == 0 ? fmt::format("NUL byte at line {}, column {}; a run file is text",
                                      pos.line, pos.column)
                        : fmt::format("control character 0x{:02X} at line {}, column {}; a run "
                                      "file is text",
                                      c, pos.line, pos.column));
      return false;
    }
    if (c == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return true;
}

void parse_text(std::string_view text, Context& ctx, const HostChecks& host, RunConfig& cfg) {
  if (!printable_text(text, ctx)) return;
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(text));
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's guard against stack exhaustion (depthguard.h), whose message is "bad file".
    ctx.report(to_pos(e.mark), "",
               "not valid YAML: nested too deep here (past yaml-cpp's recursion limit); a run "
               "file needs only a few levels");
    return;
  } catch (const YAML::Exception& e) {
    ctx.report(to_pos(e.mark), "", fmt::format("not valid YAML: {}", e.msg));
    return;
  }
  if (documents.empty() || documents[0].IsNull()) {
    ctx.report(Pos{}, "", "the file is empty; a run file needs run, capture, streams and output");
    return;
  }
  if (documents.size() > 1) {
    ctx.report(to_pos(documents[1].Mark()), "", "more than one YAML document (---); use one");
  }
  parse_document(ctx, Field{documents[0], "", to_pos(documents[0].Mark())}, cfg);
  check_consistency(ctx, cfg);
  check_host(ctx, host, cfg);
}

std::string_view kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Reads a run file, refusing anything but a regular file of at most kMaxRunFileBytes: a
// device like /dev/zero never ends (the read grew until std::bad_alloc) and a FIFO blocks
// until a writer comes. O_NONBLOCK makes opening a FIFO return at once (fifo(7)); fstat on
// the open descriptor decides, so nothing can be swapped in between. The read stops one byte
// past the bound in case the file grows meanwhile. Empty on success, else why not.
std::string read_run_file(const std::string& path, std::string& text) {
  const FileCloser fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.fd < 0) return fmt::format("cannot read: {}", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return fmt::format("cannot read: {}", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    return fmt::format("is {}, not a run file; give a regular YAML file", kind_of(st.st_mode));
  }
  auto too_big = [](uint64_t size) {
    return fmt::format("is {} bytes; a run file may have at most {} bytes ({})", size,
                       kMaxRunFileBytes, format_size(kMaxRunFileBytes));
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxRunFileBytes) return too_big(st.st_size);
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd.fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return fmt::format("cannot read: {}", std::strerror(errno));
    }
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxRunFileBytes) return too_big(text.size());
  }
  return {};
}

}  // namespace

LoadResult load_string(std::string_view text, const std::string& file_name,
                       const HostChecks& host) {
  LoadResult result;
  RunConfig cfg;
  cfg.source_path = file_name;
  cfg.source_text = std::string(text);
  Context ctx(file_name, result.problems);
  try {
    parse_text(text, ctx, host, cfg);
  } catch (const std::exception& e) {  // yaml-cpp throws from unexpected places; never leak it
    ctx.report(Pos{}, "", fmt::format("internal error while reading the file: {}", e.what()));
  }
  std::stable_sort(result.problems.begin(), result.problems.end(),
                   [](const Problem& a, const Problem& b) {
                     return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                   });
  if (result.problems.empty()) result.config = std::move(cfg);
  return result;
}

HostChecks snapshot_host() {
  HostChecks host;
  host.check_filesystem = false;
  host.check_interfaces = false;
  host.check_memory = false;
  host.usable_cpus = std::vector<unsigned>(4096);  // any CPU the capture host may have had
  std::iota(host.usable_cpus->begin(), host.usable_cpus->end(), 0u);
  return host;
}

LoadResult load_snapshot(std::string_view text, const std::string& file_name) {
  return load_string(text, file_name, snapshot_host());
}

LoadResult load_file(const std::string& path, const HostChecks& host) {
  std::string text;
  if (const std::string why = read_run_file(path, text); !why.empty()) {
    LoadResult result;
    result.problems.push_back(Problem{path, 0, 0, "", why});
    return result;
  }
  return load_string(text, path, host);
}

LoadResult load_file(const std::string& path) {
  return load_file(path, HostChecks{});
}

}  // namespace rocecap::config
