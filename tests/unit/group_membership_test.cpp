// group_membership_core: Kafka's classic group protocol (GroupCoordinator,
// GroupMetadata) driven with explicit times: joins that wait for every
// member or the rebalance timeout, the initial delay, MEMBER_ID_REQUIRED
// (KIP-394), protocol selection, SyncGroup, heartbeats and session
// timeouts, LeaveGroup, the generation checks of OffsetCommit and
// TxnOffsetCommit (KIP-447), and static membership (KIP-345).
// docs/consumer-groups.md.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "actors/group/group_membership_core.hpp"

namespace caftx {
namespace {

class GroupMembership : public ::testing::Test {
protected:
  group_membership_limits limits() {
    group_membership_limits l;
    l.initial_rebalance_delay_ms = 0;
    return l;
  }
  group_membership_core core{limits(), 42};
  int64_t now = 1000;
  uint64_t next_ticket = 1;
  std::map<uint64_t, join_group_response> joins;
  std::map<uint64_t, sync_group_response> syncs;
  // Every group record the core asked to append, in order.
  std::vector<group_membership_core::store> stores;
  // When false, stores the core waits for stay unanswered in `held`
  // (answer them with complete()); when true each is durable at once.
  bool durable_at_once = true;
  std::vector<group_membership_core::store> held;

  void take(group_membership_core::outbox& out) {
    for (auto& [t, r] : out.joins) {
      ASSERT_EQ(joins.count(t), 0u) << "ticket " << t << " answered twice";
      joins[t] = r;
    }
    for (auto& [t, r] : out.syncs) {
      ASSERT_EQ(syncs.count(t), 0u) << "ticket " << t << " answered twice";
      syncs[t] = r;
    }
    auto asked = std::move(out.stores);
    out.stores.clear();
    for (auto& st : asked) {
      stores.push_back(st);
      if (st.id == 0)
        continue;
      if (durable_at_once)
        complete(st, error_code::none);
      else
        held.push_back(st);
    }
  }

  void complete(const group_membership_core::store& st, error_code e) {
    group_membership_core::outbox out;
    core.stored(st.record.group_id, st.id, e, now, out);
    take(out);
  }

  static join_group_request request(const std::string& member,
                                    std::vector<std::string> protocols = {"range"},
                                    bool require_known = false) {
    join_group_request r;
    r.group_id = "g";
    r.session_timeout_ms = 10000;
    r.rebalance_timeout_ms = 30000;
    r.member_id = member;
    r.protocol_type = "consumer";
    for (auto& p : protocols)
      r.protocols.push_back({p, "meta-" + p});
    r.client_id = "client";
    r.client_host = "/127.0.0.1";
    r.require_known_member_id = require_known;
    return r;
  }

  static join_group_request static_request(const std::string& member,
                                           const std::string& instance,
                                           std::vector<std::string> protocols = {"range"}) {
    auto r = request(member, std::move(protocols), true);
    r.group_instance_id = instance;
    return r;
  }

  uint64_t join(const join_group_request& r) {
    auto t = next_ticket++;
    group_membership_core::outbox out;
    core.join(t, r, now, out);
    take(out);
    return t;
  }

  uint64_t sync(const std::string& member, int32_t generation,
                std::vector<group_assignment> assignments = {}) {
    auto t = next_ticket++;
    group_membership_core::outbox out;
    core.sync(t, sync_group_request{"g", generation, member, std::move(assignments)}, now, out);
    take(out);
    return t;
  }

  void advance(int64_t ms) {
    now += ms;
    group_membership_core::outbox out;
    core.expire(now, out);
    take(out);
  }

  leave_group_response leave(std::vector<std::string> members,
                             std::vector<std::string> instances = {}) {
    group_membership_core::outbox out;
    auto r = core.leave(leave_group_request{"g", std::move(members), std::move(instances)}, now,
                        out);
    take(out);
    return r;
  }

  error_code heartbeat(const std::string& member, int32_t generation,
                       const std::string& instance = "") {
    return core.heartbeat({"g", generation, member, instance}, now);
  }

  // stable_single() joined by a second dynamic member: CompletingRebalance
  // at generation 2, stores held from now on; the two member ids (a leads).
  std::pair<std::string, std::string> two_members_completing() {
    auto a = stable_single();
    durable_at_once = false;
    auto tb = join(request(""));
    join(request(a));
    EXPECT_EQ(core.state("g"), group_state::completing_rebalance);
    return {a, joins.at(tb).member_id};
  }

  // Two static members, instances "i-a" (the leader) and "i-b", Stable at
  // generation 2 with assignments "A" and "B": their member ids.
  std::pair<std::string, std::string> stable_static_pair() {
    auto a = joins.at(join(static_request("", "i-a"))).member_id;
    sync(a, 1, {{a, "A"}});
    auto tb = join(static_request("", "i-b"));
    auto ta = join(static_request(a, "i-a"));
    EXPECT_EQ(joins.at(ta).error, error_code::none);
    EXPECT_EQ(joins.at(tb).error, error_code::none);
    auto b = joins.at(tb).member_id;
    EXPECT_EQ(joins.at(ta).leader_id, a);
    EXPECT_EQ(joins.at(ta).generation_id, 2);
    auto sb = sync(b, 2);
    sync(a, 2, {{a, "A"}, {b, "B"}});
    EXPECT_EQ(syncs.at(sb).assignment, "B");
    EXPECT_EQ(core.state("g"), group_state::stable);
    return {a, b};
  }

