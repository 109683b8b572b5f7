// caftx-node as a real process on 127.0.0.1, and clients in this process
// that know only bootstrap.servers: transactions across partitions read
// back read_committed, zombie fencing, SIGKILL mid-run and restart, bad
// input, a node of another cluster, and every message type across a real
// middleman between two processes.
#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/deep_to_string.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/others.hpp>
#include <caf/scoped_actor.hpp>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "../actors/message_samples.hpp"
#include "actors/client/admin.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "actors/common/lost_connection.hpp"
#include "actors/common/middleman.hpp"
#include "client_helpers.hpp"
#include "node_process.hpp"

namespace caftx::testing {
namespace {

using namespace std::chrono_literals;

std::string bootstrap(uint16_t port) {
  return "127.0.0.1:" + std::to_string(port);
}

properties client_props(uint16_t port, properties extra = {}) {
  return remote_client_props(bootstrap(port), extra);
}

std::multiset<std::string> read_committed(uint16_t port, const std::vector<topic_partition>& tps,
                                          size_t expected) {
  return read_committed_records(client_props(port), tps, expected);
}

class NodeProcess : public ::testing::Test {
public: // for the helpers below the tests share
  temp_dir tmp{"node"};
  std::string data = tmp.path() + "/data";
  uint16_t port = free_port();

  std::unique_ptr<node_process> start(const std::string& name = "node",
                                      const std::map<std::string, std::string>& extra = {}) {
    auto props = write_server_properties(tmp.path(), name + ".properties", port, data, extra);
    auto n = std::make_unique<node_process>(tmp.path(), name, props);
    EXPECT_TRUE(n->await_started()) << n->proc().out() << n->proc().err();
    return n;
  }

