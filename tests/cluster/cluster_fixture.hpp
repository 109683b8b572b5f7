// The fixture of the tests with real processes (label `cluster`):
// caftx-node processes on one ZooKeeper (tests/cluster/zk_server.hpp) and
// clients in the test process that know only bootstrap.servers. Every
// process is started on 127.0.0.1 with free ports and stopped by its PID;
// after a passing test the stopped nodes' replicas are compared batch by
// batch.
#pragma once

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
#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"
#include "zk_server.hpp"

namespace caftx::testing {

using namespace std::chrono_literals;

constexpr int32_t internal_partitions = 6;

class Cluster : public ::testing::Test {
protected:
  temp_dir tmp{"multinode"};
  std::string chroot = zk_server::shared().fresh_chroot(
    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::map<int32_t, uint16_t> ports;
  std::map<int32_t, std::unique_ptr<node_process>> nodes;
  int restarts = 0;
  /// Keys of one node's own (a port of its own, say), added to every start
  /// of it; `extra` overrides them.
  std::function<std::map<std::string, std::string>(int32_t id)> per_node;

  std::string zookeeper() const { return zk_server::shared().connect(chroot); }

  std::map<std::string, std::string> node_props(int32_t id,
                                                std::map<std::string, std::string> extra = {}) {
    std::map<std::string, std::string> p{
      {"node.id", std::to_string(id)},
      {"zookeeper.connect", zookeeper()},
      {"zookeeper.session.timeout.ms", "4000"},
      {"transaction.state.log.num.partitions", std::to_string(internal_partitions)},
      {"offsets.topic.num.partitions", std::to_string(internal_partitions)},
      {"log.level", "debug"},
    };
    for (auto& [k, v] : extra) {
      if (v.empty())
        p.erase(k); // "" drops a key: zookeeper.connect, for the embedded default
      else
        p[k] = v;
    }
    return p;
  }

  // Starts node `id` on its own port and data directory (the same ones
  // again on a restart).
  node_process& start(int32_t id, std::map<std::string, std::string> extra = {}) {
    if (!ports.count(id))
      ports[id] = free_port();
    if (per_node)
      extra.merge(per_node(id)); // keys already in extra stay
    auto name = "node" + std::to_string(id) + "-" + std::to_string(restarts++);
    auto props = write_server_properties(tmp.path(), name + ".properties", ports[id],
                                         tmp.path() + "/data" + std::to_string(id),
                                         node_props(id, std::move(extra)));
    nodes[id] = std::make_unique<node_process>(tmp.path(), name, props);
    EXPECT_TRUE(nodes[id]->await_started()) << nodes[id]->proc().out() << nodes[id]->proc().err();
    return *nodes[id];
  }

  std::string log(int32_t id) { return nodes.at(id)->proc().out(); }

  bool logged(int32_t id, const std::string& what) {
    return log(id).find(what) != std::string::npos;
  }

  // Starts nodes 1..n and waits until each is registered and connected to
  // every other one (the controller's UpdateMetadata reached it).
  void start_cluster(int32_t n, const std::map<std::string, std::string>& extra = {}) {
    for (int32_t id = 1; id <= n; ++id)
      start(id, extra);
    for (int32_t id = 1; id <= n; ++id)
      for (int32_t other = 1; other <= n; ++other) {
        if (other == id)
          continue;
        ASSERT_TRUE(wait_until(
          [&] { return logged(id, "connected to node " + std::to_string(other) + " at"); }, 30s))
          << "node " << id << " never connected to node " << other << ":\n"
          << log(id);
      }
  }

  std::string bootstrap(std::vector<int32_t> ids = {}) {
    if (ids.empty())
      for (auto& [id, _] : ports)
        ids.push_back(id);
    std::string out;
    for (auto id : ids)
      out += (out.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(ports.at(id));
    return out;
  }

  properties client_props(properties extra = {}, std::vector<int32_t> ids = {}) {
    return remote_client_props(bootstrap(std::move(ids)), extra);
  }

  // The node whose log says it became leader of `tp` last, or -1.
  int32_t leader_of(const topic_partition& tp) {
    int32_t found = -1;
    auto line = "became leader of " + to_string(tp) + " at leader epoch ";
    for (auto& [id, n] : nodes)
      if (n->proc().out().find(line) != std::string::npos)
        found = id;
    return found;
  }

  int32_t wait_leader_of(const topic_partition& tp) {
    int32_t id = -1;
    wait_until([&] { return (id = leader_of(tp)) >= 0; }, 30s);
    return id;
  }

  // A node other than `except` that logged becoming leader of `tp` at a
  // leader epoch of at least 1 (elected after a failure), or -1.
  int32_t new_leader_of(const topic_partition& tp, int32_t except) {
    std::regex line("became leader of " + to_string(tp) + " at leader epoch [1-9]");
    for (auto& [id, n] : nodes)
      if (id != except && n->proc().running() && std::regex_search(n->proc().out(), line))
        return id;
    return -1;
  }

  // The running node whose partition logged leading `tp` at the highest
  // leader epoch (elected or leading on), with that epoch ({-1, -1} if none).
  std::pair<int32_t, int32_t> current_leader(const topic_partition& tp) {
    std::regex line("\\] Leader " + to_string(tp) + " starts at leader epoch ([0-9]+)");
    std::pair<int32_t, int32_t> best{-1, -1};
    for (auto& [id, n] : nodes) {
      if (!n->proc().running())
        continue;
      auto text = n->proc().out();
      for (std::sregex_iterator i{text.begin(), text.end(), line}, end; i != end; ++i) {
        auto epoch = std::stoi((*i)[1]);
        if (epoch > best.second)
          best = {id, epoch};
      }
    }
    return best;
  }

  // Waits for a leader of `tp` at a leader epoch above `above`.
  std::pair<int32_t, int32_t> wait_leader_above(const topic_partition& tp, int32_t above) {
    std::pair<int32_t, int32_t> l{-1, -1};
    wait_until([&] { return (l = current_leader(tp)).second > above; }, 60s);
    return l;
  }

  // Waits until `node` leads `tp` at a leader epoch above `above`: the
  // leader and epoch then (or the last seen after a minute).
  std::pair<int32_t, int32_t> wait_led_by(const topic_partition& tp, int32_t node, int32_t above) {
    std::pair<int32_t, int32_t> now{-1, -1};
    wait_until(
      [&] {
        now = current_leader(tp);
        return now.first == node && now.second > above;
      },
      60s);
    return now;
  }

  // Three nodes with every topic on three replicas, `min_isr` of them in
  // sync required, drills on, the ISR lag time 2 s and the request
  // timeout 5 s (a follower's fetch lost in a cut is sent again after it),
  // and topic `name` of one partition: its leader, and a follower on
  // another node than the controller's (the leader's ISR changes go
  // there: a leader cut off from the controller cannot shrink its ISR, as
  // in Kafka with AlterPartition); -1 for one not found.
  std::pair<int32_t, int32_t> leader_and_follower_to_cut(const std::string& name,
                                                         const std::string& min_isr) {
    start_cluster(3, {{"default.replication.factor", "3"},
                      {"min.insync.replicas", min_isr},
                      {"replica.lag.time.max.ms", "2000"},
                      {"request.timeout.ms", "5000"},
                      {"caftx.drills.enable", "true"}});
    create_topic(name, 1);
    auto leader = wait_leader_above({name, 0}, -1).first;
    auto controller = controller_at(1);
    int32_t follower = -1;
    for (int32_t id = 1; id <= 3; ++id)
      if (leader > 0 && id != leader && id != controller)
        follower = id;
    return {leader, follower};
  }

  // Waits up to a minute for leader `leader` of `tp` to log its ISR
  // updated to all three replicas (since it started leading at
  // `since_epoch`, if given).
  bool isr_whole(int32_t leader, const topic_partition& tp, int32_t since_epoch = -1) {
    std::regex line("\\[Partition " + to_string(tp) + " broker=" + std::to_string(leader)
                    + "\\] ISR updated to [1-3],[1-3],[1-3] and version updated to");
    auto start = "Leader " + to_string(tp) + " starts at leader epoch " + std::to_string(since_epoch)
                 + " ";
    return wait_until(
      [&] {
        auto text = log(leader);
        auto from = since_epoch < 0 ? 0 : text.find(start);
        return from != std::string::npos
               && std::regex_search(text.begin() + static_cast<std::ptrdiff_t>(from), text.end(),
                                    line);
      },
      60s);
  }

  // Three nodes with every topic on three replicas (min.insync.replicas
  // 2 unless `extra` sets it) and topic `name` of one partition: its
  // leader and leader epoch.
  std::pair<int32_t, int32_t> start_replicated(const std::string& name,
                                               std::map<std::string, std::string> extra = {}) {
    extra.emplace("default.replication.factor", "3");
    extra.emplace("min.insync.replicas", "2");
    start_cluster(3, extra);
    create_topic(name, 1);
    return wait_leader_above({name, 0}, -1);
  }

  // Sends values from..to-1 (as text) to partition 0 of `topic` and waits
  // for every acknowledgement, noting each value's acknowledged offset.
  static void send_acked(producer& p, const std::string& topic, int from, int to,
                         std::map<std::string, int64_t>& acked) {
    std::vector<std::future<record_metadata>> sent;
    for (int i = from; i < to; ++i)
      sent.push_back(p.send({topic, 0, "", std::to_string(i), {}, -1}));
    for (int i = from; i < to; ++i)
      acked[std::to_string(i)] = sent[i - from].get().offset;
  }

  // Every replica of `tp` holds the same `n` records, each acknowledged
  // value at its acknowledged offset (logs_of_every_replica: the leaders
  // are killed in turn, from `serving` at leader epoch `at`).
  void expect_identical_replicas(const topic_partition& tp, size_t n, int32_t serving, int32_t at,
                                 const std::map<std::string, int64_t>& acked) {
    auto logs = logs_of_every_replica(tp, n, serving, at);
    ASSERT_EQ(logs.size(), 3u);
    EXPECT_EQ(logs[0].size(), n);
    EXPECT_EQ(logs[1], logs[0]);
    EXPECT_EQ(logs[2], logs[0]);
    for (auto& [value, offset] : acked)
      EXPECT_EQ(logs[0][offset], value) << "offset " << offset;
  }

  // The log of `tp` (its first `n` records, offset -> value) as each of
  // its three replicas holds it: read from the leader `serving` (at leader
  // epoch `at`), which is then killed, and so on until the last replica
  // served it. Fewer than three logs if no replica took over.
  std::vector<std::map<int64_t, std::string>> logs_of_every_replica(const topic_partition& tp,
                                                                    size_t n, int32_t serving,
                                                                    int32_t at) {
    std::vector<std::map<int64_t, std::string>> logs;
    for (int round = 0; round < 3; ++round) {
      logs.push_back(read_all(tp, n, running()));
      if (round == 2)
        break;
      EXPECT_TRUE(nodes[serving]->proc().stop(SIGKILL, 10s));
      auto next = wait_leader_above(tp, at);
      if (next.first <= 0) {
        ADD_FAILURE() << "no replica took over from node " << serving;
        break;
      }
      serving = next.first;
      at = next.second;
    }
    return logs;
  }

  // The replicas of `tp` in assignment order (the first is the preferred
  // leader), from the controller's "New topic" line; empty if none logged it.
  std::vector<int32_t> assignment_of(const topic_partition& tp) {
    std::regex line("New topic " + tp.topic + " with replica assignment .*" + to_string(tp)
                    + " -> \\[([0-9,]+)\\]");
    for (auto& [id, n] : nodes) {
      std::smatch m;
      auto text = n->proc().out();
      if (!std::regex_search(text, m, line))
        continue;
      std::vector<int32_t> out;
      std::stringstream in{m[1].str()};
      for (std::string item; std::getline(in, item, ',');)
        out.push_back(std::stoi(item));
      return out;
    }
    return {};
  }

  // Kills (SIGKILL) every running node but `keep`: their ids, those that
  // did not stop left out.
  std::vector<int32_t> kill_all_but(int32_t keep) {
    std::vector<int32_t> killed;
    for (auto id : running())
      if (id != keep && nodes[id]->proc().stop(SIGKILL, 10s))
        killed.push_back(id);
    return killed;
  }

  // The ids of the nodes whose processes run.
  std::vector<int32_t> running() {
    std::vector<int32_t> alive;
    for (auto& [id, n] : nodes)
      if (n->proc().running())
        alive.push_back(id);
    return alive;
  }

  // Every record of `tp` from offset 0 as offset -> value (read_uncommitted).
  std::map<int64_t, std::string> read_all(const topic_partition& tp, size_t expected,
                                          std::vector<int32_t> ids = {}) {
    consumer c{client_props({{"auto.offset.reset", "earliest"}}, std::move(ids))};
    c.assign({tp});
    std::map<int64_t, std::string> got;
    size_t seen = 0;
    wait_until(
      [&] {
        for (auto& r : c.poll(100ms)) {
          got[r.offset] = r.value;
          ++seen;
        }
        return seen >= expected;
      },
      30s);
    for (auto& r : c.poll(200ms)) {
      got[r.offset] = r.value;
      ++seen;
    }
    EXPECT_EQ(seen, got.size()) << "an offset was delivered twice";
    return got;
  }

  // The node that became controller at `epoch`, or -1.
  int32_t controller_at(int32_t epoch) {
    for (auto& [id, n] : nodes)
      if (n->proc().out().find("elected controller at controller epoch " + std::to_string(epoch))
          != std::string::npos)
        return id;
    return -1;
  }

  void create_topic(const std::string& name, int32_t partitions) {
    admin_client admin{client_props()};
    auto st = admin.create_topic(name, partitions);
    ASSERT_TRUE(st.ok()) << st.to_string();
  }

  std::multiset<std::string> read_committed(const std::vector<topic_partition>& tps,
                                            size_t expected) {
    return read_committed_records(client_props(), tps, expected);
  }

  // A transactional id whose coordinator shard is led by a node outside
  // `avoid` (the internal topic must exist).
  std::pair<std::string, int32_t> key_led_outside(const std::string& prefix,
                                                  const std::string& internal_topic,
                                                  const std::set<int32_t>& avoid) {
    for (int i = 0; i < 1000; ++i) {
      auto key = prefix + std::to_string(i);
      auto node = leader_of({internal_topic, partition_for(key, internal_partitions)});
      if (node >= 0 && !avoid.count(node))
        return {key, node};
    }
    ADD_FAILURE() << "no key of " << internal_topic << " is led outside the given nodes";
    return {"", -1};
  }

  // Topic `name` of three partitions on three nodes (each leads one): a
  // partition led by a node other than the controller's, with its leader
  // and leader epoch ({"", -1}, {-1, -1} when there is none).
  std::pair<topic_partition, std::pair<int32_t, int32_t>>
  partition_led_outside_the_controller(const std::string& name) {
    auto controller = controller_at(1);
    create_topic(name, 3);
    for (int32_t p = 0; p < 3; ++p) {
      auto l = wait_leader_above({name, p}, -1);
      if (l.first > 0 && l.first != controller)
        return {{name, p}, l};
    }
    return {{"", -1}, {-1, -1}};
  }

  // Creates `__transaction_state` (a first InitProducerId) and waits for
  // its leaders: a transactional id whose coordinator is led outside
  // `avoid`, and that leader.
  std::pair<std::string, int32_t> transactional_id_led_outside(const std::string& prefix,
                                                               const std::set<int32_t>& avoid) {
    {
      producer warmup{client_props({{"transactional.id", "warmup"}})};
      warmup.init_transactions();
    }
    for (int32_t s = 0; s < internal_partitions; ++s)
      wait_leader_of({transaction_state_topic, s});
    return key_led_outside(prefix, transaction_state_topic, avoid);
  }

  // The partition of internal topic `topic` that `key` (a transactional
  // id or a group) maps to, with its current leader and leader epoch.
  std::pair<topic_partition, std::pair<int32_t, int32_t>>
  internal_partition_of(const std::string& key, const std::string& topic) {
    topic_partition tp{topic, partition_for(key, internal_partitions)};
    return {tp, current_leader(tp)};
  }

  // A transactional producer that waits out a failover (a minute for
  // every call and for the transaction itself).
  properties patient_txn_props(const std::string& tid) {
    return client_props({{"transactional.id", tid},
                         {"delivery.timeout.ms", "60000"},
                         {"max.block.ms", "60000"},
                         {"transaction.timeout.ms", "60000"}});
  }

  // Where a transaction's markers are held back: topic `name` of three
  // partitions, `tp` led by node `d` (not the controller's node: d is cut
  // off from the coordinator's node below, and the controller must still
  // take that node's ISR changes), and a transactional id whose
  // coordinator shard is led by node `c` (not d) at `shard_at`.
  struct held_markers {
    topic_partition tp;
    int32_t d = -1;
    std::string tid;
    int32_t c = -1;
    topic_partition shard;
    std::pair<int32_t, int32_t> shard_at{-1, -1};
  };

  // Three nodes with every topic on three replicas, drills on, and the
  // ISR lag time 2 s; fills `out` for topic `name`.
  void hold_markers_on(const std::string& name, held_markers& out) {
    start_cluster(3, {{"default.replication.factor", "3"},
                      {"min.insync.replicas", "2"},
                      {"replica.lag.time.max.ms", "2000"},
                      {"caftx.drills.enable", "true"}});
    auto [tp, led] = partition_led_outside_the_controller(name);
    out.tp = tp;
    out.d = led.first;
    ASSERT_GT(out.d, 0);
    std::tie(out.tid, out.c) = transactional_id_led_outside(name + "-", {out.d});
    ASSERT_GT(out.c, 0);
    std::tie(out.shard, out.shard_at) = internal_partition_of(out.tid, transaction_state_topic);
    ASSERT_EQ(out.shard_at.first, out.c);
  }

  // D cut off from the coordinator's node C: C's markers to D are lost,
  // and C's transaction log goes on without D (out of its ISR after
  // replica.lag.time.max.ms), so the Prepare card commits and the
  // transaction stays in it.
  void cut_off_from_the_coordinator(const held_markers& h) {
    admin_client drill{client_props({}, {h.d})};
    auto cut = drill.drill_network({false, {h.c}, false, false});
    ASSERT_TRUE(cut.ok()) << cut.error().to_string();
  }

  // DescribeTransactions of `tid`: "<state> at coordinator epoch <E>".
  static std::string transaction_state(admin_client& admin, const std::string& tid) {
    auto r = admin.describe_transaction(tid);
    return r.ok() ? r->state + " at coordinator epoch " + std::to_string(r->coordinator_epoch)
                  : r.error().to_string();
  }

  // The transaction of `h` is in `prepare` at the shard's leader epoch;
  // C is killed, and the shard's next leader loads the card at the next
  // leader epoch, its coordinator epoch, and sends the markers itself: the
  // transaction reaches `complete` at that epoch.
  void kill_the_coordinator_in(const held_markers& h, const std::string& prepare,
                               const std::string& complete) {
    admin_client admin{client_props()};
    EXPECT_EQ(transaction_state(admin, h.tid),
              prepare + " at coordinator epoch " + std::to_string(h.shard_at.second))
      << "the markers reached the cut-off leader";
    ASSERT_TRUE(nodes[h.c]->proc().stop(SIGKILL, 10s));
    auto moved = wait_leader_above(h.shard, h.shard_at.second);
    ASSERT_GT(moved.first, 0);
    ASSERT_NE(moved.first, h.c);
    std::string done = complete + " at coordinator epoch " + std::to_string(moved.second);
    std::string last;
    EXPECT_TRUE(wait_until([&] { return (last = transaction_state(admin, h.tid)) == done; }, 60s))
      << last;
  }

  // The last stable offset (ListOffsets under read_committed) and the
  // high watermark of `tp`, through nodes `alive`.
  std::pair<int64_t, int64_t> lso_and_hw(const topic_partition& tp, const std::vector<int32_t>& alive) {
    consumer committed{client_props({{"isolation.level", "read_committed"}}, alive)};
    consumer uncommitted{client_props({}, alive)};
    return {committed.end_offset(tp), uncommitted.end_offset(tp)};
  }

  // The `__transaction_state` leader killed in
  // PrepareCommit or PrepareAbort (see the two tests below).
  void coordinator_killed_in_prepare(bool commit) {
    held_markers h;
    hold_markers_on("pc", h);
    if (HasFatalFailure())
      return;
    producer p{patient_txn_props(h.tid)};
    p.init_transactions();
    p.begin_transaction();
    p.send({"pc", h.tp.partition, "", "first", {}, -1});
    p.flush();
    cut_off_from_the_coordinator(h);
    if (commit)
      p.commit_transaction();
    else
      p.abort_transaction();
    kill_the_coordinator_in(h, commit ? "PrepareCommit" : "PrepareAbort",
                            commit ? "CompleteCommit" : "CompleteAbort");
    if (HasFatalFailure())
      return;
    p.begin_transaction();
    p.send({"pc", h.tp.partition, "", "second", {}, -1});
    p.commit_transaction();
    // read_committed: the second transaction is visible only once the
    // first one's marker moved the LSO past it.
    auto part = std::to_string(h.tp.partition) + ":";
    std::multiset<std::string> want{part + "second"};
    if (commit)
      want.insert(part + "first");
    EXPECT_EQ(read_committed_records(client_props({}, running()), {h.tp}, want.size()), want);
  }

  // One replica as its node's data directory holds it (the node stopped):
  // its record batches by base offset (their bytes), its high-watermark
  // checkpoint (-1: none), and whether a log start offset was moved or
  // the cleaner compacted it.
  struct stored_replica {
    std::map<int64_t, std::string> batches;
    int64_t high_watermark = -1;
    bool truncated_start = false;
    bool cleaned = false;
  };

  // Every partition's replicas (by node) in the data directories of the
  // nodes this test started.
  std::map<std::string, std::map<int32_t, stored_replica>> stored_replicas() {
    std::map<std::string, std::map<int32_t, stored_replica>> out;
    for (auto& [id, _] : nodes) {
      node_store_options so;
      so.background_writer = false;
      so.node_id = id;
      auto store = node_store::open(tmp.path() + "/data" + std::to_string(id), so);
      if (!store.ok()) {
        ADD_FAILURE() << "node " << id << "'s data directory: " << store.error().to_string();
        continue;
      }
      // log/<topic>\0<partition:010>/<offset:020>
      (*store)->scan("log/", [&](const std::string& key, const std::string& value) {
        auto nul = key.find('\0');
        topic_partition tp{key.substr(4, nul - 4), std::stoi(key.substr(nul + 1, 10))};
        auto& r = out[to_string(tp)][id];
        if (r.batches.empty()) {
          if (auto hw = (*store)->get(keys::high_watermark(tp)))
            r.high_watermark = codec::decode_int64(*hw).value();
          r.truncated_start = (*store)->get(keys::log_start(tp)).has_value();
          r.cleaned = (*store)->get(keys::cleaner_checkpoint(tp)).has_value();
        }
        r.batches[keys::offset_of(key)] = value;
        return true;
      });
    }
    return out;
  }

  // Whether two stored batches at one offset are the same: the same bytes,
  // or, on a partition a cleaner compacted, the same records but for the
  // timestamps: each replica's cleaner stamps a kept marker's delete horizon
  // (KIP-534: attribute bit 6, the base timestamp, and with it the records'
  // timestamp deltas and the CRC) from its own clock.
  static bool same_batch(const std::string& a, const std::string& b, bool cleaned) {
    if (a == b)
      return true;
    if (!cleaned)
      return false;
    auto x = v2::decode(a);
    auto y = v2::decode(b);
    if (!x.ok() || !y.ok() || x->base_offset != y->base_offset || x->pid != y->pid
        || x->epoch != y->epoch || x->base_sequence != y->base_sequence
        || (x->attributes & ~0x40) != (y->attributes & ~0x40)
        || x->records.size() != y->records.size())
      return false;
    for (size_t i = 0; i < x->records.size(); ++i) {
      auto& r = x->records[i];
      auto& s = y->records[i];
      if (r.key != s.key || r.value != s.value || r.null_value != s.null_value
          || r.offset_delta != s.offset_delta || r.headers.size() != s.headers.size())
        return false;
      for (size_t h = 0; h < r.headers.size(); ++h)
        if (r.headers[h].key != s.headers[h].key || r.headers[h].value != s.headers[h].value)
          return false;
    }
    return true;
  }

  // After every test (docs/testing.md): every node stopped, each two
  // replicas of a partition hold the same record batches (the same bytes)
  // at the same offsets below both their high-watermark checkpoints, none
  // missing where the other has one. Partitions the cleaner compacted on
  // each replica on its own, or whose log start moved, are compared where
  // both hold a batch, their cleaners' delete horizons aside.
  void expect_replicas_agree() {
    for (auto& [tp, replicas] : stored_replicas())
      for (auto a = replicas.begin(); a != replicas.end(); ++a)
        for (auto b = std::next(a); b != replicas.end(); ++b) {
          auto bound = std::min(a->second.high_watermark, b->second.high_watermark);
          bool gaps_allowed = a->second.truncated_start || b->second.truncated_start
                              || a->second.cleaned || b->second.cleaned;
          auto where = tp + " on nodes " + std::to_string(a->first) + " and "
                       + std::to_string(b->first) + " (high watermarks "
                       + std::to_string(a->second.high_watermark) + ", "
                       + std::to_string(b->second.high_watermark) + "): ";
          for (auto& [one, other] : {std::pair{&a->second, &b->second}, std::pair{&b->second, &a->second}})
            for (auto& [offset, bytes] : one->batches) {
              if (offset >= bound)
                break;
              auto there = other->batches.find(offset);
              if (there == other->batches.end()) {
                EXPECT_TRUE(gaps_allowed) << where << "only one holds the batch at " << offset;
                continue;
              }
              bool cleaned = a->second.cleaned || b->second.cleaned;
              if (!same_batch(there->second, bytes, cleaned)) {
                EXPECT_EQ(there->second, bytes) << where << "the batches at " << offset << " differ";
              }
            }
        }
  }

  void TearDown() override {
    for (auto& [id, n] : nodes)
      if (n->proc().running())
        n->proc().stop(SIGKILL, 10s);
    if (!HasFailure())
      expect_replicas_agree();
    if (HasFailure())
      for (auto& [id, n] : nodes) {
        // The end of each node's log, for the failure's diagnosis.
        auto text = n->proc().out();
        auto from = text.size() > 12000 ? text.size() - 12000 : 0;
        std::cerr << "---- node " << id << " (last of its log) ----\n"
                  << text.substr(from) << n->proc().err() << "\n";
      }
  }
};


} // namespace caftx::testing
