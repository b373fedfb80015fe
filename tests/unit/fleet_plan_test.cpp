// The fleet plan: reading it, the fleet rules, the split into one run file per host, and the
// loader's problems with those run files pointed back into the plan.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/loader.hpp"
#include "config/units.hpp"
#include "fleet/plan/plan.hpp"

namespace rocecap::fleet {
namespace {

using config::Problem;

// Three hosts, six groups, two each; line numbers are referred to below. @OUT@: the temporary
// output directory.
const char* const kPlan =
    "fleet:\n"                                                // 1
    "  name: lab\n"                                           // 2
    "run:\n"                                                  // 3
    "  name: lab-run\n"                                       // 4
    "capture:\n"                                              // 5
    "  backend: pcap\n"                                       // 6
    "  poll_mode: event\n"                                    // 7
    "  ring_depth: 1024\n"                                    // 8
    "streams:\n"                                              // 9
    "  format: codif\n"                                       // 10
    "  antennas:\n"                                           // 11
    "    - { name: ant1, source: 192.0.2.21 }\n"              // 12
    "    - { name: ant2, source: 192.0.2.22 }\n"              // 13
    "    - { name: ant3, source: 192.0.2.23 }\n"              // 14
    "output:\n"                                               // 15
    "  directory: @OUT@\n"                                    // 16
    "  rotate: 1GiB\n"                                        // 17
    "metrics:\n"                                              // 18
    "  listen: 127.0.0.1:9465\n"                              // 19
    "hosts:\n"                                                // 20
    "  - name: cap1\n"                                        // 21
    "    interfaces:\n"                                       // 22
    "      - name: eth1\n"                                    // 23
    "        capture_cpu: 1\n"                                // 24
    "        groups: [239.17.0.1:36001, 239.17.0.2:36001]\n"  // 25
    "    output: @OUT@/cap1\n"                                // 26
    "    metrics: 127.0.0.1:9471\n"                           // 27
    "  - name: cap2\n"                                        // 28
    "    interfaces:\n"                                       // 29
    "      - name: eth1\n"                                    // 30
    "        capture_cpu: 1\n"                                // 31
    "        groups: [239.17.0.3:36001, 239.17.0.4:36001]\n"  // 32
    "    output: @OUT@/cap2\n"                                // 33
    "  - name: cap3\n"                                        // 34
    "    interfaces:\n"                                       // 35
    "      - name: eth2\n"                                    // 36
    "        capture_cpu: 2\n"                                // 37
    "        groups:\n"                                       // 38
    "          - 239.17.0.5:36001\n"                          // 39
    "          - { address: 239.17.0.6, port: 36001 }\n";     // 40

class FleetPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = std::filesystem::temp_directory_path() /
           fmt::format("rocecap-fleet-plan-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(out_);
  }
  void TearDown() override { std::filesystem::remove_all(out_); }

  std::string with_out(std::string text) const {
    for (std::size_t at; (at = text.find("@OUT@")) != std::string::npos;)
      text.replace(at, 5, out_.string());
    return text;
  }

  std::string plan() const { return with_out(kPlan); }

  // The plan with the one occurrence of `from` replaced by `to` (empty when `from` is not there
  // exactly once, so that a typo in a test fails loudly).
  std::string patched(const std::string& from, const std::string& to) const {
    std::string text = kPlan;
    const std::size_t at = text.find(from);
    if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) return {};
    return with_out(text.replace(at, from.size(), to));
  }

  std::filesystem::path out_;
};

std::string all_problems(const PlanResult& r) {
  std::string out;
  for (const Problem& p : r.problems)
    out += config::format_problem(p) + "\n";
  return out;
}

