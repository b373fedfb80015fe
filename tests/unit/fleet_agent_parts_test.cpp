// The agent's parts that need no etcd: the metrics it reports, the manifest summary it
// publishes, its configuration file, the commands it runs and the rocecapd it adopts.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fleet/agent/agent_config.hpp"
#include "fleet/agent/daemon_process.hpp"
#include "fleet/agent/host_report.hpp"
#include "fleet/keys.hpp"

namespace rocecap::fleet {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("rocecap-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

TEST(LiveCounters, SumsTheFamiliesAndNothingElse) {
  const LiveCounters c = parse_live_counters(
      "# HELP rocecap_stream_received_packets_total x\n"
      "rocecap_stream_received_packets_total{stream=\"a\"} 10\n"
      "rocecap_stream_received_packets_total{stream=\"b\"} 5.0\n"
      "rocecap_stream_received_packets_total_other 99\n"
      "rocecap_stream_lost_frames_total{stream=\"a\"} 3\n"
      "rocecap_target_written_bytes_total{target=\"0\"} 1.5e6\n"
      "rocecap_target_written_bytes_total 4\n");
  EXPECT_EQ(c.packets, 15u);
  EXPECT_EQ(c.lost_frames, 3u);
  EXPECT_EQ(c.disk_bytes, 1500004u);
}

TEST(ManifestSummary, TotalsAndAbsolutePaths) {
  const fs::path d = temp_dir("summary");
  write(d / "manifest.json", R"({"run":"r","host":"h","state":"stopped","started":"t0",
    "streams":[{"interface":"e","group":"239.1.1.1","port":5,"antenna":"a1","packets":10,"lost":2,
                "fill_frames":2,"files":[{"path":"r/x.codif","format":"raw","bytes":100}]},
               {"interface":"e","group":"239.1.1.1","port":5,"antenna":"a2","packets":7,"lost":0,
                "files":[{"path":"/abs/y.codif","format":"raw","bytes":50}]}],
    "interfaces":[{"name":"e","files":[{"path":"r/e.pcap","format":"pcap","bytes":9}]}]})");
  const auto s = manifest_summary((d / "manifest.json").string(), "/out");
  EXPECT_EQ(s["totals"]["packets"], 17u);
  EXPECT_EQ(s["totals"]["lost"], 2u);
  EXPECT_EQ(s["totals"]["files"], 3u);
  EXPECT_EQ(s["totals"]["bytes"], 159u);
  EXPECT_EQ(s["totals"]["streams"], 2u);
  EXPECT_EQ(s["streams"][0]["files"][0]["path"], "/out/r/x.codif");
  EXPECT_EQ(s["streams"][1]["files"][0]["path"], "/abs/y.codif");
  write(d / "bad.json", "{\"streams\": [");
  EXPECT_ANY_THROW(manifest_summary((d / "bad.json").string(), "/out"));
  EXPECT_ANY_THROW(manifest_summary((d / "missing.json").string(), "/out"));
  fs::remove_all(d);
}

TEST(AgentConfig, ReadsEveryKeyAndNamesTheLineOfAProblem) {
  const fs::path d = temp_dir("agentcfg");
  write(d / "pw", "s3cret\n");
  write(d / "agent.yaml",
        "fleet: lab\nhost: cap1\nstate_dir: /s\nlease_ttl: 7\npoll: 250ms\n"
        "etcd:\n  endpoints: [https://e1:2379, https://e2:2379]\n"
        "  user: rc\n  password_file: " +
            (d / "pw").string() + "\n  ca_file: /ca\n  cert_file: /c\n  key_file: /k\n");
  AgentOptions o;
  load_agent_config((d / "agent.yaml").string(), o);
  EXPECT_EQ(o.fleet, "lab");
  EXPECT_EQ(o.host, "cap1");
  EXPECT_EQ(o.lease_ttl, 7);
  EXPECT_EQ(o.poll, std::chrono::milliseconds(250));
  EXPECT_EQ(o.etcd.endpoints, (std::vector<std::string>{"https://e1:2379", "https://e2:2379"}));
  EXPECT_EQ(o.etcd.password, "s3cret");
  EXPECT_EQ(o.etcd.key_file, "/k");
  const std::pair<std::string, std::string> bad[] = {
      {"fleet: lab\nlease: 5\n", ":2:1: agent.lease: unknown key"},
      {"fleet: lab\nlease_ttl: 1\n", ":2:12: lease_ttl: whole seconds, at least 2"},
      {"poll: soon\n", ":1:7: poll: a duration"},
      {"etcd:\n  user: x\n", "etcd: user and password_file go together"},
      {"etcd:\n  password_file: /nonexistent/pw\n", "/nonexistent/pw: cannot read the secret"},
      {"fleet: [\n", "agent.yaml:2:1:"}};
  for (const auto& [text, want] : bad) {
    write(d / "agent.yaml", text);
    AgentOptions x;
    try {
      load_agent_config((d / "agent.yaml").string(), x);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
  fs::remove_all(d);
}

TEST(Commands, OutputExitCodeAndTimeout) {
  const CommandResult ok =
      run_command({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(10));
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_NE(ok.output.find("out"), std::string::npos);
  EXPECT_NE(ok.output.find("err"), std::string::npos);
  const CommandResult slow = run_command({"/bin/sleep", "30"}, std::chrono::seconds(1));
  EXPECT_EQ(slow.exit_code, 128 + SIGKILL);
  EXPECT_NE(slow.output.find("killed after 1 s"), std::string::npos);
  EXPECT_EQ(run_command({"/nonexistent/x"}, std::chrono::seconds(5)).exit_code, 127);
}

TEST(DaemonProcess, LaunchedInItsOwnSessionAndAdoptedOnlyByItsMarker) {
  const fs::path d = temp_dir("daemon");
  DaemonProcess p = DaemonProcess::launch({"/bin/sleep", "30"}, (d / "log").string());
  EXPECT_FALSE(p.poll());
  // Until the child has exec'd, its command line is the test's.
  std::optional<DaemonProcess> adopted;
  for (int i = 0; i < 200 && !adopted; ++i, ::usleep(10000))
    adopted = DaemonProcess::adopt(p.pid(), "sleep");
  EXPECT_EQ(::getsid(p.pid()), p.pid());
  ASSERT_TRUE(adopted);
  EXPECT_TRUE(adopted->adopted());
  EXPECT_FALSE(DaemonProcess::adopt(p.pid(), "/some/other/run.yaml"));  // a recycled pid
  p.signal(SIGTERM);
  for (int i = 0; i < 100 && !p.poll(); ++i)
    ::usleep(20000);
  EXPECT_EQ(p.poll(), 128 + SIGTERM);
  for (int i = 0; i < 100 && !adopted->poll(); ++i)
    ::usleep(20000);
  EXPECT_EQ(adopted->poll(), -1);  // gone; not our child, so no exit status
  fs::remove_all(d);
}

TEST(Keys, LayoutAndNames) {
  const Keys k("lab");
  EXPECT_EQ(k.host("obs1", "cap1"), "/rocecap/lab/runs/obs1/hosts/cap1");
  EXPECT_EQ(k.trigger_answer("obs1", "7", "cap2"), "/rocecap/lab/runs/obs1/trigger-answers/7/cap2");
  EXPECT_EQ(Keys::leaf("/rocecap/lab/runs/obs1/status/cap1", k.statuses("obs1")), "cap1");
  EXPECT_EQ(Keys::leaf("/rocecap/lab/runs/obs1/status/cap1/x", k.statuses("obs1")), "");
  EXPECT_TRUE(valid_name("cap-1.a_b"));
  for (const char* bad : {"", ".", "..", "a/b", "a b", "ä"})
    EXPECT_FALSE(valid_name(bad)) << bad;
}

}  // namespace
}  // namespace rocecap::fleet