  // stable_static_pair() joined by a dynamic member: Stable at generation
  // 3 with assignments "A", "B" and "C".
  std::tuple<std::string, std::string, std::string> stable_static_pair_and_dynamic() {
    auto [a, b] = stable_static_pair();
    auto tc = join(request(""));
    join(static_request(a, "i-a"));
    join(static_request(b, "i-b"));
    auto c = joins.at(tc).member_id;
    sync(a, 3, {{a, "A"}, {b, "B"}, {c, "C"}});
    EXPECT_EQ(core.state("g"), group_state::stable);
    return {a, b, c};
  }

  // One member joined and synced alone: its id, at generation 1.
  std::string stable_single() {
    auto t = join(request(""));
    EXPECT_EQ(joins.at(t).error, error_code::none);
    auto id = joins.at(t).member_id;
    auto s = sync(id, 1, {{id, "A"}});
    EXPECT_EQ(syncs.at(s).error, error_code::none);
    return id;
  }
};

TEST_F(GroupMembership, FirstMemberLeadsGenerationOneAndGetsItsAssignment) {
  auto t = join(request(""));
  ASSERT_EQ(joins.count(t), 1u);
  auto& r = joins.at(t);
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.generation_id, 1);
  EXPECT_EQ(r.protocol_name, "range");
  EXPECT_EQ(r.leader_id, r.member_id);
  EXPECT_EQ(r.member_id.rfind("client-", 0), 0u);
  EXPECT_EQ(r.member_id.size(), std::string("client-").size() + 36); // clientId-UUID
  ASSERT_EQ(r.members.size(), 1u);
  EXPECT_EQ(r.members[0].metadata, "meta-range");
  EXPECT_EQ(core.state("g"), group_state::completing_rebalance);
  auto s = sync(r.member_id, 1, {{r.member_id, "assignment-bytes"}});
  EXPECT_EQ(syncs.at(s).error, error_code::none);
  EXPECT_EQ(syncs.at(s).assignment, "assignment-bytes");
  EXPECT_EQ(core.state("g"), group_state::stable);
}

TEST_F(GroupMembership, MemberIdRequiredThenJoinWithIt) {
  auto t = join(request("", {"range"}, true));
  EXPECT_EQ(joins.at(t).error, error_code::member_id_required);
  auto id = joins.at(t).member_id;
  EXPECT_FALSE(id.empty());
  EXPECT_TRUE(core.has_members("g")); // a pending member counts
  auto t2 = join(request(id, {"range"}, true));
  EXPECT_EQ(joins.at(t2).error, error_code::none);
  EXPECT_EQ(joins.at(t2).member_id, id);
  EXPECT_EQ(joins.at(t2).generation_id, 1);
}

TEST_F(GroupMembership, PendingMemberThatNeverReturnsIsDropped) {
  auto t = join(request("", {"range"}, true));
  auto id = joins.at(t).member_id;
  advance(10000); // its session timeout
  EXPECT_FALSE(core.has_members("g"));
  auto t2 = join(request(id, {"range"}, true));
  EXPECT_EQ(joins.at(t2).error, error_code::unknown_member_id);
}

TEST_F(GroupMembership, SecondMemberRebalancesAndTheJoinWaitsForEveryMember) {
  auto a = stable_single();
  auto tb = join(request(""));
  // The group rebalances; b waits for a to join again.
  EXPECT_EQ(joins.count(tb), 0u);
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
  EXPECT_EQ(core.heartbeat({"g", 1, a}, now), error_code::rebalance_in_progress);
  auto ta = join(request(a));
  ASSERT_EQ(joins.count(ta), 1u);
  ASSERT_EQ(joins.count(tb), 1u);
  auto& ra = joins.at(ta);
  auto& rb = joins.at(tb);
  EXPECT_EQ(ra.generation_id, 2);
  EXPECT_EQ(rb.generation_id, 2);
  EXPECT_EQ(ra.leader_id, a);
  EXPECT_EQ(rb.leader_id, a);
  EXPECT_EQ(ra.members.size(), 2u); // only the leader gets the members
  EXPECT_TRUE(rb.members.empty());
  auto b = rb.member_id;
  // The follower's SyncGroup waits for the leader's.
  auto sb = sync(b, 2);
  EXPECT_EQ(syncs.count(sb), 0u);
  auto sa = sync(a, 2, {{a, "A"}, {b, "B"}, {"stranger", "X"}});
  EXPECT_EQ(syncs.at(sa).assignment, "A");
  EXPECT_EQ(syncs.at(sb).assignment, "B");
  EXPECT_EQ(core.state("g"), group_state::stable);
  EXPECT_EQ(core.heartbeat({"g", 2, b}, now), error_code::none);
  EXPECT_EQ(core.heartbeat({"g", 1, b}, now), error_code::illegal_generation);
  EXPECT_EQ(core.heartbeat({"g", 2, "nobody"}, now), error_code::unknown_member_id);
}

TEST_F(GroupMembership, MemberThatDoesNotRejoinIsRemovedAtTheRebalanceTimeout) {
  auto a = stable_single();
  auto tb = join(request("")); // at 1000: the join ends by 31000
  // a keeps heartbeating (its consumer is busy, not dead) but does not
  // join again.
  for (int i = 0; i < 6; ++i) {
    advance(4999);
    EXPECT_EQ(core.heartbeat({"g", 1, a}, now), error_code::rebalance_in_progress);
  }
  EXPECT_EQ(joins.count(tb), 0u);
  EXPECT_EQ(core.next_deadline_ms(), now + 6);
  advance(6);
  ASSERT_EQ(joins.count(tb), 1u);
  auto& rb = joins.at(tb);
  EXPECT_EQ(rb.generation_id, 2);
  EXPECT_EQ(rb.leader_id, rb.member_id); // a is gone; b leads
  EXPECT_EQ(core.heartbeat({"g", 2, a}, now), error_code::unknown_member_id);
}

TEST_F(GroupMembership, SessionTimeoutRemovesAMemberAndRebalances) {
  auto a = stable_single();
  advance(9999);
  EXPECT_EQ(core.heartbeat({"g", 1, a}, now), error_code::none);
  advance(9999);
  EXPECT_EQ(core.state("g"), group_state::stable);
  advance(1);
  // a missed its session: removed, and the group, now without members, is
  // Empty at the next generation.
  EXPECT_EQ(core.state("g"), group_state::empty);
  EXPECT_EQ(core.generation("g"), 2);
  EXPECT_EQ(core.heartbeat({"g", 1, a}, now), error_code::unknown_member_id);
  EXPECT_FALSE(core.next_deadline_ms().has_value());
}

TEST_F(GroupMembership, LeaveRebalancesTheOthers) {
  auto a = stable_single();
  auto tb = join(request(""));
  auto ta = join(request(a));
  auto b = joins.at(tb).member_id;
  sync(a, 2, {{a, "A"}, {b, "B"}});
  auto r = leave({a, "nobody"});
  ASSERT_EQ(r.member_errors.size(), 2u);
  EXPECT_EQ(r.member_errors[0], error_code::none);
  EXPECT_EQ(r.member_errors[1], error_code::unknown_member_id);
  EXPECT_EQ(core.heartbeat({"g", 2, b}, now), error_code::rebalance_in_progress);
  auto tb2 = join(request(b));
  ASSERT_EQ(joins.count(tb2), 1u); // b is the only member left: no wait
  EXPECT_EQ(joins.at(tb2).generation_id, 3);
  EXPECT_EQ(joins.at(tb2).leader_id, b);
  (void) ta;
}

TEST_F(GroupMembership, LeavingDuringCompletingRebalanceAnswersWaitingSyncs) {
  auto a = stable_single();
  auto tb = join(request(""));
  join(request(a));
  auto b = joins.at(tb).member_id;
  auto sb = sync(b, 2);
  EXPECT_EQ(syncs.count(sb), 0u);
  leave({a}); // the leader leaves before assigning
  EXPECT_EQ(syncs.at(sb).error, error_code::rebalance_in_progress);
}

TEST_F(GroupMembership, SyncChecks) {
  auto a = stable_single();
  EXPECT_EQ(syncs.at(sync(a, 7)).error, error_code::illegal_generation);
  EXPECT_EQ(syncs.at(sync("nobody", 1)).error, error_code::unknown_member_id);
  EXPECT_EQ(syncs.at(sync(a, 1)).assignment, "A"); // Stable: its assignment again
  join(request(""));
  EXPECT_EQ(syncs.at(sync(a, 1)).error, error_code::rebalance_in_progress);
}

TEST_F(GroupMembership, JoinChecks) {
  auto r = request("");
  r.group_id = "";
  EXPECT_EQ(joins.at(join(r)).error, error_code::invalid_group_id);
  r = request("");
  r.session_timeout_ms = 5999;
  EXPECT_EQ(joins.at(join(r)).error, error_code::invalid_session_timeout);
  r.session_timeout_ms = 1800001;
  EXPECT_EQ(joins.at(join(r)).error, error_code::invalid_session_timeout);
  EXPECT_EQ(joins.at(join(request("ghost"))).error, error_code::unknown_member_id);
  stable_single();
  EXPECT_EQ(joins.at(join(request("", {"roundrobin"}))).error,
            error_code::inconsistent_group_protocol);
  auto other = request("");
  other.protocol_type = "connect";
  EXPECT_EQ(joins.at(join(other)).error, error_code::inconsistent_group_protocol);
}

TEST_F(GroupMembership, GroupMaxSize) {
  group_membership_limits l = limits();
  l.max_size = 1;
  group_membership_core small{l, 1};
  group_membership_core::outbox out;
  small.join(1, request(""), now, out);
  small.join(2, request(""), now, out);
  ASSERT_EQ(out.joins.size(), 2u);
  EXPECT_EQ(out.joins[0].second.error, error_code::none);
  EXPECT_EQ(out.joins[1].second.error, error_code::group_max_size_reached);
}

TEST_F(GroupMembership, ProtocolEveryMemberSupportsAndMostPrefer) {
  auto ta = join(request("", {"roundrobin", "range"}));
  auto a = joins.at(ta).member_id;
  sync(a, 1);
  auto tb = join(request("", {"range", "roundrobin"}));
  auto tc = join(request("", {"range"}));
  join(request(a, {"roundrobin", "range"}));
  ASSERT_EQ(joins.count(tb), 1u);
  ASSERT_EQ(joins.count(tc), 1u);
  // Only range is common to all three.
  EXPECT_EQ(joins.at(tb).protocol_name, "range");
}

TEST_F(GroupMembership, InitialDelayWaitsForMoreMembersThenExtends) {
  group_membership_limits l = limits();
  l.initial_rebalance_delay_ms = 3000;
  group_membership_core delayed{l, 7};
  group_membership_core::outbox out;
  delayed.join(1, request(""), now, out);
  EXPECT_TRUE(out.joins.empty());
  EXPECT_EQ(delayed.next_deadline_ms(), now + 3000);
  delayed.join(2, request(""), now + 2000, out); // a new member: the delay is extended once more
  EXPECT_TRUE(out.joins.empty());
  delayed.expire(now + 3000, out);
  EXPECT_TRUE(out.joins.empty());
  EXPECT_EQ(delayed.next_deadline_ms(), now + 6000);
  delayed.expire(now + 6000, out);
  ASSERT_EQ(out.joins.size(), 2u);
  EXPECT_EQ(out.joins[0].second.generation_id, 1);
  EXPECT_EQ(out.joins[1].second.generation_id, 1);
}

TEST_F(GroupMembership, OffsetCommitChecks) {
  // No group: a commit from outside group management is taken, a
  // generation is not.
  EXPECT_EQ(core.validate_offset_commit("g", -1, "", "", now), error_code::none);
  EXPECT_EQ(core.validate_offset_commit("g", 1, "m", "", now), error_code::illegal_generation);
  auto a = stable_single();
  EXPECT_EQ(core.validate_offset_commit("g", 1, a, "", now), error_code::none);
  EXPECT_EQ(core.validate_offset_commit("g", -1, "", "", now), error_code::unknown_member_id);
  EXPECT_EQ(core.validate_offset_commit("g", 0, a, "", now), error_code::illegal_generation);
  EXPECT_EQ(core.validate_offset_commit("g", 1, "zombie", "", now), error_code::unknown_member_id);
  auto tb = join(request(""));
  join(request(a));
  (void) tb;
  EXPECT_EQ(core.validate_offset_commit("g", 2, a, "", now), error_code::rebalance_in_progress);
  leave({a, joins.at(tb).member_id});
  EXPECT_EQ(core.state("g"), group_state::empty);
  EXPECT_EQ(core.validate_offset_commit("g", -1, "", "", now), error_code::none);
}

TEST_F(GroupMembership, TxnOffsetCommitFencesAZombieOfAnEarlierGeneration) {
  auto a = stable_single();
  EXPECT_EQ(core.validate_txn_offset_commit("g", 1, a, ""), error_code::none);
  // Without member fields (TxnOffsetCommit v0-2) it is taken.
  EXPECT_EQ(core.validate_txn_offset_commit("g", -1, "", ""), error_code::none);
  // b joins: generation 2; a's consumer is now a zombie at generation 1.
  auto tb = join(request(""));
  join(request(a));
  EXPECT_EQ(core.validate_txn_offset_commit("g", 1, a, ""), error_code::illegal_generation);
  EXPECT_EQ(core.validate_txn_offset_commit("g", 2, a, ""), error_code::none);
  EXPECT_EQ(core.validate_txn_offset_commit("g", 2, "zombie", ""), error_code::unknown_member_id);
  EXPECT_EQ(core.validate_txn_offset_commit("other", -1, "m", ""), error_code::unknown_member_id);
  (void) tb;
}

TEST_F(GroupMembership, DescribeAndList) {
  EXPECT_EQ(core.describe("g").state, "Dead");
  auto a = stable_single();
  auto d = core.describe("g");
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.protocol_type, "consumer");
  EXPECT_EQ(d.protocol, "range");
  ASSERT_EQ(d.members.size(), 1u);
  EXPECT_EQ(d.members[0].member_id, a);
  EXPECT_EQ(d.members[0].client_host, "/127.0.0.1");
  EXPECT_EQ(d.members[0].assignment, "A");
  EXPECT_EQ(d.members[0].metadata, "meta-range");
  join(request(""));
  d = core.describe("g");
  EXPECT_EQ(d.state, "PreparingRebalance");
  EXPECT_EQ(d.protocol, "");
  EXPECT_EQ(d.members[0].assignment, ""); // only while Stable
  auto l = core.list();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].group_id, "g");
  EXPECT_EQ(l[0].protocol_type, "consumer");
}

