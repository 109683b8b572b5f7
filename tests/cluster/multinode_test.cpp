// Three caftx-node processes on one ZooKeeper (tests/cluster/zk_server.hpp)
// and clients in this process that know only bootstrap.servers: a
// transaction whose partitions, transaction coordinator and group
// coordinator sit on different nodes; zombie fencing across nodes; a node
// killed and restarted; the controller's node killed and frozen past its
// session timeout; the Northwind job on three nodes; bad input (duplicate
// node.id, another cluster, no ZooKeeper). Every process is started on
// 127.0.0.1 with free ports and stopped by its PID.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "../node/client_helpers.hpp"
#include "../node/node_process.hpp"
#include "actors/client/admin.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "runtime/partitioner.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"
#include "cluster_fixture.hpp"
#include "zk_server.hpp"

namespace caftx::testing {
namespace {

using namespace std::chrono_literals;

// The controller creates the internal topics at the first FindCoordinator
// and spreads every topic over the live nodes (round robin from a random
// start): a transaction over two partitions on two nodes, with its
// transaction coordinator on the third and the consumer group's offsets on
// a group coordinator on another node than the transaction coordinator,
// commits: read_committed sees its records and the group's offsets, and
// nothing of an aborted one.
TEST_F(Cluster, TransactionAcrossNodesWithCoordinatorsOnOtherNodes) {
  start_cluster(3);
  EXPECT_EQ(controller_at(1) > 0, true);
  create_topic("t", 3);
  std::map<int32_t, int32_t> node_of;
  std::set<int32_t> hosting;
  for (int32_t p = 0; p < 3; ++p) {
    node_of[p] = wait_leader_of({"t", p});
    hosting.insert(node_of[p]);
  }
  ASSERT_EQ(hosting.size(), 3u) << "three partitions of one replica each go to three nodes";
  {
    // The first transactional producer makes the controller create
    // __transaction_state; it is spread over the three nodes too.
    producer warmup{client_props({{"transactional.id", "warmup"}})};
    warmup.init_transactions();
  }
  std::set<int32_t> shard_nodes;
  for (int32_t s = 0; s < internal_partitions; ++s)
    shard_nodes.insert(wait_leader_of({"__transaction_state", s}));
  EXPECT_EQ(shard_nodes, (std::set<int32_t>{1, 2, 3}));

  auto [tid, coordinator_node] = key_led_outside("tx-", "__transaction_state", {});
  std::vector<int32_t> parts; // two partitions not on the coordinator's node
  for (auto& [p, n] : node_of)
    if (n != coordinator_node)
      parts.push_back(p);
  ASSERT_EQ(parts.size(), 2u);
  {
    // The group coordinator comes into being with its topic.
    consumer probe{client_props({{"group.id", "probe"}})};
    (void) probe.committed({"t", 0});
  }
  for (int32_t p = 0; p < internal_partitions; ++p)
    wait_leader_of({"__consumer_offsets", p});
  auto [group, group_node] = key_led_outside("group-", "__consumer_offsets", {coordinator_node});
  ASSERT_NE(group_node, coordinator_node);

  // Bootstrap from one node only: the others' handles come through it.
  producer p{client_props({{"transactional.id", tid}}, {1})};
  p.init_transactions();
  p.begin_transaction();
  for (auto part : parts)
    p.send({"t", part, "", "committed-" + std::to_string(part), {}, -1});
  p.send_offsets_to_transaction({{{"t", parts[0]}, 42}}, group);
  p.commit_transaction();
  p.begin_transaction();
  for (auto part : parts)
    p.send({"t", part, "", "aborted-" + std::to_string(part), {}, -1});
  p.flush();
  p.abort_transaction();

  std::vector<topic_partition> tps;
  std::multiset<std::string> want;
  for (auto part : parts) {
    tps.push_back({"t", part});
    want.insert(std::to_string(part) + ":committed-" + std::to_string(part));
  }
  EXPECT_EQ(read_committed(tps, 2), want);
  consumer c{client_props({{"group.id", group}})};
  EXPECT_EQ(c.committed({"t", parts[0]}), std::optional<int64_t>(42));
  // The coordinator's node logged the shard's load; the markers went to
  // the two other nodes' partitions.
  EXPECT_TRUE(logged(coordinator_node, "Finished loading ")) << log(coordinator_node);
}

// Zombie fencing across nodes: producers with the same transactional.id
// bootstrapped from different nodes reach the same coordinator; the second
// fences the first, whose commit fails fatally and whose records never
// become visible.
TEST_F(Cluster, ZombieProducerIsFencedAcrossNodes) {
  start_cluster(3);
  create_topic("z", 3);
  producer zombie{client_props({{"transactional.id", "zombie-tx"}}, {1})};
  zombie.init_transactions();
  zombie.begin_transaction();
  zombie.send({"z", 0, "", "from-zombie", {}, -1});
  zombie.flush();
  producer fresh{client_props({{"transactional.id", "zombie-tx"}}, {3})};
  fresh.init_transactions();
  fresh.begin_transaction();
  fresh.send({"z", 1, "", "from-fresh", {}, -1});
  fresh.commit_transaction();
  expect_commit_fenced(zombie);
  EXPECT_EQ(read_committed({{"z", 0}, {"z", 1}, {"z", 2}}, 1),
            (std::multiset<std::string>{"1:from-fresh"}));
}

// Producer ids come from blocks of 1000 claimed on /producer_id_block:
// shards on different nodes hand out ids of different blocks, each node's
// claim is logged, and two producers on one shard get consecutive ids of
// its block (not the shard's stripe shard + partitions × n).
TEST_F(Cluster, ProducerIdsComeFromBlocksClaimedClusterWide) {
  start_cluster(3);
  {
    producer warmup{client_props({{"transactional.id", "warmup"}})};
    warmup.init_transactions();
  }
  for (int32_t s = 0; s < internal_partitions; ++s)
    wait_leader_of({"__transaction_state", s});
  std::map<int32_t, std::vector<int64_t>> pids_by_node;
  std::set<std::string> used;
  for (int32_t node = 1; node <= 3; ++node) {
    std::set<int32_t> others;
    for (int32_t o = 1; o <= 3; ++o)
      if (o != node)
        others.insert(o);
    auto [tid, at] = key_led_outside("pid-" + std::to_string(node) + "-", "__transaction_state",
                                     others);
    ASSERT_EQ(at, node);
    producer p{client_props({{"transactional.id", tid}})};
    p.init_transactions();
    pids_by_node[node].push_back(p.producer_identity().first);
    // A second id of the same shard: the next id of its block.
    std::string tid2;
    for (int i = 0; tid2.empty() && i < 1000; ++i)
      if (auto k = tid + "-" + std::to_string(i);
          partition_for(k, internal_partitions) == partition_for(tid, internal_partitions))
        tid2 = k;
    ASSERT_FALSE(tid2.empty());
    producer q{client_props({{"transactional.id", tid2}})};
    q.init_transactions();
    EXPECT_EQ(q.producer_identity().first, pids_by_node[node].front() + 1);
    EXPECT_TRUE(wait_until([&] { return logged(node, "] claimed producer ids "); }, 10s))
      << log(node);
  }
  std::set<int64_t> blocks;
  for (auto& [node, pids] : pids_by_node)
    blocks.insert(pids.front() / 1000);
  EXPECT_EQ(blocks.size(), 3u) << ::testing::PrintToString(pids_by_node);
}

// SIGKILL of a node that leads a partition: meanwhile the producer's calls
// end with retriable or abortable errors (never a hang); the node restarts
// on its data directory, the controller makes it leader again at a greater
// leader epoch, and every acknowledged record is there exactly once.
TEST_F(Cluster, KilledNodeRestartsAndNothingAcknowledgedIsLost) {
  start_cluster(3);
  create_topic("k", 3);
  std::map<int32_t, int32_t> node_of;
  for (int32_t part = 0; part < 3; ++part)
    node_of[part] = wait_leader_of({"k", part});
  producer p{client_props({{"transactional.id", "killed-tx"},
                           {"request.timeout.ms", "1500"},
                           {"delivery.timeout.ms", "3000"},
                           {"max.block.ms", "5000"},
                           {"transaction.timeout.ms", "20000"}})};
  p.init_transactions();
  // The victim leads a partition of k but not the transaction's shard.
  auto shard_node = wait_leader_of(
    {"__transaction_state", partition_for("killed-tx", internal_partitions)});
  // Preferably the node of __transaction_state-0 too: an idempotent
  // producer's InitProducerId must not depend on one shard.
  auto shard0_node = wait_leader_of({"__transaction_state", 0});
  int32_t victim_part = -1;
  for (auto& [part, n] : node_of)
    if (n != shard_node && (victim_part < 0 || n == shard0_node))
      victim_part = part;
  ASSERT_GE(victim_part, 0);
  auto victim = node_of[victim_part];
  std::vector<std::string> acknowledged;
  auto commit_one = [&](int32_t part, int i) {
    p.begin_transaction();
    p.send({"k", part, "", std::to_string(i), {}, -1});
    p.commit_transaction();
    acknowledged.push_back(std::to_string(part) + ":" + std::to_string(i));
  };
  int i = 0;
  for (; i < 12; ++i)
    commit_one(i % 3, i);
  auto killed = nodes[victim]->proc().stop(SIGKILL, 10s);
  ASSERT_TRUE(killed && WIFSIGNALED(*killed));
  try {
    commit_one(victim_part, i++);
    FAIL() << "committed to a partition whose only replica is down";
  } catch (const kafka_exception& e) {
    EXPECT_TRUE(e.is_abortable() || e.cls() == error_class::retriable) << e.what();
  }
  // An idempotent send to the victim's partition while it is down: its
  // retries look the leader up again and reach the restarted node.
  producer idem{client_props({{"enable.idempotence", "true"},
                              {"request.timeout.ms", "1500"},
                              {"delivery.timeout.ms", "60000"}})};
  auto pending = idem.send({"k", victim_part, "", "while-down", {}, -1});
  // A consumer is assigned the partition without a live leader, and its
  // end offset, asked while the leader is down, comes once it is back
  // (retried until default.api.timeout.ms, as Kafka's endOffsets).
  consumer reader{client_props({{"isolation.level", "read_committed"},
                                {"request.timeout.ms", "1500"},
                                {"default.api.timeout.ms", "60000"}})};
  reader.assign({{"k", victim_part}});
  auto end_while_down =
    std::async(std::launch::async, [&] { return reader.end_offset({"k", victim_part}); });
  // If the victim was the controller, nobody handles its failure until
  // another node is elected (at its session's expiry); restarted before
  // that, it would come back to a cluster that never saw it go, and keep
  // leading at the same epoch (Kafka's controller failover does the same).
  if (controller_at(1) == victim) {
    ASSERT_TRUE(wait_until([&] { return controller_at(2) >= 0; }, 30s));
  }
  start(victim);
  ASSERT_EQ(end_while_down.wait_for(60s), std::future_status::ready);
  // A last stable offset (get() rethrows what the call threw): it may trail
  // the four committed records and their markers (8) while markers are on
  // their way, and there are at most 11 offsets by now (the send while
  // down, an abort marker).
  auto end = end_while_down.get();
  EXPECT_GE(end, 0);
  EXPECT_LE(end, 11);
  std::vector<std::string> errors;
  ASSERT_TRUE(abort_until_done(p, 60s, errors)) << ::testing::PrintToString(errors);
  auto delivered = pending.get();
  EXPECT_GE(delivered.offset, 0);
  acknowledged.push_back(std::to_string(victim_part) + ":while-down");
  // Leader again, at a greater leader epoch (offline, then elected).
  EXPECT_TRUE(wait_until(
    [&] {
      return std::regex_search(log(victim),
                               std::regex("became leader of k-" + std::to_string(victim_part)
                                          + " at leader epoch [1-9]"));
    },
    30s))
    << log(victim);
  // Until the client's metadata has the new leader: a failed attempt is
  // aborted (the abort retried until it goes through).
  ASSERT_TRUE(wait_until(
    [&] {
      try {
        commit_one(victim_part, i);
        return true;
      } catch (const kafka_exception& e) {
        errors.push_back(e.what());
        wait_until(
          [&] {
            try {
              p.abort_transaction();
              return true;
            } catch (const kafka_exception& a) {
              errors.push_back(std::string("abort: ") + a.what());
              // Nothing left to abort.
              return a.code() == error_code::invalid_txn_state
                     && std::string(a.what()).find("in state READY") != std::string::npos;
            }
          },
          30s);
        return false;
      }
    },
    60s))
    << ::testing::PrintToString(errors);
  ++i;
  std::multiset<std::string> want(acknowledged.begin(), acknowledged.end());
  EXPECT_EQ(read_committed({{"k", 0}, {"k", 1}, {"k", 2}}, want.size()), want);
  for (auto& [id, n] : nodes)
    EXPECT_EQ(exit_code(n->proc().stop(SIGTERM, 30s)), 0) << n->proc().err();
}

// The controller's node killed: another node becomes controller at epoch
// 2, and the cluster goes on (a new topic is created and written).
TEST_F(Cluster, ControllerFailoverToAnotherNodeAtTheNextEpoch) {
  // Two nodes stay: the internal topics have two replicas here (three
  // would wait for the third node, as Kafka).
  start_cluster(3, {{"transaction.state.log.replication.factor", "2"},
                    {"offsets.topic.replication.factor", "2"}});
  auto first = controller_at(1);
  ASSERT_GT(first, 0);
  nodes[first]->proc().stop(SIGKILL, 10s);
  int32_t second = -1;
  ASSERT_TRUE(wait_until([&] { return (second = controller_at(2)) > 0; }, 30s));
  EXPECT_NE(second, first);
  std::vector<int32_t> alive;
  for (auto& [id, _] : nodes)
    if (id != first)
      alive.push_back(id);
  admin_client admin{client_props({}, alive)};
  auto st = admin.create_topic("after", 2);
  ASSERT_TRUE(st.ok()) << st.to_string();
  producer p{client_props({{"transactional.id", "after-tx"}}, alive)};
  p.init_transactions();
  p.begin_transaction();
  p.send({"after", 0, "", "a", {}, -1});
  p.send({"after", 1, "", "b", {}, -1});
  p.commit_transaction();
  consumer c{client_props({{"isolation.level", "read_committed"}, {"auto.offset.reset", "earliest"}},
                          alive)};
  c.assign({{"after", 0}, {"after", 1}});
  std::multiset<std::string> got;
  wait_until(
    [&] {
      for (auto& r : c.poll(100ms))
        got.insert(r.value);
      return got.size() >= 2;
    },
    30s);
  EXPECT_EQ(got, (std::multiset<std::string>{"a", "b"}));
}

// The controller frozen (SIGSTOP) past its ZooKeeper session timeout:
// another node is elected at epoch 2; resumed, the old controller learns
// its session expired, resigns and registers again with a greater node
// epoch, and stays an ordinary node: the cluster has one controller, at
// epoch 2, and serves transactions.
TEST_F(Cluster, FrozenControllerIsDeposedAndRejoinsAsANode) {
  start_cluster(3);
  auto first = controller_at(1);
  ASSERT_GT(first, 0);
  ASSERT_TRUE(nodes[first]->proc().freeze());
  int32_t second = -1;
  ASSERT_TRUE(wait_until([&] { return (second = controller_at(2)) > 0; }, 30s));
  EXPECT_NE(second, first);
  ASSERT_TRUE(nodes[first]->proc().thaw());
  EXPECT_TRUE(wait_until([&] { return logged(first, "resigned as controller"); }, 30s))
    << log(first);
  std::smatch m;
  std::vector<int64_t> epochs;
  auto text = log(first);
  EXPECT_TRUE(wait_until(
    [&] {
      text = log(first);
      epochs.clear();
      std::regex re("registered with node epoch ([0-9]+)");
      for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
           it != std::sregex_iterator(); ++it)
        epochs.push_back(std::stoll((*it)[1]));
      return epochs.size() >= 2;
    },
    30s))
    << text;
  if (epochs.size() >= 2) {
    EXPECT_GT(epochs[1], epochs[0]);
  }
  EXPECT_EQ(controller_at(3), -1) << "the deposed controller did not take over again";
  producer p{client_props({{"transactional.id", "after-freeze"}})};
  p.init_transactions();
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("f", 3).ok());
  p.begin_transaction();
  for (int32_t part = 0; part < 3; ++part)
    p.send({"f", part, "", "v" + std::to_string(part), {}, -1});
  p.commit_transaction();
  EXPECT_EQ(read_committed({{"f", 0}, {"f", 1}, {"f", 2}}, 3),
            (std::multiset<std::string>{"0:v0", "1:v1", "2:v2"}));
}

