#include "actors/client/consumer.hpp"

#include <algorithm>
#include <deque>
#include <iterator>
#include <limits>
#include <mutex>

#include "actors/client/client_context.hpp"
#include "actors/client/consumer_protocol.hpp"
#include "actors/client/remote_cluster.hpp"
#include "runtime/group_coordinator_messages.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx {

namespace {

using std::chrono::milliseconds;

consumer_config parse_or_throw(const properties& props) {
  auto c = consumer_config::parse(props);
  if (!c.ok())
    throw kafka_exception(c.error(), error_class::fatal);
  return c.value();
}

[[noreturn]] void raise(const status& st) {
  throw kafka_exception(st, is_retriable(st.code()) ? error_class::retriable : error_class::fatal);
}

} // namespace

struct consumer::impl {
  consumer_config cfg;
  detail::client_channel ch;
  std::vector<topic_partition> assigned;
  // The fetch position of each partition: the offset after everything
  // fetched from it.
  std::map<topic_partition, int64_t> positions;
  // Records fetched and not returned yet (a fetch brings up to
  // max.partition.fetch.bytes, a poll returns max.poll.records): the next
  // polls return them before that partition is fetched again, as Kafka's
  // consumer keeps its completed fetches. The application's position is
  // the first of them.
  std::map<topic_partition, std::deque<consumer_record>> buffered;
  // The highest partition leader epoch seen in each partition's fetched
  // batches (Kafka's Metadata.lastSeenLeaderEpoch, KIP-320): a leader
  // below it is a stale one, whose log end must not move the position.
  std::map<topic_partition, int32_t> seen_epochs;
  // Since when (deadline clock) each partition's fetches have been
  // answered OFFSET_OUT_OF_RANGE above the answering leader's log end.
  std::map<topic_partition, int64_t> above_end_since;
  // Partitions whose last fetch failed with a retriable error are fetched
  // again only from then on (retry.backoff.ms, as Kafka's fetcher backs
  // off a partition), not in a loop.
  std::map<topic_partition, int64_t> backoff_until;
  size_t next_partition = 0;
  mutable std::recursive_mutex mtx;

  // -- group membership (subscribe; docs/consumer-groups.md) -----------------
  std::vector<std::string> subscription;
  std::shared_ptr<consumer_rebalance_listener> listener;
  std::string member_id;
  int32_t generation = -1; // -1: not in a generation
  bool rejoin_needed = false;
  int64_t next_heartbeat_ms = 0; // deadline clock

  impl(caf::actor_system& sys, caf::actor broker, consumer_config c)
    : cfg(std::move(c)), ch(sys, std::move(broker)) {
  }

  milliseconds timeout() const { return milliseconds(cfg.request_timeout_ms); }

  // Raises UNKNOWN_TOPIC_OR_PARTITION for a topic the cluster does not
  // know or a partition it does not have; a partition whose leader is
  // down now is known (its fetches wait for a leader).
  void check_known(const topic_partition& tp) {
    auto parts = ch.partitions_view(tp.topic, false, timeout(), true);
    if (!parts.ok())
      raise(parts.error());
    if (tp.partition < 0 || tp.partition >= static_cast<int32_t>((*parts)->size()))
      raise(status{error_code::unknown_topic_or_partition, "unknown partition " + to_string(tp)});
  }

  // ListOffsets at the leader of `tp`. Retriable errors (no leader while
  // its node is down, a moved leader, a lost connection) look the leader
  // up again after retry.backoff.ms until default.api.timeout.ms, as
  // Kafka's offset lookups do; then, or for any other error, it is raised.
  int64_t list_offset(const topic_partition& tp, int64_t timestamp) {
    auto deadline = api_deadline();
    for (bool refresh = false;; refresh = true) {
      status err;
      auto parts = ch.partitions_view(tp.topic, refresh, timeout(), true);
      if (!parts.ok()) {
        err = parts.error();
      } else if (tp.partition < 0 || tp.partition >= static_cast<int32_t>((*parts)->size())) {
        raise(status{error_code::unknown_topic_or_partition, "unknown partition " + to_string(tp)});
      } else if (auto& l = (**parts)[static_cast<size_t>(tp.partition)]; !l) {
        err = status{error_code::leader_not_available, "no leader of " + to_string(tp) + " now"};
      } else {
        auto r = ch.call<list_offsets_response>(l, list_offsets_request{tp, timestamp, cfg.isolation},
                                                timeout());
        if (r.ok() && r->error == error_code::none)
          return r->offset;
        err = r.ok() ? status{r->error, "ListOffsets " + to_string(tp)} : r.error();
      }
      if (!is_retriable(err.code()) || !back_off(deadline))
        raise(err);
    }
  }

