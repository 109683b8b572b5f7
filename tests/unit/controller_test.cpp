// The controller's decisions (actors/controller/controller_core.hpp,
// docs/controller.md): failover, node failure / startup / bounce, offline
// election in assignment order with unclean election disabled, ISR removal
// bumping the leader epoch, topic creation and deletion, partitions added
// to a topic, controlled
// shutdown, and the
// store's answers (ok, BADVERSION on a state, BADVERSION on the epoch
// fence, unknown outcome). A small in-memory store applies the fenced
// multis with ZooKeeper's version rules.
#include <gtest/gtest.h>

#include "actors/controller/controller_core.hpp"
#include "actors/controller/znodes.hpp"

namespace caftx::controller {

// Readable failures.
void PrintTo(const partition_state& st, std::ostream* os) {
  *os << "{leader " << st.leader << ", leader_epoch " << st.leader_epoch << ", isr [";
  for (auto n : st.isr)
    *os << n << " ";
  *os << "], controller_epoch " << st.controller_epoch << ", partition_epoch " << st.partition_epoch << "}";
}

namespace {

/// ZooKeeper's multi semantics over a map: all ops or none; versions as
/// ZooKeeper counts them (create -> 0, every set +1).
struct fake_store {
  std::map<std::string, std::pair<std::string, int32_t>> znodes;

  write_result apply(const store_write& w) {
    auto copy = znodes;
    write_result r{w.id, write_outcome::ok, 0, {}};
    for (size_t i = 0; i < w.ops.size(); ++i) {
      const auto& op = w.ops[i];
      auto it = copy.find(op.path);
      auto fail = [&](write_outcome o) { return write_result{w.id, o, i, {}}; };
      switch (op.kind) {
        case op_kind::check:
          if (it == copy.end())
            return fail(write_outcome::no_node);
          if (op.expected_version != -1 && op.expected_version != it->second.second)
            return fail(write_outcome::bad_version);
          r.versions.push_back(-1);
          break;
        case op_kind::create:
        case op_kind::create_ephemeral:
          if (it != copy.end())
            return fail(write_outcome::node_exists);
          copy[op.path] = {op.data, 0};
          r.versions.push_back(0);
          break;
        case op_kind::set:
          if (it == copy.end())
            return fail(write_outcome::no_node);
          if (op.expected_version != -1 && op.expected_version != it->second.second)
            return fail(write_outcome::bad_version);
          it->second = {op.data, it->second.second + 1};
          r.versions.push_back(it->second.second);
          break;
        case op_kind::remove:
          if (it == copy.end())
            return fail(write_outcome::no_node);
          copy.erase(it);
          r.versions.push_back(-1);
          break;
      }
    }
    znodes = std::move(copy);
    return r;
  }
};

constexpr int32_t our_epoch = 5;
constexpr int32_t our_epoch_version = 3;

live_node node(node_id id, int64_t epoch) {
  return live_node{id, epoch, endpoint{"host" + std::to_string(id), static_cast<uint16_t>(9090 + id)}, "", {}};
}

/// A cluster of nodes 1, 2, 3 (epochs 100, 200, 300), its store and a
/// controller core (node 1, epoch 5) that became controller over it.
struct cluster {
  fake_store store;
  controller_core core{controller_identity{1, our_epoch, our_epoch_version}};
  std::vector<live_node> nodes{node(1, 100), node(2, 200), node(3, 300)};
  cluster_snapshot snap;

  cluster() { store.znodes[controller_epoch_path] = {encode_controller_epoch(our_epoch), our_epoch_version}; }

  void add(const std::string& topic, std::map<int32_t, std::vector<node_id>> parts,
           std::map<int32_t, partition_state> states) {
    snap.topics.push_back({topic, parts, {}});
    store.znodes[topic_path(topic)] = {encode_topic(snap.topics.back()), 0};
    for (auto& [p, st] : states) {
      st.partition_epoch = 4; // some earlier writes
      snap.states[{topic, p}] = st;
      store.znodes[partition_path({topic, p})] = {"", 0};
      store.znodes[partition_state_path({topic, p})] = {encode_partition_state(st), 4};
    }
  }

  controller_decision become(std::vector<live_node> live) {
    snap.live_nodes = std::move(live);
    return core.on_become_controller(snap);
  }

  /// Performs every write (and every write those answers produce) against
  /// the store; the requests of all decisions, in order.
  controller_decision settle(controller_decision d) {
    controller_decision all = d;
    auto writes = d.writes;
    while (!writes.empty()) {
      auto w = writes.front();
      writes.erase(writes.begin());
      auto next = core.on_write_result(store.apply(w));
      for (auto& x : next.writes)
        writes.push_back(x);
      merge(all, next);
    }
    return all;
  }

  static void merge(controller_decision& all, const controller_decision& next) {
    all.writes.insert(all.writes.end(), next.writes.begin(), next.writes.end());
    all.rereads.insert(all.rereads.end(), next.rereads.begin(), next.rereads.end());
    all.requests.insert(all.requests.end(), next.requests.begin(), next.requests.end());
    all.created_topics.insert(all.created_topics.end(), next.created_topics.begin(),
                              next.created_topics.end());
    all.deleted_topics.insert(all.deleted_topics.end(), next.deleted_topics.begin(),
                              next.deleted_topics.end());
    all.created_partitions.insert(all.created_partitions.end(), next.created_partitions.begin(),
                                  next.created_partitions.end());
    all.shutdowns.insert(all.shutdowns.end(), next.shutdowns.begin(), next.shutdowns.end());
    all.isr_changes.insert(all.isr_changes.end(), next.isr_changes.begin(),
                           next.isr_changes.end());
    all.resigned = all.resigned || next.resigned;
  }

  partition_state stored(const topic_partition& tp) {
    auto& [data, version] = store.znodes.at(partition_state_path(tp));
    return decode_partition_state(partition_state_path(tp), data, version).value(); // throws if malformed
  }
};

template <class T>
std::vector<std::pair<node_id, T>> requests_of(const controller_decision& d) {
  std::vector<std::pair<node_id, T>> out;
  for (const auto& r : d.requests)
    if (auto* x = std::get_if<T>(&r.request))
      out.emplace_back(r.target, *x);
  return out;
}

const partition_info* find(const std::vector<partition_info>& parts, const topic_partition& tp) {
  for (const auto& p : parts)
    if (p.tp == tp)
      return &p;
  return nullptr;
}

// -- preferred leaders ----------------------------------------------------------

// Kafka's preferred replica election: leadership goes back to the first
// assigned replica at the next leader epoch, the ISR unchanged, only where
// that replica is live and in sync; LeaderAndIsr to the moved partition's
// replicas, UpdateMetadata to every node.
TEST(Controller, PreferredElectionMovesLeadershipBackToTheFirstReplicaWhereItCan) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}, {1, {2, 3, 1}}, {2, {3, 1, 2}}},
        {{0, {2, 2, {2, 1, 3}, 4, 0}},   // led by 2: back to 1
         {1, {2, 1, {2, 3, 1}, 4, 0}},   // led by its preferred replica already
         {2, {1, 3, {1, 2}, 4, 0}}});    // 3 is not in sync: stays with 1
  c.settle(c.become(c.nodes));
  auto done = c.settle(c.core.elect_preferred_leaders({}));
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 3, {2, 1, 3}, our_epoch, 5}));
  EXPECT_EQ(c.stored({"t", 1}).leader_epoch, 1);
  EXPECT_EQ(c.stored({"t", 1}).partition_epoch, 4);
  EXPECT_EQ(c.stored({"t", 2}).leader, 1);
  EXPECT_EQ(c.stored({"t", 2}).partition_epoch, 4);
  auto lair = requests_of<leader_and_isr_request>(done);
  ASSERT_EQ(lair.size(), 3u);
  for (auto& [target, req] : lair) {
    ASSERT_EQ(req.partitions.size(), 1u) << target;
    EXPECT_EQ(req.partitions[0].tp, (topic_partition{"t", 0}));
    EXPECT_EQ(req.partitions[0].leader, 1);
    EXPECT_EQ(req.partitions[0].leader_epoch, 3);
  }
  auto um = requests_of<update_metadata_request>(done);
  ASSERT_EQ(um.size(), 3u);
  EXPECT_EQ(um[0].second.partitions.size(), 1u);
  // Named partitions only; a second election finds nothing to do.
  EXPECT_TRUE(c.settle(c.core.elect_preferred_leaders({{"t", 0}, {"t", 1}})).writes.empty());
}

