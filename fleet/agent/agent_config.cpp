#include "fleet/agent/agent_config.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <stdexcept>

#include "config/units.hpp"

namespace rocecap::fleet {
namespace {

[[noreturn]] void fail(const std::string& path, const YAML::Node& n, const std::string& what) {
  const YAML::Mark m = n.Mark();
  throw std::runtime_error(path + ":" + std::to_string(m.line + 1) + ":" +
                           std::to_string(m.column + 1) + ": " + what);
}

std::string text(const std::string& path, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(path, n, key + ": a string is needed");
  return n.as<std::string>();
}

void check_keys(const std::string& path, const YAML::Node& map, const std::set<std::string>& known,
                const std::string& where) {
  if (!map.IsMap()) fail(path, map, where + ": a map is needed");
  for (const auto& kv : map) {
    const std::string k = kv.first.as<std::string>();
    if (!known.count(k)) fail(path, kv.first, where + "." + k + ": unknown key");
  }
}

void load_etcd(const std::string& path, const YAML::Node& e, EtcdOptions& o) {
  check_keys(path, e, {"endpoints", "user", "password_file", "ca_file", "cert_file", "key_file"},
             "etcd");
  if (const auto n = e["endpoints"]) {
    if (!n.IsSequence() || n.size() == 0) fail(path, n, "etcd.endpoints: a list of URLs is needed");
    o.endpoints.clear();
    for (const auto& x : n)
      o.endpoints.push_back(text(path, x, "etcd.endpoints[]"));
  }
  if (const auto n = e["user"]) o.user = text(path, n, "etcd.user");
  if (const auto n = e["password_file"])
    o.password = read_secret_file(text(path, n, "etcd.password_file"));
  if (const auto n = e["ca_file"]) o.ca_file = text(path, n, "etcd.ca_file");
  if (const auto n = e["cert_file"]) o.cert_file = text(path, n, "etcd.cert_file");
  if (const auto n = e["key_file"]) o.key_file = text(path, n, "etcd.key_file");
  if (o.user.empty() != o.password.empty())
    fail(path, e, "etcd: user and password_file go together");
}

}  // namespace

std::string read_secret_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) throw std::runtime_error(path + ": cannot read the secret");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) throw std::runtime_error(path + ": the secret is empty");
  return line;
}

void load_agent_config(const std::string& path, AgentOptions& o) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                             std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  check_keys(path, root,
             {"fleet", "host", "state_dir", "etcd", "lease_ttl", "poll", "advertise", "rocecapd",
              "rocecap"},
             "agent");
  if (const auto n = root["fleet"]) o.fleet = text(path, n, "fleet");
  if (const auto n = root["host"]) o.host = text(path, n, "host");
  if (const auto n = root["state_dir"]) o.state_dir = text(path, n, "state_dir");
  if (const auto n = root["advertise"]) o.advertise = text(path, n, "advertise");
  if (const auto n = root["rocecapd"]) o.rocecapd = text(path, n, "rocecapd");
  if (const auto n = root["rocecap"]) o.rocecap = text(path, n, "rocecap");
  if (const auto n = root["etcd"]) load_etcd(path, n, o.etcd);
  if (const auto n = root["lease_ttl"]) {
    const std::string v = text(path, n, "lease_ttl");
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 4 ||
        std::stoi(v) < 2)
      fail(path, n, "lease_ttl: whole seconds, at least 2");
    o.lease_ttl = std::stoi(v);
  }
  if (const auto n = root["poll"]) {
    std::string error;
    const auto d = config::parse_duration(text(path, n, "poll"), error);
    if (!d || *d < std::chrono::milliseconds(50) || *d > std::chrono::seconds(10))
      fail(path, n, "poll: a duration from 50ms to 10s, e.g. 500ms");
    o.poll = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  }
}

}  // namespace rocecap::fleet
