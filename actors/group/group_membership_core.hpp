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
// Static members (KIP-345, a client's group.instance.id) keep their place
// across restarts: a join under a known instance id with no member id takes
// over the instance's member (its metadata and assignment) under a new
// member id, fencing the old one (FENCED_INSTANCE_ID); in a Stable group
// whose protocol stays the same that needs no rebalance. A static member
// that does not rejoin in a rebalance stays a member until its session
// times out or it is removed by a LeaveGroup.
//
// JoinGroup and SyncGroup answers may come later: each request carries a
// ticket of the shell, and the answers due are put in an outbox, by the
// call that completes them or by expire(). No CAF, no clock (times are
// passed in, in ms), no disk. Like Kafka's GroupMetadataManager.storeGroup,
// the core asks the shell (in the outbox) to append a group's record to
// its `__consumer_offsets` partition when a generation's assignment is
// complete, when a static member takes over its instance in a Stable
// group, and when the group becomes Empty; the first two wait for
// stored() before the group moves on (the leader's assignment is handed
// out only once durable). A coordinator that restarts or moves loads the
// records back (load_record, load_tombstone, loaded): the groups and
// their members go on at the generation last stored. Owned by one group
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

  /// A group's record the shell must append. `id` != 0: the group waits
  /// for stored(group, id, ...) with the append's outcome.
  struct store {
    uint64_t id = 0;
    group_metadata_record record;
  };

  /// Answers that became due during a call, and records to append.
  struct outbox {
    std::vector<std::pair<ticket, join_group_response>> joins;
    std::vector<std::pair<ticket, sync_group_response>> syncs;
    std::vector<store> stores;
  };

  /// `seed` seeds the random part of member ids (clientId-UUID).
  group_membership_core(group_membership_limits limits, uint64_t seed);

  /// JoinGroup: answered now (an error, MEMBER_ID_REQUIRED, the current
  /// generation for a member already in it, or for a static member taking
  /// over its instance in a Stable group) or when the rebalance ends.
  /// Errors: INVALID_GROUP_ID (empty id), INVALID_SESSION_TIMEOUT (outside
  /// the limits), INCONSISTENT_GROUP_PROTOCOL (another protocol type, or no
  /// protocol every member supports), FENCED_INSTANCE_ID (the instance id
  /// is another member id's), UNKNOWN_MEMBER_ID, GROUP_MAX_SIZE_REACHED. A
  /// replaced static member's waiting JoinGroup or SyncGroup is answered
  /// FENCED_INSTANCE_ID.
  void join(ticket t, const join_group_request& req, int64_t now_ms, outbox& out);

  /// SyncGroup: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID (also for an
  /// instance id the group does not have), ILLEGAL_GENERATION,
  /// REBALANCE_IN_PROGRESS while PreparingRebalance; the member's
  /// assignment when Stable; while CompletingRebalance the answer waits for
  /// the leader's SyncGroup (members it names no assignment for get empty
  /// bytes), which makes the group Stable.
  void sync(ticket t, const sync_group_request& req, int64_t now_ms, outbox& out);

  /// Heartbeat: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID (also for an
  /// instance id the group does not have), ILLEGAL_GENERATION,
  /// REBALANCE_IN_PROGRESS while PreparingRebalance (the member must join
  /// again), else NONE; the member's session starts over.
  error_code heartbeat(const heartbeat_request& req, int64_t now_ms);

  /// LeaveGroup: each member removed and a rebalance started. Per member
  /// (Kafka's GroupCoordinator.handleLeaveGroup): UNKNOWN_MEMBER_ID for one
  /// the group does not have, FENCED_INSTANCE_ID for an instance id that is
  /// another member id's; a member id "" with an instance id removes the
  /// instance's member.
  leave_group_response leave(const leave_group_request& req, int64_t now_ms, outbox& out);

  /// Runs what is due at `now_ms`: members past their session timeout
  /// are removed, pending members (MEMBER_ID_REQUIRED) that did not come
  /// back are dropped, rebalances past their timeout end.
  void expire(int64_t now_ms, outbox& out);

  /// When expire() has something to do next; nullopt: nothing pending.
  std::optional<int64_t> next_deadline_ms() const;

  /// The outcome of the append of store `id` of `group` (an id the group
  /// no longer waits for is ignored: a rebalance began meanwhile). NONE:
  /// the leader's assignment is handed out and the group is Stable, or
  /// the static member that took over its instance gets its answer. An
  /// error (the one Kafka's GroupMetadataManager.storeGroup maps the
  /// append's to: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
  /// REBALANCE_IN_PROGRESS) goes to the waiting SyncGroups, which a
  /// rebalance follows, or to the static member's JoinGroup, whose
  /// takeover is undone.
  void stored(const std::string& group, uint64_t id, error_code error, int64_t now_ms,
              outbox& out);

  /// Load, in log order: a group's record restores it (Stable with its
  /// members and their assignments, or Empty at its generation), replacing
  /// what an earlier record said; a tombstone forgets the group.
  void load_record(const group_metadata_record& record);
  void load_tombstone(const std::string& group);
  /// After the load: every loaded member's session starts at `now_ms`.
  void loaded(int64_t now_ms);

  /// Kafka's GroupCoordinator.handleCommitOffsets checks for OffsetCommit:
  /// FENCED_INSTANCE_ID for an instance id that is another member id's,
  /// UNKNOWN_MEMBER_ID for one the group does not have (Kafka 3's
  /// validateCurrentMember); generation < 0 into a group without members
  /// is accepted (offsets
  /// kept for a consumer outside group management); otherwise the member
  /// must be in the group (UNKNOWN_MEMBER_ID) at its generation
  /// (ILLEGAL_GENERATION; also a generation for a group the coordinator
  /// does not have), and not while CompletingRebalance
  /// (REBALANCE_IN_PROGRESS). A member's commit starts its session over.
  error_code validate_offset_commit(const std::string& group, int32_t generation_id,
                                    const std::string& member_id,
                                    const std::string& group_instance_id, int64_t now_ms);

  /// KIP-447 for TxnOffsetCommit: an instance id must be the group's
  /// (UNKNOWN_MEMBER_ID) and not another member id's (FENCED_INSTANCE_ID),
  /// a member id must be the group's
  /// (UNKNOWN_MEMBER_ID) and a generation >= 0 the group's
  /// (ILLEGAL_GENERATION); a request without either (TxnOffsetCommit
  /// v0-2) is accepted, as Kafka does.
  error_code validate_txn_offset_commit(const std::string& group, int32_t generation_id,
                                        const std::string& member_id,
                                        const std::string& group_instance_id) const;

  /// DescribeGroups of one group: "Dead" for one this core does not have.
  group_description describe(const std::string& group) const;
  /// Every group this core has.
  std::vector<listed_group> list() const;
  /// True if `group` has members (its offsets must not be deleted or
  /// expired).
  bool has_members(const std::string& group) const;
  bool has_group(const std::string& group) const { return groups_.count(group) > 0; }
  /// Forgets a group without members (DeleteGroups, or its offsets are
  /// gone); true if it did (the shell then writes the group's tombstone).
  bool remove_group(const std::string& group);

  std::optional<group_state> state(const std::string& group) const;
  std::optional<int32_t> generation(const std::string& group) const;

