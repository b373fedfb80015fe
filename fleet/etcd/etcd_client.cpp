#include "fleet/etcd/etcd_client.hpp"

#include <curl/curl.h>

#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>

#include "fleet/etcd/base64.hpp"

namespace rocecap::fleet {
namespace {

using nlohmann::json;

struct CurlDeleter {
  void operator()(CURL* c) const noexcept { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const noexcept { curl_slist_free_all(l); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using Headers = std::unique_ptr<curl_slist, SlistDeleter>;

// curl_global_init is not thread-safe and must run once before any handle exists.
void curl_global_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// proto3's JSON mapping writes 64-bit integers as strings and leaves zero values out.
int64_t i64(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_string()) return std::stoll(it->get<std::string>());
  return it->get<int64_t>();
}

std::string unb64(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  auto s = base64_decode(it->get<std::string>());
  if (!s) throw EtcdError("etcd answered a field that is not base64", false);
  return *s;
}

KeyValue key_value(const json& kv) {
  return {unb64(kv, "key"), unb64(kv, "value"), i64(kv, "create_revision"), i64(kv, "mod_revision"),
          i64(kv, "lease")};
}

// The end of the range of keys that start with `prefix`: the prefix with its last byte + 1.
std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff)
    end.pop_back();
  if (end.empty()) return std::string(1, '\0');  // every key
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

json put_op(const EtcdPut& p) {
  json put = {{"key", base64_encode(p.key)}, {"value", base64_encode(p.value)}};
  if (p.lease != 0) put["lease"] = std::to_string(p.lease);
  return {{"request_put", put}};
}

struct Answer {
  long status = 0;
  std::string body;
};

}  // namespace

struct EtcdClient::Impl {
  EtcdOptions options;
  CurlHandle curl;
  std::size_t current = 0;  // index into options.endpoints
  std::string token;        // etcd auth token, when options.user is set

  Answer post(const std::string& endpoint, std::string_view path, const std::string& body);
  json call(std::string_view path, const json& body);
  json call_once(std::string_view path, const json& body);
  void authenticate();
};

Answer EtcdClient::Impl::post(const std::string& endpoint, std::string_view path,
                              const std::string& body) {
  CURL* c = curl.get();
  curl_easy_reset(c);
  const std::string url = endpoint + std::string(path);
  Answer a;
  Headers headers(curl_slist_append(nullptr, "Content-Type: application/json"));
  if (!token.empty())
    headers.reset(curl_slist_append(headers.release(), ("Authorization: " + token).c_str()));
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we have threads
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!options.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options.ca_file.c_str());
  if (!options.cert_file.empty()) curl_easy_setopt(c, CURLOPT_SSLCERT, options.cert_file.c_str());
  if (!options.key_file.empty()) curl_easy_setopt(c, CURLOPT_SSLKEY, options.key_file.c_str());
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) throw EtcdError(url + ": " + curl_easy_strerror(rc), true);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
  return a;
}

// One request, trying each endpoint (from the one that answered last) until one answers.
json EtcdClient::Impl::call_once(std::string_view path, const json& body) {
  const std::string text = body.dump();
  std::string failures;
  for (std::size_t tried = 0; tried < options.endpoints.size(); ++tried) {
    const std::string& endpoint = options.endpoints[current];
    try {
      const Answer a = post(endpoint, path, text);
      json j = json::parse(a.body, nullptr, false);
      if (j.is_discarded())
        throw EtcdError(endpoint + std::string(path) + ": HTTP " + std::to_string(a.status) +
                            ", not JSON: " + a.body.substr(0, 200),
                        false);
      if (a.status != 200 || j.contains("error")) {
        const std::string msg = j.value("message", j.value("error", std::string("?")));
        throw EtcdError(endpoint + std::string(path) + ": " + msg, false);
      }
      return j;
    } catch (const EtcdError& e) {
      if (!e.unreachable()) throw;
      failures += std::string(failures.empty() ? "" : "; ") + e.what();
      current = (current + 1) % options.endpoints.size();
    }
  }
  throw EtcdError("no etcd endpoint answered (" + failures + ")", true);
}

void EtcdClient::Impl::authenticate() {
  token.clear();
  const json j =
      call_once("/v3/auth/authenticate", {{"name", options.user}, {"password", options.password}});
  token = j.value("token", std::string());
  if (token.empty()) throw EtcdError("etcd gave no token for user " + options.user, false);
}

// With authentication a token can expire (etcd's --auth-token-ttl) or be lost with a restart
// of the member: one fresh authentication, then the request once more.
json EtcdClient::Impl::call(std::string_view path, const json& body) {
  if (options.user.empty()) return call_once(path, body);
  if (token.empty()) authenticate();
  try {
    return call_once(path, body);
  } catch (const EtcdError& e) {
    const std::string what = e.what();
    if (e.unreachable() || what.find("token") == std::string::npos) throw;
  }
  authenticate();
  return call_once(path, body);
}