// SIGTERM is Kafka's controlled shutdown: the node asks the controller
// first, which logs it (for its own node too); with the controller frozen
// the attempts time out, and the node stops anyway (an unclean shutdown),
// exit 0, within its retries. The session timeout is long enough that no
// other controller is elected meanwhile.
TEST_F(Cluster, SigtermAsksTheControllerFirstAndStopsAnywayWhenItCannotAnswer) {
  start_cluster(3, {{"zookeeper.session.timeout.ms", "15000"},
                    {"controlled.shutdown.max.retries", "1"},
                    {"controlled.shutdown.retry.backoff.ms", "100"},
                    {"request.timeout.ms", "1000"}});
  auto ctl = controller_at(1);
  ASSERT_GT(ctl, 0);
  std::vector<int32_t> others;
  for (auto& [id, _] : nodes)
    if (id != ctl)
      others.push_back(id);
  auto a = others.at(0), b = others.at(1);
  EXPECT_EQ(exit_code(nodes[a]->proc().stop(SIGTERM, 30s)), 0) << nodes[a]->proc().err();
  EXPECT_TRUE(logged(a, "[KafkaServer id=" + std::to_string(a) + "] Starting controlled shutdown"))
    << log(a);
  EXPECT_TRUE(logged(a, "Controlled shutdown request returned successfully after")) << log(a);
  EXPECT_TRUE(wait_until(
    [&] {
      return logged(ctl, "[Controller id=" + std::to_string(ctl) + "] Shutting down broker "
                           + std::to_string(a) + " (0 partitions still led by it)");
    },
    10s))
    << log(ctl);

  ASSERT_TRUE(nodes[ctl]->proc().freeze());
  EXPECT_EQ(exit_code(nodes[b]->proc().stop(SIGTERM, 30s)), 0) << nodes[b]->proc().err();
  ASSERT_TRUE(nodes[ctl]->proc().thaw());
  EXPECT_TRUE(logged(b, "Retrying controlled shutdown after the previous attempt failed")) << log(b);
  EXPECT_TRUE(logged(b, "Proceeding to do an unclean shutdown as all the controlled shutdown "
                        "attempts failed"))
    << log(b);
  EXPECT_FALSE(logged(b, "Controlled shutdown request returned successfully")) << log(b);

  EXPECT_EQ(exit_code(nodes[ctl]->proc().stop(SIGTERM, 30s)), 0) << nodes[ctl]->proc().err();
  EXPECT_TRUE(logged(ctl, "Shutting down broker " + std::to_string(ctl) + " (")) << log(ctl);
  EXPECT_TRUE(logged(ctl, "Controlled shutdown request returned successfully after")) << log(ctl);
}

// northwind-pipeline --bootstrap-servers against three nodes, with
// processor crashes: the sequential result.
TEST_F(Cluster, NorthwindPipelineOnThreeNodes) {
  start_cluster(3);
  child_process job{tmp.path(), "northwind",
                    {CAFTX_NORTHWIND_PIPELINE, "--bootstrap-servers", bootstrap(), "--crashes", "3",
                     "--seed", "11"}};
  EXPECT_EQ(exit_code(job.wait_exit(240s)), 0) << job.out() << job.err();
  EXPECT_NE(job.out().find("result equals the sequential computation: yes"), std::string::npos)
    << job.out();
  std::set<int32_t> leaders;
  for (int32_t p = 0; p < 3; ++p)
    leaders.insert(leader_of({"stock-reduced", p}));
  EXPECT_EQ(leaders.size(), 3u) << "the job's topics are spread over the nodes";
}

// A client built from properties and destroyed at once, while it is
// still connecting to the other nodes, does not hang in its destructor
// (the actor system waited forever for the middleman's detached actor of
// a connect in flight; it hung within a few clients of a loop).
TEST_F(Cluster, ClientsDestroyedWhileConnectingToPeersDoNotHang) {
  start_cluster(3);
  auto loop = std::async(std::launch::async, [&] {
    int done = 0;
    for (int i = 0; i < 30; ++i) {
      admin_client admin{client_props()};
      if (admin.create_topic("quick", 1).code() != error_code::request_timed_out)
        ++done;
    }
    return done;
  });
  ASSERT_EQ(loop.wait_for(120s), std::future_status::ready) << "a client's destructor hangs";
  EXPECT_EQ(loop.get(), 30);
}