TEST_F(GroupMembership, RepeatedJoinOfAFollowerGetsTheCurrentGeneration) {
  auto a = stable_single();
  auto tb = join(request(""));
  join(request(a));
  auto b = joins.at(tb).member_id;
  sync(a, 2, {{a, "A"}, {b, "B"}});
  auto again = join(request(b));
  ASSERT_EQ(joins.count(again), 1u);
  EXPECT_EQ(joins.at(again).generation_id, 2);
  EXPECT_EQ(core.state("g"), group_state::stable);
  // The leader's join rebalances (its subscription may have changed).
  join(request(a));
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
}

// -- static membership (KIP-345) -------------------------------------------------

TEST_F(GroupMembership, StaticMemberNeedsNoSecondJoinAndItsIdStartsWithItsInstance) {
  auto t = join(static_request("", "i-a"));
  ASSERT_EQ(joins.count(t), 1u);
  auto& r = joins.at(t);
  EXPECT_EQ(r.error, error_code::none); // not MEMBER_ID_REQUIRED
  EXPECT_EQ(r.generation_id, 1);
  EXPECT_EQ(r.member_id.rfind("i-a-", 0), 0u);
  EXPECT_EQ(r.member_id.size(), std::string("i-a-").size() + 36);
  ASSERT_EQ(r.members.size(), 1u);
  EXPECT_EQ(r.members[0].group_instance_id, "i-a");
  auto d = core.describe("g");
  ASSERT_EQ(d.members.size(), 1u);
  EXPECT_EQ(d.members[0].group_instance_id, "i-a");
}

