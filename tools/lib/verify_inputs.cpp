#include "tools/lib/verify_inputs.hpp"

#include <fstream>
#include <string>

#include "tools/lib/verify.hpp"

namespace rocecap::tools {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json(const fs::path& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw VerifyInputError(what + " " + path.string() + ": cannot open");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw VerifyInputError(what + " " + path.string() + ": is not JSON (" + e.what() + ")");
  }
}

bool is_manifest(const json& j) {
  return j.is_object() && j.contains("streams") && j["streams"].is_array() &&
         j.contains("interfaces") && j["interfaces"].is_array();
}

bool is_gen_summary(const json& j) {
  return j.is_object() && j.value("tool", "") == "rocecap gen" && j.contains("frame") &&
         j["frame"].is_object() && j.contains("streams") && j["streams"].is_array();
}

}  // namespace

json read_manifest_json(const fs::path& path) {
  json j = read_json(path, "manifest");
  if (is_manifest(j)) return j;
  throw VerifyInputError("manifest " + path.string() +
                         ": is not a rocecapd manifest (no \"streams\" and \"interfaces\")" +
                         (is_gen_summary(j)
                              ? ": it is a `rocecap gen` summary; give it as --expect"
                              : "; --manifest takes <output dir>/<run>/manifest.json"));
}

GenSummary read_gen_summary(const fs::path& path) {
  const json j = read_json(path, "summary");
  if (!is_gen_summary(j)) {
    throw VerifyInputError(
        "summary " + path.string() +
        ": is not a `rocecap gen` summary (no \"tool\": \"rocecap gen\")" +
        (is_manifest(j) ? ": it is a rocecapd manifest; give it as --manifest"
                        : "; --expect takes the JSON rocecap gen prints (stdout or --summary)"));
  }
  try {
    return j.get<GenSummary>();
  } catch (const json::exception& e) {
    throw VerifyInputError("summary " + path.string() + ": " + e.what());
  }
}

}  // namespace rocecap::tools