// Bad input: a second live node with the same node.id stops with exit 2
// naming it; a node of another cluster (caftx.cluster.id differs from the
// one in ZooKeeper) stops with INCONSISTENT_CLUSTER_ID; a node whose
// ZooKeeper does not answer stops after zookeeper.connection.timeout.ms.
// The first node's data is untouched by all of it.
TEST_F(Cluster, DuplicateIdWrongClusterAndUnreachableZooKeeperStopTheNode) {
  start(1, {{"transaction.state.log.replication.factor", "1"},
            {"offsets.topic.replication.factor", "1"}});
  ASSERT_TRUE(wait_until([&] { return logged(1, "registered with node epoch"); }, 30s));
  auto props = [&](const std::string& name, std::map<std::string, std::string> p) {
    return write_server_properties(tmp.path(), name, free_port(), tmp.path() + "/" + name + ".d",
                                   std::move(p));
  };
  node_process dup{tmp.path(), "dup", props("dup", node_props(1))};
  EXPECT_EQ(exit_code(dup.proc().wait_exit(30s)), 2) << dup.proc().out();
  EXPECT_NE(dup.proc().err().find("node.id 1 is already registered by another live node"),
            std::string::npos)
    << dup.proc().err();
  node_process other{tmp.path(), "other",
                     props("other", node_props(2, {{"caftx.cluster.id", "elsewhere"}}))};
  EXPECT_EQ(exit_code(other.proc().wait_exit(30s)), 2) << other.proc().out();
  EXPECT_NE(other.proc().err().find("INCONSISTENT_CLUSTER_ID: The Cluster ID elsewhere doesn't "
                                    "match stored clusterId caftx"),
            std::string::npos)
    << other.proc().err();
  auto dead_port = free_port();
  node_process nozk{tmp.path(), "nozk",
                    props("nozk", node_props(3, {{"zookeeper.connect",
                                                  "127.0.0.1:" + std::to_string(dead_port)},
                                                 {"zookeeper.connection.timeout.ms", "1500"}}))};
  EXPECT_EQ(exit_code(nozk.proc().wait_exit(30s)), 2) << nozk.proc().out();
  EXPECT_NE(nozk.proc().err().find("could not connect to ZooKeeper at 127.0.0.1:"
                                   + std::to_string(dead_port)
                                   + " within zookeeper.connection.timeout.ms = 1500 ms"),
            std::string::npos)
    << nozk.proc().err();
  // Never registered, it leads nothing: no controlled shutdown to wait for.
  EXPECT_NE(nozk.proc().out().find("Skipping controlled shutdown: the node never registered"),
            std::string::npos)
    << nozk.proc().out();
  EXPECT_EQ(nozk.proc().out().find("Retrying controlled shutdown"), std::string::npos)
    << nozk.proc().out();
  // Node 1 still serves.
  create_topic("still", 1);
  producer p{client_props({{"transactional.id", "still-tx"}})};
  p.init_transactions();
  p.begin_transaction();
  p.send({"still", 0, "", "x", {}, -1});
  p.commit_transaction();
  EXPECT_EQ(read_committed({{"still", 0}}, 1), (std::multiset<std::string>{"0:x"}));
}

// Replication factor 3, min.insync.replicas 2: an idempotent producer
// writes while the partition's leader is killed (SIGKILL). A follower of
// the ISR takes over at the next leader epoch; every acknowledged record
// is on it at the offset its acknowledgement named, the retries of the
// batches in flight are deduplicated (each value once), and the producer
// goes on with the new leader.
TEST_F(Cluster, LeaderKilledDuringAcksAllProduceLosesNothingAcknowledged) {
  start_cluster(3, {{"default.replication.factor", "3"}, {"min.insync.replicas", "2"}});
  create_topic("r", 1);
  topic_partition tp{"r", 0};
  auto leader = wait_leader_of(tp);
  ASSERT_GT(leader, 0);
  for (auto& [id, n] : nodes) {
    if (id == leader)
      continue;
    ASSERT_TRUE(wait_until(
      [&] { return logged(id, "follows node " + std::to_string(leader) + " for r-0 at"); }, 30s))
      << log(id);
  }
  producer idem{client_props({{"enable.idempotence", "true"},
                              {"request.timeout.ms", "1500"},
                              {"delivery.timeout.ms", "60000"}})};
  std::vector<std::future<record_metadata>> sent;
  for (int i = 0; i < 100; ++i)
    sent.push_back(idem.send({"r", 0, "", std::to_string(i), {}, -1}));
  std::map<std::string, int64_t> acked;
  for (int i = 0; i < 50; ++i)
    acked[std::to_string(i)] = sent[i].get().offset;
  auto killed = nodes[leader]->proc().stop(SIGKILL, 10s);
  ASSERT_TRUE(killed && WIFSIGNALED(*killed));
  for (int i = 100; i < 200; ++i)
    sent.push_back(idem.send({"r", 0, "", std::to_string(i), {}, -1}));
  for (int i = 50; i < 200; ++i)
    acked[std::to_string(i)] = sent[i].get().offset;
  auto successor = new_leader_of(tp, leader);
  EXPECT_GT(successor, 0);
  std::vector<int32_t> alive;
  for (auto& [id, _] : nodes)
    if (id != leader)
      alive.push_back(id);
  auto log_now = read_all(tp, 200, alive);
  EXPECT_EQ(log_now.size(), 200u);
  for (auto& [value, offset] : acked) {
    auto at = log_now.find(offset);
    ASSERT_NE(at, log_now.end()) << "acknowledged " << value << " at " << offset << " is lost";
    EXPECT_EQ(at->second, value) << "offset " << offset;
  }
}

// A follower killed while the leader takes writes leaves the ISR (the
// controller removes it when its session expires) and the writes go on
// with min.insync.replicas 2; restarted, it catches up and the leader
// adds it back (AlterIsr). Then every replica, made leader in turn by
// killing the one before, serves the same records at the same offsets,
// each acknowledged one where its acknowledgement said.
TEST_F(Cluster, RestartedFollowerRejoinsTheIsrAndEveryReplicaHoldsTheSameLog) {
  topic_partition tp{"j", 0};
  auto [leader, epoch] = start_replicated(tp.topic);
  ASSERT_GT(leader, 0);
  int32_t follower = leader == 1 ? 2 : 1;
  ASSERT_TRUE(wait_until(
    [&] { return logged(follower, "follows node " + std::to_string(leader) + " for j-0 at"); },
    30s));
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "60000"}})};
  std::map<std::string, int64_t> acked;
  auto send_all = [&](int from, int to) { send_acked(idem, "j", from, to, acked); };
  send_all(0, 50);
  ASSERT_TRUE(nodes[follower]->proc().stop(SIGKILL, 10s));
  send_all(50, 100); // acknowledged once the controller shrank the ISR
  auto shrunk = current_leader(tp);
  EXPECT_EQ(shrunk.first, leader);
  EXPECT_GT(shrunk.second, epoch) << "the controller's ISR removal bumps the leader epoch";
  start(follower);
  ASSERT_TRUE(isr_whole(leader, tp)) << log(leader);
  send_all(100, 120);

  expect_identical_replicas(tp, 120, leader, shrunk.second, acked);
}

// A leader paused (SIGSTOP) past its session timeout: the controller
// moves the leadership and the new leader acknowledges more writes. Once
// resumed (SIGCONT), the old leader is a zombie until it hears of its
// successor; then it follows at the new leader epoch, truncates what only
// it had, and rejoins the ISR. Every replica holds the same log with each
// acknowledged value at its acknowledged offset, each once.
TEST_F(Cluster, LeaderPausedPastItsSessionIsReplacedAndRejoinsAsAFollowerWithTheSameLog) {
  topic_partition tp{"z", 0};
  auto [leader, epoch] = start_replicated(tp.topic);
  ASSERT_GT(leader, 0);
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "60000"}})};
  std::map<std::string, int64_t> acked;
  auto send_all = [&](int from, int to) { send_acked(idem, "z", from, to, acked); };
  send_all(0, 30);
  ASSERT_TRUE(nodes[leader]->proc().freeze());
  auto next = wait_leader_above(tp, epoch);
  ASSERT_GT(next.first, 0) << "no replica took over from the paused node " << leader;
  ASSERT_NE(next.first, leader);
  send_all(30, 60);
  ASSERT_TRUE(nodes[leader]->proc().thaw());
  ASSERT_TRUE(wait_until(
    [&] {
      return logged(leader, "follows node " + std::to_string(next.first) + " for z-0 at leader epoch");
    },
    60s))
    << log(leader);
  ASSERT_TRUE(isr_whole(next.first, tp)) << log(next.first);
  send_all(60, 70);
  expect_identical_replicas(tp, 70, next.first, next.second, acked);
}

// A read_committed consumer across a leader change: a transaction is
// open when the partition's leader is killed (SIGKILL). The consumer has
// seen the committed one before it; while the open one is undecided the
// new leader's last stable offset holds it back (it never moves back past
// what the consumer read), and once it commits the consumer gets its
// records once, in order, and never those of a later aborted one.
TEST_F(Cluster, ReadCommittedConsumerAcrossALeaderChangeSeesEachCommittedRecordOnce) {
  topic_partition tp{"c", 0};
  auto [leader, epoch] = start_replicated(tp.topic);
  ASSERT_GT(leader, 0);
  // The coordinator on another node, so that only the data partition moves.
  auto [tid, shard_leader] = transactional_id_led_outside("rc-", {leader});
  ASSERT_GT(shard_leader, 0);
  producer p{client_props({{"transactional.id", tid}, {"delivery.timeout.ms", "60000"}})};
  p.init_transactions();
  auto txn = [&](int from, bool commit) {
    p.begin_transaction();
    for (int i = from; i < from + 10; ++i)
      p.send({"c", 0, "", "v" + std::to_string(i), {}, -1});
    p.flush();
    if (commit)
      p.commit_transaction();
  };
  txn(0, true);
  consumer c{client_props({{"isolation.level", "read_committed"}, {"auto.offset.reset", "earliest"}})};
  c.assign({tp});
  std::vector<std::pair<int64_t, std::string>> seen;
  auto poll_until = [&](size_t n, std::chrono::milliseconds deadline) {
    return wait_until(
      [&] {
        for (auto& r : c.poll(100ms))
          seen.emplace_back(r.offset, r.value);
        return seen.size() >= n;
      },
      deadline);
  };
  ASSERT_TRUE(poll_until(10, 30s));
  txn(10, false); // open: its records are written, its commit waits
  ASSERT_TRUE(nodes[leader]->proc().stop(SIGKILL, 10s));
  auto next = wait_leader_above(tp, epoch);
  ASSERT_GT(next.first, 0) << "no replica took over from node " << leader;
  EXPECT_FALSE(poll_until(11, 2s)) << "a record of the open transaction was read";
  p.commit_transaction();
  txn(20, false);
  p.abort_transaction();
  txn(30, true);
  ASSERT_TRUE(poll_until(30, 60s));
  EXPECT_FALSE(poll_until(31, 1s));
  std::vector<std::string> values;
  for (size_t k = 0; k < seen.size(); ++k) {
    values.push_back(seen[k].second);
    if (k > 0) {
      EXPECT_GT(seen[k].first, seen[k - 1].first) << "offsets moved back at " << k;
    }
  }
  std::vector<std::string> want;
  for (int i : {0, 10, 30})
    for (int k = i; k < i + 10; ++k)
      want.push_back("v" + std::to_string(k));
  EXPECT_EQ(values, want);
}

// auto.leader.rebalance.enable (on, as in Kafka), a double failover
// A -> B -> A: the partition's preferred leader A (its first replica,
// which leads a new partition) is killed and B takes over; once A is back
// and in sync again, the controller's imbalance check (every second here)
// moves the leadership back to it at a higher leader epoch. Records
// acknowledged by each leader in turn are all there once, at their
// offsets, on every replica.
TEST_F(Cluster, LeadershipReturnsToThePreferredReplicaOnceItIsBackInSync) {
  topic_partition tp{"p", 0};
  auto [preferred, epoch] =
    start_replicated(tp.topic, {{"leader.imbalance.check.interval.seconds", "1"}});
  ASSERT_GT(preferred, 0);
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "60000"}})};
  std::map<std::string, int64_t> acked;
  send_acked(idem, "p", 0, 20, acked);
  ASSERT_TRUE(nodes[preferred]->proc().stop(SIGKILL, 10s));
  auto moved = wait_leader_above(tp, epoch);
  ASSERT_GT(moved.first, 0) << "no replica took over";
  EXPECT_NE(moved.first, preferred);
  send_acked(idem, "p", 20, 40, acked);
  start(preferred);
  auto now = wait_led_by(tp, preferred, moved.second);
  ASSERT_EQ(now.first, preferred) << "leader " << now.first << " at epoch " << now.second;
  send_acked(idem, "p", 40, 60, acked);
  expect_identical_replicas(tp, 60, now.first, now.second, acked);
}