TEST_F(GroupMembership, RestartedStaticMemberTakesItsPlaceWithoutARebalance) {
  auto [a, b] = stable_static_pair();
  // b's process restarts: it joins without a member id, under its instance.
  auto t = join(static_request("", "i-b"));
  ASSERT_EQ(joins.count(t), 1u); // answered at once
  auto& r = joins.at(t);
  EXPECT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.generation_id, 2);
  EXPECT_EQ(r.protocol_name, "range");
  EXPECT_EQ(r.leader_id, a);
  EXPECT_TRUE(r.members.empty());
  auto b2 = r.member_id;
  EXPECT_NE(b2, b);
  EXPECT_EQ(b2.rfind("i-b-", 0), 0u);
  EXPECT_EQ(core.state("g"), group_state::stable);
  EXPECT_EQ(core.generation("g"), 2);
  EXPECT_EQ(heartbeat(a, 2, "i-a"), error_code::none); // a sees no rebalance
  // b's new id gets b's assignment.
  EXPECT_EQ(syncs.at(sync(b2, 2)).assignment, "B");
  EXPECT_EQ(heartbeat(b2, 2, "i-b"), error_code::none);
  // The old b is fenced wherever it still speaks with its instance id.
  EXPECT_EQ(heartbeat(b, 2, "i-b"), error_code::fenced_instance_id);
  EXPECT_EQ(heartbeat(b, 2), error_code::unknown_member_id);
  group_membership_core::outbox out;
  auto s = next_ticket++;
  core.sync(s, sync_group_request{"g", 2, b, {}, "i-b"}, now, out);
  take(out);
  EXPECT_EQ(syncs.at(s).error, error_code::fenced_instance_id);
  EXPECT_EQ(core.validate_offset_commit("g", 2, b, "i-b", now), error_code::fenced_instance_id);
  EXPECT_EQ(core.validate_txn_offset_commit("g", 2, b, "i-b"), error_code::fenced_instance_id);
  EXPECT_EQ(core.validate_txn_offset_commit("g", 2, b2, "i-b"), error_code::none);
  EXPECT_EQ(joins.at(join(static_request(b, "i-b"))).error, error_code::fenced_instance_id);
  EXPECT_EQ(leave({b}, {"i-b"}).member_errors, std::vector<error_code>{error_code::fenced_instance_id});
  EXPECT_EQ(core.state("g"), group_state::stable);
}