// ElectLeaders' answers (KIP-460): NONE where the election moves the
// leadership, ELECTION_NOT_NEEDED where the preferred replica leads,
// PREFERRED_LEADER_NOT_AVAILABLE where it is out of the ISR, and
// UNKNOWN_TOPIC_OR_PARTITION; every partition when none is named.
TEST(Controller, PreferredElectionCheckAnswersAsKafkasElectLeaders) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}, {1, {2, 3, 1}}, {2, {3, 1, 2}}},
        {{0, {2, 2, {2, 1, 3}, 4, 0}},
         {1, {2, 1, {2, 3, 1}, 4, 0}},
         {2, {1, 3, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto codes = [&](const std::vector<topic_partition>& which) {
    std::vector<std::pair<topic_partition, error_code>> out;
    for (auto& [tp, why] : c.core.preferred_election_check(which))
      out.push_back({tp, why.code()});
    return out;
  };
  using r = std::vector<std::pair<topic_partition, error_code>>;
  EXPECT_EQ(codes({}), (r{{{"t", 0}, error_code::none},
                          {{"t", 1}, error_code::election_not_needed},
                          {{"t", 2}, error_code::preferred_leader_not_available}}));
  EXPECT_EQ(codes({{"t", 7}}), (r{{{"t", 7}, error_code::unknown_topic_or_partition}}));
  c.settle(c.core.elect_preferred_leaders({{"t", 0}}));
  EXPECT_EQ(codes({{"t", 0}}), (r{{{"t", 0}, error_code::election_not_needed}}));
}

// leader.imbalance.per.broker.percentage: a node whose preferred
// partitions are led elsewhere above that share takes back those it can.
TEST(Controller, AutomaticRebalanceElectsANodesPartitionsOnlyAboveTheImbalanceShare) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}, {1, {1, 3, 2}}, {2, {1, 2, 3}}, {3, {1, 3, 2}}, {4, {2, 1, 3}}},
        {{0, {2, 1, {2, 1, 3}, 4, 0}},   // node 1's, led by 2
         {1, {1, 1, {1, 3, 2}, 4, 0}},
         {2, {1, 1, {1, 2, 3}, 4, 0}},
         {3, {1, 1, {1, 3, 2}, 4, 0}},
         {4, {2, 1, {2, 1, 3}, 4, 0}}}); // node 2's, led by it
  c.settle(c.become(c.nodes));
  // Node 1: 1 of its 4 partitions led elsewhere, 25 %.
  EXPECT_EQ(c.core.imbalanced_partitions(10), (std::vector<topic_partition>{{"t", 0}}));
  EXPECT_TRUE(c.core.imbalanced_partitions(25).empty());
  // Not while a node shuts down.
  c.settle(c.core.controlled_shutdown(3, 300));
  EXPECT_TRUE(c.core.imbalanced_partitions(10).empty());
}

// -- failover -------------------------------------------------------------------

TEST(Controller, BecomingControllerSendsUpdateMetadataToAllLiveNodesFirst) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}, {1, {2, 3, 1}}},
        {{0, {1, 0, {1, 2, 3}, 4, 0}}, {1, {2, 0, {2, 3, 1}, 4, 0}}});
  auto d = c.become(c.nodes);
  EXPECT_TRUE(d.writes.empty()); // every partition has a live leader
  ASSERT_GE(d.requests.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    auto* um = std::get_if<update_metadata_request>(&d.requests[i].request);
    ASSERT_NE(um, nullptr) << "request " << i << " is not UpdateMetadata";
    EXPECT_EQ(d.requests[i].target, static_cast<node_id>(i + 1));
    EXPECT_EQ(um->controller_id, 1);
    EXPECT_EQ(um->controller_epoch, our_epoch);
    EXPECT_EQ(um->node_epoch, 100 * static_cast<int64_t>(i + 1));
    EXPECT_EQ(um->partitions.size(), 2u);
    EXPECT_EQ(um->live_nodes, c.nodes);
  }
  // Then LeaderAndIsr with every partition to every live replica.
  auto lair = requests_of<leader_and_isr_request>(d);
  ASSERT_EQ(lair.size(), 3u);
  for (auto& [target, req] : lair) {
    EXPECT_EQ(req.partitions.size(), 2u) << "node " << target;
    EXPECT_EQ(req.node_epoch, 100 * static_cast<int64_t>(target));
  }
  auto* p1 = find(lair[0].second.partitions, {"t", 1});
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(*p1, (partition_info{topic_partition{"t", 1}, 4, 2, 0, {2, 3, 1}, 4, {2, 3, 1}, false}));
}

TEST(Controller, FailoverElectsPartitionsWithoutLiveLeaderThroughTheFence) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {3, 7, {3, 1, 2}, 4, 0}}});
  auto d = c.become({node(1, 100), node(2, 200)}); // 3 is gone
  ASSERT_EQ(d.writes.size(), 1u);
  const auto& w = d.writes[0];
  ASSERT_EQ(w.ops.size(), 2u);
  EXPECT_EQ(w.ops[0], (store_op{op_kind::check, "/controller_epoch", "", our_epoch_version}));
  EXPECT_EQ(w.ops[1], (store_op{op_kind::set, "/topics/t/0/state",
                                R"({"version":1,"leader":1,"leader_epoch":8,"controller_epoch":5,"isr":[1,2]})",
                                4}));
  EXPECT_TRUE(requests_of<leader_and_isr_request>(d).empty()); // not before the write
  EXPECT_EQ(c.core.state({"t", 0})->leader, 3);                 // nor in memory
  auto done = c.settle(d);
  EXPECT_EQ(*c.core.state({"t", 0}), (partition_state{1, 8, {1, 2}, our_epoch, 5}));
  auto lair = requests_of<leader_and_isr_request>(done);
  ASSERT_EQ(lair.size(), 2u);
  EXPECT_EQ(lair[0].first, 1);
  EXPECT_EQ(lair[1].first, 2);
  EXPECT_EQ(lair[1].second.partitions,
            (std::vector<partition_info>{{topic_partition{"t", 0}, our_epoch, 1, 8, {1, 2}, 5, {1, 2, 3}, false}}));
}

TEST(Controller, StateWrittenByNewerControllerResignsOnFailover) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 0, {1, 2, 3}, our_epoch + 1, 0}}});
  auto d = c.become(c.nodes);
  EXPECT_TRUE(d.resigned);
  EXPECT_TRUE(d.requests.empty());
  EXPECT_TRUE(c.core.resigned());
}

TEST(Controller, ClusterIdIsCreatedOnceThroughTheFence) {
  cluster c;
  auto w = c.core.create_cluster_id("Zx9");
  EXPECT_EQ(w.ops, (std::vector<store_op>{{op_kind::check, "/controller_epoch", "", our_epoch_version},
                                          {op_kind::create, "/cluster_id", R"({"version":1,"id":"Zx9"})", -1}}));
  EXPECT_EQ(c.store.apply(w).outcome, write_outcome::ok);
  EXPECT_EQ(c.store.apply(c.core.create_cluster_id("other")).outcome, write_outcome::node_exists);
  EXPECT_EQ(*decode_cluster_id(c.store.znodes.at("/cluster_id").first), "Zx9");
}

// -- node changes ---------------------------------------------------------------

TEST(Controller, OfflineElectionPicksTheFirstLiveIsrReplicaInAssignmentOrder) {
  cluster c;
  // ISR order would pick 2; assignment order [3, 1, 2] picks 1.
  c.add("t", {{0, {3, 1, 2}}}, {{0, {3, 2, {3, 2, 1}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto done = c.settle(c.core.on_nodes_changed({node(1, 100), node(2, 200)}));
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 3, {2, 1}, our_epoch, 5}));
  auto lair = requests_of<leader_and_isr_request>(done);
  ASSERT_EQ(lair.size(), 2u); // to the live replicas 1 and 2
  EXPECT_EQ(lair[0].second.partitions[0].leader, 1);
  auto um = requests_of<update_metadata_request>(done);
  ASSERT_EQ(um.size(), 2u);
  EXPECT_EQ(um[0].second.live_nodes.size(), 2u);
  EXPECT_EQ(um[0].second.partitions.size(), 1u);
}

TEST(Controller, NoLiveIsrMemberLeavesThePartitionOfflineAndTheIsrKeepsItsLastMember) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 2, {1}, 4, 0}}});
  c.settle(c.become(c.nodes));
  c.settle(c.core.on_nodes_changed({node(2, 200), node(3, 300)}));
  // Unclean election disabled: 2 and 3 are live but not in the ISR.
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{no_leader, 3, {1}, our_epoch, 5}));
}