// Everything replicated three times: the node leading the transaction's
// `__transaction_state` partition is killed (SIGKILL) while a transaction
// is open. A follower of that partition becomes its leader at the next
// leader epoch, its coordinator loads the card (Ongoing, with the
// transaction's partitions) and the producer's commit, retried at the new
// coordinator, commits: read_committed sees both transactions' records,
// each once, and nothing of an aborted one.
TEST_F(Cluster, TransactionCoordinatorMovesWithItsPartitionWhenItsNodeIsKilled) {
  start_cluster(3, {{"default.replication.factor", "3"}, {"min.insync.replicas", "2"}});
  create_topic("m", 2);
  producer p{client_props({{"transactional.id", "mover"},
                           {"request.timeout.ms", "1500"},
                           {"delivery.timeout.ms", "60000"},
                           {"max.block.ms", "60000"},
                           {"transaction.timeout.ms", "60000"}})};
  p.init_transactions();
  topic_partition shard{"__transaction_state", partition_for("mover", internal_partitions)};
  auto [coordinator_node, epoch] = wait_leader_above(shard, -1);
  ASSERT_GT(coordinator_node, 0);
  p.begin_transaction();
  p.send({"m", 0, "", "first-0", {}, -1});
  p.send({"m", 1, "", "first-1", {}, -1});
  p.commit_transaction();
  p.begin_transaction();
  p.send({"m", 0, "", "dropped", {}, -1});
  p.flush();
  p.abort_transaction();
  p.begin_transaction();
  p.send({"m", 0, "", "second-0", {}, -1});
  p.send({"m", 1, "", "second-1", {}, -1});
  p.flush();
  ASSERT_TRUE(nodes[coordinator_node]->proc().stop(SIGKILL, 10s));
  p.commit_transaction();
  auto moved = current_leader(shard);
  EXPECT_NE(moved.first, coordinator_node);
  EXPECT_GT(moved.second, epoch);
  auto alive = running();
  EXPECT_EQ(read_committed_records(client_props({}, alive), {{"m", 0}, {"m", 1}}, 4),
            (std::multiset<std::string>{"0:first-0", "1:first-1", "0:second-0", "1:second-1"}));
}

// min.insync.replicas 2 with both followers killed: once the controller
// removed them from the ISR (their sessions expired), an acks=all produce
// is refused with NOT_ENOUGH_REPLICAS and nothing is appended; restarted,
// the followers rejoin and the same producer's next record is written
// right after the last acknowledged one.
TEST_F(Cluster, IsrOfOneBelowMinInsyncReplicasRefusesProduceWithNotEnoughReplicas) {
  start_cluster(3, {{"default.replication.factor", "3"}, {"min.insync.replicas", "2"}});
  create_topic("n", 1);
  topic_partition tp{"n", 0};
  auto [leader, first_epoch] = wait_leader_above(tp, -1);
  ASSERT_GT(leader, 0);
  auto epoch = first_epoch;
  std::vector<int32_t> followers;
  for (auto& [id, n] : nodes)
    if (id != leader)
      followers.push_back(id);
  // The first record waits for both followers (the ISR is all three), so
  // it goes with the default timeouts: on a loaded machine the followers'
  // first fetches can take longer than the short ones below.
  {
    producer first{client_props({{"enable.idempotence", "true"}}, {leader})};
    EXPECT_EQ(first.send({"n", 0, "", "kept", {}, -1}).get().offset, 0);
  }
  // The refusal comes at once. One attempt (retries 0, so without
  // idempotence, as Kafka requires): the error the send ends with is the
  // leader's answer, not that of a later retry cut short by the delivery
  // timeout on a loaded machine.
  producer idem{client_props({{"enable.idempotence", "false"},
                              {"retries", "0"},
                              {"request.timeout.ms", "15000"},
                              {"delivery.timeout.ms", "20000"}},
                             {leader})};
  // One at a time: each ISR removal by the controller is a new leader
  // epoch (if the controller was the killed node, a new one is elected
  // first).
  for (auto id : followers) {
    ASSERT_TRUE(nodes[id]->proc().stop(SIGKILL, 10s));
    auto shrunk = wait_leader_above(tp, epoch);
    ASSERT_EQ(shrunk.first, leader);
    epoch = shrunk.second;
  }
  try {
    idem.send({"n", 0, "", "refused", {}, -1}).get();
    ADD_FAILURE() << "acknowledged with an ISR of one";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::not_enough_replicas) << e.what();
    EXPECT_NE(std::string(e.what()).find("The size of the current ISR [" + std::to_string(leader)
                                         + "] is insufficient to satisfy the min.isr requirement "
                                           "of 2 for partition n-0"),
              std::string::npos)
      << e.what();
  }
  // min.insync.replicas binds acks=all only (Kafka's appendRecordsToLeader).
  producer leader_only{client_props({{"enable.idempotence", "false"}, {"acks", "1"}}, {leader})};
  EXPECT_EQ(leader_only.send({"n", 0, "", "leader-only", {}, -1}).get().offset, 1);
  for (auto id : followers)
    start(id);
  ASSERT_TRUE(isr_whole(leader, tp)) << log(leader);
  producer after{client_props({{"enable.idempotence", "true"}})};
  EXPECT_EQ(after.send({"n", 0, "", "after", {}, -1}).get().offset, 2);
  auto all = read_all(tp, 3);
  EXPECT_EQ(all, (std::map<int64_t, std::string>{{0, "kept"}, {1, "leader-only"}, {2, "after"}}));
}

// acks=all completes only once every in-sync replica has the batch: with
// both followers frozen (SIGSTOP, well inside the session timeout) the
// leader has the batch synced but the high watermark cannot pass it, so
// the send is not acknowledged, while acks=1 and acks=0 sends complete;
// thawed, the followers fetch it and the acknowledgement names the offset
// after the earlier one.
TEST_F(Cluster, AcknowledgementWaitsForTheInSyncFollowers) {
  start_cluster(3, {{"default.replication.factor", "3"},
                    {"min.insync.replicas", "2"},
                    {"zookeeper.session.timeout.ms", "10000"}});
  create_topic("w", 1);
  auto leader = wait_leader_of({"w", 0});
  ASSERT_GT(leader, 0);
  std::vector<int32_t> followers;
  for (auto& [id, n] : nodes) {
    if (id == leader)
      continue;
    followers.push_back(id);
    ASSERT_TRUE(wait_until(
      [&] { return logged(id, "follows node " + std::to_string(leader) + " for w-0 at"); }, 30s))
      << log(id);
  }
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "60000"}})};
  EXPECT_EQ(idem.send({"w", 0, "", "before", {}, -1}).get().offset, 0);
  for (auto id : followers)
    ASSERT_TRUE(nodes[id]->proc().freeze());
  auto held = idem.send({"w", 0, "", "held", {}, -1});
  EXPECT_EQ(held.wait_for(2s), std::future_status::timeout)
    << "acknowledged while no follower could fetch it";
  // acks=1 completes once the leader has it durably, the followers still
  // frozen; acks=0 at once, without an offset (Kafka's -1).
  producer leader_only{client_props({{"enable.idempotence", "false"}, {"acks", "1"}}, {leader})};
  auto one = leader_only.send({"w", 0, "", "leader-only", {}, -1});
  ASSERT_EQ(one.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(one.get().offset, 2);
  producer no_ack{client_props({{"enable.idempotence", "false"}, {"acks", "0"}}, {leader})};
  auto none = no_ack.send({"w", 0, "", "no-ack", {}, -1});
  ASSERT_EQ(none.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(none.get().offset, -1);
  EXPECT_EQ(held.wait_for(0s), std::future_status::timeout);
  for (auto id : followers)
    ASSERT_TRUE(nodes[id]->proc().thaw());
  ASSERT_EQ(held.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(held.get().offset, 1);
  EXPECT_EQ(read_all({"w", 0}, 4), (std::map<int64_t, std::string>{
                                      {0, "before"}, {1, "held"}, {2, "leader-only"}, {3, "no-ack"}}));
}

// transaction.state.log.replication.factor 3 (Kafka's default) on fewer
// live nodes: FindCoordinator answers COORDINATOR_NOT_AVAILABLE with
// Kafka's message and the node logs it; once the third node registers the
// topic is created with three replicas and the same producer goes on.
TEST_F(Cluster, InternalTopicWaitsForAsManyLiveNodesAsItsReplicationFactor) {
  start(1);
  ASSERT_TRUE(wait_until([&] { return logged(1, "registered with node epoch"); }, 30s));
  std::string refusal = "Number of alive brokers '1' does not meet the required replication "
                        "factor '3' for the transactions state topic (configured via "
                        "'transaction.state.log.replication.factor')";
  // Each attempt ends retriable at max.block.ms (on a loaded machine its
  // last error may be a timed-out request rather than the refusal).
  std::vector<std::string> errors;
  ASSERT_TRUE(wait_until(
    [&] {
      producer early{client_props({{"transactional.id", "early"}, {"max.block.ms", "2000"}})};
      try {
        early.init_transactions();
        ADD_FAILURE() << "InitProducerId succeeded on one node";
      } catch (const kafka_exception& e) {
        EXPECT_EQ(e.cls(), error_class::retriable) << e.what();
        errors.push_back(e.what());
      }
      return logged(1, refusal);
    },
    60s))
    << log(1);
  EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), [&](const std::string& e) {
    return e.find("COORDINATOR_NOT_AVAILABLE: " + refusal) != std::string::npos
           || e.find("REQUEST_TIMED_OUT") != std::string::npos;
  })) << ::testing::PrintToString(errors);
  start(2);
  start(3);
  producer p{client_props({{"transactional.id", "early"}})};
  p.init_transactions();
  create_topic("late", 1);
  p.begin_transaction();
  p.send({"late", 0, "", "v", {}, -1});
  p.commit_transaction();
  EXPECT_EQ(read_committed({{"late", 0}}, 1), (std::multiset<std::string>{"0:v"}));
  // Every shard has three replicas: each node leads or follows each one.
  for (int32_t id = 1; id <= 3; ++id)
    for (int32_t s = 0; s < internal_partitions; ++s) {
      auto tp = to_string(topic_partition{"__transaction_state", s});
      EXPECT_TRUE(wait_until([&] {
        return logged(id, "became leader of " + tp + " at") || logged(id, " for " + tp + " at");
      }, 30s)) << "node " << id << " has no replica of " << tp;
    }
}