  // The consumer's group.instance.id (KIP-345), "" for a dynamic member.
  std::string instance() const { return cfg.group_instance_id.value_or(""); }

  const std::string& group() {
    if (!cfg.group_id)
      raise(status{error_code::invalid_request, "config 'group.id' is required for offsets"});
    return *cfg.group_id;
  }

  // FindCoordinator for the group, retried as Kafka's consumer does while
  // the coordinator is not available (its partition has no leader yet, or
  // __consumer_offsets is being created) until default.api.timeout.ms.
  caf::actor group_coordinator() {
    auto deadline = api_deadline();
    for (bool refresh = false;; refresh = true) {
      auto c = ch.coordinator(0, group(), refresh, timeout());
      if (c.ok())
        return c.value();
      if (!coordinator_retriable(c.error().code()) || !back_off(deadline))
        raise(c.error());
    }
  }

  // The deadline of a call that waits default.api.timeout.ms.
  int64_t api_deadline() const { return ch.deadline_clock_ms() + cfg.default_api_timeout_ms; }

  // Errors of OffsetFetch / OffsetCommit that Kafka's consumer retries
  // after retry.backoff.ms until the call's timeout: the coordinator is
  // loading its partition, or it moved or is down (looked up again).
  static bool coordinator_retriable(error_code e) {
    return e == error_code::unstable_offset_commit || e == error_code::coordinator_load_in_progress
           || e == error_code::not_coordinator || e == error_code::coordinator_not_available;
  }

  // Waits retry.backoff.ms (at most up to `deadline_ms`); false once the
  // deadline passed.
  bool back_off(int64_t deadline_ms) {
    auto now = ch.deadline_clock_ms();
    if (now >= deadline_ms)
      return false;
    ch.sleep_ms(std::min<int64_t>(cfg.retry_backoff_ms, deadline_ms - now));
    return true;
  }

  // The group's committed offset of `tp` (nullopt: none). Always fetched
  // with require_stable, as Kafka's consumer does (KIP-447): while a
  // transaction holds offsets of the group for `tp` (open, or committed
  // with its marker still on the way) the coordinator answers
  // UNSTABLE_OFFSET_COMMIT, and the fetch is repeated every
  // retry.backoff.ms, so the offset read is never one a transaction is
  // about to replace. COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR and
  // COORDINATOR_NOT_AVAILABLE are retried the same way. REQUEST_TIMED_OUT
  // once `deadline_ms` (deadline clock) passes while it is still unstable;
  // other errors are raised.
  status_or<std::optional<int64_t>> fetch_committed(const topic_partition& tp,
                                                    int64_t deadline_ms) {
    for (;;) {
      auto r = ch.call<offset_fetch_response>(group_coordinator(),
                                              offset_fetch_request{group(), {tp}, true},
                                              timeout());
      if (!r.ok()) {
        // No reply (a lost connection, a coordinator gone): found again.
        if (!is_retriable(r.error().code()) || !back_off(deadline_ms))
          raise(r.error());
        continue;
      }
      if (r->error == error_code::none) {
        if (r->offsets.empty() || r->offsets.front() < 0)
          return std::optional<int64_t>{};
        return std::optional<int64_t>{r->offsets.front()};
      }
      if (!coordinator_retriable(r->error))
        raise(status{r->error, "OffsetFetch " + to_string(tp)});
      if (!back_off(deadline_ms)) {
        if (r->error != error_code::unstable_offset_commit)
          raise(status{r->error, "OffsetFetch " + to_string(tp)});
        return status{error_code::request_timed_out,
                      "the committed offset of " + to_string(tp) + " for group '" + group()
                        + "' is still held by a transaction (UNSTABLE_OFFSET_COMMIT) when the "
                          "call's timeout expired"};
      }
    }
  }

