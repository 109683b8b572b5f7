// group_membership_core: Kafka's classic group protocol (GroupCoordinator,
// GroupMetadata) driven with explicit times: joins that wait for every
// member or the rebalance timeout, the initial delay, MEMBER_ID_REQUIRED
// (KIP-394), protocol selection, SyncGroup, heartbeats and session
// timeouts, LeaveGroup, and the generation checks of OffsetCommit and
// TxnOffsetCommit (KIP-447). docs/consumer-groups.md.

#include <gtest/gtest.h>

#include <map>
#include <string>
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

  void take(group_membership_core::outbox& out) {
    for (auto& [t, r] : out.joins) {
      ASSERT_EQ(joins.count(t), 0u) << "ticket " << t << " answered twice";
      joins[t] = r;
    }
    for (auto& [t, r] : out.syncs) {
      ASSERT_EQ(syncs.count(t), 0u) << "ticket " << t << " answered twice";
      syncs[t] = r;
    }
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

  leave_group_response leave(std::vector<std::string> members) {
    group_membership_core::outbox out;
    auto r = core.leave(leave_group_request{"g", std::move(members)}, now, out);
    take(out);
    return r;
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
  EXPECT_EQ(core.validate_offset_commit("g", -1, "", now), error_code::none);
  EXPECT_EQ(core.validate_offset_commit("g", 1, "m", now), error_code::illegal_generation);
  auto a = stable_single();
  EXPECT_EQ(core.validate_offset_commit("g", 1, a, now), error_code::none);
  EXPECT_EQ(core.validate_offset_commit("g", -1, "", now), error_code::unknown_member_id);
  EXPECT_EQ(core.validate_offset_commit("g", 0, a, now), error_code::illegal_generation);
  EXPECT_EQ(core.validate_offset_commit("g", 1, "zombie", now), error_code::unknown_member_id);
  auto tb = join(request(""));
  join(request(a));
  (void) tb;
  EXPECT_EQ(core.validate_offset_commit("g", 2, a, now), error_code::rebalance_in_progress);
  leave({a, joins.at(tb).member_id});
  EXPECT_EQ(core.state("g"), group_state::empty);
  EXPECT_EQ(core.validate_offset_commit("g", -1, "", now), error_code::none);
}

TEST_F(GroupMembership, TxnOffsetCommitFencesAZombieOfAnEarlierGeneration) {
  auto a = stable_single();
  EXPECT_EQ(core.validate_txn_offset_commit("g", 1, a), error_code::none);
  // Without member fields (TxnOffsetCommit v0-2) it is taken.
  EXPECT_EQ(core.validate_txn_offset_commit("g", -1, ""), error_code::none);
  // b joins: generation 2; a's consumer is now a zombie at generation 1.
  auto tb = join(request(""));
  join(request(a));
  EXPECT_EQ(core.validate_txn_offset_commit("g", 1, a), error_code::illegal_generation);
  EXPECT_EQ(core.validate_txn_offset_commit("g", 2, a), error_code::none);
  EXPECT_EQ(core.validate_txn_offset_commit("g", 2, "zombie"), error_code::unknown_member_id);
  EXPECT_EQ(core.validate_txn_offset_commit("other", -1, "m"), error_code::unknown_member_id);
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

} // namespace
} // namespace caftx