// A node partitioned from the controller but not from clients
// (docs/testing.md), with the drill hook (caftx.drills.enable): a partition leader
// N is cut off from the controller's node and from ZooKeeper, while the
// third node and every client still reach it. Its session expires, the
// controller elects another leader at a higher leader epoch, and clients
// that reach other nodes go on writing there. N goes on as a zombie
// leader: a write that reaches it is appended there but never
// acknowledged (its followers fetch from the new leader now, so its high
// watermark cannot move). Healed, N learns its session expired,
// registers again, follows the new leader and truncates that write; the
// producer's retry writes it once at the new leader. Every replica ends
// with the same records, each acknowledged one at its offset.
TEST_F(Cluster, LeaderCutOffFromTheControllerAndZooKeeperButNotFromClientsIsReplacedAndRejoins) {
  start_cluster(3, {{"default.replication.factor", "3"},
                    {"min.insync.replicas", "2"},
                    {"caftx.drills.enable", "true"}});
  auto controller = controller_at(1);
  ASSERT_GT(controller, 0);
  auto [tp, led] = partition_led_outside_the_controller("x");
  ASSERT_GE(tp.partition, 0) << "the controller leads every partition";
  auto n = led.first;
  for (auto& [id, _] : nodes)
    if (id != n) {
      ASSERT_TRUE(wait_until(
        [&] { return logged(id, "follows node " + std::to_string(n) + " for " + to_string(tp) + " at"); },
        30s))
        << log(id);
    }
  // A producer bootstrapped from the other two nodes: its metadata comes
  // from nodes the controller still reaches (caftx's client asks the node
  // it is connected to, not the least loaded one as Kafka's does).
  std::vector<int32_t> others;
  for (auto& [id, _] : nodes)
    if (id != n)
      others.push_back(id);
  producer idem{client_props({{"enable.idempotence", "true"},
                              {"request.timeout.ms", "2000"},
                              {"delivery.timeout.ms", "60000"}},
                             others)};
  std::map<std::string, int64_t> acked;
  auto send_all = [&](int from, int to) {
    std::vector<std::future<record_metadata>> sent;
    for (int i = from; i < to; ++i)
      sent.push_back(idem.send({"x", tp.partition, "", std::to_string(i), {}, -1}));
    for (int i = from; i < to; ++i)
      acked[std::to_string(i)] = sent[i - from].get().offset;
  };
  send_all(0, 30);

  admin_client drill{client_props({}, {n})};
  auto cut = drill.drill_network({false, {controller}, true, false});
  ASSERT_TRUE(cut.ok()) << cut.error().to_string();
  EXPECT_EQ(cut->cut_peers, std::vector<int32_t>{controller});
  EXPECT_TRUE(cut->zookeeper_cut);
  EXPECT_EQ(cut->message, "") << "the controller's node did not confirm its half";
  auto next = wait_leader_above(tp, led.second);
  ASSERT_GT(next.first, 0) << "no replica took over from the cut-off node " << n;
  ASSERT_NE(next.first, n);
  // A producer that knows only N: N appends its record but cannot
  // acknowledge it.
  producer zombie_side{client_props({{"enable.idempotence", "true"},
                                     {"request.timeout.ms", "2000"},
                                     {"delivery.timeout.ms", "120000"}},
                                    {n})};
  auto held = zombie_side.send({"x", tp.partition, "", "held", {}, -1});
  EXPECT_EQ(held.wait_for(3s), std::future_status::timeout)
    << "acknowledged by a leader cut off from the controller and ZooKeeper";
  send_all(30, 60);

  auto healed = drill.drill_network({true, {controller}, true, false});
  ASSERT_TRUE(healed.ok()) << healed.error().to_string();
  EXPECT_TRUE(healed->cut_peers.empty());
  EXPECT_FALSE(healed->zookeeper_cut);
  EXPECT_EQ(healed->message, "") << "the controller's node did not heal its half";
  ASSERT_TRUE(wait_until(
    [&] {
      return logged(n, "follows node " + std::to_string(next.first) + " for " + to_string(tp)
                         + " at leader epoch");
    },
    60s))
    << log(n);
  ASSERT_EQ(held.wait_for(60s), std::future_status::ready);
  acked["held"] = held.get().offset;
  EXPECT_GE(acked["held"], 30);
  ASSERT_TRUE(isr_whole(next.first, tp)) << log(next.first);
  send_all(60, 70);
  auto now = current_leader(tp);
  expect_identical_replicas(tp, 71, now.first, now.second, acked);
}

// A controlled shutdown (SIGTERM) of a partition's leader hands the
// leadership to a follower, and the ISR that is left (two, with
// min.insync.replicas 2) acknowledges acks=all writes at once: the other
// follower's fetcher, whose fetch was held by the stopping leader, moves
// to the new leader instead of waiting out the nodes' request.timeout.ms
// (two minutes here, far beyond the wait below). Restarted, the stopped
// node catches up and every replica holds the same log.
TEST_F(Cluster, ControlledShutdownOfALeaderHandsItOverWithoutWaitingForARequestTimeout) {
  start_cluster(3, {{"default.replication.factor", "3"},
                    {"min.insync.replicas", "2"},
                    {"request.timeout.ms", "120000"}});
  create_topic("h", 1);
  topic_partition tp{"h", 0};
  auto [leader, epoch] = wait_leader_above(tp, -1);
  ASSERT_GT(leader, 0);
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "120000"}})};
  std::map<std::string, int64_t> acked;
  send_acked(idem, "h", 0, 20, acked);
  auto stopped = nodes[leader]->proc().stop(SIGTERM, 30s);
  ASSERT_TRUE(stopped && WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << log(leader);
  auto next = wait_leader_above(tp, epoch);
  ASSERT_GT(next.first, 0);
  ASSERT_NE(next.first, leader);
  std::vector<std::future<record_metadata>> sent;
  for (int i = 20; i < 40; ++i)
    sent.push_back(idem.send({"h", 0, "", std::to_string(i), {}, -1}));
  for (int i = 20; i < 40; ++i) {
    ASSERT_EQ(sent[i - 20].wait_for(60s), std::future_status::ready)
      << "acks=all waited for a follower still fetching from the stopped leader";
    acked[std::to_string(i)] = sent[i - 20].get().offset;
  }
  start(leader);
  ASSERT_TRUE(isr_whole(next.first, tp)) << log(next.first);
  expect_identical_replicas(tp, 40, next.first, next.second, acked);
}

// The `__transaction_state` leader C killed while its coordinator is in
// PrepareCommit: the data partition's leader D is cut off from C (drill
// hook), so the commit's markers cannot land; the card itself commits
// (D leaves the shard's ISR). C is killed; the shard's next leader loads
// the card at its leader epoch, which is its coordinator epoch, completes
// the commit with its own markers (CompleteCommit at the new epoch), and
// the producer's next transaction commits; read_committed sees both.
TEST_F(Cluster, TransactionStateLeaderKilledInPrepareCommitCompletesAtTheNextLeader) {
  coordinator_killed_in_prepare(true);
}

// The same in PrepareAbort: the new coordinator writes the abort markers
// (CompleteAbort), read_committed never sees the aborted record and does
// see the next transaction's, past it.
TEST_F(Cluster, TransactionStateLeaderKilledInPrepareAbortCompletesAtTheNextLeader) {
  coordinator_killed_in_prepare(false);
}

// The group coordinator moved during a transaction's offset commit
// (docs/testing.md): the group's offsets are in the
// transaction (TxnOffsetCommit answered) when the node leading their
// `__consumer_offsets` partition is killed. Its follower becomes leader,
// its group coordinator loads the pending offsets from the replicated
// log, and the commit's marker makes them the group's: the committed
// offset is the transaction's. A later aborted transaction's offsets
// never show.
TEST_F(Cluster, GroupCoordinatorMovedDuringTxnOffsetCommitKeepsTheOffsetsExactlyWhenCommitted) {
  start_cluster(3, {{"default.replication.factor", "3"}, {"min.insync.replicas", "2"}});
  create_topic("g", 1);
  topic_partition tp{"g", 0};
  {
    producer warmup{client_props({{"transactional.id", "warmup"}})};
    warmup.init_transactions();
    warmup.begin_transaction();
    warmup.send_offsets_to_transaction({{tp, 0}}, "warmup-group");
    warmup.commit_transaction();
  }
  for (int32_t s = 0; s < internal_partitions; ++s) {
    wait_leader_of({transaction_state_topic, s});
    wait_leader_of({consumer_offsets_topic, s});
  }
  auto [tid, txn_node] = key_led_outside("gm-", transaction_state_topic, {});
  ASSERT_GT(txn_node, 0);
  auto [group, group_node] = key_led_outside("group-", consumer_offsets_topic, {txn_node});
  ASSERT_GT(group_node, 0);
  auto [offsets_tp, offsets_at] = internal_partition_of(group, consumer_offsets_topic);
  ASSERT_EQ(offsets_at.first, group_node);
  producer p{patient_txn_props(tid)};
  p.init_transactions();
  auto txn = [&](const std::string& value, int64_t offset) {
    p.begin_transaction();
    p.send({"g", 0, "", value, {}, -1});
    p.send_offsets_to_transaction({{tp, offset}}, group);
  };
  auto committed = [&](std::vector<int32_t> alive) {
    consumer c{client_props({{"group.id", group}, {"isolation.level", "read_committed"}}, alive)};
    return c.committed(tp);
  };
  txn("one", 10);
  p.commit_transaction();
  EXPECT_EQ(committed({}), std::optional<int64_t>{10});
  txn("two", 20);
  ASSERT_TRUE(nodes[group_node]->proc().stop(SIGKILL, 10s));
  p.commit_transaction();
  auto moved = wait_leader_above(offsets_tp, offsets_at.second);
  ASSERT_GT(moved.first, 0);
  ASSERT_NE(moved.first, group_node);
  auto alive = running();
  EXPECT_EQ(committed(alive), std::optional<int64_t>{20});
  txn("three", 30);
  p.flush();
  p.abort_transaction();
  EXPECT_EQ(committed(alive), std::optional<int64_t>{20});
  EXPECT_EQ(read_committed_records(client_props({}, alive), {tp}, 2),
            (std::multiset<std::string>{"0:one", "0:two"}));
}

// A follower cut off from its leader only (drill hook; ZooKeeper, the
// controller's node and clients still reach both): it fetches no more, the
// leader takes it out of the ISR after replica.lag.time.max.ms and goes
// on acknowledging acks=all writes with the two left (min.insync.replicas
// 2). Healed, it catches up and the leader adds it back; every replica
// holds the same records, each acknowledged one at its offset.
TEST_F(Cluster, FollowerCutOffFromItsLeaderLeavesTheIsrAndRejoinsOnceHealed) {
  topic_partition tp{"f", 0};
  auto [leader, follower] = leader_and_follower_to_cut(tp.topic, "2");
  ASSERT_GT(follower, 0);
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "60000"}})};
  std::map<std::string, int64_t> acked;
  send_acked(idem, "f", 0, 20, acked);
  admin_client drill{client_props({}, {follower})};
  auto cut = drill.drill_network({false, {leader}, false, false});
  ASSERT_TRUE(cut.ok()) << cut.error().to_string();
  EXPECT_EQ(cut->message, "");
  send_acked(idem, "f", 20, 40, acked); // once the ISR shrank to two
  std::regex two("\\] ISR updated to [1-3],[1-3] and version updated to");
  EXPECT_TRUE(std::regex_search(log(leader), two)) << log(leader);
  auto healed = drill.drill_network({true, {leader}, false, false});
  ASSERT_TRUE(healed.ok()) << healed.error().to_string();
  EXPECT_EQ(healed->message, "");
  ASSERT_TRUE(isr_whole(leader, tp)) << log(leader);
  send_acked(idem, "f", 40, 50, acked);
  auto now = current_leader(tp);
  EXPECT_EQ(now.first, leader);
  expect_identical_replicas(tp, 50, now.first, now.second, acked);
}