  // auto.offset.reset; `why` says what left the consumer without a
  // position, for auto.offset.reset=none.
  int64_t reset_position(const topic_partition& tp, const std::string& why) {
    if (cfg.auto_offset_reset == "earliest")
      return list_offset(tp, -2);
    if (cfg.auto_offset_reset == "latest")
      return list_offset(tp, -1);
    raise(status{error_code::offset_out_of_range, why + " and auto.offset.reset=none"});
  }

  // The fetch position of `tp`: the group's committed offset, else
  // auto.offset.reset. Not found yet (still unstable) when `deadline_ms`
  // passes: the REQUEST_TIMED_OUT of fetch_committed.
  status_or<int64_t> position_of(const topic_partition& tp, int64_t deadline_ms) {
    auto i = positions.find(tp);
    if (i != positions.end())
      return i->second;
    std::optional<int64_t> pos;
    if (cfg.group_id) {
      auto c = fetch_committed(tp, deadline_ms);
      if (!c.ok())
        return c.error();
      pos = *c;
    }
    if (!pos)
      pos = reset_position(tp, "no committed offset for " + to_string(tp));
    positions[tp] = *pos;
    return *pos;
  }

  // The next offset the application gets for `tp`; waits up to
  // default.api.timeout.ms for a position.
  int64_t consumed_position(const topic_partition& tp) {
    if (auto b = buffered.find(tp); b != buffered.end() && !b->second.empty())
      return b->second.front().offset;
    auto pos = position_of(tp, api_deadline());
    if (!pos.ok())
      raise(pos.error());
    return *pos;
  }

  // Moves up to `room` records from the front of `from` to the end of `out`.
  static void take(std::deque<consumer_record>& from, size_t room,
                   std::vector<consumer_record>& out) {
    auto n = std::min(room, from.size());
    out.reserve(out.size() + n);
    auto end = from.begin() + static_cast<std::ptrdiff_t>(n);
    std::move(from.begin(), end, std::back_inserter(out));
    from.erase(from.begin(), end);
  }

  // The node that leads `tp`, to which its fetches go: the node the
  // consumer bootstraps from leads every partition its metadata lists.
  const broker_actor& node_of(const topic_partition&) const { return ch.broker(); }

