// The Prometheus endpoint (docs/metrics.md): the HTTP server alone, then
// three caftx-node processes with metrics.listeners on ports of their own,
// scraped over HTTP during a transactional workload. The counters move by
// exactly what the workload did: commits and aborts summed over the
// nodes, the partition's high watermark at the expected end offset and its
// last-stable-offset lag 0 at quiescence, and a coordinator shard killed
// at a fault point counted as one restart of its component.
#include "cluster_fixture.hpp"

#include <httplib.h>

#include <cmath>

#include "runtime/metrics.hpp"
#include "tools/node/metrics_http.hpp"

namespace caftx::testing {
namespace {

// One scrape: series ("name{labels}" as written) -> value; empty when the
// endpoint did not answer 200.
using scrape_result = std::map<std::string, double>;

scrape_result parse_scrape(const std::string& text) {
  scrape_result out;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    auto space = line.rfind(' ');
    if (space == std::string::npos)
      continue;
    auto value = line.substr(space + 1);
    out[line.substr(0, space)] = value == "+Inf" ? HUGE_VAL : std::stod(value);
  }
  return out;
}

httplib::Result get(uint16_t port, const std::string& path) {
  httplib::Client cli{"127.0.0.1", port};
  cli.set_connection_timeout(std::chrono::seconds(2));
  cli.set_read_timeout(std::chrono::seconds(10));
  return cli.Get(path.c_str());
}

// The endpoint alone: text format at /metrics with Prometheus' content
// type, 404 elsewhere, a port in use refused naming metrics.listeners.
TEST(MetricsEndpoint, ServesTheRegistryAtSlashMetricsOnly) {
  auto reg = std::make_shared<metrics::registry>();
  metrics::family_def f{"caftx_test_total", "A test counter", metrics::metric_type::counter, {}};
  reg->get_counter(f, {{"a", "b"}}).inc(3);
  auto server = metrics_http_server::start(reg, "127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  auto port = (*server)->port();
  ASSERT_GT(port, 0);
  auto res = get(port, "/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(res->body, "# HELP caftx_test_total A test counter\n"
                       "# TYPE caftx_test_total counter\n"
                       "caftx_test_total{a=\"b\"} 3\n");
  reg->get_counter(f, {{"a", "b"}}).inc();
  EXPECT_EQ(parse_scrape(get(port, "/metrics")->body).at("caftx_test_total{a=\"b\"}"), 4);
  auto other = get(port, "/other");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  auto taken = metrics_http_server::start(reg, "127.0.0.1", port);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().code(), error_code::invalid_config);
  EXPECT_NE(taken.error().message().find("config 'metrics.listeners' = 'http://127.0.0.1:"
                                         + std::to_string(port) + "': cannot bind"),
            std::string::npos)
    << taken.error().message();
}

class Metrics : public Cluster {
protected:
  std::map<int32_t, uint16_t> metrics_ports;

  void SetUp() override {
    per_node = [this](int32_t id) {
      if (!metrics_ports.count(id))
        metrics_ports[id] = free_port();
      return std::map<std::string, std::string>{
        {"metrics.listeners", "http://127.0.0.1:" + std::to_string(metrics_ports[id])}};
    };
  }

  scrape_result scrape(int32_t id) {
    auto res = get(metrics_ports.at(id), "/metrics");
    if (!res || res->status != 200)
      return {};
    return parse_scrape(res->body);
  }

  // `series` on node `id` (-1 when absent).
  double value(int32_t id, const std::string& series) {
    auto s = scrape(id);
    auto i = s.find(series);
    return i == s.end() ? -1 : i->second;
  }

  // `series` summed over the running nodes (absent counts 0).
  double sum(const std::string& series) {
    double total = 0;
    for (auto id : running()) {
      auto s = scrape(id);
      if (auto i = s.find(series); i != s.end())
        total += i->second;
    }
    return total;
  }

  static std::string partition_series(const std::string& name, const topic_partition& tp) {
    return name + "{topic=\"" + tp.topic + "\",partition=\"" + std::to_string(tp.partition) + "\"}";
  }

