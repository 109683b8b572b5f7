// The pure core of consumer-group membership for the groups of one
// `__consumer_offsets` partition: Kafka's classic group protocol
// (GroupCoordinator and GroupMetadata), docs/consumer-groups.md.
//
// A group moves Empty -> PreparingRebalance -> CompletingRebalance ->
// Stable. A rebalance starts when a member joins, leaves, changes its
// protocols or misses its session timeout; it ends when every known member
// has joined again, or at the rebalance timeout (the largest of the
// members'), when the members that did not rejoin are removed. The first
// rebalance of an Empty group waits group.initial.rebalance.delay.ms for
// more members (extended while new ones keep coming, up to the rebalance
// timeout). Its end starts the next generation: the protocol every member
// supports that most members prefer, and a leader, the only member told the
// others' metadata. The leader's SyncGroup carries every member's
// assignment; the other members' SyncGroups wait for it.
//
// JoinGroup and SyncGroup answers may come later: each request carries a
// ticket of the shell, and the answers due are put in an outbox, by the
// call that completes them or by expire(). No CAF, no clock (times are
// passed in, in ms), no disk: the generations live in memory only, so a
// coordinator that restarts or moves starts every group at generation 0
// and its members rejoin after UNKNOWN_MEMBER_ID; member ids are random, so
// a member of the previous incarnation stays fenced. Owned by one group
// coordinator actor; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/group_membership.hpp"

namespace caftx {

/// The broker settings a group coordinator enforces (Kafka's
/// GroupCoordinatorConfig), in ms or members.
struct group_membership_limits {
  int32_t min_session_timeout_ms = 6000;     // group.min.session.timeout.ms
  int32_t max_session_timeout_ms = 1800000;  // group.max.session.timeout.ms
  int32_t initial_rebalance_delay_ms = 3000; // group.initial.rebalance.delay.ms
  int32_t max_size = 2147483647;             // group.max.size
};

/// A group's state, as DescribeGroups and ListGroups name it.
enum class group_state { empty, preparing_rebalance, completing_rebalance, stable };

/// "Empty", "PreparingRebalance", "CompletingRebalance" or "Stable".
const char* to_string(group_state s);

class group_membership_core {
public:
  using ticket = uint64_t;

  /// Answers that became due during a call.
  struct outbox {
    std::vector<std::pair<ticket, join_group_response>> joins;
    std::vector<std::pair<ticket, sync_group_response>> syncs;
  };

  /// `seed` seeds the random part of member ids (clientId-UUID).
  group_membership_core(group_membership_limits limits, uint64_t seed);

  /// JoinGroup: answered now (an error, MEMBER_ID_REQUIRED, or the current
  /// generation for a member already in it) or when the rebalance ends.
  /// Errors: INVALID_GROUP_ID (empty id), INVALID_SESSION_TIMEOUT (outside
  /// the limits), UNKNOWN_MEMBER_ID, INCONSISTENT_GROUP_PROTOCOL (another
  /// protocol type, or no protocol every member supports),
  /// GROUP_MAX_SIZE_REACHED.
  void join(ticket t, const join_group_request& req, int64_t now_ms, outbox& out);

  /// SyncGroup: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
  /// REBALANCE_IN_PROGRESS while PreparingRebalance; the member's
  /// assignment when Stable; while CompletingRebalance the answer waits for
  /// the leader's SyncGroup (members it names no assignment for get empty
  /// bytes), which makes the group Stable.
  void sync(ticket t, const sync_group_request& req, int64_t now_ms, outbox& out);

  /// Heartbeat: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
  /// REBALANCE_IN_PROGRESS while PreparingRebalance (the member must join
  /// again), else NONE; the member's session starts over.
  error_code heartbeat(const heartbeat_request& req, int64_t now_ms);

  /// LeaveGroup: each member removed (UNKNOWN_MEMBER_ID for one the group
  /// does not have) and a rebalance started.
  leave_group_response leave(const leave_group_request& req, int64_t now_ms, outbox& out);

  /// Runs what is due at `now_ms`: members past their session timeout
  /// are removed, pending members (MEMBER_ID_REQUIRED) that did not come
  /// back are dropped, rebalances past their timeout end.
  void expire(int64_t now_ms, outbox& out);