// Five batches in flight across a leader change (idempotence with
// max.in.flight.requests.per.connection 5, one record per batch): the
// leader L appended them and the next replica of the assignment F has
// fetched them, but none is acknowledged (L is cut off from the third
// replica, which stays in the ISR and holds the HW back) when L is killed.
// F takes over holding all five from its first request, and the
// producer's retries are deduplicated: each value once, in the order sent,
// at the offset its acknowledgement names; every replica the same.
TEST_F(Cluster, FiveBatchesInFlightAcrossALeaderChangeLandOnceInOrder) {
  topic_partition tp{"i", 0};
  auto [leader, epoch] =
    start_replicated(tp.topic, {{"caftx.drills.enable", "true"}, {"log.level", "trace"}});
  ASSERT_GT(leader, 0);
  auto replicas = assignment_of(tp);
  ASSERT_EQ(replicas.size(), 3u);
  ASSERT_EQ(replicas[0], leader);
  auto next = replicas[1];
  auto held = replicas[2];
  producer idem{client_props({{"enable.idempotence", "true"},
                              {"max.in.flight.requests.per.connection", "5"},
                              {"batch.size", "1"},
                              {"delivery.timeout.ms", "60000"}})};
  std::map<std::string, int64_t> acked;
  send_acked(idem, "i", 0, 10, acked);
  admin_client drill{client_props({}, {leader})};
  auto cut = drill.drill_network({false, {held}, false, false});
  ASSERT_TRUE(cut.ok()) << cut.error().to_string();
  std::vector<std::future<record_metadata>> in_flight;
  for (int i = 10; i < 15; ++i)
    in_flight.push_back(idem.send({"i", 0, "", std::to_string(i), {}, -1}));
  ASSERT_TRUE(wait_until(
    [&] {
      return logged(leader, "Recorded replica " + std::to_string(next)
                              + " log end offset (LEO) position 15");
    },
    30s))
    << log(leader);
  for (auto& f : in_flight)
    ASSERT_EQ(f.wait_for(0s), std::future_status::timeout) << "acknowledged with the HW held";
  ASSERT_TRUE(nodes[leader]->proc().stop(SIGKILL, 10s));
  // The third replica's half of the cut: L's next process is not cut off.
  admin_client heal{client_props({}, {held})};
  ASSERT_TRUE(heal.drill_network({true, {leader}, false, true}).ok());
  for (int i = 10; i < 15; ++i)
    acked[std::to_string(i)] = in_flight[i - 10].get().offset;
  for (int i = 0; i < 15; ++i)
    EXPECT_EQ(acked[std::to_string(i)], i) << "value " << i;
  auto now = current_leader(tp);
  ASSERT_EQ(now.first, next);
  EXPECT_TRUE(logged(next, "Leader i-0 starts at leader epoch " + std::to_string(now.second)
                             + " from offset 15"))
    << log(next);
  start(leader);
  ASSERT_TRUE(isr_whole(next, tp)) << log(next);
  send_acked(idem, "i", 15, 20, acked);
  now = current_leader(tp);
  expect_identical_replicas(tp, 20, now.first, now.second, acked);
}

// The `__transaction_state` leader killed between its marker writes
// (docs/testing.md): a transaction over two partitions, one led by a node
// cut off from the coordinator's node (its marker is lost) and one by the
// third node (its marker lands: read_committed shows that half). The
// coordinator's node C is killed in PrepareCommit; the shard's next
// leader sends both markers again at its coordinator epoch. The partition
// that had its marker takes the second one without effect: each record
// once under read_committed, the last stable offset of both partitions at
// their high watermark, and the next transaction commits.
TEST_F(Cluster, TransactionStateLeaderKilledBetweenMarkersCompletesEachPartitionOnce) {
  held_markers h;
  hold_markers_on("bm", h);
  if (HasFatalFailure())
    return;
  int32_t third = 6 - h.c - h.d;
  topic_partition landed_tp{"", -1};
  for (int32_t p = 0; p < 3; ++p)
    if (current_leader({"bm", p}).first == third)
      landed_tp = {"bm", p};
  ASSERT_GE(landed_tp.partition, 0) << "no partition of bm led by node " << third;
  producer p{patient_txn_props(h.tid)};
  p.init_transactions();
  p.begin_transaction();
  p.send({"bm", h.tp.partition, "", "cut", {}, -1});
  p.send({"bm", landed_tp.partition, "", "landed", {}, -1});
  p.flush();
  cut_off_from_the_coordinator(h);
  p.commit_transaction();
  // The marker on the third node's partition landed: its half is visible.
  auto landed = std::to_string(landed_tp.partition) + ":landed";
  EXPECT_EQ(read_committed({landed_tp}, 1), std::multiset<std::string>{landed});
  kill_the_coordinator_in(h, "PrepareCommit", "CompleteCommit");
  if (HasFatalFailure())
    return;
  p.begin_transaction();
  p.send({"bm", h.tp.partition, "", "next", {}, -1});
  p.send({"bm", landed_tp.partition, "", "next", {}, -1});
  p.commit_transaction();
  auto alive = running();
  auto cut_part = std::to_string(h.tp.partition) + ":";
  auto landed_part = std::to_string(landed_tp.partition) + ":";
  EXPECT_EQ(read_committed_records(client_props({}, alive), {h.tp, landed_tp}, 4),
            (std::multiset<std::string>{cut_part + "cut", cut_part + "next", landed,
                                        landed_part + "next"}));
  for (auto& tp : {h.tp, landed_tp}) {
    auto [lso, hw] = lso_and_hw(tp, alive);
    EXPECT_EQ(lso, hw) << "the last stable offset of " << to_string(tp)
                       << " is short of its high watermark";
  }
}

// Every node crashed at once (SIGKILL of all three) with acks=all writes
// in flight and a transaction open, twice, restarted in two orders: the
// old leader last (a follower leads; what only the old leader had, never
// acknowledged, is truncated when it follows) and the last leader first
// (it leads again with whatever it had). Nothing acknowledged is lost,
// each in-flight write lands once (the producer's retries are
// deduplicated by the replicated producer state), the open transaction is
// aborted by its timeout so the last stable offset reaches the high
// watermark, the committed one stays visible, and every replica holds the
// same log.
TEST_F(Cluster, AllNodesCrashedAndRestartedInVaryingOrdersLoseNothingAcknowledged) {
  topic_partition tp{"a", 0};
  auto [leader, epoch] = start_replicated(tp.topic);
  ASSERT_GT(leader, 0);
  auto replicas = assignment_of(tp);
  ASSERT_EQ(replicas.size(), 3u);
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "120000"}})};
  std::map<std::string, int64_t> acked;
  send_acked(idem, "a", 0, 20, acked);
  producer txn{client_props({{"transactional.id", "crash"}, {"transaction.timeout.ms", "5000"}})};
  txn.init_transactions();
  txn.begin_transaction();
  txn.send({"a", 0, "", "committed", {}, -1});
  txn.commit_transaction();
  txn.begin_transaction();
  txn.send({"a", 0, "", "open", {}, -1});
  txn.flush();
  // Crashes every node while values from..to-1 are being sent (the
  // partition led at leader epoch `at`), restarts `order[0]` alone until
  // it leads, then the others, and notes the acknowledged offsets: the
  // leader and leader epoch afterwards.
  auto crash_all = [&](int from, int to, int32_t at, const std::vector<int32_t>& order) {
    std::vector<std::future<record_metadata>> in_flight;
    for (int i = from; i < to; ++i)
      in_flight.push_back(idem.send({"a", 0, "", std::to_string(i), {}, -1}));
    for (auto& [id, n] : nodes)
      EXPECT_TRUE(n->proc().stop(SIGKILL, 10s));
    start(order[0]);
    auto now = wait_led_by(tp, order[0], at);
    EXPECT_EQ(now.first, order[0]) << "leader " << now.first << " at epoch " << now.second;
    for (size_t i = 1; i < order.size(); ++i)
      start(order[i]);
    for (int i = from; i < to; ++i)
      acked[std::to_string(i)] = in_flight[i - from].get().offset;
    EXPECT_TRUE(isr_whole(order[0], tp)) << log(order[0]);
    return current_leader(tp);
  };
  // A follower first: the old leader comes back last and follows.
  auto first = crash_all(20, 40, epoch, {replicas[1], replicas[2], replicas[0]});
  ASSERT_EQ(first.first, replicas[1]);
  // The last leader first, the others after it.
  auto second = crash_all(40, 60, first.second, {replicas[1], replicas[0], replicas[2]});
  ASSERT_EQ(second.first, replicas[1]);
  send_acked(idem, "a", 60, 70, acked);
  // The open transaction aborted by the coordinator that reloaded it.
  auto alive = running();
  std::pair<int64_t, int64_t> at;
  EXPECT_TRUE(wait_until([&] { return (at = lso_and_hw(tp, alive)).first == at.second; }, 60s))
    << "last stable offset " << at.first << ", high watermark " << at.second;
  auto seen = read_committed({tp}, 71);
  std::multiset<std::string> want{"0:committed"};
  for (int i = 0; i < 70; ++i)
    want.insert("0:" + std::to_string(i));
  EXPECT_EQ(seen, want);
  // 70 values and the two transactions' records (a consumer never sees
  // the markers).
  auto now = current_leader(tp);
  auto logs = logs_of_every_replica(tp, 72, now.first, now.second);
  ASSERT_EQ(logs.size(), 3u);
  EXPECT_EQ(logs[1], logs[0]);
  EXPECT_EQ(logs[2], logs[0]);
  for (auto& [value, offset] : acked)
    EXPECT_EQ(logs[0][offset], value) << "offset " << offset;
}