  // What one partition of a node's fetch answered: its position moves
  // past what it brought, up to `max` - out.size() records go to `out`,
  // the rest is kept for the next polls. Per partition exactly as a fetch
  // of that partition alone (last stable offset, aborted transactions,
  // read_committed filter).
  void take_fetched(const topic_partition& tp, int64_t pos, fetch_response& r, size_t max,
                    std::vector<consumer_record>& out) {
    if (r.error == error_code::offset_out_of_range) {
      // Above the log end: with clean elections only (unclean.leader.
      // election.enable=false) no leader's log ends below a position taken
      // from its committed data, so the answer is a stale leader's (a
      // zombie not yet told of its successor, whose epoch this consumer may
      // not have seen). Resetting now would move the position back and
      // process records again; the leader is looked up again instead, and
      // the reset of auto.offset.reset (Kafka's) comes only if the answer
      // lasts default.api.timeout.ms. Below the log start: reset at once.
      if (pos >= r.log_start_offset) {
        auto now = ch.deadline_clock_ms();
        auto since = above_end_since.emplace(tp, now).first->second;
        if (now - since < cfg.default_api_timeout_ms) {
          (void) ch.partitions_view(tp.topic, true, timeout());
          backoff_until[tp] = now + cfg.retry_backoff_ms;
          return;
        }
      }
      above_end_since.erase(tp);
      positions[tp] = reset_position(tp, "position " + std::to_string(pos) + " of " + to_string(tp)
                                           + " is out of range (" + r.message + ")");
      return;
    }
    above_end_since.erase(tp);
    // Kafka's fetcher takes these as a leader to look up again (metadata
    // update) rather than an error for the application: a fetch that
    // reached a node during a leader change may find the partition not
    // hosted there (yet, or any more).
    if (r.error == error_code::not_leader_or_follower || r.error == error_code::request_timed_out
        || r.error == error_code::unknown_leader_epoch
        || r.error == error_code::fenced_leader_epoch
        || r.error == error_code::unknown_topic_or_partition
        || r.error == error_code::kafka_storage_error) {
      // The leader did not answer (restarted node, dead actor) or is a
      // stale one: look it up again and fetch this partition after the
      // backoff.
      (void) ch.partitions_view(tp.topic, true, timeout());
      backoff_until[tp] = ch.deadline_clock_ms() + cfg.retry_backoff_ms;
      return;
    }
    if (r.error != error_code::none)
      raise(status{r.error, r.message});
    if (r.records.empty())
      return;
    auto& seen = seen_epochs.emplace(tp, -1).first->second;
    (void) v2::for_each_batch(r.records, [&](const v2::batch_header& h, std::string_view) {
      seen = std::max(seen, h.partition_leader_epoch);
      return true;
    });
    // check.crcs: every batch's CRC is checked as it is decoded.
    auto batches = v2::decode_all(r.records);
    if (!batches.ok())
      raise(status{batches.error().code(),
                   "fetch of " + to_string(tp) + ": " + batches.error().message()});
    auto f = filter_fetched(tp, pos, *batches, r.aborted_transactions, cfg.isolation,
                            std::numeric_limits<size_t>::max());
    positions[tp] = f.next_offset;
    auto& rs = f.records;
    auto room = max - out.size();
    if (out.empty() && rs.size() <= room) {
      out = std::move(rs); // no copy (page faults are costly)
      return;
    }
    auto split = rs.begin() + static_cast<std::ptrdiff_t>(std::min(room, rs.size()));
    out.reserve(out.size() + static_cast<size_t>(split - rs.begin()));
    std::move(rs.begin(), split, std::back_inserter(out));
    if (split != rs.end())
      buffered[tp].assign(std::make_move_iterator(split), std::make_move_iterator(rs.end()));
  }

  // Errors of the group requests after which the consumer finds its
  // coordinator again and retries (Kafka's AbstractCoordinator).
  static bool coordinator_moved(error_code e) {
    return e == error_code::not_coordinator || e == error_code::coordinator_not_available
           || e == error_code::coordinator_load_in_progress;
  }

  // Drops the assignment; the listener is told first (eager protocol).
  void revoke_all() {
    auto revoked = assigned;
    if (listener && generation >= 0)
      listener->on_partitions_revoked(revoked);
    assigned.clear();
    positions.clear();
    buffered.clear();
    backoff_until.clear();
    next_partition = 0;
  }

  // The leader's assignment: each member's subscription decoded, the
  // partitions of the subscribed topics this consumer's metadata knows,
  // dealt by `protocol`.
  std::vector<group_assignment> leader_assignment(const join_group_response& j) {
    consumer_protocol::subscriptions subs;
    std::map<std::string, int32_t> counts;
    for (auto& m : j.members) {
      auto topics = consumer_protocol::decode_subscription(m.metadata);
      subs[m.member_id] = topics.ok() ? *topics : std::vector<std::string>{};
      for (auto& t : subs[m.member_id])
        if (!counts.count(t))
          if (auto parts = ch.partitions_view(t, false, timeout(), true); parts.ok())
            counts[t] = static_cast<int32_t>((*parts)->size());
    }
    auto dealt = j.protocol_name == "roundrobin" ? consumer_protocol::assign_roundrobin(subs, counts)
                                                 : consumer_protocol::assign_range(subs, counts);
    std::vector<group_assignment> out;
    for (auto& [member, tps] : dealt)
      out.push_back({member, consumer_protocol::encode_assignment(tps)});
    return out;
  }