  void create_topic(const std::string& name, int32_t partitions) {
    admin_client admin{client_props(port)};
    auto st = admin.create_topic(name, partitions);
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
};

// A transaction over three partitions of a node in another process: a
// read_committed consumer (also remote) sees its records, and none of an
// aborted one; SIGTERM then stops the node with exit 0 after logging the
// events an operator reads.
TEST_F(NodeProcess, TransactionAcrossPartitionsIsReadBackReadCommitted) {
  auto n = start();
  create_topic("t", 3);
  producer p{client_props(port, {{"transactional.id", "remote-tx"}})};
  p.init_transactions();
  p.begin_transaction();
  for (int32_t part = 0; part < 3; ++part)
    p.send({"t", part, "", "committed-" + std::to_string(part), {}, -1});
  p.commit_transaction();
  p.begin_transaction();
  for (int32_t part = 0; part < 3; ++part)
    p.send({"t", part, "", "aborted-" + std::to_string(part), {}, -1});
  p.flush();
  p.abort_transaction();
  auto got = read_committed(port, {{"t", 0}, {"t", 1}, {"t", 2}}, 3);
  EXPECT_EQ(got, (std::multiset<std::string>{"0:committed-0", "1:committed-1", "2:committed-2"}));
  EXPECT_EQ(exit_code(n->proc().stop(SIGTERM, 30s)), 0) << n->proc().err();
  auto log = n->proc().out();
  EXPECT_NE(log.find("[KafkaServer id=1] started (node.id 1, cluster 'caftx', listener caftx://127.0.0.1:"
                     + std::to_string(port)),
            std::string::npos)
    << log;
  EXPECT_NE(log.find("[Partition t-2 broker=1] Leader t-2 starts at leader epoch 0 from offset 0"),
            std::string::npos)
    << log;
  EXPECT_NE(log.find("]: Finished loading "), std::string::npos) << log;
  EXPECT_NE(log.find("[KafkaServer id=1] shut down completed"), std::string::npos) << log;
}

// Zombie fencing across the process boundary: a second producer with the
// same transactional.id fences the first, whose commit then fails fatally
// with PRODUCER_FENCED; nothing it sent becomes visible.
TEST_F(NodeProcess, ZombieProducerIsFencedAcrossTheProcessBoundary) {
  auto n = start();
  create_topic("z", 2);
  producer zombie{client_props(port, {{"transactional.id", "zombie-tx"}})};
  zombie.init_transactions();
  zombie.begin_transaction();
  zombie.send({"z", 0, "", "from-zombie", {}, -1});
  zombie.flush();
  producer fresh{client_props(port, {{"transactional.id", "zombie-tx"}})};
  fresh.init_transactions(); // fences the zombie, aborts its transaction
  fresh.begin_transaction();
  fresh.send({"z", 1, "", "from-fresh", {}, -1});
  fresh.commit_transaction();
  expect_commit_fenced(zombie);
  auto got = read_committed(port, {{"z", 0}, {"z", 1}}, 1);
  EXPECT_EQ(got, (std::multiset<std::string>{"1:from-fresh"}));
  EXPECT_NE(n->proc().out().find("InitProducerId for transactionalId zombie-tx fenced producer id"),
            std::string::npos)
    << n->proc().out();
}

// A transaction left open past its transaction.timeout.ms is aborted by
// the node, which logs it, and nothing of it becomes visible.
TEST_F(NodeProcess, TransactionAbortedOnItsTimeoutIsLogged) {
  auto n = start("node", {{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "100"}});
  create_topic("slow", 1);
  producer p{client_props(port, {{"transactional.id", "slow-tx"},
                                 {"transaction.timeout.ms", "300"}})};
  p.init_transactions();
  p.begin_transaction();
  p.send({"slow", 0, "", "never", {}, -1});
  p.flush();
  EXPECT_TRUE(wait_until(
    [&] {
      return n->proc().out().find("Aborting ongoing transaction of transactionalId slow-tx")
             != std::string::npos;
    },
    30s))
    << n->proc().out();
  EXPECT_THROW(p.commit_transaction(), kafka_exception);
  EXPECT_TRUE(read_committed(port, {{"slow", 0}}, 0).empty());
}

// SIGKILL of the node while a producer commits transaction after
// transaction: meanwhile its calls end with retriable or abortable errors
// (never a hang: the test would time out), it reconnects by itself once a
// node runs again on the same data directory and port, and afterwards
// every acknowledged record is there exactly once.
TEST_F(NodeProcess, SigkillMidRunLosesNothingAcknowledgedAndClientsRecover) {
  auto n = start();
  create_topic("k", 2);
  producer p{client_props(port, {{"transactional.id", "killed-tx"},
                                 {"request.timeout.ms", "1500"},
                                 {"delivery.timeout.ms", "3000"},
                                 {"transaction.timeout.ms", "10000"}})};
  p.init_transactions();
  std::vector<int> acknowledged;
  auto commit_one = [&](int i) {
    p.begin_transaction();
    p.send({"k", i % 2, "", std::to_string(i), {}, -1});
    p.commit_transaction();
    acknowledged.push_back(i);
  };
  int i = 0;
  while (i < 20)
    commit_one(i++);
  auto killed = n->proc().stop(SIGKILL, 10s);
  ASSERT_TRUE(killed && WIFSIGNALED(*killed) && WTERMSIG(*killed) == SIGKILL);
  // The node is gone: the transaction fails (abortable after its retries)
  // and the abort fails retriably: both return instead of hanging.
  try {
    commit_one(i++);
    FAIL() << "committed without a node";
  } catch (const kafka_exception& e) {
    EXPECT_TRUE(e.is_abortable() || e.cls() == error_class::retriable) << e.what();
  }
  try {
    p.abort_transaction();
    FAIL() << "aborted without a node";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.cls(), error_class::retriable) << e.what();
  }
  n = start("node2");
  // The same producer reconnects by itself: the abort goes through once
  // the coordinator is back, then transactions commit again.
  std::vector<std::string> errors;
  ASSERT_TRUE(abort_until_done(p, 60s, errors)) << ::testing::PrintToString(errors);
  for (auto& e : errors)
    EXPECT_NE(e.find("(retriable)"), std::string::npos) << e;
  for (int k = 0; k < 3; ++k)
    commit_one(i++);
  std::multiset<std::string> want;
  for (int a : acknowledged)
    want.insert(std::to_string(a % 2) + ":" + std::to_string(a));
  ASSERT_EQ(want.size(), 23u);
  auto got = read_committed(port, {{"k", 0}, {"k", 1}}, want.size());
  EXPECT_EQ(got, want);
  EXPECT_EQ(exit_code(n->proc().stop(SIGTERM, 30s)), 0) << n->proc().err();
}

// A frozen node (SIGSTOP: no FIN, the connection stays open) is noticed
// through the middleman's heartbeats and connection timeout: the client
// drops the connection within caftx.middleman.connection.timeout.ms (2 s
// here) and answers at once that it has none (while it tries to connect
// again), instead of sending every request into the frozen connection;
// after SIGCONT it reconnects by itself.
TEST_F(NodeProcess, FrozenNodeIsDisconnectedByTheConnectionTimeoutAndClientsReconnect) {
  auto n = start();
  admin_client admin{client_props(port, {{"request.timeout.ms", "1000"}})};
  ASSERT_TRUE(admin.list_transactions().ok());
  ASSERT_TRUE(n->proc().freeze());
  std::string last;
  EXPECT_TRUE(wait_until(
    [&] {
      auto r = admin.list_transactions();
      last = r.ok() ? "ok" : r.error().to_string();
      // Without heartbeats the request would go to the frozen node and
      // end at its timeout ("request_timeout"), again and again.
      return last.find("no connection to the cluster (") != std::string::npos;
    },
    20s))
    << last;
  EXPECT_NE(last.find("REQUEST_TIMED_OUT"), std::string::npos) << last; // retriable
  ASSERT_TRUE(n->proc().thaw());
  EXPECT_TRUE(wait_until([&] { return admin.list_transactions().ok(); }, 30s));
  EXPECT_EQ(exit_code(n->proc().stop(SIGTERM, 30s)), 0) << n->proc().err();
}

// northwind-pipeline --bootstrap-servers: the main job against a running
// node in another process, with processor crashes only, gives the
// sequential result; node restarts are refused in that mode.
TEST_F(NodeProcess, NorthwindPipelineRunsAgainstARunningNode) {
  auto n = start();
  child_process job{tmp.path(), "northwind",
                    {CAFTX_NORTHWIND_PIPELINE, "--bootstrap-servers", bootstrap(port), "--crashes",
                     "2", "--seed", "7"}};
  EXPECT_EQ(exit_code(job.wait_exit(240s)), 0) << job.out() << job.err();
  auto out = job.out();
  EXPECT_NE(out.find("against the node at " + bootstrap(port)), std::string::npos) << out;
  EXPECT_NE(out.find("processor crashes:      2 of 2 requested"), std::string::npos) << out;
  EXPECT_NE(out.find("node restarts:          0 of 0 requested"), std::string::npos) << out;
  EXPECT_NE(out.find("result equals the sequential computation: yes"), std::string::npos) << out;
  child_process refused{tmp.path(), "northwind-restarts",
                        {CAFTX_NORTHWIND_PIPELINE, "--bootstrap-servers", bootstrap(port),
                         "--node-restarts", "1"}};
  EXPECT_EQ(exit_code(refused.wait_exit(60s)), 2);
  EXPECT_NE(refused.err().find("--node-restarts needs the embedded node"), std::string::npos)
    << refused.err();
  EXPECT_EQ(exit_code(n->proc().stop(SIGTERM, 30s)), 0) << n->proc().err();
}

// A request already sent to a node that then stops ends at once with
// request_receiver_down (lost_connection_watch), not at its timeout: CAF
// leaves it to the timeout, here 10 minutes. Two fetches that the node
// holds (fetch.max.wait.ms 10 minutes, nothing to return), one from a
// blocking caller and one from an event-based actor, both end once the
// node is gone: killed (SIGKILL: the connection drops), or stopped
// (SIGTERM: its actors end first, the stopped process answers nothing).
void requests_in_flight_end_when_the_node_stops(NodeProcess& t, int sig) {
  auto n = t.start();
  t.create_topic("held", 1);
  caf::actor_system_config cfg;
  configure_middleman(cfg, middleman_config{});
  caf::actor_system sys{cfg};
  auto c = connect_to_node(sys, {"127.0.0.1", t.port}, {0, "", -1, wire_build_id()}, 10s);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  auto broker = c->broker;
  constexpr int32_t ten_minutes_ms = 600000;
  node_fetch_request held;
  held.partitions.push_back(fetch_request{{"held", 0}, 0, 1048576, isolation_level::read_uncommitted, 0});
  held.max_wait_ms = ten_minutes_ms;
  std::promise<std::string> event_based;
  std::promise<void> event_based_sent, blocking_sent;
  auto requester = sys.spawn([=, &event_based, &event_based_sent](caf::event_based_actor* self) {
    auto h = self->request(broker, std::chrono::milliseconds(2 * ten_minutes_ms), held);
    event_based_sent.set_value();
    h.then(
      [&event_based, w = watch_connection(self, h.id(), broker)](const node_fetch_response&) {
        event_based.set_value("answered");
      },
      [&event_based](const caf::error& e) { event_based.set_value(caf::to_string(e)); });
  });
  auto blocking = std::async(std::launch::async, [&] {
    caf::scoped_actor self{sys};
    auto h = self->request(broker, std::chrono::milliseconds(2 * ten_minutes_ms), held);
    lost_connection_watch w{caf::actor_cast<caf::strong_actor_ptr>(self.ptr()), h.id(),
                            caf::actor_cast<caf::strong_actor_ptr>(broker)};
    EXPECT_TRUE(w.active());
    blocking_sent.set_value();
    std::string out;
    h.receive([&](const node_fetch_response&) { out = "answered"; },
              [&](const caf::error& e) { out = caf::to_string(e); });
    return out;
  });
  // Both fetches are on the connection before a third request; its answer
  // means the node has taken them (one connection delivers in order), so
  // they are held there when it is killed.
  event_based_sent.get_future().wait();
  blocking_sent.get_future().wait();
  {
    caf::scoped_actor self{sys};
    bool answered = false;
    self->request(broker, 10s, metadata_request{})
      .receive([&](const metadata_response&) { answered = true; }, [](const caf::error&) {});
    ASSERT_TRUE(answered);
  }
  auto stopped = n->proc().stop(sig, 30s);
  ASSERT_TRUE(stopped);
  auto event_based_done = event_based.get_future();
  ASSERT_EQ(event_based_done.wait_for(60s), std::future_status::ready);
  ASSERT_EQ(blocking.wait_for(60s), std::future_status::ready);
  for (auto what : {event_based_done.get(), blocking.get()}) {
    EXPECT_NE(what.find("request_receiver_down"), std::string::npos) << what;
    EXPECT_NE(what.find("lost the connection"), std::string::npos) << what;
  }
  caf::anon_send_exit(requester, caf::exit_reason::user_shutdown);
}

TEST_F(NodeProcess, RequestsInFlightEndWhenTheNodeIsKilled) {
  requests_in_flight_end_when_the_node_stops(*this, SIGKILL);
}

TEST_F(NodeProcess, RequestsInFlightEndWhenTheNodeStopsCleanly) {
  requests_in_flight_end_when_the_node_stops(*this, SIGTERM);
}

// A node of another cluster is refused by caftx's hello
// (INCONSISTENT_CLUSTER_ID), a node of the same cluster and a client that
// knows no cluster are accepted, and a CAF application with another
// app-identifier is refused by BASP's handshake.
TEST_F(NodeProcess, NodeOfAnotherClusterIsRefused) {
  auto n = start("node", {{"caftx.cluster.id", "cluster-a"}});
  caf::actor_system_config cfg;
  configure_middleman(cfg, middleman_config{});
  caf::actor_system sys{cfg};
  endpoint at{"127.0.0.1", port};
  auto other = connect_to_node(sys, at, {1, "cluster-b", 7, wire_build_id()}, 10s);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code(), error_code::inconsistent_cluster_id) << other.error().to_string();
  EXPECT_NE(other.error().message().find("cluster 'cluster-b' refused"), std::string::npos)
    << other.error().to_string();
  auto same = connect_to_node(sys, at, {1, "cluster-a", 7, wire_build_id()}, 10s);
  ASSERT_TRUE(same.ok()) << same.error().to_string();
  EXPECT_EQ(same->hello.cluster_id, "cluster-a");
  EXPECT_EQ(same->hello.node_id, 1);
  auto client = connect_to_node(sys, at, {0, "", -1, wire_build_id()}, 10s);
  ASSERT_TRUE(client.ok()) << client.error().to_string();
  auto build = connect_to_node(sys, at, {0, "", -1, "caftx-0.0.0-0000000000000000"}, 10s);
  ASSERT_FALSE(build.ok());
  EXPECT_EQ(build.error().code(), error_code::invalid_request);
  EXPECT_NE(n->proc().out().find("node 7 of cluster 'cluster-b' refused"), std::string::npos)
    << n->proc().out();