// A double failover A -> B -> A (R4 in Kafka's history: KAFKA-1211, the
// leader-epoch truncation of KIP-101): the leader A is killed, B takes
// over and acknowledges more writes, A restarts and rejoins the ISR (it
// truncates what only it had), and B is killed right after, so that A
// leads again from the log it rebuilt. Every acknowledged record is there
// once, at its offset, and every replica holds the same log.
TEST_F(Cluster, DoubleFailoverBackToTheFirstLeaderKeepsEveryAcknowledgedRecord) {
  topic_partition tp{"d", 0};
  auto [a, epoch] = start_replicated(tp.topic, {{"auto.leader.rebalance.enable", "false"}});
  ASSERT_GT(a, 0);
  auto replicas = assignment_of(tp);
  ASSERT_EQ(replicas.size(), 3u);
  ASSERT_EQ(replicas[0], a);
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "60000"}})};
  std::map<std::string, int64_t> acked;
  send_acked(idem, "d", 0, 20, acked);
  // Writes in flight while A dies: some may be on A alone.
  std::vector<std::future<record_metadata>> in_flight;
  for (int i = 20; i < 30; ++i)
    in_flight.push_back(idem.send({"d", 0, "", std::to_string(i), {}, -1}));
  ASSERT_TRUE(nodes[a]->proc().stop(SIGKILL, 10s));
  auto b = wait_leader_above(tp, epoch);
  ASSERT_GT(b.first, 0);
  ASSERT_NE(b.first, a);
  for (int i = 20; i < 30; ++i)
    acked[std::to_string(i)] = in_flight[i - 20].get().offset;
  send_acked(idem, "d", 30, 40, acked);
  start(a);
  ASSERT_TRUE(isr_whole(b.first, tp)) << log(b.first);
  // B killed as soon as A is back in the ISR: A is the first live replica
  // of the assignment in it, and leads again.
  ASSERT_TRUE(nodes[b.first]->proc().stop(SIGKILL, 10s));
  auto again = wait_leader_above(tp, b.second);
  ASSERT_EQ(again.first, a) << "leader " << again.first << " at epoch " << again.second;
  send_acked(idem, "d", 40, 50, acked);
  start(b.first);
  ASSERT_TRUE(isr_whole(a, tp)) << log(a);
  auto now = current_leader(tp);
  expect_identical_replicas(tp, 50, now.first, now.second, acked);
}

// The ISR shrinks between an append and its acknowledgement (R9 in
// Kafka's history, KAFKA-3456's NOT_ENOUGH_REPLICAS_AFTER_APPEND), with
// min.insync.replicas 3: a follower cut off from the leader holds the HW
// back; once the leader drops it from the ISR (replica.lag.time.max.ms)
// the writes waiting for acks=all fail with NOT_ENOUGH_REPLICAS_AFTER_APPEND
// (20) and stay in the log; a write sent now fails with NOT_ENOUGH_REPLICAS
// (19) and is not appended; an idempotent producer's write caught the same
// way is retried until the follower is back and lands once, at the offset
// of its first append.
TEST_F(Cluster, IsrShrinkingAfterTheAppendAnswersNotEnoughReplicasAfterAppendAndKeepsTheRecord) {
  topic_partition tp{"s", 0};
  auto [leader, cut_off] = leader_and_follower_to_cut(tp.topic, "3");
  ASSERT_GT(cut_off, 0);
  producer plain{client_props({{"enable.idempotence", "false"}, {"acks", "all"}, {"retries", "0"}})};
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "60000"}})};
  std::map<std::string, int64_t> acked;
  send_acked(plain, "s", 0, 1, acked);
  admin_client drill{client_props({}, {leader})};
  ASSERT_TRUE(drill.drill_network({false, {cut_off}, false, false}).ok());
  auto after_append = plain.send({"s", 0, "", "after-append", {}, -1});
  auto retried = idem.send({"s", 0, "", "retried", {}, -1});
  try {
    after_append.get();
    ADD_FAILURE() << "acknowledged with the ISR below min.insync.replicas";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::not_enough_replicas_after_append) << e.what();
  }
  try {
    plain.send({"s", 0, "", "refused", {}, -1}).get();
    ADD_FAILURE() << "appended with the ISR below min.insync.replicas";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::not_enough_replicas) << e.what();
  }
  EXPECT_EQ(retried.wait_for(0s), std::future_status::timeout);
  ASSERT_TRUE(drill.drill_network({true, {cut_off}, false, false}).ok());
  auto retried_at = retried.get().offset;
  send_acked(plain, "s", 1, 2, acked);
  auto log_now = read_all(tp, 4);
  std::multiset<std::string> values;
  for (auto& [offset, value] : log_now)
    values.insert(value);
  EXPECT_EQ(values, (std::multiset<std::string>{"0", "1", "after-append", "retried"}));
  EXPECT_EQ(log_now[retried_at], "retried");
  EXPECT_EQ(log_now[acked["1"]], "1");
  EXPECT_EQ(acked["1"], 3) << "written after the two appended during the cut";
}

// unclean.leader.election.enable=false (Kafka's default): the ISR shrinks
// to the leader alone (both followers killed), then the leader is killed
// too. The followers come back, but neither is in the ISR: the partition
// stays without a leader (writes fail, nothing is truncated) until the
// last in-sync replica returns and leads again at a higher leader epoch,
// with every record it acknowledged.
TEST_F(Cluster, NoUncleanElectionThePartitionWaitsForItsLastInSyncReplica) {
  topic_partition tp{"u", 0};
  auto [leader, epoch] = start_replicated(tp.topic, {{"min.insync.replicas", "1"}});
  ASSERT_GT(leader, 0);
  producer idem{client_props({{"enable.idempotence", "true"}, {"delivery.timeout.ms", "120000"}})};
  std::map<std::string, int64_t> acked;
  send_acked(idem, "u", 0, 10, acked);
  auto followers = kill_all_but(leader);
  ASSERT_EQ(followers.size(), 2u);
  // Acknowledged by the leader alone once the controller shrank the ISR.
  send_acked(idem, "u", 10, 20, acked);
  ASSERT_TRUE(nodes[leader]->proc().stop(SIGKILL, 10s));
  for (auto id : followers)
    start(id);
  for (auto id : followers)
    ASSERT_TRUE(wait_until([&] { return logged(id, "registered with node epoch"); }, 30s));
  // A write while the partition waits; the leader's restart waits out its
  // old session (seconds), time in which an unclean controller would have
  // elected a follower at once.
  auto waiting = idem.send({"u", 0, "", "20", {}, -1});
  start(leader);
  auto back = wait_leader_above(tp, epoch);
  ASSERT_EQ(back.first, leader) << "leader " << back.first << " at epoch " << back.second;
  acked["20"] = waiting.get().offset;
  for (auto id : followers)
    EXPECT_FALSE(logged(id, "Leader u-0 starts at leader epoch")) << log(id);
  auto log_now = read_all(tp, 21);
  for (auto& [value, offset] : acked)
    EXPECT_EQ(log_now[offset], value) << "offset " << offset;
}

// A transaction-log write while the `__transaction_state` partition's ISR
// is below transaction.state.log.min.isr (2): the two other nodes are
// killed, the controller leaves the coordinator's node alone in the ISR,
// and the card write of the next transaction's AddPartitionsToTxn is
// refused with nothing appended. The coordinator answers
// COORDINATOR_NOT_AVAILABLE (Kafka's mapping of NOT_ENOUGH_REPLICAS), the
// card stays as it was (CompleteCommit of the last transaction), and the
// producer's retries succeed once a node is back in the ISR: the
// transaction commits, each record seen once.
TEST_F(Cluster, TransactionLogBelowItsMinIsrAnswersCoordinatorNotAvailableUntilAReplicaReturns) {
  start_cluster(3, {{"default.replication.factor", "3"}, {"min.insync.replicas", "1"}});
  create_topic("tl", 1);
  topic_partition tp{"tl", 0};
  auto [tid, c] = transactional_id_led_outside("tl-", {});
  ASSERT_GT(c, 0);
  auto [shard, shard_at] = internal_partition_of(tid, transaction_state_topic);
  ASSERT_EQ(shard_at.first, c);
  producer p{patient_txn_props(tid)};
  p.init_transactions();
  p.begin_transaction();
  p.send({"tl", 0, "", "before", {}, -1});
  p.commit_transaction();
  {
    // Its markers written and CompleteCommit durable before the kills.
    admin_client admin{client_props()};
    std::string done = "CompleteCommit at coordinator epoch " + std::to_string(shard_at.second);
    std::string last;
    ASSERT_TRUE(wait_until([&] { return (last = transaction_state(admin, tid)) == done; }, 30s))
      << last;
  }
  auto others = kill_all_but(c);
  ASSERT_EQ(others.size(), 2u);
  // The controller (on c, or moved there) removes both from the ISR.
  auto alone = wait_leader_above(shard, shard_at.second);
  ASSERT_EQ(alone.first, c);
  p.begin_transaction();
  auto during = p.send({"tl", 0, "", "during", {}, -1});
  ASSERT_TRUE(wait_until(
    [&] { return logged(c, "Appending new metadata of transactionalId " + tid + " failed due to "
                           "NOT_ENOUGH_REPLICAS, returning COORDINATOR_NOT_AVAILABLE"); },
    30s))
    << log(c);
  {
    admin_client admin{client_props({}, {c})};
    EXPECT_EQ(transaction_state(admin, tid),
              "CompleteCommit at coordinator epoch " + std::to_string(alone.second));
  }
  EXPECT_EQ(during.wait_for(0s), std::future_status::timeout);
  start(others[0]);
  during.get();
  p.commit_transaction();
  EXPECT_EQ(read_committed_records(client_props({}, running()), {tp}, 2),
            (std::multiset<std::string>{"0:before", "0:during"}));
}

// Leadership of one `__transaction_state` partition flapping (R12, R14 in
// Kafka's history: KAFKA-5114, KAFKA-6052) while a producer commits
// transactions back to back: three times its leader A is stopped cleanly
// (the controller moves the partition to B at once), restarted, and made
// leader again by ElectLeaders once back in sync. Each move unloads one
// coordinator and loads the next at a higher coordinator epoch; the
// producer is never fenced, no load stays stuck (it goes on committing),
// and read_committed shows exactly the transactions whose commit it saw
// succeed.
TEST_F(Cluster, TransactionStateLeadershipFlappingKeepsCommittingExactlyOnce) {
  start_cluster(3, {{"default.replication.factor", "3"},
                    {"min.insync.replicas", "2"},
                    {"auto.leader.rebalance.enable", "false"}});
  create_topic("fl", 1);
  auto [tid, a] = transactional_id_led_outside("fl-", {controller_at(1)});
  ASSERT_GT(a, 0);
  auto [shard, shard_at] = internal_partition_of(tid, transaction_state_topic);
  ASSERT_EQ(shard_at.first, a);
  ASSERT_EQ(assignment_of(shard).at(0), a) << "not led by its preferred replica";
  std::atomic<bool> stop{false};
  std::atomic<int> commits{0};
  std::set<int> committed;
  std::string fatal;
  std::thread loop([&, tid = tid] {
    producer p{patient_txn_props(tid)};
    p.init_transactions();
    for (int i = 0; !stop; ++i) {
      try {
        p.begin_transaction();
        p.send({"fl", 0, "", std::to_string(i), {}, -1});
        for (;;) {
          try {
            p.commit_transaction();
            break;
          } catch (const kafka_exception& e) {
            if (e.cls() != error_class::retriable)
              throw;
          }
        }
        committed.insert(i);
        ++commits;
      } catch (const kafka_exception& e) {
        if (e.is_fatal()) {
          fatal = e.what();
          return;
        }
        for (bool aborted = false; !aborted;) {
          try {
            p.abort_transaction();
            aborted = true;
          } catch (const kafka_exception& again) {
            if (again.cls() != error_class::retriable) {
              fatal = again.what();
              return;
            }
          }
        }
      }
    }
  });
  struct joined {
    std::atomic<bool>& stop;
    std::thread& t;
    ~joined() {
      stop = true;
      if (t.joinable())
        t.join();
    }
  } join_at_exit{stop, loop};
  for (int round = 0; round < 3; ++round) {
    auto before = current_leader(shard);
    ASSERT_EQ(before.first, a);
    ASSERT_TRUE(wait_until([&] { return commits > 2 * round; }, 60s)) << "no commits";
    ASSERT_TRUE(nodes[a]->proc().stop(SIGTERM, 60s));
    auto moved = wait_leader_above(shard, before.second);
    ASSERT_GT(moved.first, 0);
    ASSERT_NE(moved.first, a);
    start(a);
    ASSERT_TRUE(isr_whole(moved.first, shard, moved.second)) << log(moved.first);
    admin_client admin{client_props()};
    auto r = admin.elect_preferred_leaders({shard});
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].error, error_code::none) << (*r)[0].message;
    auto back = wait_led_by(shard, a, moved.second);
    ASSERT_EQ(back.first, a) << "leader " << back.first << " at epoch " << back.second;
  }
  auto after_flaps = commits.load();
  ASSERT_TRUE(wait_until([&] { return commits > after_flaps; }, 60s)) << "stuck after the flaps";
  stop = true;
  loop.join();
  EXPECT_EQ(fatal, "");
  std::multiset<std::string> want;
  for (auto i : committed)
    want.insert("0:" + std::to_string(i));
  EXPECT_EQ(read_committed({{"fl", 0}}, want.size()), want);
}