TEST_F(GroupMembership, RestartedStaticLeaderIsNotToldItLeads) {
  auto [a, b] = stable_static_pair();
  auto t = join(static_request("", "i-a"));
  auto& r = joins.at(t);
  EXPECT_EQ(r.error, error_code::none);
  // The leader named is a's old id, so the new process does not assign
  // for a generation the group already has.
  EXPECT_EQ(r.leader_id, a);
  EXPECT_NE(r.member_id, a);
  EXPECT_TRUE(r.members.empty());
  EXPECT_EQ(syncs.at(sync(r.member_id, 2)).assignment, "A");
  // The group's leader is the new id from now on: its next join rebalances.
  join(static_request(r.member_id, "i-a"));
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
  (void) b;
}

TEST_F(GroupMembership, StaticMemberBackWithAnotherProtocolRebalances) {
  auto t = join(static_request("", "i-a", {"range", "roundrobin"}));
  auto a = joins.at(t).member_id;
  EXPECT_EQ(joins.at(t).protocol_name, "range");
  sync(a, 1, {{a, "A"}});
  auto t2 = join(static_request("", "i-a", {"roundrobin", "range"}));
  ASSERT_EQ(joins.count(t2), 1u); // the only member: the rebalance ends at once
  EXPECT_EQ(joins.at(t2).generation_id, 2);
  EXPECT_EQ(joins.at(t2).protocol_name, "roundrobin");
  EXPECT_EQ(joins.at(t2).leader_id, joins.at(t2).member_id);
}

TEST_F(GroupMembership, StaticMemberReplacedWhileCompletingRebalanceRebalancesAgain) {
  auto [a, b] = stable_static_pair();
  auto tc = join(request(""));
  join(static_request(a, "i-a"));
  join(static_request(b, "i-b"));
  ASSERT_EQ(core.state("g"), group_state::completing_rebalance);
  auto c = joins.at(tc).member_id;
  auto sb = sync(b, 3);
  EXPECT_EQ(syncs.count(sb), 0u);
  // b restarts before the leader assigned: the leader was given b's old
  // id, so the group rebalances; the old b's waiting sync is fenced.
  auto tb2 = join(static_request("", "i-b"));
  ASSERT_EQ(syncs.count(sb), 1u);
  EXPECT_EQ(syncs.at(sb).error, error_code::fenced_instance_id);
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
  EXPECT_EQ(joins.count(tb2), 0u);
  auto ta = join(static_request(a, "i-a"));
  auto tc2 = join(request(c));
  ASSERT_EQ(joins.count(tb2), 1u);
  EXPECT_EQ(joins.at(tb2).generation_id, 4);
  std::vector<std::string> listed;
  for (auto& m : joins.at(ta).members)
    listed.push_back(m.member_id);
  EXPECT_EQ(std::count(listed.begin(), listed.end(), joins.at(tb2).member_id), 1);
  EXPECT_EQ(std::count(listed.begin(), listed.end(), b), 0);
  (void) tc2;
}

TEST_F(GroupMembership, DuplicateInstanceFencesTheMemberWaitingInAJoin) {
  auto [a, b] = stable_static_pair();
  auto tc = join(request("")); // a dynamic member: the group rebalances
  auto ta = join(static_request(a, "i-a"));
  EXPECT_EQ(joins.count(ta), 0u); // waits for b
  // A second process with instance i-a: the waiting join of the first is
  // answered FENCED_INSTANCE_ID, the second waits in its place.
  auto ta2 = join(static_request("", "i-a"));
  ASSERT_EQ(joins.count(ta), 1u);
  EXPECT_EQ(joins.at(ta).error, error_code::fenced_instance_id);
  EXPECT_EQ(joins.count(ta2), 0u);
  auto tb = join(static_request(b, "i-b"));
  ASSERT_EQ(joins.count(ta2), 1u);
  ASSERT_EQ(joins.count(tb), 1u);
  ASSERT_EQ(joins.count(tc), 1u);
  auto a2 = joins.at(ta2).member_id;
  EXPECT_EQ(joins.at(ta2).generation_id, 3);
  EXPECT_EQ(joins.at(ta2).leader_id, a2); // a's place, a's leadership
  EXPECT_EQ(joins.at(ta2).members.size(), 3u);
  EXPECT_EQ(heartbeat(a, 3, "i-a"), error_code::fenced_instance_id);
}

