// Table of broken run files: each must be refused with the right line, key path and message.
#include <gtest/gtest.h>

#include <string>

#include "config/loader.hpp"
#include "config_test_support.hpp"

namespace rocecap::config {
namespace {

using testing::fixed_host;
using testing::patched;

struct BadCase {
  const char* name;
  const char* from;  // text of the base config to replace (exactly once)
  const char* to;
  int line;
  const char* key_path;
  const char* message;  // substring of the problem's message
  bool only = true;     // the problem is the only one
};

const BadCase kCases[] = {
    {"size_decimal_unit", "rotate: 1GiB", "rotate: 4GB", 27, "output.rotate",
     "'4GB' is not a size; use e.g. 4GiB"},
    {"size_too_small", "rotate: 1GiB", "rotate: 512KiB", 27, "output.rotate",
     "512KiB is too small (at least 1 MiB)"},
    {"size_garbage", "rotate: 1GiB", "rotate: big", 27, "output.rotate", "'big' is not a size"},
    {"duration_no_unit", "duration: 10s", "duration: 10", 3, "run.duration",
     "'10' is not a duration; use e.g. 30s"},
    {"duration_zero", "duration: 10s", "duration: 0s", 3, "run.duration", "longer than 0s"},
    {"start_not_utc", "duration: 10s", "duration: 10s\n  start: 2026-11-28 02:00", 4, "run.start",
     "is not a UTC time on a whole second"},
    {"duration_unit_twice", "duration: 10s", "duration: 1h1h", 3, "run.duration",
     "is not a duration"},
    {"packets_zero", "duration: 10s", "packets: 0", 3, "run.packets", "too small (at least 1)"},
    {"run_name_slash", "name: test-run", "name: bad/name", 2, "run.name",
     "'bad/name' is not a valid name"},
    {"run_name_missing", "  name: test-run\n", "", 2, "run.name", "missing (required)"},
    {"backend_unknown", "backend: verbs", "backend: rdma", 5, "capture.backend",
     "'rdma' is not one of verbs, pcap, pcap-file"},
    {"backend_typo", "backend: verbs", "backend: verb", 5, "capture.backend",
     "did you mean 'verbs'?"},
    {"ring_not_power_of_two", "ring_depth: 1024", "ring_depth: 1000", 6, "capture.ring_depth",
     "1000 is not a power of two"},
    {"ring_too_deep_for_verbs", "ring_depth: 1024", "ring_depth: 65536", 6, "capture.ring_depth",
     "too large for backend verbs (at most 32768"},
    {"ring_not_a_number", "ring_depth: 1024", "ring_depth: -4", 6, "capture.ring_depth",
     "'-4' is not a whole number"},
    {"header_split_below_64", "header_split: 128", "header_split: 32", 7, "capture.header_split",
     "32 is too small (at least 64 B)"},
    {"header_split_no_codif_header", "header_split: 128", "header_split: 96", 7,
     "capture.header_split", "cannot hold the Ethernet, IPv4, UDP and CODIF headers (106 bytes)"},
    {"cq_too_small", "  header_split: 128\n", "  header_split: 128\n  cq_size: 1024\n", 8,
     "capture.cq_size", "1024 is smaller than the 4096 receive slots on device mlx5_0"},
    // libmlx5 rounds 4194304 + 1 up to 2^23 entries: more than any ConnectX's max_cqe.
    {"cq_too_large", "  header_split: 128\n", "  header_split: 128\n  cq_size: 4194304\n", 8,
     "capture.cq_size", "4194304 is too large (at most 4194303)"},
    {"group_not_multicast", "address: 239.1.0.1", "address: 10.0.0.1", 13,
     "capture.interfaces[0].groups[0].address", "10.0.0.1 is not a multicast group"},
    {"group_link_local", "address: 239.1.0.1", "address: 224.0.0.5", 13,
     "capture.interfaces[0].groups[0].address", "reserved for local network control"},
    {"group_bad_octet", "address: 239.1.0.1", "address: 239.1.0.300", 13,
     "capture.interfaces[0].groups[0].address", "'239.1.0.300' is not an IPv4 address"},
    {"port_zero", "port: 36001", "port: 0", 14, "capture.interfaces[0].groups[0].port",
     "0 is too small (at least 1)"},
    {"port_too_big", "port: 36001", "port: 70000", 14, "capture.interfaces[0].groups[0].port",
     "70000 is too large (at most 65535)"},
    {"group_duplicate", "address: 239.1.0.2\n          port: 36002",
     "address: 239.1.0.1\n          port: 36001", 15, "capture.interfaces[0].groups[1]",
     "duplicate group 239.1.0.1:36001 (first at line 13)"},
    {"interface_duplicate", "          port: 36002\n",
     "          port: 36002\n    - name: eth0\n      groups: [239.1.0.9:36009]\n", 17,
     "capture.interfaces[1].name", "duplicate interface 'eth0' (first at line 9)"},
    {"interface_name_too_long", "name: eth0", "name: enp65s0f0np0abcdef", 9,
     "capture.interfaces[0].name", "is not a valid name: 1 to 15 characters"},
    {"capture_cpu_absent", "capture_cpu: 1", "capture_cpu: 99", 11,
     "capture.interfaces[0].capture_cpu", "CPU 99 is not usable on this host"},
    {"writer_on_capture_cpu", "writer_cpu: 2", "writer_cpu: 1", 29, "output.writer_cpu",
     "CPU 1 already runs the busy-polling capture thread of eth0 (line 11)"},
    {"writer_pool_on_capture_cpu", "writer_cpu: 2", "writer_cpus: [2, 1]", 29,
     "output.writer_cpus[1]",
     "CPU 1 already runs the busy-polling capture thread of eth0 (line 11)"},
    {"writer_pool_cpu_absent", "writer_cpu: 2", "writer_cpus: [2, 99]", 29, "output.writer_cpus[1]",
     "CPU 99 is not usable on this host"},
    {"writer_threads_too_many", "writer_cpu: 2", "writer_threads: 1000", 29,
     "output.writer_threads", "1000 is too large (at most 256)"},
    {"device_with_pcap", "backend: verbs", "backend: pcap", 10, "capture.interfaces[0].device",
     "only used with backend verbs (this run uses pcap)"},
    {"pcap_reader_with_verbs", "  ring_depth: 1024\n",
     "  pcap_reader: packet_ring\n  ring_depth: 1024\n", 6, "capture.pcap_reader",
     "only used with backend pcap (this run uses verbs)"},
    {"pcap_file_missing", "backend: verbs", "backend: pcap-file", 5, "capture.pcap_file",
     "missing (required with backend pcap-file)", false},
    {"antenna_duplicate_name", "name: a2", "name: a1", 22, "streams.antennas[1].name",
     "duplicate antenna 'a1' (first at line 20)"},
    {"antenna_duplicate_source", "source: 192.0.2.2", "source: 192.0.2.1", 23,
     "streams.antennas[1].source", "192.0.2.1 is already the source of antenna 'a1' (line 20)"},
    {"antenna_multicast_source", "source: 192.0.2.1", "source: 239.0.0.1", 21,
     "streams.antennas[0].source", "239.0.0.1 cannot be a packet source"},
    {"sync_unknown_layout", "  format: codif\n", "  format: codif\n  sync: [0x12345678]\n", 19,
     "streams.sync[0]", "the layout of sync word 0x12345678 is not known"},
    {"sync_bad_hex", "  format: codif\n", "  format: codif\n  sync: [0xFEEDCAFG]\n", 19,
     "streams.sync[0]", "'0xFEEDCAFG' is not a 32-bit hex word"},
    {"udp_with_codifhdr", "format: codif", "format: udp", 26, "output.formats",
     "codifhdr needs streams.format codif"},
    {"format_unknown", "formats: [raw, codifhdr]", "formats: [raw, mp4]", 26, "output.formats[1]",
     "'mp4' is not one of raw, codifhdr, pcap"},
    {"format_twice", "formats: [raw, codifhdr]", "formats: [raw, raw]", 26, "output.formats[1]",
     "listed twice"},
    {"formats_not_a_list", "formats: [raw, codifhdr]", "formats: raw", 26, "output.formats",
     "expected a list, found 'raw'"},
    {"directory_relative", "directory: /tmp/rocecap-test", "directory: data", 25,
     "output.directory", "'data' is relative; use an absolute path"},
    {"directory_and_directories", "  reorder_window: 8\n",
     "  reorder_window: 8\n  directories: [/tmp/rocecap-a, /tmp/rocecap-b]\n", 29,
     "output.directories", "give output.directory (one target) or output.directories"},
    {"directories_relative", "directory: /tmp/rocecap-test", "directories: [/tmp/rocecap-a, data]",
     25, "output.directories[1]", "'data' is relative; use an absolute path"},
    {"directories_twice", "directory: /tmp/rocecap-test",
     "directories: [/tmp/rocecap-a, /tmp/rocecap-a]", 25, "output.directories[1]", "listed twice"},
    {"directories_nested", "directory: /tmp/rocecap-test",
     "directories: [/tmp/rocecap-a, /tmp/rocecap-a/b]", 25, "output.directories[1]",
     "targets must not nest"},
    {"directories_empty", "directory: /tmp/rocecap-test", "directories: []", 25,
     "output.directories", "needs at least one directory"},
    {"template_escapes", "  reorder_window: 8\n",
     "  reorder_window: 8\n  name_template: \"../{antenna}_{group}.{seq:04}.{ext}\"\n", 29,
     "output.name_template", "must not contain '..'"},
    {"template_absolute", "  reorder_window: 8\n",
     "  reorder_window: 8\n  name_template: \"/data/{antenna}_{group}.{seq:04}.{ext}\"\n", 29,
     "output.name_template", "not an absolute path"},
    {"template_without_seq", "  reorder_window: 8\n",
     "  reorder_window: 8\n  name_template: \"{antenna}_{group}.{ext}\"\n", 29,
     "output.name_template", "has no {seq}"},
    {"template_unknown_placeholder", "  reorder_window: 8\n",
     "  reorder_window: 8\n  name_template: \"{antena}_{group}.{seq}.{ext}\"\n", 29,
     "output.name_template", "unknown placeholder '{antena}'"},
    {"template_collision", "  reorder_window: 8\n",
     "  reorder_window: 8\n  name_template: \"{run}/{antenna}.{seq:04}.{ext}\"\n", 29,
     "output.name_template", "would both write 'test-run/a1.0000.codif'"},
    {"reorder_window_too_big", "reorder_window: 8", "reorder_window: 2000", 28,
     "output.reorder_window", "2000 is too large (at most 1024)"},
    {"reorder_window_exceeds_ring", "reorder_window: 8", "reorder_window: 1024", 28,
     "output.reorder_window", "1024 frames do not fit in a ring of 1024 slots"},
    {"bool_yes", "  reorder_window: 8\n", "  reorder_window: 8\n  fill_gaps: yes\n", 29,
     "output.fill_gaps", "'yes' is not true or false"},
    {"listen_without_port", "listen: 127.0.0.1:9464", "listen: 127.0.0.1", 31, "metrics.listen",
     "'127.0.0.1' is not address:port"},
    {"listen_port_zero", "listen: 127.0.0.1:9464", "listen: 127.0.0.1:0", 31, "metrics.listen",
     "port must be 1..65535"},
    {"listen_is_a_map", "listen: 127.0.0.1:9464", "listen: {host: x}", 31, "metrics.listen",
     "expected a single value, found a map"},
    {"log_level_unknown", "level: info", "level: verbose", 33, "logging.level",
     "'verbose' is not one of trace, debug, info, warn, error, critical, off"},
    {"unknown_key_suggestion", "rotate: 1GiB", "rotation: 1GiB", 27, "output.rotation",
     "unknown key 'rotation'; did you mean 'rotate'?"},
    {"unknown_section", "logging:\n", "loging:\n", 32, "loging",
     "unknown key 'loging'; did you mean 'logging'?"},
    {"duplicate_key", "  rotate: 1GiB\n", "  rotate: 1GiB\n  rotate: 2GiB\n", 28, "output.rotate",
     "duplicate key 'rotate' (first at line 27)"},
    // A NUL in a name template passed every check and made two streams write one file.
    {"template_nul", "  reorder_window: 8\n",
     "  reorder_window: 8\n  name_template: \"{run}/{antenna}\\0{group}.{seq}.{ext}\"\n", 29,
     "output.name_template", "contains control character 0x00 at character 16"},
    {"template_tab", "  reorder_window: 8\n",
     "  reorder_window: 8\n  name_template: \"{antenna}\\t{group}.{seq}.{ext}\"\n", 29,
     "output.name_template", "contains control character 0x09 at character 10"},
    {"pcap_template_escape", "  reorder_window: 8\n",
     "  reorder_window: 8\n  pcap_name_template: \"{interface}\\e.{seq}.{ext}\"\n", 29,
     "output.pcap_name_template", "'{interface}\\x1B.{seq}.{ext}' contains control character 0x1B"},
    {"directory_newline", "directory: /tmp/rocecap-test", "directory: \"/tmp/a\\nb\"", 25,
     "output.directory", "contains control character 0x0A at character 7"},
    {"antenna_loopback_source", "source: 192.0.2.1", "source: 127.0.0.1", 21,
     "streams.antennas[0].source", "127.0.0.1 is a loopback address"},
    {"antenna_loopback_net_source", "source: 192.0.2.2", "source: 127.3.2.1", 23,
     "streams.antennas[1].source", "127.3.2.1 is a loopback address"},
    {"antenna_unspecified_source", "source: 192.0.2.1", "source: 0.0.0.0", 21,
     "streams.antennas[0].source", "0.0.0.0 cannot be a packet source"},
    {"max_frame_too_small", "  header_split: 128\n", "  header_split: 128\n  max_frame: 100\n", 8,
     "capture.max_frame", "100 is too small (at least 128 B)"},
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

class BadConfig : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfig, IsRefusedWithLineKeyAndMessage) {
  const BadCase& c = GetParam();
  const std::string text = patched(c.from, c.to);
  ASSERT_FALSE(text.empty()) << "test bug: '" << c.from << "' not found exactly once";
  const LoadResult result = load_string(text, "run.yaml", fixed_host());
  ASSERT_FALSE(result.ok());
  EXPECT_FALSE(result.config.has_value());
  const Problem* found = nullptr;
  for (const Problem& p : result.problems) {
    if (p.key_path == c.key_path) found = &p;
  }
  std::string all;
  for (const Problem& p : result.problems)
    all += format_problem(p) + "\n";
  ASSERT_NE(found, nullptr) << "no problem at " << c.key_path << "; got:\n" << all;
  EXPECT_EQ(found->file, "run.yaml");
  EXPECT_EQ(found->line, c.line) << all;
  EXPECT_GT(found->column, 0);
  EXPECT_NE(found->message.find(c.message), std::string::npos)
      << "expected '" << c.message << "' in '" << found->message << "'";
  if (c.only) {
    EXPECT_EQ(result.problems.size(), 1u) << all;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, BadConfig, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<BadCase>& param_info) {
                           return std::string(param_info.param.name);
                         });

TEST(BadConfigTable, HasAtLeastThirtyCases) {
  EXPECT_GE(std::size(kCases), 30u);
}

TEST(BadConfigTable, BaseConfigIsValid) {
  const LoadResult result = load_string(testing::kBaseConfig, "run.yaml", fixed_host());
  std::string all;
  for (const Problem& p : result.problems)
    all += format_problem(p) + "\n";
  EXPECT_TRUE(result.ok()) << all;
}

}  // namespace
}  // namespace rocecap::config