// ZooKeeper's leader killed (SIGKILL) in a three-server ensemble: the two
// left elect a new leader and the nodes' sessions move to them (no node
// registers again: its session survived). caftx serves throughout — a
// transaction commits while ZooKeeper elects, since records, cards and
// markers never go through ZooKeeper — and once ZooKeeper serves again
// the controller acts: a new topic is created and led, and a killed
// node's leadership moves.
TEST_F(Cluster, ZooKeeperLeaderKilledTheClusterKeepsServingAndTheControllerActs) {
  zk_ensemble ensemble{3};
  topic_partition tp{"zk", 0};
  auto [leader, epoch] = start_replicated(
    tp.topic, {{"zookeeper.connect", ensemble.connect(chroot)}, {"zookeeper.session.timeout.ms", "6000"}});
  ASSERT_GT(leader, 0);
  producer p{patient_txn_props("zk-txn")};
  p.init_transactions();
  auto commit = [&](const std::string& value) {
    p.begin_transaction();
    p.send({"zk", 0, "", value, {}, -1});
    p.commit_transaction();
  };
  commit("before");
  auto zk_leader = ensemble.leader();
  ASSERT_GE(zk_leader, 0);
  ensemble.kill(zk_leader);
  commit("during");
  // CreateTopics while ZooKeeper elects may time out (the controller then
  // reads the state again): the retry creates the topic or finds it made.
  {
    admin_client admin{client_props()};
    status st;
    EXPECT_TRUE(wait_until(
      [&] {
        st = admin.create_topic("zk2", 1);
        return st.ok() || st.code() == error_code::topic_already_exists;
      },
      60s))
      << st.to_string();
  }
  EXPECT_GT(wait_leader_above({"zk2", 0}, -1).first, 0);
  ASSERT_TRUE(nodes[leader]->proc().stop(SIGKILL, 10s));
  auto moved = wait_leader_above(tp, epoch);
  ASSERT_GT(moved.first, 0);
  ASSERT_NE(moved.first, leader);
  commit("after");
  for (auto id : running()) {
    auto text = log(id);
    auto first = text.find("registered with node epoch");
    EXPECT_NE(first, std::string::npos) << log(id);
    EXPECT_EQ(text.find("registered with node epoch", first + 1), std::string::npos)
      << "node " << id << " registered again: its session expired";
  }
  EXPECT_EQ(read_committed({tp}, 3), (std::multiset<std::string>{"0:before", "0:during", "0:after"}));
}

// The data partition's leader dies after appending a transaction's marker
// and before answering it (fault drill: partition.append_durable armed on
// its node for control batches of the partition kills the process there).
// The marker may be on the dead leader alone; the coordinator sends it again
// to the next leader, where it takes effect once: the transaction
// completes, read_committed sees its record once, the last stable offset
// reaches the high watermark, and the old leader, restarted, truncates its
// copy and rejoins (the replicas compared after the test).
TEST_F(Cluster, DataLeaderKilledAfterTheMarkerAppendBeforeItsReplyTakesTheMarkerOnce) {
  topic_partition tp{"mk", 0};
  auto [d, epoch] = start_replicated(tp.topic, {{"caftx.drills.enable", "true"}});
  ASSERT_GT(d, 0);
  auto [tid, c] = transactional_id_led_outside("mk-", {d});
  ASSERT_GT(c, 0);
  producer p{patient_txn_props(tid)};
  p.init_transactions();
  p.begin_transaction();
  p.send({"mk", 0, "", "first", {}, -1});
  p.flush();
  {
    admin_client drill{client_props({}, {d})};
    auto armed = drill.drill_fault({"partition.append_durable", "mk", 0, true, true});
    ASSERT_TRUE(armed.ok()) << armed.to_string();
  }
  p.commit_transaction();
  ASSERT_TRUE(wait_until([&] { return !nodes[d]->proc().running(); }, 30s))
    << "the armed fault point did not kill node " << d;
  EXPECT_TRUE(logged(d, "drill: armed partition.append_durable for mk-0, control batches only"));
  auto moved = wait_leader_above(tp, epoch);
  ASSERT_GT(moved.first, 0);
  ASSERT_NE(moved.first, d);
  admin_client admin{client_props({}, running())};
  std::string last;
  EXPECT_TRUE(wait_until(
    [&] { return (last = transaction_state(admin, tid)).rfind("CompleteCommit", 0) == 0; }, 60s))
    << last;
  p.begin_transaction();
  p.send({"mk", 0, "", "second", {}, -1});
  p.commit_transaction();
  EXPECT_EQ(read_committed({tp}, 2), (std::multiset<std::string>{"0:first", "0:second"}));
  std::pair<int64_t, int64_t> at;
  EXPECT_TRUE(wait_until([&] { return (at = lso_and_hw(tp, running())).first == at.second; }, 60s))
    << "last stable offset " << at.first << ", high watermark " << at.second;
  start(d);
  ASSERT_TRUE(isr_whole(moved.first, tp, moved.second)) << log(moved.first);
}

// Fault drills are refused unless the node enables drills, and name what
// is wrong: an unknown point.
TEST_F(Cluster, FaultDrillsAreRefusedWhenDisabledOrUnknown) {
  start(1);
  ASSERT_TRUE(wait_until([&] { return logged(1, "registered with node epoch"); }, 30s));
  {
    admin_client admin{client_props()};
    auto st = admin.drill_fault({"partition.append_durable", "", -1, false, true});
    EXPECT_EQ(st.code(), error_code::invalid_request);
    EXPECT_EQ(st.message(), "drills are disabled on node 1 (caftx.drills.enable=false)");
  }
  nodes[1]->proc().stop(SIGTERM, 30s);
  start(1, {{"caftx.drills.enable", "true"}});
  ASSERT_TRUE(wait_until([&] { return logged(1, "registered with node epoch"); }, 30s));
  admin_client admin{client_props()};
  auto st = admin.drill_fault({"partition.nowhere", "", -1, false, true});
  EXPECT_EQ(st.code(), error_code::invalid_request);
  EXPECT_EQ(st.message(), "unknown fault point 'partition.nowhere'");
  EXPECT_TRUE(admin.drill_fault({"txn_coordinator.between_markers", "", -1, false, false}).ok());
}

// The admin call (kafka-leader-election.sh --election-type preferred,
// KIP-460) with automatic rebalancing off: after the preferred leader was
// killed and came back in sync, ElectLeaders through another node moves
// the leadership back to it at a higher leader epoch; a second call
// answers ELECTION_NOT_NEEDED, an unknown partition
// UNKNOWN_TOPIC_OR_PARTITION.
TEST_F(Cluster, ElectLeadersMovesLeadershipBackToThePreferredReplica) {
  topic_partition tp{"e", 0};
  auto [preferred, epoch] = start_replicated(tp.topic, {{"auto.leader.rebalance.enable", "false"}});
  ASSERT_GT(preferred, 0);
  ASSERT_TRUE(nodes[preferred]->proc().stop(SIGKILL, 10s));
  auto moved = wait_leader_above(tp, epoch);
  ASSERT_GT(moved.first, 0);
  start(preferred);
  ASSERT_TRUE(isr_whole(moved.first, tp)) << log(moved.first);
  int32_t other = -1;
  for (int32_t id = 1; id <= 3; ++id)
    if (id != preferred && id != moved.first)
      other = id;
  admin_client admin{client_props({}, {other})};
  auto r = admin.elect_preferred_leaders({tp, {"e", 9}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].error, error_code::none) << (*r)[0].message;
  EXPECT_EQ((*r)[1].error, error_code::unknown_topic_or_partition);
  auto now = wait_led_by(tp, preferred, moved.second);
  ASSERT_EQ(now.first, preferred) << "leader " << now.first << " at epoch " << now.second;
  auto again = admin.elect_preferred_leaders({tp});
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].error, error_code::election_not_needed);
}

// Drill requests are refused unless the node enables them, and name what
// is wrong: drills off, the node's own id, a negative id.
TEST_F(Cluster, DrillRequestsAreRefusedWhenDisabledOrMalformed) {
  start(1);
  ASSERT_TRUE(wait_until([&] { return logged(1, "registered with node epoch"); }, 30s));
  {
    admin_client admin{client_props()};
    auto r = admin.drill_network({false, {2}, true, false});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), error_code::invalid_request);
    EXPECT_EQ(r.error().message(), "drills are disabled on node 1 (caftx.drills.enable=false)");
  }
  nodes[1]->proc().stop(SIGTERM, 30s);
  start(1, {{"caftx.drills.enable", "true"}});
  ASSERT_TRUE(wait_until([&] { return logged(1, "registered with node epoch"); }, 30s));
  admin_client admin{client_props()};
  for (int32_t bad : {1, -1}) {
    auto r = admin.drill_network({false, {bad}, false, false});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), error_code::invalid_request);
    EXPECT_EQ(r.error().message(), "node 1 cannot be cut off from node " + std::to_string(bad)
                                     + ": not a peer");
  }
  // A peer it has never heard of: this node's half holds, unconfirmed.
  auto r = admin.drill_network({false, {7}, false, false});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->cut_peers, std::vector<int32_t>{7});
  EXPECT_EQ(r->message, "not confirmed by node 7");
  auto h = admin.drill_network({true, {7}, false, false});
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_TRUE(h->cut_peers.empty());
}

} // namespace
} // namespace caftx::testing