  /// When expire() has something to do next; nullopt: nothing pending.
  std::optional<int64_t> next_deadline_ms() const;

  /// Kafka's GroupCoordinator.handleCommitOffsets checks for OffsetCommit:
  /// generation < 0 into a group without members is accepted (offsets
  /// kept for a consumer outside group management); otherwise the member
  /// must be in the group (UNKNOWN_MEMBER_ID) at its generation
  /// (ILLEGAL_GENERATION; also a generation for a group the coordinator
  /// does not have), and not while CompletingRebalance
  /// (REBALANCE_IN_PROGRESS). A member's commit starts its session over.
  error_code validate_offset_commit(const std::string& group, int32_t generation_id,
                                    const std::string& member_id, int64_t now_ms);

  /// KIP-447 for TxnOffsetCommit: a member id must be the group's
  /// (UNKNOWN_MEMBER_ID) and a generation >= 0 the group's
  /// (ILLEGAL_GENERATION); a request without either (TxnOffsetCommit
  /// v0-2) is accepted, as Kafka does.
  error_code validate_txn_offset_commit(const std::string& group, int32_t generation_id,
                                        const std::string& member_id) const;

  /// DescribeGroups of one group: "Dead" for one this core does not have.
  group_description describe(const std::string& group) const;
  /// Every group this core has.
  std::vector<listed_group> list() const;
  /// True if `group` has members (its offsets must not be deleted or
  /// expired).
  bool has_members(const std::string& group) const;
  bool has_group(const std::string& group) const { return groups_.count(group) > 0; }
  /// Forgets a group without members (DeleteGroups, or its offsets are gone).
  void remove_group(const std::string& group);

  std::optional<group_state> state(const std::string& group) const;
  std::optional<int32_t> generation(const std::string& group) const;

private:
  struct member {
    std::string id;
    std::string client_id;
    std::string client_host;
    int32_t session_timeout_ms = 0;
    int32_t rebalance_timeout_ms = 0;
    std::vector<group_protocol> protocols;
    std::string assignment;
    std::optional<ticket> join_ticket;
    std::optional<ticket> sync_ticket;
    int64_t heartbeat_deadline_ms = 0;
    int64_t joined_ms = 0;
    bool is_new = true;
  };
  struct group {
    std::string id;
    group_state state = group_state::empty;
    int32_t generation = 0;
    std::string protocol_type;
    std::string protocol_name;
    std::string leader;
    std::map<std::string, member> members;
    std::map<std::string, int64_t> pending; // member id -> when it must have joined
    // While PreparingRebalance: when the join ends at the latest.
    int64_t join_deadline_ms = 0;
    // The first rebalance of an Empty group (Kafka's InitialDelayedJoin).
    bool initial_join = false;
    int64_t initial_remaining_ms = 0;
    bool new_member_added = false;
  };

  std::string new_member_id(const std::string& client_id);
  bool supports(const group& g, const std::string& self, const join_group_request& req) const;
  // The join's fields into `m`, which waits in it (ticket `t`) from now.
  static void take_join(member& m, ticket t, const join_group_request& req, int64_t now_ms);
  void add_member(group& g, ticket t, const join_group_request& req, std::string id,
                  int64_t now_ms, outbox& out);
  void update_member(group& g, member& m, ticket t, const join_group_request& req,
                     int64_t now_ms, outbox& out);
  void answer_current(const group& g, const member& m, ticket t, outbox& out) const;
  void prepare_rebalance(group& g, int64_t now_ms, outbox& out);
  void maybe_prepare_rebalance(group& g, int64_t now_ms, outbox& out);
  void check_join(group& g, int64_t now_ms, outbox& out);
  void complete_join(group& g, int64_t now_ms, outbox& out);
  void remove_member(group& g, const std::string& id, int64_t now_ms, outbox& out);
  std::string select_protocol(const group& g) const;
  static const std::string* metadata_for(const member& m, const std::string& protocol);

  group_membership_limits limits_;
  std::mt19937_64 random_;
  std::map<std::string, group> groups_;
};

} // namespace caftx