// The 1-based line of the one occurrence of needle.
int line_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  EXPECT_EQ(text.find(needle, at + 1), std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

config::RunConfig load_back(const HostPlan& host) {
  const auto r = config::load_snapshot(host.run_file, host.name + ".yaml");
  std::string problems;
  for (const Problem& p : r.problems)
    problems += config::format_problem(p) + "\n";
  EXPECT_TRUE(r.ok()) << problems << host.run_file;
  return r.config.value_or(config::RunConfig{});
}

std::vector<std::string> group_texts(const config::RunConfig& c) {
  std::vector<std::string> out;
  for (const auto& itf : c.capture.interfaces) {
    for (const auto& g : itf.groups)
      out.push_back(fmt::format("{}/{}:{}", itf.name, config::format_ipv4(g.address), g.port));
  }
  return out;
}

std::vector<std::string> antenna_names(const config::RunConfig& c) {
  std::vector<std::string> out;
  for (const auto& a : c.streams.antennas)
    out.push_back(a.name);
  return out;
}

using Names = std::vector<std::string>;

TEST_F(FleetPlan, SplitsIntoOneRunFilePerHost) {
  const std::string text = plan();
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.plan.fleet, "lab");
  EXPECT_EQ(r.plan.run, "lab-run");
  EXPECT_EQ(r.plan.text, text);
  ASSERT_EQ(r.plan.hosts.size(), 3u);
  EXPECT_EQ(r.plan.hosts[0].name, "cap1");
  EXPECT_EQ(r.plan.hosts[1].name, "cap2");
  EXPECT_EQ(r.plan.hosts[2].name, "cap3");
  EXPECT_TRUE(r.plan.hosts[0].run_file.starts_with(
      "# run file for host cap1 of fleet lab, split from plan.yaml\n"))
      << r.plan.hosts[0].run_file;

  const config::RunConfig cap1 = load_back(r.plan.hosts[0]);
  const config::RunConfig cap2 = load_back(r.plan.hosts[1]);
  const config::RunConfig cap3 = load_back(r.plan.hosts[2]);
  EXPECT_EQ(group_texts(cap1), (Names{"eth1/239.17.0.1:36001", "eth1/239.17.0.2:36001"}));
  EXPECT_EQ(group_texts(cap2), (Names{"eth1/239.17.0.3:36001", "eth1/239.17.0.4:36001"}));
  EXPECT_EQ(group_texts(cap3), (Names{"eth2/239.17.0.5:36001", "eth2/239.17.0.6:36001"}));
  for (const auto* c : {&cap1, &cap2, &cap3}) {
    EXPECT_EQ(c->run.name, "lab-run");
    EXPECT_EQ(c->capture.backend, config::Backend::pcap);
    EXPECT_EQ(c->capture.ring_depth, 1024u);
    EXPECT_EQ(antenna_names(*c), (Names{"ant1", "ant2", "ant3"}));
    EXPECT_EQ(c->output.rotate_bytes, uint64_t{1} << 30);
  }
  EXPECT_EQ(cap1.capture.interfaces[0].capture_cpu, 1u);
  EXPECT_EQ(cap3.capture.interfaces[0].capture_cpu, 2u);
  // Host values replace the common ones; without them the common ones stay.
  EXPECT_EQ(cap1.output.directory, (out_ / "cap1").string());
  EXPECT_EQ(cap2.output.directory, (out_ / "cap2").string());
  EXPECT_EQ(cap3.output.directory, out_.string());
  EXPECT_EQ(cap1.metrics.port, 9471);
  EXPECT_EQ(cap2.metrics.port, 9465);
  for (const HostPlan& h : r.plan.hosts) {
    EXPECT_EQ(h.run_file.find("fleet:"), std::string::npos) << h.run_file;
    EXPECT_EQ(h.run_file.find("hosts:"), std::string::npos) << h.run_file;
  }
}

TEST_F(FleetPlan, HostMetricsWithoutACommonMetricsSection) {
  const std::string text = patched("metrics:\n  listen: 127.0.0.1:9465\n", "");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(load_back(r.plan.hosts[0]).metrics.port, 9471);
  EXPECT_EQ(load_back(r.plan.hosts[1]).metrics.port, 9464);  // rocecapd's default
}

