// The etcd client (fleet/etcd) against a real etcd (Debian's etcd-server) started on loopback
// by the test, in a temporary data directory: SKIPPED where etcd is not installed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "fleet/agent/daemon_process.hpp"
#include "fleet/etcd/base64.hpp"
#include "fleet/etcd/etcd_client.hpp"

namespace rocecap::fleet {
namespace {

namespace fs = std::filesystem;

std::string find_etcd() {
  for (const char* p : {"/usr/bin/etcd", "/usr/local/bin/etcd"})
    if (fs::exists(p)) return p;
  return {};
}

EtcdOptions opts(std::vector<std::string> endpoints, int timeout_ms = 3000, std::string user = {},
                 std::string password = {}) {
  EtcdOptions o;
  o.endpoints = std::move(endpoints);
  o.timeout = std::chrono::milliseconds(timeout_ms);
  o.user = std::move(user);
  o.password = std::move(password);
  return o;
}

// One etcd member on 127.0.0.1:<port>, killed and removed at the end. The ports are drawn below
// Linux's ephemeral range (ip_local_port_range, 32768-60999 by default), where another test's
// connection can hold one; an etcd that exits at start (a port taken all the same) is started
// again on other ports, and its log is shown when none answers.
class Etcd {
 public:
  Etcd() {
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("rocecap-etcd-" + std::to_string(::getpid()));
    std::string why;
    for (int attempt = 0; attempt < 3; ++attempt) {
      port_ = 20000 + static_cast<int>(rd() % 6000) * 2;
      fs::remove_all(dir_);
      fs::create_directories(dir_);
      start();
      why = wait_ready();
      if (why.empty()) return;
      stop();
    }
    ADD_FAILURE() << "etcd did not answer on " << url() << ": " << why;
  }
  ~Etcd() {
    stop();
    fs::remove_all(dir_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  void start() {
    const std::string client = url();
    const std::string peer = "http://127.0.0.1:" + std::to_string(port_ + 1);
    pid_ = ::fork();
    if (pid_ != 0) return;
    const std::string log = (dir_ / "etcd.log").string();
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execl(find_etcd().c_str(), "etcd", "--name", "t", "--data-dir", (dir_ / "d").c_str(),
            "--listen-client-urls", client.c_str(), "--advertise-client-urls", client.c_str(),
            "--listen-peer-urls", peer.c_str(), "--initial-advertise-peer-urls", peer.c_str(),
            "--initial-cluster", ("t=" + peer).c_str(), nullptr);
    ::_exit(127);
  }
  // Empty when etcd answers; else why not (it exited: the end of its log).
  std::string wait_ready() {
    EtcdClient probe(opts({url()}, 500));
    // Up to 30 s: etcd fsyncs its WAL while it starts, and on a loaded VM disk one fsync took
    // up to 2.5 s (BENCHMARKS.md, "The manifest's fsync"); 10 s was once not enough in CI.
    for (int i = 0; i < 300; ++i) {
      try {
        probe.get("/probe");
        return {};
      } catch (const EtcdError&) {
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          return "it exited; its log ends: " + log_tail();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    return "no answer for 30 s; its log ends: " + log_tail();
  }
  std::string log_tail() const {
    std::ifstream in(dir_ / "etcd.log", std::ios::binary);
    std::string text;
    char buf[4096];
    while (in) {
      in.read(buf, sizeof buf);
      text.append(buf, static_cast<std::size_t>(in.gcount()));
    }
    return text.size() > 1500 ? text.substr(text.size() - 1500) : text;
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  int port_ = 0;
  fs::path dir_;
  pid_t pid_ = -1;
};

class EtcdClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (find_etcd().empty()) GTEST_SKIP() << "etcd not installed (apt-get install etcd-server)";
    etcd_ = std::make_unique<Etcd>();
  }
  EtcdClient client() { return EtcdClient(opts({etcd_->url()})); }
  std::unique_ptr<Etcd> etcd_;
};

TEST(Base64, RoundTripsEveryLengthAndRejectsGarbage) {
  std::string bytes;
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes);
    bytes += static_cast<char>(i * 37);
  }
  EXPECT_EQ(base64_encode("/a/b"), "L2EvYg==");  // as etcd's gateway wrote it
  EXPECT_EQ(base64_decode("aGk="), "hi");
  EXPECT_FALSE(base64_decode("aGk"));
  EXPECT_FALSE(base64_decode("a=Gk"));
  EXPECT_FALSE(base64_decode("aG!="));
}

TEST_F(EtcdClientTest, PutGetPrefixErase) {
  EtcdClient c = client();
  EXPECT_FALSE(c.get("/x/a"));
  c.put("/x/a", "1");
  c.put("/x/b", std::string("bin\0ary", 7));
  c.put("/y", "3");
  ASSERT_TRUE(c.get("/x/a"));
  EXPECT_EQ(c.get("/x/a")->value, "1");
  const auto kvs = c.get_prefix("/x/");
  ASSERT_EQ(kvs.size(), 2u);
  EXPECT_EQ(kvs[0].key, "/x/a");
  EXPECT_EQ(kvs[1].value, std::string("bin\0ary", 7));
  c.erase_prefix("/x/");
  EXPECT_TRUE(c.get_prefix("/x/").empty());
  EXPECT_TRUE(c.get("/y"));
  c.erase("/y");
  EXPECT_FALSE(c.get("/y"));
}

TEST_F(EtcdClientTest, CreateIsAllOrNothingAndOnlyOnce) {
  EtcdClient c = client();
  EXPECT_TRUE(c.create("/run/state", {{"/run/state", "pending"}, {"/run/hosts/a", "file"}}));
  EXPECT_FALSE(c.create("/run/state", {{"/run/state", "again"}, {"/run/hosts/b", "file"}}));
  EXPECT_EQ(c.get("/run/state")->value, "pending");
  EXPECT_FALSE(c.get("/run/hosts/b"));
  // With keys that must be unchanged: a host's assignment written in between fails the create.
  EXPECT_TRUE(c.create("/r2/state", {{"/r2/state", "pending"}}, {{"/assigned/h", 0}}));
  c.put("/assigned/h", "r2");
  const int64_t seen = c.get("/assigned/h")->mod_revision;
  c.put("/assigned/h", "r9");  // another start, meanwhile
  EXPECT_FALSE(c.create("/r3/state", {{"/r3/state", "pending"}}, {{"/assigned/h", seen}}));
  EXPECT_FALSE(c.get("/r3/state"));
  EXPECT_TRUE(c.create("/r3/state", {{"/r3/state", "pending"}},
                       {{"/assigned/h", c.get("/assigned/h")->mod_revision}}));
  const int64_t rev = c.get("/run/state")->mod_revision;
  EXPECT_TRUE(c.put_if_unchanged("/run/state", "go", rev));
  EXPECT_FALSE(c.put_if_unchanged("/run/state", "cancelled", rev));
  EXPECT_EQ(c.get("/run/state")->value, "go");
}

TEST_F(EtcdClientTest, LeasedKeysGoWithTheirLease) {
  EtcdClient c = client();
  const int64_t lease = c.lease_grant(5);
  c.put("/alive", "yes", lease);
  EXPECT_EQ(c.get("/alive")->lease, lease);
  EXPECT_TRUE(c.lease_keepalive(lease));
  c.lease_revoke(lease);
  EXPECT_FALSE(c.get("/alive"));
  EXPECT_FALSE(c.lease_keepalive(lease));
  EXPECT_THROW(c.put("/late", "x", lease), EtcdError);  // the lease is gone: refused
}

TEST_F(EtcdClientTest, UnreachableIsToldApartFromRefusedAndTheNextEndpointIsTried) {
  // A port nothing listens on (etcd's peer port + 100).
  const std::string dead = "http://127.0.0.1:" + std::to_string(etcd_->port() + 100);
  EtcdClient only_dead(opts({dead}, 500));
  try {
    only_dead.get("/a");
    FAIL() << "no error";
  } catch (const EtcdError& e) {
    EXPECT_TRUE(e.unreachable());
    EXPECT_NE(std::string(e.what()).find("no etcd endpoint answered"), std::string::npos);
  }
  EtcdClient both(opts({dead, etcd_->url()}, 500));
  both.put("/a", "b");
  EXPECT_EQ(both.endpoint(), etcd_->url());
  EXPECT_EQ(both.get("/a")->value, "b");
  try {
    both.lease_revoke(12345);
    FAIL() << "no error";
  } catch (const EtcdError& e) {
    EXPECT_FALSE(e.unreachable());
    EXPECT_NE(std::string(e.what()).find("lease not found"), std::string::npos) << e.what();
  }
}

TEST_F(EtcdClientTest, AuthenticatesWithEtcdsOwnUsers) {
  const std::string ep = "--endpoints=" + etcd_->url();
  for (std::vector<std::string> args :
       {std::vector<std::string>{"/usr/bin/etcdctl", ep, "user", "add", "root:rootpw"},
        {"/usr/bin/etcdctl", ep, "auth", "enable"}}) {
    if (!fs::exists(args[0])) GTEST_SKIP() << "etcdctl not installed (etcd-client)";
    const CommandResult r = run_command(args, std::chrono::seconds(20));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  EtcdClient anonymous(opts({etcd_->url()}));
  try {
    anonymous.put("/secret", "x");
    FAIL() << "an anonymous put passed";
  } catch (const EtcdError& e) {
    EXPECT_FALSE(e.unreachable()) << e.what();
  }
  EtcdClient root(opts({etcd_->url()}, 3000, "root", "rootpw"));
  root.put("/secret", "x");
  EXPECT_EQ(root.get("/secret")->value, "x");
  EXPECT_THROW(EtcdClient(opts({etcd_->url()}, 3000, "root", "wrong")).get("/secret"), EtcdError);
  EXPECT_THROW(EtcdClient(opts({etcd_->url()}, 3000, "root")), std::invalid_argument);
}

}  // namespace
}  // namespace rocecap::fleet