  caf::actor_system_config foreign_cfg;
  foreign_cfg.load<caf::io::middleman>();
  foreign_cfg.set("middleman.app-identifiers", std::vector<std::string>{"another-app"});
  caf::actor_system foreign{foreign_cfg};
  auto refused = foreign.middleman().remote_actor("127.0.0.1", port);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), caf::sec::incompatible_application_ids)
    << foreign.render(refused.error());
}

// Bad input stops caftx-node with exit 2 and a line naming the problem.
class NodeBadInput : public ::testing::Test {
protected:
  temp_dir tmp{"bad"};
  std::string data = tmp.path() + "/data";

  // Runs caftx-node to its exit; (exit code, stderr).
  int runs = 0;
  std::pair<int, std::string> run(const std::string& properties,
                                  std::vector<std::string> overrides = {},
                                  const std::string& name = "bad") {
    node_process n{tmp.path(), name + std::to_string(++runs), properties, std::move(overrides)};
    auto st = n.proc().wait_exit(60s);
    return {exit_code(st), n.proc().err()};
  }

  std::string props(const std::map<std::string, std::string>& extra = {}) {
    return write_server_properties(tmp.path(), "server.properties", free_port(), data, extra);
  }
};

TEST_F(NodeBadInput, UnknownKeyNamesTheKey) {
  auto [rc, err] = run(props({{"log.flush.interval.bogus", "1"}}));
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("unknown broker config 'log.flush.interval.bogus'"), std::string::npos) << err;
}