// Two hosts share the same groups, each taking some of the antennas.
TEST_F(FleetPlan, HostsTakeSubsetsOfTheAntennas) {
  std::string text = patched("    output: @OUT@/cap1\n", "    antennas: [ant3, ant1]\n");
  text = text.replace(text.find("239.17.0.3:36001, 239.17.0.4:36001"), 34,
                      "239.17.0.1:36001, 239.17.0.2:36001");
  text = text.replace(text.find("    output: " + out_.string() + "/cap2\n"),
                      std::string("    output: " + out_.string() + "/cap2\n").size(),
                      "    antennas: [ant2]\n");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_TRUE(r.ok()) << all_problems(r) << text;
  const config::RunConfig cap1 = load_back(r.plan.hosts[0]);
  const config::RunConfig cap2 = load_back(r.plan.hosts[1]);
  EXPECT_EQ(antenna_names(cap1), (Names{"ant1", "ant3"}));  // in the order of streams.antennas
  EXPECT_EQ(antenna_names(cap2), (Names{"ant2"}));
  EXPECT_EQ(cap1.streams.antennas[1].source, 0xC0000217u);  // 192.0.2.23
  EXPECT_EQ(group_texts(cap2), (Names{"eth1/239.17.0.1:36001", "eth1/239.17.0.2:36001"}));
  EXPECT_EQ(antenna_names(load_back(r.plan.hosts[2])), (Names{"ant1", "ant2", "ant3"}));
}

TEST_F(FleetPlan, DuplicateHostName) {
  const PlanResult r = load_plan_string(patched("  - name: cap2\n", "  - name: cap1\n"), "p.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "p.yaml:28:11: hosts[1].name: host 'cap1' is already listed (line 21)");
}

TEST_F(FleetPlan, GroupTakenTwiceUnlessRedundant) {
  const std::string text =
      patched("[239.17.0.3:36001, 239.17.0.4:36001]", "[239.17.0.3:36001, 239.17.0.1:36001]");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "plan.yaml:32:36: hosts[1].interfaces[0].groups[1]: group 239.17.0.1:36001: all 3 "
            "antennas are taken by cap1 and cap2; list the group in fleet.redundant if that is "
            "deliberate");

  std::string redundant = text;
  redundant.replace(redundant.find("  name: lab\n"), 12,
                    "  name: lab\n  redundant: [239.17.0.1:36001]\n");
  const PlanResult ok = load_plan_string(redundant, "plan.yaml");
  ASSERT_TRUE(ok.ok()) << all_problems(ok);
  EXPECT_EQ(group_texts(load_back(ok.plan.hosts[1])),
            (Names{"eth1/239.17.0.3:36001", "eth1/239.17.0.1:36001"}));
}

TEST_F(FleetPlan, OneAntennaTakenTwiceIsNamed) {
  std::string text = patched("    output: @OUT@/cap1\n", "    antennas: [ant1, ant2]\n");
  const std::string cap2_output = "    output: " + out_.string() + "/cap2\n";
  text.replace(text.find(cap2_output), cap2_output.size(), "    antennas: [ant2, ant3]\n");
  text.replace(text.find("239.17.0.3:36001, 239.17.0.4:36001"), 34,
               "239.17.0.1:36001, 239.17.0.2:36001");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);
  EXPECT_EQ(r.problems[0].line, 32);
  EXPECT_EQ(r.problems[0].key_path, "hosts[1].interfaces[0].groups[0]");
  EXPECT_EQ(r.problems[0].message,
            "group 239.17.0.1:36001: antenna ant2 is taken by cap1 and cap2; list the group in "
            "fleet.redundant if that is deliberate");
  EXPECT_EQ(r.problems[1].key_path, "hosts[1].interfaces[0].groups[1]");
}

TEST_F(FleetPlan, RedundantGroupTakenByOneHost) {
  const std::string text =
      patched("  name: lab\n", "  name: lab\n  redundant: [239.17.0.2:36001, 239.99.0.1:5000]\n");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "plan.yaml:3:15: fleet.redundant[0]: group 239.17.0.2:36001 is taken by cap1 only; "
            "remove it from fleet.redundant or add it to a second host");
  EXPECT_EQ(config::format_problem(r.problems[1]),
            "plan.yaml:3:33: fleet.redundant[1]: group 239.99.0.1:5000 is taken by no host; "
            "remove it from fleet.redundant");
}