TEST_F(GroupMembership, StaticMemberThatDoesNotRejoinStaysUntilItsSessionEnds) {
  auto [a, b] = stable_static_pair();
  auto tc = join(request("")); // at 1000: the join ends by 31000
  auto ta = join(static_request(a, "i-a"));
  // b keeps heartbeating but does not join again.
  for (int i = 0; i < 6; ++i) {
    advance(4999);
    EXPECT_EQ(heartbeat(b, 2, "i-b"), error_code::rebalance_in_progress);
  }
  advance(6);
  ASSERT_EQ(joins.count(ta), 1u);
  ASSERT_EQ(joins.count(tc), 1u);
  // b is still a member: the leader is given its metadata to assign to.
  EXPECT_EQ(joins.at(ta).generation_id, 3);
  ASSERT_EQ(joins.at(ta).members.size(), 3u);
  auto c = joins.at(tc).member_id;
  sync(a, 3, {{a, "A"}, {b, "B"}, {c, "C"}});
  EXPECT_EQ(core.state("g"), group_state::stable);
  // b comes back in its session: its assignment is there.
  EXPECT_EQ(syncs.at(sync(b, 3)).assignment, "B");
  EXPECT_EQ(heartbeat(b, 3, "i-b"), error_code::none);
  // Silent past its session timeout, it is removed and the others rebalance.
  advance(9999);
  EXPECT_EQ(heartbeat(a, 3, "i-a"), error_code::none);
  EXPECT_EQ(heartbeat(c, 3), error_code::none);
  advance(1);
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
  EXPECT_EQ(heartbeat(b, 3, "i-b"), error_code::unknown_member_id);
  EXPECT_EQ(core.describe("g").members.size(), 2u);
}

TEST_F(GroupMembership, RebalanceThatNoMemberJoinsWaitsAnotherTimeout) {
  auto [a, b, c] = stable_static_pair_and_dynamic();
  leave({c}); // at 1000: a rebalance that ends by 31000
  // a and b stay alive but neither joins: no member can lead.
  for (int i = 0; i < 7; ++i) {
    advance(4999);
    EXPECT_EQ(heartbeat(a, 3, "i-a"), error_code::rebalance_in_progress);
    EXPECT_EQ(heartbeat(b, 3, "i-b"), error_code::rebalance_in_progress);
  }
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
  EXPECT_EQ(core.generation("g"), 3);
  auto ta = join(static_request(a, "i-a"));
  EXPECT_EQ(joins.count(ta), 0u); // b still has until the next timeout
  for (int i = 0; i < 5; ++i) {
    advance(4999);
    EXPECT_EQ(heartbeat(b, 3, "i-b"), error_code::rebalance_in_progress);
  }
  EXPECT_EQ(joins.count(ta), 0u);
  advance(5005); // 30000 after the first timeout, at 35993

  ASSERT_EQ(joins.count(ta), 1u);
  EXPECT_EQ(joins.at(ta).generation_id, 4);
  EXPECT_EQ(joins.at(ta).leader_id, a);
}

TEST_F(GroupMembership, LeaveByInstanceIdAndItsChecks) {
  auto [a, b] = stable_static_pair();
  auto r = leave({a, "", "", b}, {"i-b", "i-b", "i-x", ""});
  EXPECT_EQ(r.member_errors,
            (std::vector<error_code>{error_code::fenced_instance_id, error_code::none,
                                     error_code::unknown_member_id, error_code::unknown_member_id}));
  // b is gone (by its instance id); a joins alone into the next generation.
  auto ta = join(static_request(a, "i-a"));
  ASSERT_EQ(joins.count(ta), 1u);
  EXPECT_EQ(joins.at(ta).generation_id, 3);
  EXPECT_EQ(core.describe("g").members.size(), 1u);
  // A new member under i-b is a new static member again.
  auto tb = join(static_request("", "i-b"));
  EXPECT_EQ(joins.count(tb), 0u);
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
}

TEST_F(GroupMembership, JoinWithAnInstanceIdThatIsNotTheMembers) {
  auto [a, b] = stable_static_pair();
  EXPECT_EQ(joins.at(join(static_request(a, "i-b"))).error, error_code::fenced_instance_id);
  EXPECT_EQ(joins.at(join(static_request(a, "i-x"))).error, error_code::unknown_member_id);
  EXPECT_EQ(core.state("g"), group_state::stable);
  (void) b;
}

// -- the group's record (Kafka's GroupMetadataManager.storeGroup) ------------------

TEST_F(GroupMembership, TheAssignmentIsHandedOutOnceTheGroupsRecordIsDurable) {
  durable_at_once = false;
  auto t = join(request(""));
  auto a = joins.at(t).member_id;
  auto s = sync(a, 1, {{a, "A"}, {"stranger", "X"}});
  EXPECT_EQ(syncs.count(s), 0u);
  EXPECT_EQ(core.state("g"), group_state::completing_rebalance);
  ASSERT_EQ(held.size(), 1u);
  auto& r = held[0].record;
  EXPECT_NE(held[0].id, 0u);
  EXPECT_EQ(r.group_id, "g");
  EXPECT_EQ(r.generation, 1);
  EXPECT_EQ(r.protocol_type, "consumer");
  EXPECT_EQ(r.protocol_name, "range");
  EXPECT_EQ(r.leader, a);
  EXPECT_EQ(r.state_timestamp_ms, now);
  ASSERT_EQ(r.members.size(), 1u); // not the stranger
  EXPECT_EQ(r.members[0].member_id, a);
  EXPECT_EQ(r.members[0].client_id, "client");
  EXPECT_EQ(r.members[0].client_host, "/127.0.0.1");
  EXPECT_EQ(r.members[0].session_timeout_ms, 10000);
  EXPECT_EQ(r.members[0].rebalance_timeout_ms, 30000);
  EXPECT_EQ(r.members[0].subscription, "meta-range");
  EXPECT_EQ(r.members[0].assignment, "A");
  // A second SyncGroup of the leader meanwhile waits with the first.
  auto s2 = sync(a, 1, {{a, "B"}});
  EXPECT_EQ(syncs.at(s).error, error_code::rebalance_in_progress); // superseded
  EXPECT_EQ(held.size(), 1u);
  complete(held[0], error_code::none);
  EXPECT_EQ(syncs.at(s2).assignment, "A");
  EXPECT_EQ(core.state("g"), group_state::stable);
}

