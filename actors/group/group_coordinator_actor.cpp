#include "actors/group/group_coordinator_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <optional>
#include <stdexcept>
#include <utility>
#include <set>
#include <vector>

#include "actors/broker/node_context.hpp"
#include "actors/common/coordinator_log.hpp"
#include "actors/common/node_metrics.hpp"
#include "actors/common/pending_replies.hpp"
#include "actors/common/storage_fault.hpp"
#include "actors/common/supervisor.hpp"
#include "actors/common/verification.hpp"
#include "actors/group/group_coordinator_core.hpp"
#include "actors/group/group_membership_core.hpp"
#include "actors/group/group_offsets_loader.hpp"
#include "runtime/coordinator_records.hpp"
#include "runtime/fault_point.hpp"
#include "runtime/group_coordinator_messages.hpp"
#include "runtime/partition_messages.hpp"
#include "runtime/partitioner.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx {

namespace {

struct group_state {
  group_coordinator_core core;
  // Consumer-group membership (in memory; docs/consumer-groups.md).
  std::unique_ptr<group_membership_core> members;
  // When the membership timer is due (-1: not armed).
  int64_t membership_tick_at = -1;
  // While loading: replays the fetched records of the partition.
  std::unique_ptr<group_offsets_loader> loader;
  // The coordinator's own partition `__consumer_offsets-N`: every offset
  // record and marker is written there first.
  coordinator_log log;
  // Replies owed after a write: answered request_receiver_down if the
  // coordinator dies first.
  pending_replies replies;
  std::shared_ptr<const node_context> ctx;
  int32_t partition = 0;
  bool loading = true;
  // ctx->clock_ms() when the current load started (for its event).
  int64_t load_started_ms = 0;
  // Why the last election of the partition failed: answered instead of
  // COORDINATOR_LOAD_IN_PROGRESS until an election succeeds.
  std::optional<status> load_error;
  static inline const char* name = "caftx.group_coordinator";
};

using group_ptr = group_coordinator_impl_actor::stateful_pointer<group_state>;

std::string component(group_ptr self) {
  return "group-coordinator-" + std::to_string(self->state.partition);
}

// COORDINATOR_LOAD_IN_PROGRESS while loading (or why the partition cannot
// be loaded), NONE once serving.
status load_status(group_ptr self) {
  auto& st = self->state;
  if (st.load_error)
    return *st.load_error;
  if (st.loading)
    return {error_code::coordinator_load_in_progress, "group coordinator is loading"};
  return {};
}

// Whether this coordinator answers for `group`: NOT_COORDINATOR for a
// group of another partition, INVALID_GROUP_ID for an empty id, then
// load_status.
status group_status(group_ptr self, const std::string& group) {
  if (group.empty())
    return {error_code::invalid_group_id, "empty group id"};
  if (partition_for(group, self->state.ctx->config.offsets_topic_num_partitions)
      != self->state.partition)
    return {error_code::not_coordinator, "group " + group + " belongs to another partition"};
  return load_status(self);
}

// True if `group` has committed offsets here.
bool has_offsets(const group_coordinator_core& core, const std::string& group) {
  auto it = core.committed().lower_bound({group, {}});
  return it != core.committed().end() && it->first.group == group;
}

// Why a static member's commit was refused (KIP-345).
std::string fenced_message(const std::string& group, const std::string& instance,
                           const std::string& member_id) {
  return "instance " + instance + " of group " + group + " is no longer member " + member_id
         + ": another member joined with the same group.instance.id";
}

void stop_on_failed_write(group_ptr self, const status& s);
void flush(group_ptr self, group_membership_core::outbox& out);

// The error a group whose record could not be stored answers, as Kafka's
// GroupMetadataManager.storeGroup maps the append's: too few replicas
// (before or after the append) or a partition that did not answer is
// COORDINATOR_NOT_AVAILABLE, anything else (a storage error, another
// leader epoch) NOT_COORDINATOR. Unless nothing was appended, this
// coordinator then stops and reloads.
error_code store_error(const status& s) {
  switch (s.code()) {
    case error_code::not_enough_replicas:
    case error_code::not_enough_replicas_after_append:
    case error_code::coordinator_not_available:
      return error_code::coordinator_not_available;
    default:
      return error_code::not_coordinator;
  }
}

// Appends a group's record (Kafka's GroupMetadataManager.storeGroup); the
// membership core hears the outcome of the ones it waits for.
void store_group(group_ptr self, group_membership_core::store s) {
  auto& st = self->state;
  record_batch b;
  auto now = st.ctx->clock_ms();
  b.records.push_back(record{coordinator_records::encode_group_key(s.record.group_id),
                             coordinator_records::encode_group_value(s.record), {}, now, false});
  append(self, st.log, v2::encode(b),
         [self, id = s.id, group = s.record.group_id](const status& r, int64_t) {
           auto& st = self->state;
           if (r.ok())
             CAFTX_FAULT_POINT(self, "group_coordinator.write_durable");
           if (id != 0) {
             group_membership_core::outbox out;
             st.members->stored(group, id, r.ok() ? error_code::none : store_error(r),
                                st.ctx->clock_ms(), out);
             flush(self, out);
           }
           if (!r.ok() && !nothing_appended(r))
             stop_on_failed_write(self, r);
         });
}

// Delivers the JoinGroup and SyncGroup answers a membership call made due,
// appends the group records it asked for, and arms the membership timer
// for the next deadline.
void flush(group_ptr self, group_membership_core::outbox& out) {
  auto& st = self->state;
  for (auto& [t, r] : out.joins)
    st.replies.deliver(t, std::move(r));
  for (auto& [t, r] : out.syncs)
    st.replies.deliver(t, std::move(r));
  for (auto& s : out.stores)
    store_group(self, std::move(s));
  auto next = st.members->next_deadline_ms();
  if (!next || (st.membership_tick_at >= 0 && st.membership_tick_at <= *next))
    return;
  st.membership_tick_at = *next;
  auto delay = std::max<int64_t>(*next - st.ctx->clock_ms(), 0);
  self->delayed_send(self, std::chrono::milliseconds(delay), group_membership_tick{*next});
}

// A write failed: whether its record is in the log is unknown, so the
// coordinator stops and its restart reads the partition back (a storage
// error as storage_fault::write_failed, so the supervisor waits for the
// store; any other, a fenced leader epoch say, as a plain failure).
void stop_on_failed_write(group_ptr self, const status& s) {
  auto what = component(self) + ": " + s.message();
  if (s.code() == error_code::kafka_storage_error)
    self->quit(storage_exit(storage_fault::write_failed, what));
  else
    self->quit(caf::make_error(caf::sec::runtime_error, what));
}

// The offset records of `offsets` in one batch: plain (producer id -1), or
// the producer's transactional batch (base sequence -1), as Kafka's
// GroupMetadataManager.storeOffsets writes them.
std::string offsets_batch(const std::vector<std::pair<group_offset_key, offset_and_metadata>>& offsets,
                          int64_t now_ms, producer_id pid = no_producer_id,
                          producer_epoch epoch = no_producer_epoch) {
  record_batch b;
  if (pid != no_producer_id) {
    b.pid = pid;
    b.epoch = epoch;
    b.base_sequence = no_sequence;
    b.attributes = attr_transactional;
  }
  for (auto& [k, v] : offsets)
    b.records.push_back(record{coordinator_records::encode_offset_key(k),
                               coordinator_records::encode_offset_value(v, now_ms), {}, now_ms,
                               false});
  return v2::encode(b);
}

using offset_list = std::vector<std::pair<group_offset_key, offset_and_metadata>>;

offset_list offsets_of(const std::string& group, const std::vector<topic_partition>& tps,
                       const std::vector<int64_t>& offsets,
                       const std::vector<std::string>& metadata) {
  offset_list out;
  for (size_t i = 0; i < tps.size(); ++i)
    out.push_back({{group, tps[i]}, {offsets[i], i < metadata.size() ? metadata[i] : ""}});
  return out;
}

// Appends the offsets of a verified TxnOffsetCommit as the producer's
// transactional batch; they are pending once durable (docs/transactions.md
// §TxnOffsetCommit steps 8-9).
void txn_offset_commit(group_ptr self, const txn_offset_commit_request& req,
                       pending_replies::ticket t) {
  auto& st = self->state;
  if (auto s = st.core.check_txn_offset_commit(req.pid, req.epoch); !s.ok()) {
    st.replies.deliver(t, txn_response{s.code(), s.message()});
    return;
  }
  auto offsets = offsets_of(req.group_id, req.partitions, req.offsets, req.metadata);
  auto now = st.ctx->clock_ms();
  append(self, st.log, offsets_batch(offsets, now, req.pid, req.epoch),
         [self, t, offsets, now, pid = req.pid, epoch = req.epoch](const status& s, int64_t base) {
           auto& st = self->state;
           if (nothing_appended(s)) {
             auto u = coordinator_unavailable(s);
             st.replies.deliver(t, txn_response{u.code(), u.message()});
             return;
           }
           if (!s.ok()) {
             st.replies.deliver(t, txn_response{s.code(), s.message()});
             stop_on_failed_write(self, s);
             return;
           }
           CAFTX_FAULT_POINT(self, "group_coordinator.write_durable");
           for (size_t i = 0; i < offsets.size(); ++i)
             st.core.apply_txn_offset_commit(pid, epoch, offsets[i].first, offsets[i].second, now,
                                             base + static_cast<int64_t>(i));
           st.replies.deliver(t, txn_response{});
         });
}

// Kafka's default offset.metadata.max.bytes: a longer metadata string is
// OFFSET_METADATA_TOO_LARGE.
constexpr size_t offset_metadata_max_bytes = 4096;

status check_request(group_ptr self, const std::string& group,
                     const std::vector<topic_partition>& tps, const std::vector<int64_t>& offsets,
                     const std::vector<std::string>& metadata) {
  if (group.empty())
    return {error_code::invalid_request, "empty group id"};
  if (tps.size() != offsets.size() || (!metadata.empty() && metadata.size() != tps.size()))
    return {error_code::invalid_request, "partitions, offsets and metadata differ in length"};
  for (size_t i = 0; i < metadata.size(); ++i)
    if (metadata[i].size() > offset_metadata_max_bytes)
      return {error_code::offset_metadata_too_large,
              "metadata of " + std::to_string(metadata[i].size()) + " bytes for "
                + to_string(tps[i]) + " (offset.metadata.max.bytes = "
                + std::to_string(offset_metadata_max_bytes) + ")"};
  auto& ctx = *self->state.ctx;
  // Unknown partitions before ownership, as Kafka (docs/transactions.md
  // §TxnOffsetCommit step 3 before 4).
  for (size_t i = 0; i < tps.size(); ++i) {
    auto t = ctx.directory->topic(tps[i].topic);
    if (!t || tps[i].partition < 0 || tps[i].partition >= static_cast<int32_t>(t->size()))
      return {error_code::unknown_topic_or_partition, "unknown partition " + to_string(tps[i])};
    if (offsets[i] < 0)
      return {error_code::invalid_request, "negative offset for " + to_string(tps[i])};
  }
  if (partition_for(group, ctx.config.offsets_topic_num_partitions) != self->state.partition)
    return {error_code::not_coordinator, "group " + group + " belongs to another partition"};
  return load_status(self);
}

void start_load(group_ptr self);
void load_chunk(group_ptr self);
void expire_offsets(group_ptr self);
void write_tombstones(group_ptr self, std::vector<group_offset_key> keys,
                      std::vector<std::string> groups = {},
                      std::function<void(const status&)> done = {});

group_coordinator_impl_actor::behavior_type group_fn(group_ptr self, std::shared_ptr<const node_context> ctx, int32_t partition) {
  auto& st = self->state;
  st.ctx = ctx;
  st.partition = partition;
  group_membership_limits limits;
  limits.min_session_timeout_ms = ctx->config.group_min_session_timeout_ms;
  limits.max_session_timeout_ms = ctx->config.group_max_session_timeout_ms;
  limits.initial_rebalance_delay_ms = ctx->config.group_initial_rebalance_delay_ms;
  limits.max_size = ctx->config.group_max_size;
  // Member ids of a restarted coordinator must not repeat the previous
  // incarnation's (they fence its members): a 64-bit random seed.
  std::random_device rd;
  auto seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  st.members = std::make_unique<group_membership_core>(limits, seed);
  stop_on_storage_faults(self, component(self));
  auto partitions = ctx->directory->topic(consumer_offsets_topic);
  if (!partitions || partition >= static_cast<int32_t>(partitions->size()))
    throw std::logic_error("no partition " + std::to_string(partition) + " of "
                           + consumer_offsets_topic);
  st.log.partition = partitions->at(static_cast<size_t>(partition));
  st.log.tp = {consumer_offsets_topic, partition};
  st.log.timeout = std::chrono::milliseconds(ctx->config.request_timeout_ms);
  start_load(self);
  auto retention_interval = std::chrono::milliseconds(ctx->config.offsets_retention_check_interval_ms);
  self->delayed_send(self, retention_interval, offsets_retention_tick{});
  return {
    [=](const coordinator_load_chunk&) {
      if (self->state.loader)
        load_chunk(self);
      else if (self->state.loading)
        start_load(self); // the election failed before
    },
    [=](const offsets_topics_deleted& d) {
      // A coordinator still loading replays the offsets first; the
      // deletion is handled once it has (a new message to itself).
      if (self->state.loading) {
        self->delayed_send(self, std::chrono::milliseconds(100), d);
        return;
      }
      write_tombstones(self, self->state.core.offsets_of_topics(
                               std::set<std::string>(d.topics.begin(), d.topics.end())));
    },
    [=](const offsets_retention_tick&) {
      if (!self->state.loading)
        expire_offsets(self);
      self->delayed_send(self, retention_interval, offsets_retention_tick{});
    },
    [=](const txn_offset_commit_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      metrics::scoped_request_timer timer{
        node_metrics::time_request(st.ctx->metrics, "TxnOffsetCommit")};
      if (auto s = check_request(self, req.group_id, req.partitions, req.offsets, req.metadata); !s.ok())
        return txn_response{s.code(), s.message()};
      // KIP-447: a consumer fenced by its group cannot commit.
      if (auto e = st.members->validate_txn_offset_commit(req.group_id, req.generation_id,
                                                           req.member_id, req.group_instance_id);
          e != error_code::none)
        return txn_response{e, e == error_code::fenced_instance_id
                                 ? fenced_message(req.group_id, req.group_instance_id, req.member_id)
                                 : "member " + req.member_id + " of generation "
                                     + std::to_string(req.generation_id) + " is not in group "
                                     + req.group_id + "'s current generation"};
      auto rp = self->make_response_promise();
      auto t = st.replies.add(rp, timer.take());
      if (!st.core.needs_verification(req.pid, req.epoch)) {
        txn_offset_commit(self, req, t);
        return rp;
      }
      // KIP-890 part 1 (docs/transactions.md §TxnOffsetCommit step 5): the
      // offsets partition must be in the producer's ongoing transaction, so
      // a late commit of a finished transaction cannot wait for the marker
      // of a later one.
      verify_in_transaction(self, *st.ctx, api_kind::txn_offset_commit, req.transactional_id,
                            req.pid, req.epoch, {consumer_offsets_topic, st.partition},
                            [self, req, t](error_code e, std::string msg) {
                              if (e == error_code::none)
                                txn_offset_commit(self, req, t);
                              else
                                self->state.replies.deliver(t, txn_response{e, std::move(msg)});
                            });
      return rp;
    },
    [=](const offset_commit_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      metrics::scoped_request_timer timer{node_metrics::time_request(st.ctx->metrics, "OffsetCommit")};
      if (auto s = check_request(self, req.group_id, req.partitions, req.offsets, req.metadata); !s.ok())
        return txn_response{s.code(), s.message()};
      if (auto e = st.members->validate_offset_commit(req.group_id, req.generation_id,
                                                       req.member_id, req.group_instance_id,
                                                       st.ctx->clock_ms());
          e != error_code::none)
        return txn_response{e, e == error_code::fenced_instance_id
                                 ? fenced_message(req.group_id, req.group_instance_id, req.member_id)
                                 : "member " + req.member_id + " of generation "
                                     + std::to_string(req.generation_id)
                                     + " cannot commit to group " + req.group_id};
      // Memory changes once the records are durable: an OffsetFetch in
      // between still answers the previous offset.
      auto offsets = offsets_of(req.group_id, req.partitions, req.offsets, req.metadata);
      std::vector<group_offset_key> keys;
      for (auto& [k, v] : offsets)
        keys.push_back(k);
      st.core.begin_commit(keys);
      auto now = st.ctx->clock_ms();
      auto rp = self->make_response_promise();
      auto t = st.replies.add(rp, timer.take());
      append(self, st.log, offsets_batch(offsets, now),
             [self, t, offsets, keys, now](const status& s, int64_t base) {
               auto& st = self->state;
               st.core.end_commit(keys);
               if (nothing_appended(s)) {
                 auto u = coordinator_unavailable(s);
                 st.replies.deliver(t, txn_response{u.code(), u.message()});
                 return;
               }
               if (!s.ok()) {
                 st.replies.deliver(t, txn_response{s.code(), s.message()});
                 stop_on_failed_write(self, s);
                 return;
               }
               CAFTX_FAULT_POINT(self, "group_coordinator.write_durable");
               for (size_t i = 0; i < offsets.size(); ++i)
                 st.core.apply_commit(offsets[i].first, offsets[i].second, now,
                                      base + static_cast<int64_t>(i));
               st.replies.deliver(t, txn_response{});
             });
      return rp;
    },
    [=](const offset_fetch_request& req) {
      auto& st = self->state;
      metrics::scoped_request_timer timer{node_metrics::time_request(st.ctx->metrics, "OffsetFetch")};
      offset_fetch_response r;
      if (auto s = load_status(self); !s.ok()) {
        r.error = s.code();
        r.offsets.assign(req.partitions.size(), -1);
        return r;
      }
      auto partitions = req.partitions;
      if (partitions.empty()) // all of the group's (Kafka's null topics)
        for (auto it = st.core.committed().lower_bound({req.group_id, {}});
             it != st.core.committed().end() && it->first.group == req.group_id; ++it)
          partitions.push_back(it->first.tp);
      for (auto& tp : partitions) {
        group_offset_key k{req.group_id, tp};
        if (req.require_stable && st.core.has_pending(k)) {
          r.error = error_code::unstable_offset_commit;
          r.unstable.push_back(tp);
        }
        auto committed = st.core.fetch(k);
        r.offsets.push_back(committed.offset);
        r.metadata.push_back(std::move(committed.metadata));
      }
      r.partitions = std::move(partitions);
      return r;
    },
    [=](group_membership_tick tick) {
      auto& st = self->state;
      if (tick.due_ms != st.membership_tick_at)
        return; // superseded by an earlier deadline
      st.membership_tick_at = -1;
      group_membership_core::outbox out;
      st.members->expire(st.ctx->clock_ms(), out);
      flush(self, out);
    },
    [=](const join_group_request& req) -> caf::result<join_group_response> {
      auto& st = self->state;
      metrics::scoped_request_timer timer{node_metrics::time_request(st.ctx->metrics, "JoinGroup")};
      if (auto s = group_status(self, req.group_id); !s.ok()) {
        join_group_response r;
        r.error = s.code();
        r.member_id = req.member_id;
        return r;
      }
      auto rp = self->make_response_promise();
      auto t = st.replies.add(rp, timer.take());
      group_membership_core::outbox out;
      st.members->join(t, req, st.ctx->clock_ms(), out);
      flush(self, out);
      return rp;
    },
    [=](const sync_group_request& req) -> caf::result<sync_group_response> {
      auto& st = self->state;
      metrics::scoped_request_timer timer{node_metrics::time_request(st.ctx->metrics, "SyncGroup")};
      if (auto s = group_status(self, req.group_id); !s.ok()) {
        // Kafka's handleSyncGroup: a loading coordinator has lost the
        // rebalance, so the member joins again (older clients do not know
        // COORDINATOR_LOAD_IN_PROGRESS here).
        if (s.code() == error_code::coordinator_load_in_progress)
          return sync_group_response{error_code::rebalance_in_progress, {}};
        return sync_group_response{s.code(), {}};
      }
      auto rp = self->make_response_promise();
      auto t = st.replies.add(rp, timer.take());
      group_membership_core::outbox out;
      st.members->sync(t, req, st.ctx->clock_ms(), out);
      flush(self, out);
      return rp;
    },
    [=](const heartbeat_request& req) {
      auto& st = self->state;
      metrics::scoped_request_timer timer{node_metrics::time_request(st.ctx->metrics, "Heartbeat")};
      if (auto s = group_status(self, req.group_id); !s.ok()) {
        // Kafka's handleHeartbeat answers a loading coordinator's
        // heartbeats blindly: the member's group comes back with the load.
        if (s.code() == error_code::coordinator_load_in_progress)
          return txn_response{};
        return txn_response{s.code(), s.message()};
      }
      // A heartbeat only moves a deadline later: the armed timer stands.
      return txn_response{st.members->heartbeat(req, st.ctx->clock_ms()), {}};
    },
    [=](const leave_group_request& req) {
      auto& st = self->state;
      metrics::scoped_request_timer timer{node_metrics::time_request(st.ctx->metrics, "LeaveGroup")};
      if (auto s = group_status(self, req.group_id); !s.ok())
        return leave_group_response{s.code(), {}};
      group_membership_core::outbox out;
      auto r = st.members->leave(req, st.ctx->clock_ms(), out);
      flush(self, out);
      return r;
    },
    [=](const describe_groups_request& req) {
      auto& st = self->state;
      describe_groups_response r;
      for (auto& g : req.groups) {
        if (auto s = group_status(self, g); !s.ok()) {
          group_description d;
          d.group_id = g;
          d.error = s.code();
          r.groups.push_back(std::move(d));
          continue;
        }
        auto d = st.members->describe(g);
        // A group known only by its committed offsets is Empty, as Kafka
        // loads it.
        if (d.state == "Dead" && has_offsets(st.core, g))
          d.state = "Empty";
        r.groups.push_back(std::move(d));
      }
      return r;
    },
    [=](const list_groups_request&) {
      auto& st = self->state;
      list_groups_response r;
      if (auto s = load_status(self); !s.ok()) {
        r.error = s.code();
        return r;
      }
      std::map<std::string, listed_group> all;
      for (auto& [k, v] : st.core.committed())
        all.emplace(k.group, listed_group{k.group, "", "Empty"});
      for (auto& g : st.members->list())
        all[g.group_id] = g;
      for (auto& [id, g] : all)
        r.groups.push_back(std::move(g));
      return r;
    },
    [=](const delete_groups_request& req) -> caf::result<delete_groups_response> {
      auto& st = self->state;
      auto r = std::make_shared<delete_groups_response>();
      std::vector<group_offset_key> keys;
      std::vector<std::string> removed;
      for (auto& g : req.groups) {
        auto e = error_code::none;
        if (auto s = group_status(self, g); !s.ok())
          e = s.code();
        else if (st.members->has_members(g))
          e = error_code::non_empty_group;
        else if (!st.members->has_group(g) && !has_offsets(st.core, g))
          e = error_code::group_id_not_found;
        else {
          if (st.members->remove_group(g))
            removed.push_back(g);
          for (auto it = st.core.committed().lower_bound({g, {}});
               it != st.core.committed().end() && it->first.group == g; ++it)
            keys.push_back(it->first);
        }
        r->errors.push_back(e);
      }
      if (keys.empty() && removed.empty())
        return *r;
      auto rp = self->make_response_promise();
      auto t = st.replies.add(rp);
      write_tombstones(self, std::move(keys), std::move(removed), [self, t, r](const status& s) {
        if (!s.ok())
          for (auto& e : r->errors)
            if (e == error_code::none)
              e = s.code();
        self->state.replies.deliver(t, *r);
      });
      return rp;
    },
    [=](const write_txn_marker_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      if (req.tp != st.log.tp)
        return txn_response{error_code::unknown_topic_or_partition,
                                              "this group coordinator does not host "
                                                + to_string(req.tp)};
      if (auto s = load_status(self); !s.ok())
        return txn_response{s.code(), s.message()};
      if (auto s = st.core.check_marker(req.pid, req.epoch, req.transaction_version); !s.ok())
        return txn_response{s.code(), s.message()};
      // The marker goes into the partition (which checks it against its
      // producer state too); the pending offsets complete once it is
      // durable.
      auto forward = req;
      forward.leader_epoch = st.log.leader_epoch;
      forward.load_generation = st.log.load_generation;
      auto rp = self->make_response_promise();
      auto t = st.replies.add(rp);
      auto done = [self, t, req](const txn_response& r) {
        auto& st = self->state;
        if (r.error != error_code::none) {
          st.replies.deliver(t, r);
          // Refused by the partition's checks, or by its ISR below
          // min.insync.replicas: nothing was written (the transaction
          // coordinator sends it again).
          if (r.error != error_code::invalid_producer_epoch
              && r.error != error_code::transaction_coordinator_fenced
              && r.error != error_code::not_enough_replicas)
            stop_on_failed_write(self, status{r.error, r.message});
          return;
        }
        CAFTX_FAULT_POINT(self, "group_coordinator.write_durable");
        st.core.apply_marker(req.pid, req.epoch,
                             req.committed ? control_type::commit : control_type::abort,
                             st.ctx->clock_ms());
        st.replies.deliver(t, txn_response{});
      };
      self->request(st.log.partition, st.log.timeout, std::move(forward))
        .then(done, [self, done](const caf::error& e) {
          done(txn_response{error_code::coordinator_not_available,
                            "partition " + to_string(self->state.log.tp)
                              + " did not answer: " + caf::to_string(e)});
        });
      return rp;
    },
  };
}

// The start of a load: the partition becomes leader at its next leader
// epoch; the replay reads it from its log start to the log end offset it
// had then.
void start_load(group_ptr self) {
  auto& st = self->state;
  elect_for_load(self, st.log, st.load_error, [self](const become_leader_response& r) {
    auto& st = self->state;
    st.load_started_ms = st.ctx->clock_ms();
    st.loader = std::make_unique<group_offsets_loader>(r.log_end_offset);
    st.loader->set_next_offset(r.log_start_offset);
    load_chunk(self);
  });
}

// One chunk of the load: caftx.coordinator.load.chunk.cards records of what
// was fetched, the next fetch when it is used up; after the last the
// coordinator serves.
void load_chunk(group_ptr self) {
  auto& st = self->state;
  load_step(
    self, st.log, *st.loader,
    [self] {
      auto& st = self->state;
      return st.loader->next_chunk(
        st.core, *st.members, static_cast<size_t>(st.ctx->config.coordinator_load_chunk_cards));
    },
    [self] { self->send(self, coordinator_load_chunk{}); },
    [self](const status& s, bool corrupt) {
      if (!corrupt) {
        stop_on_failed_write(self, s);
        return;
      }
      self->quit(storage_exit(storage_fault::corrupt, component(self) + ": " + s.message()));
    },
    [self] {
      auto& st = self->state;
      st.loader.reset();
      st.loading = false;
      // The loaded members' sessions start now (Kafka's onGroupLoaded).
      st.members->loaded(st.ctx->clock_ms());
      group_membership_core::outbox out;
      flush(self, out);
      // Kafka's GroupMetadataManager line after loadGroupsAndOffsets.
      st.ctx->emit(node_event_level::debug, "group_coordinator_loaded",
                   "[GroupMetadataManager brokerId=" + std::to_string(st.ctx->node_id)
                     + "] Finished loading offsets and group metadata from "
                     + consumer_offsets_topic + "-" + std::to_string(st.partition) + " in "
                     + std::to_string(st.ctx->clock_ms() - st.load_started_ms) + " milliseconds");
    });
}

// Tombstones for `keys` and the records of `groups` (forgotten by the
// membership core already) in one batch; the core forgets the offsets once
// it is durable. `done` (if any) gets the write's outcome.
void write_tombstones(group_ptr self, std::vector<group_offset_key> keys,
                      std::vector<std::string> groups, std::function<void(const status&)> done) {
  if (keys.empty() && groups.empty())
    return;
  auto& st = self->state;
  record_batch b;
  auto now = st.ctx->clock_ms();
  for (auto& k : keys)
    b.records.push_back(record{coordinator_records::encode_offset_key(k), {}, {}, now, true});
  for (auto& g : groups)
    b.records.push_back(record{coordinator_records::encode_group_key(g), {}, {}, now, true});
  append(self, st.log, v2::encode(b), [self, keys, done](const status& s, int64_t) {
    if (done)
      done(nothing_appended(s) ? coordinator_unavailable(s) : s);
    if (!s.ok()) {
      stop_on_failed_write(self, s);
      return;
    }
    for (auto& k : keys)
      self->state.core.apply_tombstone(k);
  });
}

// offsets.retention.minutes: tombstones for the expired committed offsets
// in one batch; the core forgets them once it is durable. Idle producers'
// marker epochs go at the same time (producer.id.expiration.ms).
void expire_offsets(group_ptr self) {
  auto& st = self->state;
  auto now = st.ctx->clock_ms();
  st.core.expire_producers(now, st.ctx->config.producer_id_expiration_ms);
  // Offsets of a group with members stay (Kafka expires only an empty
  // group's); an empty group left without offsets is forgotten.
  auto expired = st.core.expired_offsets(
    now, static_cast<int64_t>(st.ctx->config.offsets_retention_minutes) * 60000);
  expired.erase(std::remove_if(expired.begin(), expired.end(),
                               [&st](const group_offset_key& k) {
                                 return st.members->has_members(k.group);
                               }),
                expired.end());
  std::vector<std::string> removed;
  for (auto& g : st.members->list())
    if (g.state == "Empty" && !has_offsets(st.core, g.group_id)
        && st.members->remove_group(g.group_id))
      removed.push_back(g.group_id);
  write_tombstones(self, std::move(expired), std::move(removed));
}

} // namespace

group_coordinator_actor spawn_group_coordinator(caf::actor_system& sys,
                                                std::shared_ptr<const node_context> ctx,
                                                int32_t partition) {
  return sys.spawn(group_fn, std::move(ctx), partition);
}

group_coordinator_actor spawn_supervised_group_coordinator(caf::actor_system& sys,
                                                           std::shared_ptr<const node_context> ctx,
                                                           int32_t partition) {
  auto opts = node_supervision(ctx, "group-coordinator-" + std::to_string(partition),
                               [ctx, partition](caf::actor_system& sys) {
                                 return caf::actor_cast<caf::actor>(
                                   spawn_group_coordinator(sys, ctx, partition));
                               });
  opts.unavailable = storage_aware_unavailable(
    status{error_code::coordinator_not_available, "group coordinator not available"});
  // The supervisor forwards every request to its child.
  return caf::actor_cast<group_coordinator_actor>(spawn_supervisor(sys, std::move(opts)));
}

} // namespace caftx