TEST_F(NodeBadInput, BadValueNamesTheKeyAndTheRange) {
  auto [rc, err] = run(props(), {"num.partitions=0"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("config 'num.partitions' = '0' is out of range [1, 10000]"), std::string::npos)
    << err;
  auto [rc2, err2] = run(props(), {"listeners=PLAINTEXT://127.0.0.1:9092"});
  EXPECT_EQ(rc2, 2);
  EXPECT_NE(err2.find("config 'listeners' = 'PLAINTEXT://127.0.0.1:9092' needs a caftx://host:port "
                      "listener"),
            std::string::npos)
    << err2;
  auto [rc4, err4] = run(props(), {"zookeeper.connect=127.0.0.1:99999"});
  EXPECT_EQ(rc4, 2);
  EXPECT_NE(err4.find("config 'zookeeper.connect' = '127.0.0.1:99999': port '99999' is out of range "
                      "[1, 65535]"),
            std::string::npos)
    << err4;
  auto [rc5, err5] = run(props(), {"log.level=verbose"});
  EXPECT_EQ(rc5, 2);
  EXPECT_NE(err5.find("config 'log.level' = 'verbose' must be trace, debug, info, warn or error"),
            std::string::npos)
    << err5;
}

TEST_F(NodeBadInput, UnreadableFileAndBadLineNameTheFile) {
  auto missing = tmp.path() + "/missing.properties";
  auto [rc, err] = run(missing);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("cannot read config file " + missing), std::string::npos) << err;
  auto bad = tmp.path() + "/badline.properties";
  {
    std::ofstream out{bad};
    out << "log.dirs=" << data << "\n# fine\nthis line has no separator\n";
  }
  auto [rc2, err2] = run(bad);
  EXPECT_EQ(rc2, 2);
  EXPECT_NE(err2.find(bad + ":3: expected key=value"), std::string::npos) << err2;
  EXPECT_FALSE(std::filesystem::exists(data)) << "a refused config must not create log.dirs";
}