TEST(Controller, DeadFollowerLeavesTheIsrAndBumpsTheLeaderEpoch) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 2, {1, 2, 3}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto done = c.settle(c.core.on_nodes_changed({node(1, 100), node(2, 200)}));
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 3, {1, 2}, our_epoch, 5}));
  auto lair = requests_of<leader_and_isr_request>(done);
  ASSERT_EQ(lair.size(), 2u);
  EXPECT_EQ(lair[0].first, 1);
  EXPECT_EQ(lair[1].first, 2);
}

// AlterIsr (KIP-497): the leader's proposal is written conditionally on
// the partition epoch it was based on, the leader epoch stays, the answer
// carries the new partition epoch, and only UpdateMetadata goes out.
TEST(Controller, AlterIsrWritesTheProposedIsrAtItsPartitionEpochWithoutANewLeaderEpoch) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 2, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto done = c.settle(c.core.alter_isr({1, 100, {"t", 0}, 2, {1, 2, 3}, 4}));
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 2, {1, 2, 3}, our_epoch, 5}));
  ASSERT_EQ(done.isr_changes.size(), 1u);
  EXPECT_TRUE(done.isr_changes[0].result.ok()) << done.isr_changes[0].result.to_string();
  EXPECT_EQ(done.isr_changes[0].state, (partition_state{1, 2, {1, 2, 3}, our_epoch, 5}));
  EXPECT_TRUE(requests_of<leader_and_isr_request>(done).empty());
  auto um = requests_of<update_metadata_request>(done);
  ASSERT_EQ(um.size(), 3u);
  ASSERT_EQ(um[0].second.partitions.size(), 1u);
  EXPECT_EQ(um[0].second.partitions[0].isr, (std::vector<node_id>{1, 2, 3}));
  // Shrinking again from the new partition epoch.
  auto shrink = c.settle(c.core.alter_isr({1, 100, {"t", 0}, 2, {1, 3}, 5}));
  ASSERT_EQ(shrink.isr_changes.size(), 1u);
  EXPECT_TRUE(shrink.isr_changes[0].result.ok());
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 2, {1, 3}, our_epoch, 6}));
}

TEST(Controller, AlterIsrRefusesStaleOrForeignProposalsWithKafkasErrors) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 2, {1, 2}, 4, 0}}});
  c.settle(c.become({node(1, 100), node(2, 200)}));
  auto error_of = [&](alter_isr_proposal p) {
    auto d = c.settle(c.core.alter_isr(p));
    EXPECT_TRUE(d.writes.empty());
    return d.isr_changes.empty() ? error_code::none : d.isr_changes[0].result.code();
  };
  EXPECT_EQ(error_of({1, 99, {"t", 0}, 2, {1}, 4}), error_code::stale_broker_epoch);
  EXPECT_EQ(error_of({1, 100, {"t", 7}, 2, {1}, 4}), error_code::unknown_topic_or_partition);
  EXPECT_EQ(error_of({2, 200, {"t", 0}, 2, {2}, 4}), error_code::not_leader_or_follower);
  EXPECT_EQ(error_of({1, 100, {"t", 0}, 1, {1}, 4}), error_code::fenced_leader_epoch);
  EXPECT_EQ(error_of({1, 100, {"t", 0}, 2, {2}, 4}), error_code::invalid_request); // no leader
  EXPECT_EQ(error_of({1, 100, {"t", 0}, 2, {1, 4}, 4}), error_code::invalid_request);
  EXPECT_EQ(error_of({1, 100, {"t", 0}, 2, {1, 2, 3}, 4}), error_code::ineligible_replica); // 3 is down
  EXPECT_EQ(error_of({1, 100, {"t", 0}, 2, {1}, 3}), error_code::invalid_update_version);
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 2, {1, 2}, 4, 4})); // nothing written
  // The ISR it already has: ok at once, nothing written.
  auto same = c.settle(c.core.alter_isr({1, 100, {"t", 0}, 2, {1, 2}, 3}));
  ASSERT_EQ(same.isr_changes.size(), 1u);
  EXPECT_TRUE(same.isr_changes[0].result.ok());
  EXPECT_EQ(same.isr_changes[0].state.partition_epoch, 4);
}

// Another write moved the state on while the proposal's write was in
// flight: BADVERSION, reread, and the proposal (based on the old partition
// epoch) is INVALID_UPDATE_VERSION with the state as it is now.
TEST(Controller, AlterIsrOverwrittenInFlightIsInvalidUpdateVersion) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 2, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto d = c.core.alter_isr({1, 100, {"t", 0}, 2, {1, 2, 3}, 4});
  ASSERT_EQ(d.writes.size(), 1u);
  auto newer = partition_state{1, 2, {1}, our_epoch, 5};
  c.store.znodes["/topics/t/0/state"] = {encode_partition_state(newer), 5};
  auto r = c.core.on_write_result(c.store.apply(d.writes[0]));
  ASSERT_EQ(r.rereads, (std::vector<topic_partition>{{"t", 0}}));
  auto& [data, version] = c.store.znodes["/topics/t/0/state"];
  auto after = c.core.on_state_read({"t", 0}, data, version);
  EXPECT_TRUE(after.writes.empty());
  ASSERT_EQ(after.isr_changes.size(), 1u);
  EXPECT_EQ(after.isr_changes[0].result.code(), error_code::invalid_update_version);
  EXPECT_EQ(after.isr_changes[0].state, newer);
}

// A leader restarted by its supervisor confirms the ISR it read back (the
// older one) while the controller is still writing the expand its
// predecessor proposed. Answered from the state before that write, the
// confirmation would be "ok, {1, 2}" and the restarted leader would move
// its HW without node 3, which the write then puts into the ISR and the
// controller may elect (multi-node seed 21841: a __transaction_state
// record acknowledged and lost). It waits for the write and is answered
// INVALID_UPDATE_VERSION with the state the write left; each proposal gets
// its own answer.
TEST(Controller, AlterIsrWaitsForTheWriteInFlightOfItsPartition) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}, {1, {1, 2, 3}}}, {{0, {1, 2, {1, 2}, 4, 0}}, {1, {1, 2, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto expand = c.core.alter_isr({1, 100, {"t", 0}, 2, {1, 2, 3}, 4, 7});
  ASSERT_EQ(expand.writes.size(), 1u);
  EXPECT_TRUE(expand.isr_changes.empty());
  auto confirm = c.core.alter_isr({1, 100, {"t", 0}, 2, {1, 2}, 4, 8});
  EXPECT_TRUE(confirm.writes.empty());
  EXPECT_TRUE(confirm.isr_changes.empty()); // waits, not "ok {1, 2}"
  // Another partition's proposal does not wait for it.
  EXPECT_EQ(c.core.alter_isr({1, 100, {"t", 1}, 2, {1, 2, 3}, 4, 11}).writes.size(), 1u);
  auto done = c.core.on_write_result(c.store.apply(expand.writes[0]));
  ASSERT_EQ(done.isr_changes.size(), 2u);
  EXPECT_EQ(done.isr_changes[0].request, 7u);
  EXPECT_TRUE(done.isr_changes[0].result.ok());
  EXPECT_EQ(done.isr_changes[0].state, (partition_state{1, 2, {1, 2, 3}, our_epoch, 5}));
  EXPECT_EQ(done.isr_changes[1].request, 8u);
  EXPECT_EQ(done.isr_changes[1].result.code(), error_code::invalid_update_version);
  EXPECT_EQ(done.isr_changes[1].state, (partition_state{1, 2, {1, 2, 3}, our_epoch, 5}));
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 2, {1, 2, 3}, our_epoch, 5}));
  // Proposals written or waiting when the controller resigns get
  // NOT_CONTROLLER (t-1's write is still unanswered).
  auto shrink = c.core.alter_isr({1, 100, {"t", 0}, 2, {1, 2}, 5, 9});
  ASSERT_EQ(shrink.writes.size(), 1u);
  EXPECT_TRUE(c.core.alter_isr({1, 100, {"t", 0}, 2, {1, 2}, 5, 10}).isr_changes.empty());
  write_result fenced{shrink.writes[0].id, write_outcome::bad_version, 0, {}};
  auto gone = c.core.on_write_result(fenced);
  EXPECT_TRUE(gone.resigned);
  std::vector<uint64_t> answered;
  for (const auto& ch : gone.isr_changes) {
    EXPECT_EQ(ch.result.code(), error_code::not_controller);
    answered.push_back(ch.request);
  }
  EXPECT_EQ(answered, (std::vector<uint64_t>{11, 9, 10}));
}