TEST_F(FleetPlan, RedundantGroupsMustBeMulticastGroups) {
  const std::string text = patched(
      "  name: lab\n", "  name: lab\n  redundant: [10.0.0.1:5000, 239.1.1.1, 239.17.0.1:0]\n");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_EQ(r.problems.size(), 3u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "fleet.redundant[0]");
  EXPECT_NE(r.problems[0].message.find("not a multicast group"), std::string::npos);
  EXPECT_EQ(r.problems[1].key_path, "fleet.redundant[1]");
  EXPECT_EQ(r.problems[2].key_path, "fleet.redundant[2]");
}

TEST_F(FleetPlan, AntennaOfAGroupTakenByNoHost) {
  const PlanResult r = load_plan_string(
      patched("    output: @OUT@/cap1\n", "    antennas: [ant1, ant2]\n"), "plan.yaml");
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "plan.yaml:21:3: hosts: group 239.17.0.1:36001: antenna ant3 is taken by no host "
            "(cap1 lists the group, but not that antenna)");
  EXPECT_NE(r.problems[1].message.find("group 239.17.0.2:36001: antenna ant3"), std::string::npos);
}

// A plan of many antennas gets one problem per group and set of hosts, not one per antenna.
TEST_F(FleetPlan, ManyAntennasAreSummed) {
  std::string antennas;
  for (int i = 1; i <= 40; ++i)
    antennas += fmt::format("    - {{ name: ant{}, source: 192.0.2.{} }}\n", i, i);
  std::string text = patched(
      "    - { name: ant1, source: 192.0.2.21 }\n"
      "    - { name: ant2, source: 192.0.2.22 }\n"
      "    - { name: ant3, source: 192.0.2.23 }\n",
      antennas);
  const std::string cap1_output = "    output: " + out_.string() + "/cap1\n";
  text.replace(text.find(cap1_output), cap1_output.size(),
               "    antennas: [ant1, ant2, ant3, ant4, ant5, ant6, ant7, ant8, ant9, ant10]\n");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);
  EXPECT_EQ(r.problems[0].message,
            "group 239.17.0.1:36001: antennas ant11, ant12, ant13, ant14, ant15 and 25 more are "
            "taken by no host (cap1 lists the group, but not those antennas)");
}

TEST_F(FleetPlan, UnknownAntennaName) {
  const std::string text = patched("    output: @OUT@/cap1\n", "    antennas: [ant1, antt2]\n");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  // Also: cap1 takes ant1 only, so nobody takes ant2 and ant3 of its groups.
  ASSERT_EQ(r.problems.size(), 3u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[2]),
            "plan.yaml:26:22: hosts[0].antennas[1]: 'antt2' is not the name of an antenna in "
            "streams.antennas; did you mean 'ant2'?");
}

TEST_F(FleetPlan, UnknownKeyInAHostEntry) {
  const PlanResult r =
      load_plan_string(patched("  - name: cap2\n", "  - name: cap2\n    outptu: /x\n"), "p.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "p.yaml:29:5: hosts[1].outptu: unknown key 'outptu'; did you mean 'output'?");
}

TEST_F(FleetPlan, UnknownKeysInFleetAndAtTheTop) {
  const PlanResult r =
      load_plan_string(patched("  name: lab\n", "  name: lab\n  nmae: x\nhost: []\n"), "p.yaml");
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "fleet.nmae");
  EXPECT_EQ(r.problems[1].line, 4);
  EXPECT_EQ(r.problems[1].message, "unknown key 'host'; did you mean 'hosts'?");
}