// A listener port in use and a second node on a data directory in use
// are refused with exit 2; the first node keeps serving and what it
// acknowledged is intact after a restart.
TEST_F(NodeBadInput, PortInUseAndSecondNodeOnTheSameDataDirAreRefused) {
  auto port = free_port();
  auto first_props = write_server_properties(tmp.path(), "first.properties", port, data);
  node_process first{tmp.path(), "first", first_props};
  ASSERT_TRUE(first.await_started()) << first.proc().err();
  {
    admin_client admin{client_props(port)};
    ASSERT_TRUE(admin.create_topic("kept", 1).ok());
    producer p{client_props(port, {{"transactional.id", "kept-tx"}})};
    p.init_transactions();
    p.begin_transaction();
    p.send({"kept", 0, "", "v", {}, -1});
    p.commit_transaction();
  }
  // The same port, another data directory.
  auto other_data = tmp.path() + "/other";
  auto busy = write_server_properties(tmp.path(), "busy.properties", port, other_data);
  auto [rc, err] = run(busy, {}, "busy");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("listeners: cannot listen on caftx://127.0.0.1:" + std::to_string(port)),
            std::string::npos)
    << err;
  // Another port, the same data directory.
  auto same_dir = write_server_properties(tmp.path(), "same.properties", free_port(), data);
  auto [rc2, err2] = run(same_dir, {}, "same");
  EXPECT_EQ(rc2, 2);
  EXPECT_NE(err2.find("log.dirs " + data + ": KAFKA_STORAGE_ERROR"), std::string::npos) << err2;
  EXPECT_NE(err2.find("lock"), std::string::npos) << err2;
  EXPECT_TRUE(first.proc().running());
  EXPECT_EQ(exit_code(first.proc().stop(SIGTERM, 30s)), 0) << first.proc().err();
  node_process again{tmp.path(), "again", first_props};
  ASSERT_TRUE(again.await_started()) << again.proc().err();
  EXPECT_EQ(read_committed(port, {{"kept", 0}}, 1), (std::multiset<std::string>{"0:v"}));
  EXPECT_EQ(exit_code(again.proc().stop(SIGTERM, 30s)), 0);
}

