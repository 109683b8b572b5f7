// caftx-drill (docs/drills.md): its verdict logic and drill files as
// functions, then the tool as a user runs it — against a cluster started by
// tools/local-cluster.sh (the README's path) and against clusters it starts
// itself with --local — with node kills, pauses, cuts, component kills at
// fault points and a paused producer. Each run must end clean (exit 0,
// `anomalies` empty) with every fault injected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "../node/node_process.hpp"
#include "tools/drill/drill.hpp"
#include "tools/drill/workload.hpp"

namespace caftx::testing {
namespace {

using namespace std::chrono_literals;
using drill::anomaly;

std::vector<std::string> names(const std::vector<anomaly>& as) {
  std::vector<std::string> out;
  for (auto& a : as)
    out.push_back(a.name);
  return out;
}

TEST(DrillVerdict, BankAnomaliesNameEachBrokenInvariant) {
  // Two whole transfers: balanced.
  EXPECT_TRUE(drill::bank_anomalies({"1|7|0|-5", "2|7|3|5", "3|8|1|-9", "4|8|2|9"}).empty());
  // A transfer whose credit is missing: money vanished, and a half transfer.
  EXPECT_EQ(names(drill::bank_anomalies({"1|7|0|-5", "2|7|3|5", "3|8|1|-9"})),
            (std::vector<std::string>{"bank_total_changed", "partial_transfer"}));
  // A leg read twice is named once and not counted again.
  EXPECT_EQ(names(drill::bank_anomalies({"1|7|0|-5", "2|7|3|5", "2|7|3|5"})),
            (std::vector<std::string>{"duplicate_leg"}));
  EXPECT_EQ(names(drill::bank_anomalies({"hello"})),
            (std::vector<std::string>{"malformed_record"}));
  auto total = drill::bank_anomalies({"1|7|0|-5", "2|7|3|6"});
  ASSERT_EQ(total.size(), 1u);
  EXPECT_EQ(total[0].message, "the committed balances add up to 1, not 0, over 1 transfers");
}

TEST(DrillFile, ReadsAScheduleSortedByTime) {
  temp_dir tmp{"drillfile"};
  auto path = tmp.path() + "/drill.json";
  std::ofstream{path} << R"({"workload": "idempotent", "seed": 9, "duration_s": 30,
    "faults": [{"fault": "cut-peer", "at_s": 12, "node": 2, "peer": 3, "hold_s": 4},
               {"fault": "kill", "at_s": 5.5}]})";
  drill::drill_options o;
  ASSERT_TRUE(drill::read_drill_file(path, o).ok());
  EXPECT_EQ(o.workload, drill::workload_kind::idempotent);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.duration, 30s);
  ASSERT_EQ(o.schedule.size(), 2u);
  EXPECT_EQ(o.schedule[0].kind, drill::fault_kind::kill);
  EXPECT_EQ(o.schedule[0].at_ms, 5500);
  EXPECT_EQ(o.schedule[0].node, -1);
  EXPECT_EQ(o.schedule[1].kind, drill::fault_kind::cut_peer);
  EXPECT_EQ(o.schedule[1].node, 2);
  EXPECT_EQ(o.schedule[1].peer, 3);
  EXPECT_EQ(o.schedule[1].hold_ms, 4000);
}

TEST(DrillFile, BadFilesNameTheFileAndTheLineOrKey) {
  temp_dir tmp{"drillfile"};
  auto path = tmp.path() + "/drill.json";
  auto error_of = [&](const std::string& text) {
    std::ofstream{path, std::ios::trunc} << text;
    drill::drill_options o;
    auto st = drill::read_drill_file(path, o);
    EXPECT_EQ(st.code(), error_code::invalid_config) << text;
    return st.message();
  };
  EXPECT_EQ(error_of("{\n  \"seed\": 1,\n  \"workload\" \"bank\"\n}").rfind(path + ":3: not JSON", 0),
            0u);
  EXPECT_EQ(error_of(R"({"speed": 1})"),
            path + ": speed: unknown key (workload, seed, duration_s, hold_s, cooldown_s, "
                   "settle_s, producers, partitions, accounts, faults)");
  EXPECT_EQ(error_of(R"({"faults": [{"fault": "reboot"}]})"),
            path + ": faults[0].fault: 'reboot' is not one of " + drill::fault_names());
  EXPECT_EQ(error_of(R"({"duration_s": -1})"),
            path + ": duration_s: a number of seconds in [0, 86400]");
  EXPECT_EQ(error_of(R"({"faults": [{"fault": "kill", "node": "two"}]})"),
            path + ": faults[0].node: an integer in [0, 2147483647]");
  EXPECT_EQ(error_of("[]"), path + ": a drill file is one JSON object");
}

// -- the tool ------------------------------------------------------------------

struct run_result {
  int exit = -1;
  std::string out;
  std::string err;
};

run_result run(const std::string& dir, const std::string& name, std::vector<std::string> argv,
               std::chrono::milliseconds deadline = 600s) {
  child_process p{dir, name, std::move(argv)};
  auto st = p.wait_exit(deadline);
  return {exit_code(st), p.out(), p.err()};
}

