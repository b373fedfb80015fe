// An etcd v3 client over etcd's JSON gateway (fleet/README.md says why not gRPC). Blocking calls
// with a timeout; meant for one thread (the agent's loop, a `rocecap fleet` command).
//
//   EtcdClient etcd({.endpoints = {"http://127.0.0.1:2379"}});
//   etcd.put("/rocecap/f/x", "value");
//   if (auto kv = etcd.get("/rocecap/f/x")) use(kv->value);
//
// Errors throw EtcdError: `unreachable()` when no endpoint answered (etcd down, network
// partition), otherwise etcd refused the request (its message is the what()). Several endpoints
// (the members of a cluster) are tried in turn, starting with the last one that answered.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rocecap::fleet {

struct EtcdOptions {
  std::vector<std::string> endpoints;  // http://host:port or https://host:port
  // etcd's own authentication (`etcdctl user add`, `auth enable`): both or neither.
  std::string user, password;
  // TLS: the CA that signed the members' certificates; a client certificate and key for
  // etcd's --client-cert-auth. Empty: the system's CAs, no client certificate.
  std::string ca_file, cert_file, key_file;
  std::chrono::milliseconds timeout{3000};  // per request, connect included
};

struct KeyValue {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, lease = 0;
};

class EtcdError : public std::runtime_error {
 public:
  EtcdError(const std::string& what, bool unreachable)
      : std::runtime_error(what), unreachable_(unreachable) {}
  bool unreachable() const noexcept { return unreachable_; }

 private:
  bool unreachable_;
};

struct EtcdPut {
  std::string key, value;
  int64_t lease = 0;
};

class EtcdClient {
 public:
  explicit EtcdClient(EtcdOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  std::optional<KeyValue> get(std::string_view key);
  std::vector<KeyValue> get_prefix(std::string_view prefix);  // sorted by key
  void put(std::string_view key, std::string_view value, int64_t lease = 0);
  // A key's mod_revision as read (0: the key did not exist), for `create` to compare.
  struct Unchanged {
    std::string key;
    int64_t mod_revision = 0;
  };
  // All of `puts` in one transaction, only if `absent` does not exist and every key of
  // `unchanged` still has its mod_revision; false otherwise (nothing written).
  bool create(std::string_view absent, const std::vector<EtcdPut>& puts,
              const std::vector<Unchanged>& unchanged = {});
  // `put` only if the key's mod_revision is still `mod_revision` (0: only if it does not
  // exist); false when someone else changed it first.
  bool put_if_unchanged(std::string_view key, std::string_view value, int64_t mod_revision);
  void erase(std::string_view key);
  void erase_prefix(std::string_view prefix);

  int64_t lease_grant(int ttl_seconds);
  bool lease_keepalive(int64_t id);  // false: the lease has expired (its keys are gone)
  void lease_revoke(int64_t id);

  const std::string& endpoint() const;  // the one that answered last

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The etcd options from the environment a `rocecap fleet` command runs in: ETCDCTL_ENDPOINTS
// (comma-separated; default http://127.0.0.1:2379), ETCDCTL_USER (user:password),
// ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, as etcdctl reads them.
EtcdOptions etcd_options_from_environment();

}  // namespace rocecap::fleet