TEST(Controller, OfflinePartitionIsElectedWhenItsIsrMemberReturns) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {no_leader, 3, {1}, 4, 0}}});
  c.settle(c.become({node(2, 200), node(3, 300)}));
  EXPECT_EQ(c.core.state({"t", 0})->leader, no_leader);
  auto d = c.core.on_nodes_changed(c.nodes); // 1 starts
  // The started node gets the whole metadata before anything else.
  auto* first = std::get_if<update_metadata_request>(&d.requests.at(0).request);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(d.requests[0].target, 1);
  EXPECT_EQ(first->partitions.size(), 1u);
  auto done = c.settle(d);
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 4, {1}, our_epoch, 5}));
  auto lair = requests_of<leader_and_isr_request>(done);
  ASSERT_EQ(lair.size(), 3u);
  EXPECT_EQ(lair[0].second.partitions[0].leader, 1);
}

TEST(Controller, BouncedNodeIsHandledAsFailureThenStartup) {
  cluster c;
  c.add("t", {{0, {2, 3, 1}}, {1, {1, 2, 3}}},
        {{0, {2, 6, {2, 1, 3}, 4, 0}}, {1, {1, 2, {1, 2, 3}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto d = c.core.on_nodes_changed({node(1, 100), node(2, 201), node(3, 300)}); // 2: new czxid
  auto done = c.settle(d);
  // Failure: 2 loses its leadership (next in assignment order: 3) and
  // leaves every ISR; both leader epochs move on.
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{3, 7, {1, 3}, our_epoch, 5}));
  EXPECT_EQ(c.stored({"t", 1}), (partition_state{1, 3, {1, 3}, our_epoch, 5}));
  // Startup: LeaderAndIsr with all of 2's partitions at its new epoch.
  auto lair = requests_of<leader_and_isr_request>(done);
  const leader_and_isr_request* to2 = nullptr;
  for (auto& [t, r] : lair)
    if (t == 2)
      to2 = &r;
  ASSERT_NE(to2, nullptr);
  EXPECT_EQ(to2->node_epoch, 201);
  ASSERT_EQ(to2->partitions.size(), 2u);
  EXPECT_EQ(to2->partitions[0].leader, 3);
  EXPECT_EQ(c.core.live_nodes().at(2).node_epoch, 201);
}

TEST(Controller, BouncedSoleIsrLeaderIsElectedAgainAtANewLeaderEpoch) {
  cluster c;
  c.add("t", {{0, {2, 3}}}, {{0, {2, 6, {2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  c.settle(c.core.on_nodes_changed({node(1, 100), node(2, 201), node(3, 300)}));
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{2, 7, {2}, our_epoch, 5}));
}

// -- topic creation -------------------------------------------------------------

TEST(Controller, CreateTopicWritesTopicAndStatesInOneFencedMultiThenSendsIsNew) {
  cluster c;
  c.settle(c.become(c.nodes));
  auto d = c.core.create_topic({"payments", 2, 2, {{"min.insync.replicas", "2"}}, 0, 0});
  ASSERT_EQ(d.writes.size(), 1u);
  const auto& ops = d.writes[0].ops;
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_EQ(ops[0], (store_op{op_kind::check, "/controller_epoch", "", our_epoch_version}));
  EXPECT_EQ(ops[1], (store_op{op_kind::create, "/topics/payments",
                              R"({"version":1,"partitions":{"0":[1,2],"1":[2,3]},"config":{"min.insync.replicas":"2"}})",
                              -1}));
  EXPECT_EQ(ops[2], (store_op{op_kind::create, "/topics/payments/0", "", -1}));
  EXPECT_EQ(ops[3], (store_op{op_kind::create, "/topics/payments/0/state",
                              R"({"version":1,"leader":1,"leader_epoch":0,"controller_epoch":5,"isr":[1,2]})", -1}));
  EXPECT_EQ(ops[5].path, "/topics/payments/1/state");
  EXPECT_TRUE(d.created_topics.empty()); // answered once durable
  auto done = c.settle(d);
  ASSERT_EQ(done.created_topics.size(), 1u);
  EXPECT_TRUE(done.created_topics[0].result.ok());
  auto lair = requests_of<leader_and_isr_request>(done);
  ASSERT_EQ(lair.size(), 3u);
  EXPECT_EQ(lair[0].second.partitions,
            (std::vector<partition_info>{{topic_partition{"payments", 0}, our_epoch, 1, 0, {1, 2}, 0, {1, 2}, true}}));
  EXPECT_EQ(requests_of<update_metadata_request>(done).back().second.partitions.size(), 2u);
}

TEST(Controller, ReplicaThatDiedWhileTheCreateWasInFlightLeavesTheNewIsr) {
  cluster c;
  c.settle(c.become(c.nodes));
  auto create = c.core.create_topic({"p", 1, 3, {}, 0, 0}); // replicas [1, 2, 3]
  c.settle(c.core.on_nodes_changed({node(1, 100), node(2, 200)}));
  auto done = c.settle(create);
  EXPECT_TRUE(done.created_topics.at(0).result.ok());
  EXPECT_EQ(c.stored({"p", 0}), (partition_state{1, 1, {1, 2}, our_epoch, 1}));
  auto lair = requests_of<leader_and_isr_request>(done);
  ASSERT_EQ(lair.size(), 2u); // 3 is gone
  EXPECT_EQ(lair[1].second.partitions,
            (std::vector<partition_info>{{topic_partition{"p", 0}, our_epoch, 1, 1, {1, 2}, 1, {1, 2, 3}, true}}));
}

TEST(Controller, CreateTopicWithReplicationFactorAboveLiveNodesIsInvalidReplicationFactor) {
  cluster c;
  c.settle(c.become({node(1, 100), node(2, 200)}));
  auto d = c.core.create_topic({"t", 3, 3, {}, 0, 0});
  EXPECT_TRUE(d.writes.empty());
  ASSERT_EQ(d.created_topics.size(), 1u);
  EXPECT_EQ(d.created_topics[0].result.code(), error_code::invalid_replication_factor);
  EXPECT_EQ(d.created_topics[0].result.message(), "Replication factor: 3 larger than available brokers: 2.");
}

// The store's answer to a topic create lost with the connection: the
// topic may exist, and nothing would elect its leaders, so the controller
// answers REQUEST_TIMED_OUT and resigns, to read the whole state again
// when elected (the shell's election finds /controller its own).
TEST(Controller, TopicCreateWhoseAnswerIsLostResignsToReadTheStateAgain) {
  cluster c;
  c.settle(c.become(c.nodes));
  auto d = c.core.create_topic({"t", 1, 3, {}, 0, 0});
  ASSERT_EQ(d.writes.size(), 1u);
  auto r = c.core.on_write_result({d.writes[0].id, write_outcome::connection_loss, 0, {}});
  EXPECT_TRUE(r.resigned);
  EXPECT_TRUE(r.writes.empty());
  EXPECT_EQ(r.resigned_because, "the store's answer to creating topic 't' was lost: reading the "
                                "state again");
  ASSERT_EQ(r.created_topics.size(), 1u);
  EXPECT_EQ(r.created_topics[0].name, "t");
  EXPECT_EQ(r.created_topics[0].result.code(), error_code::request_timed_out);
  EXPECT_TRUE(c.core.resigned());
}

TEST(Controller, InternalTopicsGoThroughTheSamePath) {
  cluster c;
  c.settle(c.become(c.nodes));
  auto done = c.settle(c.core.create_topic(
    {"__transaction_state", 50, 3, {{"min.insync.replicas", "2"}, {"cleanup.policy", "compact"}}, 0, 0}));
  ASSERT_EQ(done.created_topics.size(), 1u);
  EXPECT_TRUE(done.created_topics[0].result.ok());
  EXPECT_EQ(c.core.topic("__transaction_state")->partitions.size(), 50u);
  EXPECT_EQ(*c.core.state({"__transaction_state", 49}), c.stored({"__transaction_state", 49}));
  auto again = c.core.create_topic({"__transaction_state", 50, 3, {}, 0, 0});
  EXPECT_EQ(again.created_topics.at(0).result.code(), error_code::topic_already_exists);
  EXPECT_EQ(again.created_topics.at(0).result.message(), "Topic '__transaction_state' already exists.");
}

TEST(Controller, CreateTopicThatAppearedInTheStoreIsTopicAlreadyExists) {
  cluster c;
  c.settle(c.become(c.nodes));
  c.store.znodes["/topics/t"] = {"{}", 0}; // created behind the cache's back
  auto done = c.settle(c.core.create_topic({"t", 1, 1, {}, 0, 0}));
  EXPECT_EQ(done.created_topics.at(0).result.code(), error_code::topic_already_exists);
  EXPECT_EQ(c.core.topic("t"), nullptr);
  EXPECT_TRUE(c.core.create_topic({"bad/name", 1, 1, {}, 0, 0}).created_topics.at(0).result.code()
              == error_code::invalid_topic_exception);
}

// -- controlled shutdown --------------------------------------------------------

TEST(Controller, ControlledShutdownMovesLeadershipsStopsFollowersAndAnswersWhatRemains) {
  cluster c;
  c.add("t",
        {{0, {1, 2, 3}}, {1, {1}}, {2, {2, 1, 3}}, {3, {1, 2}}},
        {{0, {1, 2, {1, 2, 3}, 4, 0}},   // led by 1: moves to 2
         {1, {1, 2, {1}, 4, 0}},         // RF 1: not acted on, not counted
         {2, {2, 2, {2, 1, 3}, 4, 0}},   // followed by 1: StopReplica, leaves the ISR
         {3, {1, 2, {1}, 4, 0}}});       // led by 1, no other ISR member: remains
  c.settle(c.become(c.nodes));
  auto done = c.settle(c.core.controlled_shutdown(1, 100));
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{2, 3, {2, 3}, our_epoch, 5}));
  EXPECT_EQ(c.stored({"t", 1}).leader_epoch, 2);
  EXPECT_EQ(c.stored({"t", 2}), (partition_state{2, 3, {2, 3}, our_epoch, 5}));
  EXPECT_EQ(c.stored({"t", 3}), (partition_state{1, 2, {1}, 4, 4}));
  ASSERT_EQ(done.shutdowns.size(), 1u);
  EXPECT_TRUE(done.shutdowns[0].result.ok());
  EXPECT_EQ(done.shutdowns[0].remaining, (std::vector<topic_partition>{{"t", 3}}));
  auto stops = requests_of<stop_replica_request>(done);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].first, 1);
  ASSERT_EQ(stops[0].second.partitions.size(), 1u);
  EXPECT_EQ(stops[0].second.partitions[0].tp, (topic_partition{"t", 2}));
  EXPECT_EQ(stops[0].second.partitions[0].leader_epoch, 3);
  EXPECT_FALSE(stops[0].second.partitions[0].delete_partition);
  // A shutting-down node is not elected afterwards.
  EXPECT_EQ(c.core.shutting_down(), (std::set<node_id>{1}));
}

TEST(Controller, ControlledShutdownChecksTheNodeAndItsEpoch) {
  cluster c;
  c.settle(c.become(c.nodes));
  auto stale = c.core.controlled_shutdown(2, 199);
  EXPECT_EQ(static_cast<int>(stale.shutdowns.at(0).result.code()), 77);
  auto unknown = c.core.controlled_shutdown(9, 1);
  EXPECT_EQ(static_cast<int>(unknown.shutdowns.at(0).result.code()), 8);
  EXPECT_EQ(unknown.shutdowns.at(0).result.message(), "Broker id 9 does not exist.");
  EXPECT_TRUE(c.core.shutting_down().empty());
}

// -- the store's answers --------------------------------------------------------

TEST(Controller, BadVersionOnAStateRereadsThatPartitionAndRetriesOnTheNewState) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}, {1, {2, 1}}}, {{0, {1, 2, {1, 2, 3}, 4, 0}}, {1, {2, 2, {2, 1}, 4, 0}}});
  c.settle(c.become(c.nodes));
  // The store moved on behind the cache (an ISR change of the same
  // controller generation): version 5, ISR [1, 3].
  auto newer = partition_state{1, 2, {1, 3}, our_epoch, 5};
  c.store.znodes["/topics/t/0/state"] = {encode_partition_state(newer), 5};
  auto d = c.core.on_nodes_changed({node(1, 100), node(2, 200)}); // 3 fails
  ASSERT_EQ(d.writes.size(), 1u);
  auto r = c.core.on_write_result(c.store.apply(d.writes[0]));
  EXPECT_EQ(r.rereads, (std::vector<topic_partition>{{"t", 0}}));
  EXPECT_TRUE(r.writes.empty());
  EXPECT_TRUE(r.requests.empty()); // nothing sent while a partition is unsettled
  auto& [data, version] = c.store.znodes["/topics/t/0/state"];
  auto retry = c.core.on_state_read({"t", 0}, data, version);
  ASSERT_EQ(retry.writes.size(), 1u);
  EXPECT_EQ(retry.writes[0].ops[1].expected_version, 5);
  auto done = c.settle(retry);
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 3, {1}, our_epoch, 6}));
  EXPECT_EQ(requests_of<leader_and_isr_request>(done).size(), 2u); // to the live replicas 1 and 2
}