EtcdClient::EtcdClient(EtcdOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.endpoints.empty()) throw std::invalid_argument("etcd: no endpoint given");
  if (options.user.empty() != options.password.empty())
    throw std::invalid_argument("etcd: a user needs a password and a password a user");
  curl_global_once();
  impl_->options = std::move(options);
  impl_->curl.reset(curl_easy_init());
  if (!impl_->curl) throw std::runtime_error("etcd: curl_easy_init failed");
}

EtcdClient::~EtcdClient() = default;

std::optional<KeyValue> EtcdClient::get(std::string_view key) {
  const json j = impl_->call("/v3/kv/range", {{"key", base64_encode(key)}});
  const auto it = j.find("kvs");
  if (it == j.end() || it->empty()) return std::nullopt;
  return key_value(it->at(0));
}

std::vector<KeyValue> EtcdClient::get_prefix(std::string_view prefix) {
  const json j = impl_->call("/v3/kv/range", {{"key", base64_encode(prefix)},
                                              {"range_end", base64_encode(prefix_end(prefix))}});
  std::vector<KeyValue> out;
  if (const auto it = j.find("kvs"); it != j.end())
    for (const json& kv : *it)
      out.push_back(key_value(kv));
  return out;
}

void EtcdClient::put(std::string_view key, std::string_view value, int64_t lease) {
  json body = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) body["lease"] = std::to_string(lease);
  impl_->call("/v3/kv/put", body);
}

bool EtcdClient::create(std::string_view absent, const std::vector<EtcdPut>& puts,
                        const std::vector<Unchanged>& unchanged) {
  json ops = json::array();
  for (const EtcdPut& p : puts)
    ops.push_back(put_op(p));
  json compare = json::array({{{"key", base64_encode(absent)},
                               {"target", "CREATE"},
                               {"result", "EQUAL"},
                               {"create_revision", "0"}}});
  // etcd compares a missing key's mod_revision as 0, so 0 also means "still absent".
  for (const Unchanged& u : unchanged)
    compare.push_back({{"key", base64_encode(u.key)},
                       {"target", "MOD"},
                       {"result", "EQUAL"},
                       {"mod_revision", std::to_string(u.mod_revision)}});
  const json j = impl_->call("/v3/kv/txn", {{"compare", compare}, {"success", ops}});
  return j.value("succeeded", false);
}

bool EtcdClient::put_if_unchanged(std::string_view key, std::string_view value,
                                  int64_t mod_revision) {
  const json compare = {{"key", base64_encode(key)},
                        {"target", "MOD"},
                        {"result", "EQUAL"},
                        {"mod_revision", std::to_string(mod_revision)}};
  const json ops = json::array({put_op({std::string(key), std::string(value), 0})});
  const json j = impl_->call("/v3/kv/txn", {{"compare", json::array({compare})}, {"success", ops}});
  return j.value("succeeded", false);
}

void EtcdClient::erase(std::string_view key) {
  impl_->call("/v3/kv/deleterange", {{"key", base64_encode(key)}});
}

void EtcdClient::erase_prefix(std::string_view prefix) {
  impl_->call("/v3/kv/deleterange",
              {{"key", base64_encode(prefix)}, {"range_end", base64_encode(prefix_end(prefix))}});
}

int64_t EtcdClient::lease_grant(int ttl_seconds) {
  const json j = impl_->call("/v3/lease/grant", {{"TTL", std::to_string(ttl_seconds)}});
  const int64_t id = i64(j, "ID");
  if (id == 0) throw EtcdError("etcd granted no lease: " + j.dump(), false);
  return id;
}

// The gateway answers a keep-alive as one streamed message {"result": {...}}; an expired or
// unknown lease comes back with no TTL (proto3 leaves the zero out).
bool EtcdClient::lease_keepalive(int64_t id) {
  const json j = impl_->call("/v3/lease/keepalive", {{"ID", std::to_string(id)}});
  const json& r = j.contains("result") ? j.at("result") : j;
  return i64(r, "TTL") > 0;
}

void EtcdClient::lease_revoke(int64_t id) {
  impl_->call("/v3/lease/revoke", {{"ID", std::to_string(id)}});
}

const std::string& EtcdClient::endpoint() const {
  return impl_->options.endpoints[impl_->current];
}

EtcdOptions etcd_options_from_environment() {
  EtcdOptions o;
  const char* endpoints = std::getenv("ETCDCTL_ENDPOINTS");
  std::string list = endpoints && *endpoints ? endpoints : "http://127.0.0.1:2379";
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    std::string e = list.substr(at, comma - at);
    if (!e.empty() && e.find("://") == std::string::npos) e = "http://" + e;
    if (!e.empty()) o.endpoints.push_back(e);
    at = comma + 1;
  }
  if (const char* user = std::getenv("ETCDCTL_USER"); user && *user) {
    const std::string u = user;
    const std::size_t colon = u.find(':');
    o.user = u.substr(0, colon);
    if (colon != std::string::npos) o.password = u.substr(colon + 1);
  }
  if (const char* v = std::getenv("ETCDCTL_CACERT")) o.ca_file = v;
  if (const char* v = std::getenv("ETCDCTL_CERT")) o.cert_file = v;
  if (const char* v = std::getenv("ETCDCTL_KEY")) o.key_file = v;
  return o;
}

}  // namespace rocecap::fleet