  // Kafka's AbstractCoordinator.ensureActiveGroup: while subscribed and
  // not in a current generation, JoinGroup (again with the id a
  // MEMBER_ID_REQUIRED answer gives, KIP-394), then SyncGroup (the leader
  // with every member's assignment), until the consumer has its
  // assignment. Coordinator errors and lost replies are retried every
  // retry.backoff.ms until default.api.timeout.ms; other errors raised.
  void ensure_active_group() {
    if (subscription.empty() || (generation >= 0 && !rejoin_needed))
      return;
    revoke_all();
    generation = -1;
    auto deadline = api_deadline();
    // A JoinGroup waits for the whole rebalance, a SyncGroup for the leader.
    auto join_timeout = milliseconds(cfg.max_poll_interval_ms) + timeout();
    join_group_request join;
    join.group_id = group();
    join.session_timeout_ms = cfg.session_timeout_ms;
    join.rebalance_timeout_ms = cfg.max_poll_interval_ms;
    join.protocol_type = "consumer";
    for (auto& name : cfg.partition_assignment_strategy)
      join.protocols.push_back({name, consumer_protocol::encode_subscription(subscription)});
    join.client_id = cfg.client_id;
    join.require_known_member_id = true;
    join.group_instance_id = instance();
    auto retry = [&](const status& why) {
      if (!back_off(deadline))
        raise(why);
    };
    for (;;) {
      join.member_id = member_id;
      auto coordinator = group_coordinator();
      auto j = ch.call<join_group_response>(coordinator, join, join_timeout);
      if (!j.ok()) {
        if (!is_retriable(j.error().code()))
          raise(j.error());
        (void) ch.coordinator(0, group(), true, timeout());
        retry(j.error());
        continue;
      }
      if (j->error == error_code::member_id_required) {
        member_id = j->member_id;
        continue;
      }
      if (j->error == error_code::unknown_member_id) {
        member_id.clear();
        continue;
      }
      if (j->error == error_code::rebalance_in_progress || coordinator_moved(j->error)) {
        if (coordinator_moved(j->error))
          (void) ch.coordinator(0, group(), true, timeout());
        retry(status{j->error, "JoinGroup of group " + group()});
        continue;
      }
      if (j->error != error_code::none)
        raise(status{j->error, "JoinGroup of group " + group()});
      member_id = j->member_id;
      // A join may take up to max.poll.interval.ms: SyncGroup's retries
      // get default.api.timeout.ms of their own from here.
      deadline = api_deadline();
      sync_group_request sync{group(), j->generation_id, member_id, {}, instance()};
      if (j->leader_id == member_id)
        sync.assignments = leader_assignment(*j);
      auto s = ch.call<sync_group_response>(coordinator, sync, join_timeout);
      if (!s.ok()) {
        if (!is_retriable(s.error().code()))
          raise(s.error());
        (void) ch.coordinator(0, group(), true, timeout());
        retry(s.error());
        continue;
      }
      if (coordinator_moved(s->error)) {
        // Kafka's SyncGroupResponseHandler marks the coordinator unknown;
        // the join loop finds it again after retry.backoff.ms.
        (void) ch.coordinator(0, group(), true, timeout());
        retry(status{s->error, "SyncGroup of group " + group()});
        continue;
      }
      if (s->error == error_code::unknown_member_id)
        member_id.clear();
      if (s->error == error_code::unknown_member_id || s->error == error_code::illegal_generation
          || s->error == error_code::rebalance_in_progress)
        continue; // join again
      if (s->error != error_code::none)
        raise(status{s->error, "SyncGroup of group " + group()});
      auto tps = consumer_protocol::decode_assignment(s->assignment);
      if (!tps.ok())
        raise(tps.error());
      generation = j->generation_id;
      rejoin_needed = false;
      assigned = *tps;
      next_heartbeat_ms = ch.deadline_clock_ms() + cfg.heartbeat_interval_ms;
      if (listener)
        listener->on_partitions_assigned(assigned);
      return;
    }
  }