TEST(Controller, BadVersionOnTheControllerEpochCheckResigns) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 2, {1, 2, 3}, 4, 0}}});
  c.settle(c.become(c.nodes));
  c.store.znodes[controller_epoch_path] = {encode_controller_epoch(our_epoch + 1), our_epoch_version + 1};
  auto pending_create = c.core.create_topic({"x", 1, 1, {}, 0, 0});
  auto d = c.core.on_nodes_changed({node(1, 100), node(2, 200)});
  ASSERT_EQ(d.writes.size(), 1u);
  auto r = c.core.on_write_result(c.store.apply(d.writes[0]));
  EXPECT_TRUE(r.resigned);
  EXPECT_TRUE(r.requests.empty());
  ASSERT_EQ(r.created_topics.size(), 1u); // the pending create is answered
  EXPECT_EQ(r.created_topics[0].result.code(), error_code::not_controller);
  EXPECT_TRUE(c.core.resigned());
  EXPECT_EQ(c.stored({"t", 0}).isr, (std::vector<node_id>{1, 2, 3})); // nothing written
  // A resigned controller decides nothing more.
  auto later = c.core.on_nodes_changed({node(1, 100)});
  EXPECT_TRUE(later.resigned);
  EXPECT_TRUE(later.writes.empty());
  EXPECT_EQ(c.core.create_topic({"y", 1, 1, {}, 0, 0}).created_topics.at(0).result.code(),
            error_code::not_controller);
}

TEST(Controller, RereadStateOfANewerControllerResigns) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 2, {1, 2, 3}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto d = c.core.on_nodes_changed({node(1, 100), node(2, 200)});
  c.core.on_write_result({d.writes[0].id, write_outcome::bad_version, 1, {}});
  auto r = c.core.on_state_read({"t", 0}, encode_partition_state({2, 9, {2}, our_epoch + 1, 0}), 9);
  EXPECT_TRUE(r.resigned);
  EXPECT_TRUE(r.writes.empty());
}