// Every registered message type crosses a real middleman to another
// process and back (deserialized and serialized again there) unchanged.
TEST(MiddlemanAcrossProcesses, EveryRegisteredMessageTypeArrivesUnchanged) {
  temp_dir tmp{"echo"};
  child_process echo{tmp.path(), "echo", {CAFTX_ECHO_BINARY}};
  uint16_t port = 0;
  ASSERT_TRUE(wait_until(
    [&] {
      auto out = echo.out();
      auto at = out.find("port ");
      if (at == std::string::npos || out.find('\n', at) == std::string::npos)
        return false;
      port = static_cast<uint16_t>(std::stoi(out.substr(at + 5)));
      return true;
    },
    30s))
    << echo.err();
  caf::actor_system_config cfg;
  configure_middleman(cfg, middleman_config{});
  caf::actor_system sys{cfg};
  auto remote = sys.middleman().remote_actor("127.0.0.1", port);
  ASSERT_TRUE(remote) << sys.render(remote.error());
  caf::scoped_actor self{sys};
  std::set<std::string> covered;
  for (auto& msg : samples()) {
    caf::message back;
    std::string failure;
    self->request(*remote, 10s, msg)
      .receive([&](caf::error& e) { failure = sys.render(e); },
               caf::others >> [&](caf::message_view& x) -> caf::result<caf::message> {
                 back = x.copy_content_to_message();
                 return caf::message{};
               });
    ASSERT_TRUE(failure.empty()) << caf::deep_to_string(msg) << ": " << failure;
    EXPECT_EQ(caf::deep_to_string(back), caf::deep_to_string(msg));
    EXPECT_EQ(back.type_token(), msg.type_token()) << caf::deep_to_string(msg);
    covered.insert(sys.types().portable_name(msg.type(0)));
  }
  auto names = registered_message_type_names();
  EXPECT_EQ(covered, std::set<std::string>(names.begin(), names.end()));
  EXPECT_EQ(exit_code(echo.stop(SIGTERM, 30s)), 0) << echo.err();
}

} // namespace
} // namespace caftx::testing