  // Waits until the leader of `tp` reports high watermark `hw`, last
  // stable offset `hw` (lag 0) and every replica in its ISR; false (with
  // what it last saw in `seen`) after a minute.
  bool quiescent(const topic_partition& tp, double hw, std::string& seen) {
    return wait_until(
      [&] {
        auto leader = current_leader(tp).first;
        if (leader < 0)
          return false;
        auto s = scrape(leader);
        auto at = [&](const std::string& name) {
          auto i = s.find(partition_series(name, tp));
          return i == s.end() ? -1.0 : i->second;
        };
        seen = "node " + std::to_string(leader) + ": hw "
               + std::to_string(at("caftx_partition_high_watermark")) + ", lso "
               + std::to_string(at("caftx_partition_last_stable_offset")) + ", lso lag "
               + std::to_string(at("kafka_cluster_partition_laststableoffsetlag")) + ", isr "
               + std::to_string(at("kafka_cluster_partition_insyncreplicascount"));
        return at("caftx_partition_high_watermark") == hw
               && at("caftx_partition_last_stable_offset") == hw
               && at("kafka_cluster_partition_laststableoffsetlag") == 0
               && at("kafka_cluster_partition_insyncreplicascount") == 3
               && at("kafka_cluster_partition_underreplicated") == 0;
      },
      60s);
  }
};

constexpr const char* commits = "caftx_transaction_coordinator_commits_total";
constexpr const char* aborts = "caftx_transaction_coordinator_aborts_total";

// A transactional workload on three nodes: commits and aborts counted
// exactly once over the cluster, the partition quiescent at its expected
// end offset, requests timed per API, one ZooKeeper session connected per
// node and one controller; then the coordinator shard of the producer's
// transactional id killed after its PrepareCommit is durable (a fault
// drill that kills only that actor): its supervisor's restart counter goes
// from 0 to 1, and the transaction still counts as one commit.
TEST_F(Metrics, CountersMoveAsTheWorkloadDoes) {
  start_cluster(3, {{"default.replication.factor", "3"},
                    {"min.insync.replicas", "2"},
                    {"caftx.drills.enable", "true"}});
  topic_partition tp{"m", 0};
  create_topic(tp.topic, 1);
  ASSERT_GT(wait_leader_above(tp, -1).first, 0);
  auto [tid, c] = transactional_id_led_outside("metrics-", {});
  ASSERT_GT(c, 0);
  double commits_before = sum(commits), aborts_before = sum(aborts);

  producer p{patient_txn_props(tid)};
  p.init_transactions();
  for (int t = 0; t < 3; ++t) {
    p.begin_transaction();
    p.send({tp.topic, 0, "", "c" + std::to_string(t) + "a", {}, -1});
    p.send({tp.topic, 0, "", "c" + std::to_string(t) + "b", {}, -1});
    p.commit_transaction();
  }
  p.begin_transaction();
  p.send({tp.topic, 0, "", "aborted", {}, -1});
  p.flush();
  p.abort_transaction();

  // 3 × (2 records + a marker) + (1 record + a marker).
  std::string seen;
  EXPECT_TRUE(quiescent(tp, 11, seen)) << seen;
  EXPECT_TRUE(wait_until([&] { return sum(commits) - commits_before == 3; }, 30s))
    << sum(commits) - commits_before;
  EXPECT_TRUE(wait_until([&] { return sum(aborts) - aborts_before == 1; }, 30s))
    << sum(aborts) - aborts_before;
  auto leader = current_leader(tp).first;
  for (auto id : running()) {
    if (id == leader)
      continue;
    auto lag = partition_series("caftx_partition_follower_lag", tp);
    lag.insert(lag.size() - 1, ",follower=\"" + std::to_string(id) + "\"");
    EXPECT_TRUE(wait_until([&] { return value(leader, lag) == 0; }, 30s)) << lag;
  }
  EXPECT_EQ(sum("kafka_server_replicamanager_underreplicatedpartitions"), 0);
  EXPECT_GE(sum("kafka_network_requestmetrics_totaltimems_count{request=\"EndTxn\"}"), 4);
  EXPECT_GE(sum("kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"}"), 1);
  EXPECT_GE(sum("kafka_network_requestmetrics_totaltimems_count{request=\"InitProducerId\"}"), 1);
  EXPECT_GE(sum("kafka_network_requestmetrics_totaltimems_count{request=\"AddPartitionsToTxn\"}"),
            4);
  EXPECT_GE(sum("caftx_transaction_coordinator_transactions{state=\"CompleteAbort\"}"), 1);
  EXPECT_EQ(sum("caftx_transaction_coordinator_markers_in_flight"), 0);
  EXPECT_EQ(sum("kafka_controller_kafkacontroller_activecontrollercount"), 1);
  for (auto id : running())
    EXPECT_EQ(value(id, "caftx_zookeeper_session_state{state=\"connected\"}"), 1) << id;

  // The shard's restart, counted once.
  auto shard = partition_for(tid, internal_partitions);
  auto restarts = "caftx_supervisor_restarts_total{component=\"txn-coordinator-"
                  + std::to_string(shard) + "\"}";
  auto at = current_leader({transaction_state_topic, shard}).first;
  ASSERT_GT(at, 0);
  EXPECT_EQ(value(at, restarts), 0);
  {
    admin_client drill{client_props({}, {at})};
    auto armed = drill.drill_fault({"txn_coordinator.prepare_durable", "", -1, false, false});
    ASSERT_TRUE(armed.ok()) << armed.to_string();
  }
  p.begin_transaction();
  p.send({tp.topic, 0, "", "after-restart", {}, -1});
  p.commit_transaction();
  EXPECT_TRUE(wait_until([&] { return value(at, restarts) == 1; }, 30s))
    << value(at, restarts) << "\n"
    << log(at);
  EXPECT_TRUE(quiescent(tp, 13, seen)) << seen;
  EXPECT_TRUE(wait_until([&] { return sum(commits) - commits_before == 4; }, 30s))
    << sum(commits) - commits_before;
  EXPECT_EQ(sum(aborts) - aborts_before, 1);
  EXPECT_EQ(value(at, restarts), 1);
  EXPECT_EQ(read_committed({tp}, 7),
            (std::multiset<std::string>{"0:c0a", "0:c0b", "0:c1a", "0:c1b", "0:c2a", "0:c2b",
                                        "0:after-restart"}));
}

} // namespace
} // namespace caftx::testing