TEST_F(GroupMembership, AFailedStoreAnswersTheSyncsAndRebalances) {
  auto [a, b] = two_members_completing();
  auto sb = sync(b, 2);
  auto sa = sync(a, 2, {{a, "A"}, {b, "B"}});
  ASSERT_EQ(held.size(), 1u);
  complete(held[0], error_code::not_coordinator);
  EXPECT_EQ(syncs.at(sa).error, error_code::not_coordinator);
  EXPECT_EQ(syncs.at(sb).error, error_code::not_coordinator);
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
  // The rebalance is a real one: both join again into generation 3.
  auto ta = join(request(a));
  auto tb = join(request(b));
  ASSERT_EQ(joins.count(ta), 1u);
  EXPECT_EQ(joins.at(tb).generation_id, 3);
}

TEST_F(GroupMembership, ARebalanceVoidsAStoreStillBeingWritten) {
  auto [a, b] = two_members_completing();
  auto sa = sync(a, 2, {{a, "A"}, {b, "B"}});
  ASSERT_EQ(held.size(), 1u);
  leave({b}); // before the record is durable
  EXPECT_EQ(syncs.at(sa).error, error_code::rebalance_in_progress);
  auto late = held[0];
  complete(late, error_code::none); // ignored
  EXPECT_EQ(core.state("g"), group_state::preparing_rebalance);
}

TEST_F(GroupMembership, AGroupThatBecomesEmptyIsStoredEmpty) {
  auto a = stable_single();
  stores.clear();
  leave({a});
  EXPECT_EQ(core.state("g"), group_state::empty);
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(stores[0].id, 0u); // nothing waits for it
  EXPECT_EQ(stores[0].record.generation, 2);
  EXPECT_TRUE(stores[0].record.members.empty());
  EXPECT_EQ(stores[0].record.protocol_name, "");
  EXPECT_EQ(stores[0].record.leader, "");
  // Only a group the core has, without members, is removed (and then
  // gets its tombstone from the shell).
  EXPECT_FALSE(core.remove_group("other"));
  EXPECT_TRUE(core.remove_group("g"));
  EXPECT_FALSE(core.has_group("g"));
}

TEST_F(GroupMembership, AStaticTakeoverWaitsForItsStoreAndIsUndoneIfItFails) {
  auto [a, b] = stable_static_pair();
  durable_at_once = false;
  auto t = join(static_request("", "i-b"));
  EXPECT_EQ(joins.count(t), 0u); // until the record names the new id
  ASSERT_EQ(held.size(), 1u);
  std::string b2;
  for (auto& m : held[0].record.members)
    if (m.group_instance_id == "i-b")
      b2 = m.member_id;
  EXPECT_NE(b2, b);
  EXPECT_EQ(b2.rfind("i-b-", 0), 0u);
  complete(held[0], error_code::coordinator_not_available);
  EXPECT_EQ(joins.at(t).error, error_code::coordinator_not_available);
  // The old member id is the instance's again, with its assignment.
  EXPECT_EQ(heartbeat(b, 2, "i-b"), error_code::none);
  EXPECT_EQ(syncs.at(sync(b, 2)).assignment, "B");
  EXPECT_EQ(heartbeat(b2, 2, "i-b"), error_code::fenced_instance_id);
  EXPECT_EQ(core.state("g"), group_state::stable);
  // A second try succeeds.
  held.clear();
  auto t2 = join(static_request("", "i-b"));
  ASSERT_EQ(held.size(), 1u);
  complete(held[0], error_code::none);
  EXPECT_EQ(joins.at(t2).error, error_code::none);
  EXPECT_EQ(joins.at(t2).generation_id, 2);
  EXPECT_EQ(heartbeat(b, 2, "i-b"), error_code::fenced_instance_id);
}

