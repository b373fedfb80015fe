#include "config/loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <tuple>

#include "config/schema.hpp"

namespace rocecap::config {
namespace {

void parse_text(std::string_view text, Context& ctx, const HostChecks& host, RunConfig& cfg) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(text));
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

LoadResult load_file(const std::string& path, const HostChecks& host) {
  std::string text;
  errno = 0;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (file) {
    char buffer[65536];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0)
      text.append(buffer, n);
  }
  if (!file || std::ferror(file.get())) {
    LoadResult result;
    result.problems.push_back(
        Problem{path, 0, 0, "", fmt::format("cannot read: {}", std::strerror(errno))});
    return result;
  }
  return load_string(text, path, host);
}

LoadResult load_file(const std::string& path) {
  return load_file(path, HostChecks{});
}

}  // namespace rocecap::config