private:
  struct member {
    std::string id;
    std::string instance_id; // KIP-345; "" for a dynamic member
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
  // What waits for a store of the group's record.
  struct pending_store {
    // The leader's assignment (member id -> bytes), handed out once durable.
    bool assignment = false;
    std::map<std::string, std::string> assignments;
    // Or a static member's takeover in a Stable group: its join's answer
    // (naming the leader before the takeover), and the member as it was,
    // to restore with that leader if the store fails.
    ticket join_ticket = 0;
    std::string member_id;
    std::string old_leader;
    std::optional<member> previous;
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
    std::map<std::string, std::string> static_members; // instance id -> member id
    // While PreparingRebalance: when the join ends at the latest.
    int64_t join_deadline_ms = 0;
    // The first rebalance of an Empty group (Kafka's InitialDelayedJoin).
    bool initial_join = false;
    int64_t initial_remaining_ms = 0;
    bool new_member_added = false;
    // Stores the group waits for (stored()), by id; a rebalance drops them.
    std::map<uint64_t, pending_store> stores;
  };

  // clientId-UUID, or for a static member instanceId-UUID.
  std::string new_member_id(const std::string& prefix);
  // Kafka's GroupMetadata.isStaticMemberFenced: `instance` is held by a
  // member id other than `member_id`.
  static bool fenced(const group& g, const std::string& instance, const std::string& member_id);
  // Kafka's GroupMetadata.validateMember: NONE, UNKNOWN_MEMBER_ID or
  // FENCED_INSTANCE_ID.
  static error_code validate_member(const group& g, const std::string& member_id,
                                    const std::string& instance);
  // Kafka's updateStaticMemberAndRebalance: `old_id`'s place goes to a
  // new member id under the same instance.
  void replace_static_member(group& g, ticket t, const join_group_request& req,
                             const std::string& old_id, int64_t now_ms, outbox& out);
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
  // The group's record: its members with their metadata for the chosen
  // protocol and their assignments (`assignments` instead, if given).
  group_metadata_record snapshot(const group& g, int64_t now_ms,
                                 const std::map<std::string, std::string>* assignments = nullptr) const;
  // Asks the shell to append the group's record; `wait`, if given, is
  // what waits for stored() under the store's id.
  void request_store(group& g, int64_t now_ms, outbox& out, std::optional<pending_store> wait,
                     const std::map<std::string, std::string>* assignments = nullptr);
  // The leader's assignment is durable (or needs no store): every member
  // gets its bytes and the group is Stable.
  void hand_out_assignment(group& g, const std::map<std::string, std::string>& assignments,
                           int64_t now_ms, outbox& out);
  void answer_syncs(group& g, error_code error, int64_t now_ms, outbox& out);
  static const std::string* metadata_for(const member& m, const std::string& protocol);

  group_membership_limits limits_;
  std::mt19937_64 random_;
  std::map<std::string, group> groups_;
  uint64_t last_store_id_ = 0;
};

} // namespace caftx
