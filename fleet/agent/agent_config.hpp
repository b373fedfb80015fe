// The agent's own configuration file (/etc/rocecap/agent.yaml, doc/fleet.md "The agent"):
//
//   fleet: askap
//   host: cap1                      # default: this machine's host name
//   state_dir: /var/lib/rocecap/agent
//   etcd:
//     endpoints: [https://etcd1:2379, https://etcd2:2379, https://etcd3:2379]
//     user: rocecap                 # etcd's own auth; the password is read from a file
//     password_file: /etc/rocecap/etcd-password
//     ca_file: /etc/rocecap/etcd-ca.pem
//     cert_file: /etc/rocecap/etcd-client.pem
//     key_file: /etc/rocecap/etcd-client-key.pem
//   lease_ttl: 5                    # seconds
//   poll: 500ms
//   advertise: cap1.example.org     # for Prometheus targets when rocecapd listens on 0.0.0.0
//   rocecapd: /usr/sbin/rocecapd
//   rocecap: /usr/bin/rocecap
#pragma once

#include <string>

#include "fleet/agent/agent.hpp"

namespace rocecap::fleet {

// Reads `path` into `options` (keys not in the file are left as they are). Throws
// std::runtime_error naming the file, line and key on any problem.
void load_agent_config(const std::string& path, AgentOptions& options);
// The first line of a secret file, without its line end; throws naming the file.
std::string read_secret_file(const std::string& path);

}  // namespace rocecap::fleet