std::vector<std::string> drill_args(std::vector<std::string> more) {
  std::vector<std::string> a{CAFTX_DRILL_BINARY, "--node-binary", CAFTX_NODE_BINARY};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// A clean report with every fault injected and recovered from.
void expect_clean(const run_result& r, size_t faults) {
  ASSERT_EQ(r.exit, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "clean");
  EXPECT_TRUE(j["anomalies"].empty()) << j["anomalies"].dump(2);
  ASSERT_EQ(j["faults"].size(), faults) << r.out;
  for (auto& f : j["faults"]) {
    EXPECT_FALSE(f.contains("error")) << f.dump();
    EXPECT_GE(f["injected_ms"].get<int64_t>(), 0) << f.dump();
    EXPECT_GE(f["recovery_ms"].get<int64_t>(), 0) << f.dump();
  }
  EXPECT_GT(j["records"]["acknowledged"].get<int64_t>(), 0);
}

// No process whose command line names `dir` is left.
bool processes_gone(const std::string& dir) {
  for (auto& e : std::filesystem::directory_iterator("/proc")) {
    auto cmdline = read_file(e.path().string() + "/cmdline");
    if (cmdline.find(dir) != std::string::npos)
      return false;
  }
  return true;
}

TEST(Drill, BadInputExitsTwoBeforeTouchingACluster) {
  temp_dir tmp{"bad"};
  auto r = run(tmp.path(), "workload", drill_args({"--local", "3", "--workload", "lottery"}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "caftx-drill: --workload: 'lottery' is not one of northwind, bank, "
                   "idempotent\n");
  r = run(tmp.path(), "faults", drill_args({"--local", "3", "--faults", "kill,reboot"}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "caftx-drill: --faults: 'reboot' is not one of " + drill::fault_names() + "\n");
  r = run(tmp.path(), "nowhere", drill_args({"--workload", "bank"}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "caftx-drill: give --bootstrap-servers, --cluster-dir or --local N\n");
  // A process fault needs the processes: refused before any connection.
  r = run(tmp.path(), "processes",
          drill_args({"--bootstrap-servers", "127.0.0.1:1", "--faults", "cut-peer,pause"}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "caftx-drill: fault pause signals node processes: give --local N, or "
                   "--cluster-dir with the directory of tools/local-cluster.sh\n");
  r = run(tmp.path(), "both", drill_args({"--local", "3", "--bootstrap-servers", "x:1"}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.out, "");
  r = run(tmp.path(), "dir-and-servers",
          drill_args({"--cluster-dir", tmp.path(), "--bootstrap-servers", "x:1"}));
  EXPECT_EQ(r.exit, 2);
  r = run(tmp.path(), "no-faults", drill_args({"--local", "3", "--faults", ""}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "caftx-drill: --faults: give at least one fault name\n");
  r = run(tmp.path(), "nan", drill_args({"--local", "3", "--hold-s", "nan"}));
  EXPECT_EQ(r.exit, 2);
  // Faults that cannot work with the workload, refused before a cluster
  // is started.
  r = run(tmp.path(), "untransactional",
          drill_args({"--local", "3", "--workload", "idempotent", "--faults", "producer-pause"}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "caftx-drill: fault producer-pause needs a workload with transactions (bank "
                   "or northwind)\n");
  auto file = tmp.path() + "/self.json";
  std::ofstream{file} << R"({"faults": [{"fault": "cut-peer", "node": 1, "peer": 1}]})";
  r = run(tmp.path(), "self", drill_args({"--local", "3", "--drill-file", file}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "caftx-drill: fault cut-peer cuts node 1 off from itself\n");
  r = run(tmp.path(), "directory", drill_args({"--local", "3", "--drill-file", tmp.path()}));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "caftx-drill: " + tmp.path() + ": a directory, not a drill file\n");
}

// The README's path: a cluster from tools/local-cluster.sh with drills on,
// and the drill given its directory, so that it may kill, stop, pause and
// restart the nodes the script started.
TEST(Drill, BankOnAScriptClusterSurvivesEveryFault) {
  temp_dir tmp{"script"};
  auto dir = tmp.path() + "/cluster";
  auto extra = tmp.path() + "/extra.properties";
  std::ofstream{extra} << "caftx.drills.enable=true\n"
                          "zookeeper.session.timeout.ms=6000\n"
                          "default.replication.factor=3\n"
                          "min.insync.replicas=2\n"
                          "transaction.state.log.num.partitions=6\n"
                          "offsets.topic.num.partitions=6\n"
                          "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000\n"
                          "caftx.middleman.heartbeat.interval.ms=200\n"
                          "caftx.middleman.connection.timeout.ms=2000\n";
  // Three consecutive free ports for the nodes (the script numbers them).
  auto bindable = [](uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    ::close(fd);
    return ok;
  };
  uint16_t base = 0;
  for (int attempt = 0; attempt < 50 && base == 0; ++attempt) {
    auto p = free_port();
    if (p < 65000 && bindable(p + 1) && bindable(p + 2))
      base = p;
  }
  ASSERT_NE(base, 0);
  // The nodes' Kafka listeners: three more consecutive free ports.
  uint16_t kafka_base = 0;
  for (int attempt = 0; attempt < 50 && kafka_base == 0; ++attempt) {
    auto p = free_port();
    if (p < 65000 && (p > base + 2 || p + 2 < base) && bindable(p + 1) && bindable(p + 2))
      kafka_base = p;
  }
  ASSERT_NE(kafka_base, 0);
  auto env = std::vector<std::string>{
    "/usr/bin/env", "CAFTX_NODE=" CAFTX_NODE_BINARY, "CAFTX_METRICS_PORT=0",
    "CAFTX_ZK_PORT=" + std::to_string(free_port()),
    "CAFTX_BASE_PORT=" + std::to_string(base), "CAFTX_KAFKA_PORT=" + std::to_string(kafka_base),
    "CAFTX_NODE_PROPERTIES=" + extra, "bash", CAFTX_LOCAL_CLUSTER_SCRIPT};
  struct stop_guard {
    std::vector<std::string> argv;
    std::string dir;
    ~stop_guard() {
      argv.push_back("stop");
      argv.push_back(dir);
      run(dir + "/..", "stop", argv, 120s);
    }
  } guard{env, dir};
  auto start = env;
  start.insert(start.end(), {"start", "3", dir});
  auto started = run(tmp.path(), "start", start, 180s);
  ASSERT_EQ(started.exit, 0) << started.out << started.err;
  auto k = [&](int i) { return "127.0.0.1:" + std::to_string(kafka_base + i); };
  EXPECT_NE(started.out.find("Kafka clients: bootstrap.servers=" + k(0) + "," + k(1) + "," + k(2)),
            std::string::npos)
    << started.out;

  auto r = run(tmp.path(), "drill",
               drill_args({"--cluster-dir", dir, "--workload", "bank", "--faults",
                           "kill,pause,cut-peer,cut-zookeeper,kill-coordinator,kill-leader,"
                           "kill-group-coordinator,producer-pause,shutdown",
                           "--duration-s", "20", "--hold-s", "3", "--cooldown-s", "10", "--seed",
                           "3", "--json"}));
  expect_clean(r, 9);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["transactions"]["committed"].get<int64_t>(), 0);
  EXPECT_GT(j["transactions"]["aborted"].get<int64_t>(), 0);
  // The paused producer outlived its transaction timeout: the coordinator
  // aborted its transaction and fenced it.
  EXPECT_GE(j["transactions"]["producers_fenced"].get<int64_t>(), 1);
  auto checks = j["checks"].get<std::vector<std::string>>();
  for (auto rule : {"lost_write", "duplicate_write", "aborted_read", "bank_total_changed",
                    "partial_transfer", "stuck_lso", "no_progress"})
    EXPECT_NE(std::find(checks.begin(), checks.end(), rule), checks.end()) << rule;
  // The replicas' stores are read only from a cluster the drill stopped.
  EXPECT_EQ(std::find(checks.begin(), checks.end(), "replica_divergence"), checks.end());
  // The cluster the drill attached to still runs, with every node up.
  auto status = env;
  status.insert(status.end(), {"status", dir});
  auto s = run(tmp.path(), "status", status, 30s);
  EXPECT_EQ(s.out.find("stopped"), std::string::npos) << s.out;
}

TEST(Drill, IdempotentOnALocalClusterLeavesNothingBehind) {
  temp_dir tmp{"idempotent"};
  auto r = run(tmp.path(), "drill",
               drill_args({"--local", "3", "--workload", "idempotent", "--faults",
                           "kill,kill-leader,cut-peer", "--duration-s", "15", "--hold-s", "3",
                           "--cooldown-s", "8", "--json"}));
  expect_clean(r, 3);
  auto j = nlohmann::json::parse(r.out);
  auto checks = j["checks"].get<std::vector<std::string>>();
  for (auto rule : {"lost_write", "duplicate_write", "ack_offset_mismatch", "non_dense_offsets",
                    "replica_divergence", "no_progress"})
    EXPECT_NE(std::find(checks.begin(), checks.end(), rule), checks.end()) << rule;
  auto dir = j["cluster_dir"].get<std::string>();
  ASSERT_FALSE(dir.empty());
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_TRUE(processes_gone(dir));
}

TEST(Drill, NorthwindOnALocalClusterGivesTheSequentialResult) {
  temp_dir tmp{"northwind"};
  auto r = run(tmp.path(), "drill",
               drill_args({"--local", "3", "--workload", "northwind", "--faults",
                           "kill-group-coordinator,kill", "--duration-s", "10", "--hold-s", "3",
                           "--cooldown-s", "5", "--json"}));
  ASSERT_EQ(r.exit, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["anomalies"].empty()) << j["anomalies"].dump(2);
  auto checks = j["checks"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(checks.begin(), checks.end(), "northwind_result_differs"), checks.end());
  EXPECT_GT(j["transactions"]["committed"].get<int64_t>(), 0);
  for (auto& f : j["faults"])
    EXPECT_FALSE(f.contains("error")) << f.dump();
}

} // namespace
} // namespace caftx::testing