  // A heartbeat when heartbeat.interval.ms passed: REBALANCE_IN_PROGRESS
  // and ILLEGAL_GENERATION mean join again, UNKNOWN_MEMBER_ID join again
  // as a new member (Kafka's HeartbeatResponseHandler). A coordinator that
  // moved or did not answer is found again at the next heartbeat.
  void maybe_heartbeat() {
    if (generation < 0 || rejoin_needed || ch.deadline_clock_ms() < next_heartbeat_ms)
      return;
    next_heartbeat_ms = ch.deadline_clock_ms() + cfg.heartbeat_interval_ms;
    auto r = ch.call<txn_response>(group_coordinator(),
                                   heartbeat_request{group(), generation, member_id, instance()},
                                   timeout());
    if (!r.ok()) {
      (void) ch.coordinator(0, group(), true, timeout());
      return;
    }
    after_group_error(r->error);
  }

  // What a group error says about this member. FENCED_INSTANCE_ID is
  // fatal: another consumer runs with this group.instance.id (Kafka's
  // FencedInstanceIdException).
  void after_group_error(error_code e) {
    if (e == error_code::fenced_instance_id)
      raise(status{e, "group.instance.id " + instance() + " of group " + group()
                        + " was taken by another consumer"});
    if (e == error_code::unknown_member_id) {
      member_id.clear();
      rejoin_needed = true;
    } else if (e == error_code::rebalance_in_progress || e == error_code::illegal_generation) {
      rejoin_needed = true;
    } else if (coordinator_moved(e)) {
      (void) ch.coordinator(0, group(), true, timeout());
    }
  }

  // LeaveGroup (errors ignored: the session timeout removes the member
  // anyway). A static member sends none (Kafka's
  // AbstractCoordinator.maybeLeaveGroup, KIP-345): its place waits
  // session.timeout.ms for it to come back.
  void leave_group() {
    if (member_id.empty())
      return;
    revoke_all();
    auto coordinator = ch.coordinator(0, group(), false, timeout());
    if (coordinator.ok() && instance().empty())
      (void) ch.call<leave_group_response>(coordinator.value(),
                                           leave_group_request{group(), {member_id}}, timeout());
    member_id.clear();
    generation = -1;
  }

  // One round over the assignment, from the next partition in turn: the
  // records kept from earlier fetches first; then every other partition
  // whose position is known (a committed offset still unstable at
  // `deadline_ms` is skipped: a later poll asks again, as Kafka's poll
  // does) in ONE fetch per node, as Kafka's fetcher sends one Fetch per
  // node with all its partitions. That node holds the fetch up to
  // `wait_ms` (fetch.max.wait.ms, at most the poll's time left) until its
  // partitions have fetch.min.bytes; it does not wait when kept records
  // are returned anyway.
  std::vector<consumer_record> fetch_round(int32_t wait_ms, int64_t deadline_ms) {
    std::vector<consumer_record> out;
    size_t max = static_cast<size_t>(cfg.max_poll_records);
    std::vector<std::pair<topic_partition, int64_t>> to_fetch;
    for (size_t k = 0; k < assigned.size(); ++k) {
      auto& tp = assigned[(next_partition + k) % assigned.size()];
      if (auto b = buffered.find(tp); b != buffered.end()) {
        if (out.size() < max)
          take(b->second, max - out.size(), out);
        if (b->second.empty())
          buffered.erase(b);
        continue;
      }
      if (auto b = backoff_until.find(tp); b != backoff_until.end()) {
        if (ch.deadline_clock_ms() < b->second)
          continue;
        backoff_until.erase(b);
      }
      auto position = position_of(tp, deadline_ms);
      if (position.ok())
        to_fetch.emplace_back(tp, *position);
    }
    if (!assigned.empty())
      next_partition = (next_partition + 1) % assigned.size();
    // Looking positions up took time: wait no longer than the poll may.
    wait_ms = static_cast<int32_t>(
      std::min<int64_t>(wait_ms, std::max<int64_t>(0, deadline_ms - ch.deadline_clock_ms())));
    if (to_fetch.empty() || out.size() >= max) {
      if (out.empty() && wait_ms > 0)
        ch.sleep_ms(wait_ms);
      return out;
    }
    // The partitions of each node, in turn order.
    std::map<const broker_actor*, std::vector<size_t>> by_node;
    for (size_t i = 0; i < to_fetch.size(); ++i)
      by_node[&node_of(to_fetch[i].first)].push_back(i);
    for (auto& [node, indexes] : by_node) {
      node_fetch_request req;
      req.max_wait_ms = out.empty() ? wait_ms : 0;
      req.min_bytes = cfg.fetch_min_bytes;
      req.max_bytes = cfg.fetch_max_bytes;
      for (auto i : indexes) {
        fetch_request f{to_fetch[i].first, to_fetch[i].second, cfg.max_partition_fetch_bytes,
                        cfg.isolation, 0};
        if (auto e = seen_epochs.find(f.tp); e != seen_epochs.end())
          f.last_seen_leader_epoch = e->second;
        req.partitions.push_back(std::move(f));
      }
      auto r = ch.call<node_fetch_response>(*node, std::move(req),
                                            timeout() + milliseconds(wait_ms));
      if (!r.ok()) {
        if (!is_retriable(r.error().code()))
          raise(r.error());
        // The node did not answer: its partitions' leaders are looked up
        // again, and they are fetched in the next round.
        for (auto i : indexes)
          (void) ch.partitions_view(to_fetch[i].first.topic, true, timeout());
        continue;
      }
      if (r->partitions.size() != indexes.size())
        raise(status{error_code::unknown_server_error, "malformed fetch response"});
      for (size_t k = 0; k < indexes.size(); ++k) {
        auto& [tp, pos] = to_fetch[indexes[k]];
        take_fetched(tp, pos, r->partitions[k], max, out);
      }
    }
    return out;
  }
};