TEST_F(FleetPlan, CaptureInterfacesInTheCommonPart) {
  const std::string text = patched(
      "  ring_depth: 1024\n",
      "  ring_depth: 1024\n  interfaces:\n    - { name: eth9, groups: [239.1.1.1:1000] }\n");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].line, line_of(text, "  interfaces:\n    - { name: eth9"));
  EXPECT_EQ(r.problems[0].key_path, "capture.interfaces");
  // The hosts' own interfaces are what each run file has.
  EXPECT_EQ(group_texts(load_back(r.plan.hosts[0])),
            (Names{"eth1/239.17.0.1:36001", "eth1/239.17.0.2:36001"}));
}

TEST_F(FleetPlan, BadHostInterfaceValuesPointIntoTheHostEntry) {
  std::string text = patched("        capture_cpu: 2\n", "        capture_cpu: \"x\"\n");
  text.replace(text.find("port: 36001 }"), 13, "port: 0 }");
  text.replace(text.find("239.17.0.4:36001"), 16, "10.0.0.4:36001");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_EQ(r.problems.size(), 3u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "plan.yaml:32:36: hosts[1].interfaces[0].groups[1].address: host cap2: 10.0.0.4 is "
            "not a multicast group (224.0.0.0/4)");
  EXPECT_EQ(r.problems[1].line, 37);
  EXPECT_EQ(r.problems[1].column, 22);
  EXPECT_EQ(r.problems[1].key_path, "hosts[2].interfaces[0].capture_cpu");
  EXPECT_TRUE(r.problems[1].message.starts_with("host cap3: ")) << r.problems[1].message;
  EXPECT_EQ(r.problems[2].line, 40);
  EXPECT_EQ(r.problems[2].key_path, "hosts[2].interfaces[0].groups[1].port");
  EXPECT_EQ(r.problems[2].message, "host cap3: 0 is too small (at least 1)");
}