TEST(Controller, ConnectionLossThenRereadShowingOurWriteTakesItWithoutWritingAgain) {
  cluster c;
  c.add("t", {{0, {1, 2, 3}}}, {{0, {1, 2, {1, 2, 3}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto d = c.core.on_nodes_changed({node(1, 100), node(2, 200)});
  c.store.apply(d.writes[0]); // applied, but the answer is lost
  auto r = c.core.on_write_result({d.writes[0].id, write_outcome::connection_loss, 0, {}});
  EXPECT_EQ(r.rereads.size(), 1u);
  auto& [data, version] = c.store.znodes["/topics/t/0/state"];
  auto done = c.core.on_state_read({"t", 0}, data, version);
  EXPECT_TRUE(done.writes.empty());
  EXPECT_EQ(*c.core.state({"t", 0}), (partition_state{1, 3, {1, 2}, our_epoch, 5}));
  EXPECT_EQ(requests_of<leader_and_isr_request>(done).size(), 2u);
}

} // namespace
// -- topic deletion (Kafka's TopicDeletionManager) ------------------------------

/// The StopReplica partitions sent to each node, as "t-p" strings with
/// (leader epoch, delete).
std::map<node_id, std::vector<std::tuple<std::string, int32_t, bool>>>
stops_by_node(const controller_decision& d) {
  std::map<node_id, std::vector<std::tuple<std::string, int32_t, bool>>> out;
  for (auto& [target, req] : requests_of<stop_replica_request>(d))
    for (auto& p : req.partitions)
      out[target].emplace_back(to_string(p.tp), p.leader_epoch, p.delete_partition);
  return out;
}

using stops = std::map<node_id, std::vector<std::tuple<std::string, int32_t, bool>>>;

TEST(Controller, DeleteTopicMarksItStopsEveryReplicaAndRemovesItsZnodesOnceAllConfirmed) {
  cluster c;
  c.add("t", {{0, {1, 2}}, {1, {2, 3}}}, {{0, {1, 2, {1, 2}, 4, 0}}, {1, {2, 2, {2, 3}, 4, 0}}});
  c.add("keep", {{0, {3}}}, {{0, {3, 1, {3}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto d = c.core.delete_topic("t");
  ASSERT_EQ(d.writes.size(), 1u);
  EXPECT_EQ(d.writes[0].ops,
            (std::vector<store_op>{{op_kind::check, "/controller_epoch", "", our_epoch_version},
                                   {op_kind::create, "/delete_topics/t", "", -1}}));
  EXPECT_TRUE(d.requests.empty()); // nothing goes out before the marker is durable
  EXPECT_FALSE(c.core.deleting("t"));
  auto marked = c.settle(d);
  EXPECT_TRUE(c.core.deleting("t"));
  EXPECT_EQ(c.store.znodes.count("/delete_topics/t"), 1u);
  // Every live node drops the topic from its metadata cache ...
  auto um = requests_of<update_metadata_request>(marked);
  ASSERT_EQ(um.size(), 3u);
  for (auto& [target, req] : um) {
    ASSERT_EQ(req.partitions.size(), 2u);
    for (auto& p : req.partitions) {
      EXPECT_EQ(p.tp.topic, "t");
      EXPECT_EQ(p.leader, leader_during_delete);
    }
  }
  // ... and every replica deletes its data (KIP-570: leader epoch -2).
  EXPECT_EQ(stops_by_node(marked), (stops{{1, {{"t-0", -2, true}}},
                                          {2, {{"t-0", -2, true}, {"t-1", -2, true}}},
                                          {3, {{"t-1", -2, true}}}}));
  EXPECT_TRUE(requests_of<leader_and_isr_request>(marked).empty());
  EXPECT_TRUE(marked.deleted_topics.empty());
  // While it is marked, the name cannot be created again.
  auto create = c.core.create_topic({"t", 1, 1, {}, 0, 0});
  EXPECT_EQ(create.created_topics.at(0).result.code(), error_code::topic_already_exists);
  EXPECT_EQ(create.created_topics.at(0).result.message(), "Topic 't' is marked for deletion.");
  // Confirmations; a failed one stays awaited and is asked again.
  EXPECT_TRUE(c.core.on_replicas_deleted(1, {{{"t", 0}, error_code::none}}).writes.empty());
  EXPECT_TRUE(c.core
                .on_replicas_deleted(2, {{{"t", 0}, error_code::none},
                                         {{"t", 1}, error_code::kafka_storage_error}})
                .writes.empty());
  EXPECT_EQ(stops_by_node(c.core.retry_topic_deletions()),
            (stops{{2, {{"t-1", -2, true}}}, {3, {{"t-1", -2, true}}}}));
  EXPECT_TRUE(c.core.on_replicas_deleted(3, {{{"t", 1}, error_code::none}}).writes.empty());
  auto last = c.core.on_replicas_deleted(2, {{{"t", 1}, error_code::none}});
  ASSERT_EQ(last.writes.size(), 1u);
  EXPECT_EQ(last.writes[0].ops,
            (std::vector<store_op>{{op_kind::check, "/controller_epoch", "", our_epoch_version},
                                   {op_kind::remove, "/topics/t/0/state", "", -1},
                                   {op_kind::remove, "/topics/t/0", "", -1},
                                   {op_kind::remove, "/topics/t/1/state", "", -1},
                                   {op_kind::remove, "/topics/t/1", "", -1},
                                   {op_kind::remove, "/topics/t", "", -1},
                                   {op_kind::remove, "/delete_topics/t", "", -1}}));
  auto done = c.settle(last);
  ASSERT_EQ(done.deleted_topics.size(), 1u);
  EXPECT_EQ(done.deleted_topics[0].name, "t");
  EXPECT_TRUE(done.deleted_topics[0].result.ok());
  EXPECT_EQ(c.core.topic("t"), nullptr);
  EXPECT_EQ(c.core.state({"t", 0}), nullptr);
  EXPECT_FALSE(c.core.deletions_pending());
  EXPECT_EQ(c.store.znodes.count("/topics/t"), 0u);
  EXPECT_EQ(c.store.znodes.count("/topics/keep"), 1u);
  EXPECT_TRUE(c.core.retry_topic_deletions().requests.empty());
  // The name is free again.
  EXPECT_TRUE(c.settle(c.core.create_topic({"t", 1, 1, {}, 0, 0})).created_topics.at(0).result.ok());
}

// Kafka halts a deletion while a replica is offline and resumes it when
// the node starts: a dead replica is neither elected around (no state
// writes for the topic) nor forgotten.
TEST(Controller, DeletionWaitsForADownReplicaAndResumesWhenItsNodeStarts) {
  cluster c;
  c.add("t", {{0, {1, 3}}}, {{0, {1, 2, {1, 3}, 4, 0}}});
  c.settle(c.become(c.nodes));
  c.settle(c.core.delete_topic("t"));
  EXPECT_TRUE(c.core.on_replicas_deleted(1, {{{"t", 0}, error_code::none}}).writes.empty());
  auto failed = c.settle(c.core.on_nodes_changed({node(1, 100), node(2, 200)}));
  EXPECT_TRUE(failed.writes.empty()); // no ISR removal for a topic being deleted
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{1, 2, {1, 3}, 4, 4}));
  EXPECT_TRUE(c.core.retry_topic_deletions().requests.empty()); // 3 is down
  auto back = c.settle(c.core.on_nodes_changed({node(1, 100), node(2, 200), node(3, 301)}));
  EXPECT_EQ(stops_by_node(back), (stops{{3, {{"t-0", -2, true}}}}));
  for (auto& [target, req] : requests_of<leader_and_isr_request>(back))
    EXPECT_EQ(find(req.partitions, {"t", 0}), nullptr) << "LeaderAndIsr to " << target;
  auto um = requests_of<update_metadata_request>(back);
  bool told = false;
  for (auto& [target, req] : um)
    if (target == 3)
      if (auto* p = find(req.partitions, {"t", 0})) {
        EXPECT_EQ(p->leader, leader_during_delete);
        told = true;
      }
  EXPECT_TRUE(told);
  // A znode already gone is left out of the removal, not retried forever.
  c.store.znodes.erase("/topics/t/0/state");
  auto done = c.settle(c.core.on_replicas_deleted(3, {{{"t", 0}, error_code::none}}));
  ASSERT_EQ(done.deleted_topics.size(), 1u);
  EXPECT_TRUE(done.deleted_topics[0].result.ok());
  EXPECT_FALSE(done.resigned);
  EXPECT_EQ(c.store.znodes.count("/topics/t/0"), 0u);
  EXPECT_EQ(c.store.znodes.count("/delete_topics/t"), 0u);
  EXPECT_EQ(c.core.topic("t"), nullptr);
}

// A new controller reads /delete_topics and finishes what the last one
// started (TopicDeletionManager.init and resumeDeletions); a marker whose
// topic is already gone is removed.
TEST(Controller, NewControllerResumesEveryMarkedDeletion) {
  cluster c;
  c.add("t", {{0, {1, 2}}}, {{0, {1, 2, {1, 2}, 4, 0}}});
  c.add("other", {{0, {2, 1}}}, {{0, {2, 2, {2}, 4, 0}}}); // 1 out of the ISR
  c.snap.deleting = {"t", "gone"};
  c.store.znodes["/delete_topics/t"] = {"", 0};
  c.store.znodes["/delete_topics/gone"] = {"", 0};
  auto became = c.settle(c.become(c.nodes));
  EXPECT_TRUE(c.core.deleting("t"));
  EXPECT_EQ(c.store.znodes.count("/delete_topics/gone"), 0u);
  ASSERT_EQ(became.deleted_topics.size(), 1u);
  EXPECT_EQ(became.deleted_topics[0].name, "gone");
  EXPECT_TRUE(became.deleted_topics[0].result.ok());
  EXPECT_EQ(stops_by_node(became), (stops{{1, {{"t-0", -2, true}}}, {2, {{"t-0", -2, true}}}}));
  for (auto& [target, req] : requests_of<leader_and_isr_request>(became)) {
    EXPECT_EQ(find(req.partitions, {"t", 0}), nullptr);
    EXPECT_NE(find(req.partitions, {"other", 0}), nullptr);
  }
  c.settle(c.core.on_replicas_deleted(1, {{{"t", 0}, error_code::none}}));
  auto done = c.settle(c.core.on_replicas_deleted(2, {{{"t", 0}, error_code::none}}));
  ASSERT_EQ(done.deleted_topics.size(), 1u);
  EXPECT_EQ(done.deleted_topics[0].name, "t");
  EXPECT_TRUE(done.deleted_topics[0].result.ok());
  EXPECT_EQ(c.store.znodes.count("/topics/t/0/state"), 0u);
  EXPECT_EQ(c.store.znodes.count("/delete_topics/t"), 0u);
}

TEST(Controller, DeleteTopicRefusesUnknownAndInternalTopicsAndJoinsADeletionUnderWay) {
  cluster c;
  c.settle(c.become(c.nodes));
  auto unknown = c.core.delete_topic("nope");
  EXPECT_TRUE(unknown.writes.empty());
  EXPECT_EQ(unknown.deleted_topics.at(0).result.code(), error_code::unknown_topic_or_partition);
  c.settle(c.core.create_topic({"__consumer_offsets", 2, 1, {}, 0, 0}));
  auto internal = c.core.delete_topic("__consumer_offsets");
  EXPECT_TRUE(internal.writes.empty());
  EXPECT_EQ(internal.deleted_topics.at(0).result.code(), error_code::invalid_topic_exception);
  c.settle(c.core.create_topic({"t", 1, 1, {}, 0, 0}));
  auto first = c.core.delete_topic("t");
  ASSERT_EQ(first.writes.size(), 1u);
  auto second = c.core.delete_topic("t"); // answered with the first
  EXPECT_TRUE(second.writes.empty());
  EXPECT_TRUE(second.deleted_topics.empty());
  // The marker's answer lost: the next controller reads whether it exists.
  auto lost = c.core.on_write_result({first.writes[0].id, write_outcome::connection_loss, 0, {}});
  EXPECT_TRUE(lost.resigned);
  EXPECT_EQ(lost.deleted_topics.at(0).result.code(), error_code::request_timed_out);
  EXPECT_EQ(lost.resigned_because,
            "the store's answer to marking topic 't' for deletion was lost: reading the state again");
}

// While marked, the topic's partitions are out of every other decision:
// ISR changes, controlled shutdown's leaderships to move, elections.
TEST(Controller, ATopicBeingDeletedIsLeftOutOfIsrChangesShutdownsAndElections) {
  cluster c;
  c.add("t", {{0, {1, 2}}}, {{0, {2, 2, {2, 1}, 4, 0}}});
  c.settle(c.become(c.nodes));
  c.settle(c.core.delete_topic("t"));
  auto alter = c.core.alter_isr({2, 200, {"t", 0}, 2, {2}, 4});
  EXPECT_TRUE(alter.writes.empty());
  EXPECT_EQ(alter.isr_changes.at(0).result.code(), error_code::unknown_topic_or_partition);
  auto shutdown = c.settle(c.core.controlled_shutdown(2, 200));
  EXPECT_TRUE(shutdown.shutdowns.at(0).remaining.empty());
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{2, 2, {2, 1}, 4, 4}));
  EXPECT_EQ(c.core.preferred_election_check({{"t", 0}}).at(0).second.code(),
            error_code::unknown_topic_or_partition);
  EXPECT_TRUE(c.core.imbalanced_partitions(0).empty());
  EXPECT_TRUE(c.core.elect_preferred_leaders({}).writes.empty());
}

// -- partitions added to a topic (CreatePartitions) ------------------------------

// AdminZkClient.addPartitions: the grown assignment and the new states in
// one fenced multi; the partitions that were there are not touched; the
// new ones get LeaderAndIsr (is_new) at their replicas only and every node
// learns them from UpdateMetadata.
TEST(Controller, CreatePartitionsWritesTheGrownTopicAndStartsOnlyTheNewPartitions) {
  cluster c;
  c.add("t", {{0, {2, 3}}, {1, {3, 1}}}, {{0, {2, 1, {2, 3}, 4, 0}}, {1, {3, 1, {3, 1}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto d = c.core.create_partitions({"t", 4, {}, false});
  ASSERT_EQ(d.writes.size(), 1u);
  EXPECT_TRUE(d.created_partitions.empty()); // answered once durable
  // Partition 0's first replica is node 2, the second of the live nodes:
  // start index and replica shift 1 over [1, 2, 3], from partition 2 on.
  topic_assignment grown{"t", {{0, {2, 3}}, {1, {3, 1}}, {2, {1, 3}}, {3, {2, 3}}}, {}};
  EXPECT_EQ(d.writes[0].ops,
            (std::vector<store_op>{
              {op_kind::check, "/controller_epoch", "", our_epoch_version},
              {op_kind::set, "/topics/t", encode_topic(grown), -1},
              {op_kind::create, "/topics/t/2", "", -1},
              {op_kind::create, "/topics/t/2/state",
               R"({"version":1,"leader":1,"leader_epoch":0,"controller_epoch":5,"isr":[1,3]})", -1},
              {op_kind::create, "/topics/t/3", "", -1},
              {op_kind::create, "/topics/t/3/state",
               R"({"version":1,"leader":2,"leader_epoch":0,"controller_epoch":5,"isr":[2,3]})", -1}}));
  auto done = c.settle(d);
  ASSERT_EQ(done.created_partitions.size(), 1u);
  EXPECT_EQ(done.created_partitions[0].name, "t");
  EXPECT_TRUE(done.created_partitions[0].result.ok()) << done.created_partitions[0].result.to_string();
  EXPECT_TRUE(done.created_topics.empty());
  EXPECT_EQ(*c.core.topic("t"), grown);
  EXPECT_EQ(*c.core.state({"t", 3}), (partition_state{2, 0, {2, 3}, our_epoch, 0}));
  EXPECT_EQ(c.stored({"t", 0}), (partition_state{2, 1, {2, 3}, 4, 4})); // untouched
  std::map<node_id, std::vector<partition_info>> lair;
  for (auto& [target, req] : requests_of<leader_and_isr_request>(done))
    lair[target] = req.partitions;
  const partition_info p2{{"t", 2}, our_epoch, 1, 0, {1, 3}, 0, {1, 3}, true};
  const partition_info p3{{"t", 3}, our_epoch, 2, 0, {2, 3}, 0, {2, 3}, true};
  EXPECT_EQ(lair, (std::map<node_id, std::vector<partition_info>>{
                    {1, {p2}}, {2, {p3}}, {3, {p2, p3}}}));
  auto um = requests_of<update_metadata_request>(done);
  ASSERT_EQ(um.size(), 3u);
  for (auto& [target, req] : um)
    EXPECT_EQ(req.partitions, (std::vector<partition_info>{
                                {{"t", 2}, our_epoch, 1, 0, {1, 3}, 0, {1, 3}, false},
                                {{"t", 3}, our_epoch, 2, 0, {2, 3}, 0, {2, 3}, false}}))
      << "UpdateMetadata to " << target;
}

// Kafka's checks and messages (KafkaApis.handleCreatePartitionsRequest,
// ZkAdminManager.createPartitions, AdminZkClient.validateReplicaAssignment);
// nothing is written for a refused request.
TEST(Controller, CreatePartitionsRefusesWhatKafkaRefusesWithItsMessages) {
  cluster c;
  c.add("t", {{0, {1, 2}}, {1, {2, 3}}}, {{0, {1, 1, {1, 2}, 4, 0}}, {1, {2, 1, {2, 3}, 4, 0}}});
  c.add("wide", {{0, {1, 2, 3}}}, {{0, {1, 1, {1, 2, 3}, 4, 0}}});
  c.settle(c.become({node(1, 100), node(2, 200)}));
  c.settle(c.core.create_topic({"__consumer_offsets", 2, 1, {}, 0, 0}));
  auto refused = [&](create_partitions_request req) {
    auto d = c.core.create_partitions(req);
    EXPECT_TRUE(d.writes.empty()) << req.name;
    EXPECT_EQ(d.created_partitions.size(), 1u) << req.name;
    auto st = d.created_partitions.empty() ? status{} : d.created_partitions[0].result;
    return std::make_pair(st.code(), st.message());
  };
  auto is = [](error_code code, const std::string& message) { return std::make_pair(code, message); };
  EXPECT_EQ(refused({"nope", 3, {}, false}),
            is(error_code::unknown_topic_or_partition, "The topic 'nope' does not exist."));
  EXPECT_EQ(refused({"t", 1, {}, false}),
            is(error_code::invalid_partitions,
               "Topic currently has 2 partitions, which is higher than the requested 1."));
  EXPECT_EQ(refused({"t", 2, {}, false}),
            is(error_code::invalid_partitions, "Topic already has 2 partitions."));
  EXPECT_EQ(refused({"__consumer_offsets", 3, {}, false}).first, error_code::invalid_topic_exception);
  EXPECT_EQ(refused({"wide", 2, {}, false}), // node 3 is down
            is(error_code::invalid_replication_factor,
               "Replication factor: 3 larger than available brokers: 2."));
  EXPECT_EQ(refused({"t", 3, {{1, 3}}, false}),
            is(error_code::invalid_replica_assignment, "Unknown broker(s) in replica assignment: 3."));
  EXPECT_EQ(refused({"t", 4, {{1, 2}}, false}),
            is(error_code::invalid_replica_assignment,
               "Increasing the number of partitions by 2 but 1 assignments provided."));
  EXPECT_EQ(refused({"t", 3, {{}}, false}),
            is(error_code::invalid_replica_assignment,
               "Cannot have replication factor of 0 for partition id 2."));
  EXPECT_EQ(refused({"t", 3, {{2, 2}}, false}),
            is(error_code::invalid_replica_assignment,
               "Duplicate brokers not allowed in replica assignment: 2, 2 for partition id 2."));
  EXPECT_EQ(refused({"t", 4, {{1, 2}, {1}}, false}),
            is(error_code::invalid_replica_assignment,
               "Inconsistent replication factor between partitions, partition 0 has 2 while "
               "partitions [3] have replication factors [1], respectively."));
  // validate_only: checked and placed, answered ok, nothing written.
  auto dry = c.core.create_partitions({"t", 5, {}, true});
  EXPECT_TRUE(dry.writes.empty());
  ASSERT_EQ(dry.created_partitions.size(), 1u);
  EXPECT_TRUE(dry.created_partitions[0].result.ok());
  EXPECT_EQ(c.core.topic("t")->partitions.size(), 2u);
  // A topic queued for deletion.
  c.settle(c.core.delete_topic("t"));
  EXPECT_EQ(refused({"t", 3, {}, false}),
            is(error_code::invalid_topic_exception, "The topic is queued for deletion."));
}

// Given replicas are taken as they are, the first one leading.
TEST(Controller, CreatePartitionsTakesTheGivenAssignments) {
  cluster c;
  c.add("t", {{0, {1, 2}}}, {{0, {1, 1, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto done = c.settle(c.core.create_partitions({"t", 3, {{3, 1}, {2, 3}}, false}));
  ASSERT_EQ(done.created_partitions.size(), 1u);
  EXPECT_TRUE(done.created_partitions[0].result.ok());
  EXPECT_EQ(c.core.topic("t")->partitions,
            (std::map<int32_t, std::vector<node_id>>{{0, {1, 2}}, {1, {3, 1}}, {2, {2, 3}}}));
  EXPECT_EQ(c.stored({"t", 1}), (partition_state{3, 0, {3, 1}, our_epoch, 0}));
  EXPECT_EQ(c.stored({"t", 2}), (partition_state{2, 0, {2, 3}, our_epoch, 0}));
}

// One topic's CreatePartitions and DeleteTopics are decided one at a time:
// a second grow waits for the first one's write and is decided on the
// grown topic; a deletion that waited covers every partition.
TEST(Controller, RequestsForATopicWhosePartitionsAreBeingAddedWaitForThatWrite) {
  cluster c;
  c.add("t", {{0, {1, 2}}}, {{0, {1, 1, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto first = c.core.create_partitions({"t", 2, {}, false});
  ASSERT_EQ(first.writes.size(), 1u);
  auto second = c.core.create_partitions({"t", 3, {}, false});
  auto again = c.core.create_partitions({"t", 3, {}, false});
  auto removal = c.core.delete_topic("t");
  for (auto* d : {&second, &again, &removal}) {
    EXPECT_TRUE(d->writes.empty());
    EXPECT_TRUE(d->created_partitions.empty());
    EXPECT_TRUE(d->deleted_topics.empty());
  }
  auto done = c.settle(first);
  ASSERT_EQ(done.created_partitions.size(), 3u);
  EXPECT_TRUE(done.created_partitions[0].result.ok());
  EXPECT_TRUE(done.created_partitions[1].result.ok());
  EXPECT_EQ(done.created_partitions[2].result.code(), error_code::invalid_partitions);
  EXPECT_EQ(done.created_partitions[2].result.message(), "Topic already has 3 partitions.");
  EXPECT_EQ(c.core.topic("t")->partitions.size(), 3u);
  EXPECT_TRUE(c.core.deleting("t"));
  EXPECT_EQ(c.core.topic("t")->partitions,
            (std::map<int32_t, std::vector<node_id>>{{0, {1, 2}}, {1, {2, 3}}, {2, {3, 1}}}));
  EXPECT_EQ(stops_by_node(done), (stops{{1, {{"t-0", -2, true}, {"t-2", -2, true}}},
                                        {2, {{"t-0", -2, true}, {"t-1", -2, true}}},
                                        {3, {{"t-1", -2, true}, {"t-2", -2, true}}}}));
}

// The store's answer lost: the partitions may exist, so the controller
// resigns to read the state again; what waited is answered NOT_CONTROLLER.
TEST(Controller, CreatePartitionsWhoseAnswerIsLostResignsAndAnswersWhatWaited) {
  cluster c;
  c.add("t", {{0, {1, 2}}}, {{0, {1, 1, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto d = c.core.create_partitions({"t", 2, {}, false});
  ASSERT_EQ(d.writes.size(), 1u);
  c.core.create_partitions({"t", 3, {}, false});
  c.core.delete_topic("t");
  auto r = c.core.on_write_result({d.writes[0].id, write_outcome::connection_loss, 0, {}});
  EXPECT_TRUE(r.resigned);
  EXPECT_EQ(r.resigned_because,
            "the store's answer to adding partitions to topic 't' was lost: reading the state again");
  ASSERT_EQ(r.created_partitions.size(), 2u);
  EXPECT_EQ(r.created_partitions[0].result.code(), error_code::request_timed_out);
  EXPECT_EQ(r.created_partitions[1].result.code(), error_code::not_controller);
  ASSERT_EQ(r.deleted_topics.size(), 1u);
  EXPECT_EQ(r.deleted_topics[0].result.code(), error_code::not_controller);
  EXPECT_TRUE(r.created_topics.empty());
}

// A replica of a new partition dies while the grow is written: the grow is
// answered once that replica's ISR removal is written too, and only then
// are the requests that waited decided, in the order they came.
TEST(Controller, WaitingRequestsAreDecidedOnceTheGrowsIsrWritesAreDone) {
  cluster c;
  c.add("t", {{0, {1, 2}}}, {{0, {1, 1, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto first = c.core.create_partitions({"t", 2, {{2, 3}}, false});
  ASSERT_EQ(first.writes.size(), 1u);
  EXPECT_TRUE(c.core.create_partitions({"t", 3, {}, true}).created_partitions.empty());
  EXPECT_TRUE(c.core.delete_topic("t").writes.empty());
  c.settle(c.core.on_nodes_changed({node(1, 100), node(2, 200)})); // node 3 fails
  auto written = c.core.on_write_result(c.store.apply(first.writes[0]));
  EXPECT_TRUE(written.created_partitions.empty()) << "answered before its ISR write";
  ASSERT_EQ(written.writes.size(), 1u) << "only t-1's ISR removal, no deletion marker yet";
  EXPECT_EQ(written.writes[0].ops.back().path, "/topics/t/1/state");
  auto done = c.settle(written);
  ASSERT_EQ(done.created_partitions.size(), 2u);
  EXPECT_TRUE(done.created_partitions[0].result.ok());
  EXPECT_TRUE(done.created_partitions[1].result.ok()); // the validation, on two partitions
  EXPECT_EQ(c.stored({"t", 1}), (partition_state{2, 1, {2}, our_epoch, 1}));
  EXPECT_TRUE(c.core.deleting("t"));
}

// A grow whose write is in flight when the controller resigns may be
// stored: REQUEST_TIMED_OUT, not NOT_CONTROLLER (which a caller retries).
TEST(Controller, AGrowInFlightAtResignationIsRequestTimedOut) {
  cluster c;
  c.add("t", {{0, {1, 2}}}, {{0, {1, 1, {1, 2}, 4, 0}}});
  c.settle(c.become(c.nodes));
  auto d = c.core.create_partitions({"t", 2, {}, false});
  ASSERT_EQ(d.writes.size(), 1u);
  // Another controller moved the epoch on: the next fenced write fails.
  c.store.znodes[controller_epoch_path].second = our_epoch_version + 1;
  auto other = c.core.create_topic({"u", 1, 1, {}, 0, 0});
  auto r = c.core.on_write_result(c.store.apply(other.writes.at(0)));
  EXPECT_TRUE(r.resigned);
  ASSERT_EQ(r.created_partitions.size(), 1u);
  EXPECT_EQ(r.created_partitions[0].result.code(), error_code::request_timed_out);
  ASSERT_EQ(r.created_topics.size(), 1u);
  EXPECT_EQ(r.created_topics[0].result.code(), error_code::not_controller);
}

} // namespace caftx::controller