consumer::consumer(caf::actor_system& sys, caf::actor broker, const properties& props)
  : consumer(sys, std::move(broker), parse_or_throw(props)) {
}

consumer::consumer(caf::actor_system& sys, caf::actor broker, consumer_config config)
  : impl_(std::make_unique<impl>(sys, std::move(broker), std::move(config))) {
}

consumer::consumer(const properties& props) {
  consumer_config config;
  cluster_ = detail::connect_remote(props, [&](const properties& rest) { config = parse_or_throw(rest); });
  impl_ = std::make_unique<impl>(cluster_->system(), cluster_->broker(), std::move(config));
  detail::watch_metadata(impl_->ch, cluster_);
}

consumer::~consumer() = default;

void consumer::assign(const std::vector<topic_partition>& partitions) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  auto& d = *impl_;
  if (!d.subscription.empty())
    raise(status{error_code::invalid_request,
                 "assign() of a subscribed consumer (unsubscribe() first)"});
  for (auto& tp : partitions)
    d.check_known(tp);
  std::map<topic_partition, int64_t> kept;
  std::map<topic_partition, std::deque<consumer_record>> kept_records;
  for (auto& tp : partitions) {
    if (auto i = d.positions.find(tp); i != d.positions.end())
      kept.insert(*i);
    if (auto b = d.buffered.find(tp); b != d.buffered.end())
      kept_records.insert(std::move(*b));
  }
  d.positions = std::move(kept);
  d.buffered = std::move(kept_records);
  d.assigned = partitions;
  d.next_partition = 0;
}

void consumer::subscribe(const std::vector<std::string>& topics,
                         std::shared_ptr<consumer_rebalance_listener> listener) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  auto& d = *impl_;
  d.group(); // INVALID_REQUEST without group.id
  if (d.subscription.empty() && !d.assigned.empty())
    raise(status{error_code::invalid_request,
                 "subscribe() of a consumer with assigned partitions (assign({}) first)"});
  if (topics.empty()) {
    d.leave_group();
    d.subscription.clear();
    return;
  }
  d.subscription = topics;
  std::sort(d.subscription.begin(), d.subscription.end());
  d.subscription.erase(std::unique(d.subscription.begin(), d.subscription.end()),
                       d.subscription.end());
  d.listener = std::move(listener);
  d.rejoin_needed = true; // a new subscription: the group rebalances
}

void consumer::unsubscribe() {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  if (impl_->subscription.empty())
    return;
  impl_->leave_group();
  impl_->subscription.clear();
  impl_->listener.reset();
}