TEST_F(GroupMembership, ALoadedGroupGoesOnAtItsGeneration) {
  auto [a, b, c] = stable_static_pair_and_dynamic();
  // A new coordinator replays the records of the old one.
  group_membership_core reloaded{limits(), 99};
  reloaded.load_record(stores.front().record); // an older generation, replaced below
  for (auto& st : stores)
    reloaded.load_record(st.record);
  EXPECT_EQ(reloaded.state("g"), group_state::stable);
  reloaded.loaded(now);
  EXPECT_EQ(reloaded.generation("g"), 3);
  auto before = core.describe("g");
  auto after = reloaded.describe("g");
  EXPECT_EQ(after.state, "Stable");
  EXPECT_EQ(after.protocol, "range");
  ASSERT_EQ(after.members.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(after.members[i].member_id, before.members[i].member_id);
    EXPECT_EQ(after.members[i].group_instance_id, before.members[i].group_instance_id);
    EXPECT_EQ(after.members[i].metadata, before.members[i].metadata);
    EXPECT_EQ(after.members[i].assignment, before.members[i].assignment);
  }
  // Members go on without a rebalance; fencing holds across the move.
  EXPECT_EQ(reloaded.heartbeat({"g", 3, c, ""}, now), error_code::none);
  EXPECT_EQ(reloaded.heartbeat({"g", 2, c, ""}, now), error_code::illegal_generation);
  EXPECT_EQ(reloaded.heartbeat({"g", 3, "nobody", "i-b"}, now), error_code::fenced_instance_id);
  EXPECT_EQ(reloaded.validate_txn_offset_commit("g", 3, a, "i-a"), error_code::none);
  EXPECT_EQ(reloaded.validate_txn_offset_commit("g", 2, a, "i-a"), error_code::illegal_generation);
  group_membership_core::outbox out;
  reloaded.sync(77, sync_group_request{"g", 3, b, {}, "i-b"}, now, out);
  ASSERT_EQ(out.syncs.size(), 1u);
  EXPECT_EQ(out.syncs[0].second.assignment, "B");
  // Sessions started at the load: a silent member times out.
  EXPECT_EQ(reloaded.next_deadline_ms(), now + 10000);
  reloaded.heartbeat({"g", 3, a, "i-a"}, now + 9999);
  reloaded.heartbeat({"g", 3, b, "i-b"}, now + 9999);
  out = {};
  reloaded.expire(now + 10000, out);
  EXPECT_EQ(reloaded.state("g"), group_state::preparing_rebalance); // c is gone
  EXPECT_EQ(reloaded.describe("g").members.size(), 2u);
  // A tombstone forgets the group.
  reloaded.load_tombstone("g");
  EXPECT_EQ(reloaded.state("g"), std::nullopt);
}

TEST_F(GroupMembership, ALoadedEmptyGroupStartsItsNextGenerationAfterTheStoredOne) {
  auto a = stable_single();
  leave({a});
  group_membership_core reloaded{limits(), 5};
  reloaded.load_record(stores.back().record);
  reloaded.loaded(now);
  EXPECT_EQ(reloaded.state("g"), group_state::empty);
  EXPECT_EQ(reloaded.generation("g"), 2);
  group_membership_core::outbox out;
  reloaded.join(1, request(""), now, out);
  ASSERT_EQ(out.joins.size(), 1u);
  EXPECT_EQ(out.joins[0].second.generation_id, 3);
}

// Two takeovers in flight whose stores both fail: each is undone, and
// leadership goes back only to the member it was taken from (Kafka's
// replaceStaticMember), so the leader is always a member.
TEST_F(GroupMembership, TwoFailedTakeoversLeaveTheFirstLeaderLeading) {
  auto [a, b] = stable_static_pair();
  durable_at_once = false;
  auto ta = join(static_request("", "i-a")); // the leader's instance
  auto tb = join(static_request("", "i-b"));
  ASSERT_EQ(held.size(), 2u);
  complete(held[0], error_code::coordinator_not_available);
  complete(held[1], error_code::coordinator_not_available);
  EXPECT_EQ(joins.at(ta).error, error_code::coordinator_not_available);
  EXPECT_EQ(joins.at(tb).error, error_code::coordinator_not_available);
  EXPECT_EQ(heartbeat(a, 2, "i-a"), error_code::none);
  EXPECT_EQ(heartbeat(b, 2, "i-b"), error_code::none);
  // A new takeover works and names a as the leader.
  held.clear();
  auto tb2 = join(static_request("", "i-b"));
  ASSERT_EQ(held.size(), 1u);
  complete(held[0], error_code::none);
  EXPECT_EQ(joins.at(tb2).error, error_code::none);
  EXPECT_EQ(joins.at(tb2).leader_id, a);
}

// A SyncGroup held while the group's record is written: the member could
// send no heartbeat meanwhile, so its session starts over when answered
// (Kafka's propagateAssignment).
TEST_F(GroupMembership, AHeldSyncStartsTheSessionOverWhenAnswered) {
  durable_at_once = false;
  auto a = joins.at(join(request(""))).member_id;
  auto s = sync(a, 1, {{a, "A"}});
  advance(9000);
  ASSERT_EQ(held.size(), 1u);
  complete(held[0], error_code::none);
  EXPECT_EQ(syncs.at(s).assignment, "A");
  advance(1001); // past the session the sync started
  EXPECT_EQ(core.state("g"), group_state::stable);
  EXPECT_EQ(heartbeat(a, 1), error_code::none);
}

// An instance id the group does not have is UNKNOWN_MEMBER_ID wherever a
// member is checked (Kafka 3's validateCurrentMember), even with a member
// id the group has.
TEST_F(GroupMembership, AnUnknownInstanceIdIsAnUnknownMember) {
  auto [a, b] = stable_static_pair();
  EXPECT_EQ(heartbeat(a, 2, "i-x"), error_code::unknown_member_id);
  group_membership_core::outbox out;
  core.sync(99, sync_group_request{"g", 2, a, {}, "i-x"}, now, out);
  ASSERT_EQ(out.syncs.size(), 1u);
  EXPECT_EQ(out.syncs[0].second.error, error_code::unknown_member_id);
  EXPECT_EQ(core.validate_offset_commit("g", 2, a, "i-x", now), error_code::unknown_member_id);
  EXPECT_EQ(core.validate_txn_offset_commit("g", 2, a, "i-x"), error_code::unknown_member_id);
  EXPECT_EQ(core.validate_txn_offset_commit("none", 2, a, "i-x"), error_code::unknown_member_id);
  EXPECT_EQ(heartbeat(a, 2, "i-a"), error_code::none);
  (void) b;
}

} // namespace
} // namespace caftx