TEST_F(FleetPlan, BadCommonValueIsReportedOnce) {
  const PlanResult r = load_plan_string(patched("rotate: 1GiB", "rotate: 4GB"), "plan.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].file, "plan.yaml");
  EXPECT_EQ(r.problems[0].line, 17);
  EXPECT_EQ(r.problems[0].column, 11);
  EXPECT_EQ(r.problems[0].key_path, "output.rotate");
  EXPECT_TRUE(r.problems[0].message.starts_with("'4GB'")) << r.problems[0].message;
}

// The loader's messages that name another line name the plan's.
TEST_F(FleetPlan, LinesInMessagesAreThePlans) {
  const PlanResult r = load_plan_string(
      patched("{ name: ant3, source: 192.0.2.23 }", "{ name: ant1, source: 192.0.2.23 }"),
      "plan.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].line, 14);
  EXPECT_EQ(r.problems[0].key_path, "streams.antennas[2].name");
  EXPECT_EQ(r.problems[0].message, "duplicate antenna 'ant1' (first at line 12)");
}

// A common value that is wrong for some hosts only is named with them.
TEST_F(FleetPlan, CommonProblemOfSomeHostsNamesThem) {
  std::string text = patched("  rotate: 1GiB\n", "  rotate: 1GiB\n  writer_threads: 7\n");
  text.replace(text.find("239.17.0.2:36001]"), 17, "239.17.0.2:36001, 239.17.0.7:36001]");
  const PlanResult r = load_plan_string(text, "plan.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "plan.yaml:18:19: output.writer_threads: hosts cap2 and cap3: 7 writer threads, but "
            "this run has 6 streams to share out (a ring has one writer); at most 6");
  ASSERT_EQ(r.plan.hosts.size(), 3u);  // cap1's 9 streams can keep 7 writer threads busy
}

TEST_F(FleetPlan, YamlSyntaxError) {
  const PlanResult r = load_plan_string("fleet:\n  name: [lab\nhosts: []\n", "plan.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_GT(r.problems[0].line, 1);
  EXPECT_TRUE(r.problems[0].message.starts_with("not valid YAML: ")) << r.problems[0].message;
}

TEST_F(FleetPlan, MissingFleetName) {
  const PlanResult r = load_plan_string(patched("  name: lab\n", "  redundant: []\n"), "p.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].line, 2);
  EXPECT_EQ(r.problems[0].key_path, "fleet.name");
  EXPECT_TRUE(r.problems[0].message.starts_with("missing (required)")) << r.problems[0].message;
}

TEST_F(FleetPlan, MissingSectionsAndEmptyHosts) {
  const PlanResult r = load_plan_string("run: {name: x}\nhosts: []\n", "p.yaml");
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "p.yaml:1:1: fleet: missing (required); a map "
            "with the fleet's name");
  EXPECT_EQ(config::format_problem(r.problems[1]), "p.yaml:2:8: hosts: needs at least one host");
}

// Thousands of antennas, shared out by name between hosts that listen to the same groups.
TEST_F(FleetPlan, ThousandsOfAntennas) {
  constexpr int kAntennas = 2000;
  constexpr int kHosts = 4;
  std::string text = with_out(
      "fleet: {name: big}\nrun: {name: big}\ncapture: {backend: pcap, poll_mode: event}\n"
      "output: {directory: @OUT@}\nstreams:\n  antennas:\n");
  for (int i = 0; i < kAntennas; ++i)
    text += fmt::format("    - {{ name: a{}, source: 10.1.{}.{} }}\n", i, i / 200, 1 + i % 200);
  text += "hosts:\n";
  for (int h = 0; h < kHosts; ++h) {
    text += fmt::format(
        "  - name: cap{}\n    interfaces: [{{ name: eth1, groups: [239.17.0.1:36001, "
        "239.17.0.2:36001] }}]\n    antennas: [",
        h);
    for (int i = h; i < kAntennas; i += kHosts)
      text += fmt::format("{}a{}", i == h ? "" : ", ", i);
    text += "]\n";
  }
  const PlanResult r = load_plan_string(text, "big.yaml");
  ASSERT_TRUE(r.ok()) << all_problems(r);
  ASSERT_EQ(r.plan.hosts.size(), std::size_t{kHosts});
  for (int h = 0; h < kHosts; ++h) {
    const Names names = antenna_names(load_back(r.plan.hosts[h]));
    ASSERT_EQ(names.size(), std::size_t{kAntennas / kHosts});
    EXPECT_EQ(names.front(), fmt::format("a{}", h));
    EXPECT_EQ(names.back(), fmt::format("a{}", kAntennas - kHosts + h));
  }
}

// An alias inside its own anchor would repeat forever; the split stops and says so.
TEST_F(FleetPlan, EndlessAliasesAreRefused) {
  const PlanResult r =
      load_plan_string("fleet: {name: a}\nhosts: &h [ {name: c, interfaces: *h} ]\n", "p.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "hosts[0]");
  EXPECT_NE(r.problems[0].message.find("aliases"), std::string::npos) << r.problems[0].message;
}

// Without a capture section each host's run file still gets its interfaces, and what capture
// lacks is reported once, at the top of the plan.
TEST_F(FleetPlan, PlanWithoutCapture) {
  const PlanResult r = load_plan_string(
      patched("capture:\n  backend: pcap\n  poll_mode: event\n  ring_depth: 1024\n", ""),
      "plan.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(config::format_problem(r.problems[0]),
            "plan.yaml:1:1: capture.backend: missing (required); one of verbs, pcap, pcap-file");
}

TEST_F(FleetPlan, LoadsFromAFile) {
  const std::string path = (out_ / "plan.yaml").string();
  std::ofstream(path) << plan();
  const PlanResult r = load_plan_file(path);
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.plan.hosts.size(), 3u);
  EXPECT_NE(r.plan.hosts[0].run_file.find("split from " + path), std::string::npos);

  const PlanResult dir = load_plan_file(out_.string());
  ASSERT_EQ(dir.problems.size(), 1u);
  EXPECT_EQ(dir.problems[0].line, 0);
  EXPECT_NE(dir.problems[0].message.find("not a regular file"), std::string::npos);
  EXPECT_FALSE(load_plan_file((out_ / "missing.yaml").string()).ok());
}

}  // namespace
}  // namespace rocecap::fleet