std::vector<std::string> consumer::subscription() const {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  return impl_->subscription;
}

consumer_group_metadata consumer::group_metadata() const {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  auto& d = *impl_;
  return {d.cfg.group_id.value_or(""), d.generation, d.generation >= 0 ? d.member_id : "",
          d.instance()};
}

std::vector<topic_partition> consumer::assignment() const {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  return impl_->assigned;
}

std::vector<consumer_record> consumer::poll(std::chrono::milliseconds timeout) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  auto& ch = impl_->ch;
  auto deadline = ch.deadline_clock_ms() + timeout.count();
  for (;;) {
    impl_->ensure_active_group();
    impl_->maybe_heartbeat();
    if (impl_->rejoin_needed && !impl_->subscription.empty())
      continue; // the heartbeat said to join again

    auto now = ch.deadline_clock_ms();
    auto wait = static_cast<int32_t>(
      std::min<int64_t>(impl_->cfg.fetch_max_wait_ms, std::max<int64_t>(0, deadline - now)));
    auto records = impl_->fetch_round(wait, deadline);
    if (!records.empty() || ch.deadline_clock_ms() >= deadline)
      return records;
  }
}

int64_t consumer::position(const topic_partition& tp) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  return impl_->consumed_position(tp);
}

void consumer::seek(const topic_partition& tp, int64_t offset) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  impl_->buffered.erase(tp);
  impl_->above_end_since.erase(tp);
  impl_->positions[tp] = offset;
}

int64_t consumer::end_offset(const topic_partition& tp) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  return impl_->list_offset(tp, -1);
}

void consumer::commit() {
  std::map<topic_partition, int64_t> offsets;
  {
    std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
    for (auto& tp : impl_->assigned)
      offsets[tp] = impl_->consumed_position(tp);
  }
  commit(offsets);
}

void consumer::commit(const std::map<topic_partition, int64_t>& offsets) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  auto& d = *impl_;
  offset_commit_request req{d.group(), {}, {}};
  if (!d.subscription.empty()) {
    req.generation_id = d.generation;
    req.member_id = d.member_id;
    req.group_instance_id = d.instance();
  }
  for (auto& [tp, off] : offsets) {
    req.partitions.push_back(tp);
    req.offsets.push_back(off);
  }
  // As Kafka's commitSync: a loading, moved or unavailable coordinator is
  // retried every retry.backoff.ms until default.api.timeout.ms.
  auto deadline = d.api_deadline();
  for (;;) {
    auto r = d.ch.call<txn_response>(d.group_coordinator(), req, d.timeout());
    if (!r.ok())
      raise(r.error());
    if (r->error == error_code::none)
      return;
    if (!d.subscription.empty()
        && (r->error == error_code::illegal_generation || r->error == error_code::unknown_member_id
            || r->error == error_code::rebalance_in_progress)) {
      // Kafka's CommitFailedException: the group rebalanced without this
      // member; the next poll() joins again.
      d.after_group_error(r->error == error_code::rebalance_in_progress
                            ? error_code::illegal_generation
                            : r->error);
      raise(status{r->error, "commit failed: the group rebalanced (" + r->message + ")"});
    }
    if (r->error == error_code::unstable_offset_commit
        || !impl::coordinator_retriable(r->error) || !d.back_off(deadline))
      raise(status{r->error, r->message});
  }
}

std::optional<int64_t> consumer::committed(const topic_partition& tp) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  auto c = impl_->fetch_committed(tp, impl_->api_deadline());
  if (!c.ok())
    raise(c.error());
  return *c;
}

void consumer::close() {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  if (!impl_->subscription.empty()) {
    impl_->leave_group();
    impl_->subscription.clear();
    impl_->listener.reset();
  }
  impl_->assigned.clear();
  impl_->positions.clear();
  impl_->buffered.clear();
}

void consumer::set_driver(client_driver driver) {
  std::lock_guard<std::recursive_mutex> guard{impl_->mtx};
  impl_->ch.set_driver(std::move(driver));
}

} // namespace caftx
