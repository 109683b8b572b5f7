#include "actors/group/group_coordinator_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <leveldb/write_batch.h>

#include <stdexcept>

#include "actors/broker/node_context.hpp"
#include "actors/common/durable_queue.hpp"
#include "actors/common/storage_fault.hpp"
#include "actors/common/supervisor.hpp"
#include "actors/common/verification.hpp"
#include "actors/group/group_coordinator_core.hpp"
#include "runtime/fault_point.hpp"
#include "runtime/partitioner.hpp"
#include "storage/codec.hpp"

namespace caftx {

namespace {

struct group_state {
  group_coordinator_core core;
  durable_queue dq;
  std::shared_ptr<const node_context> ctx;
  int32_t partition = 0;
  static inline const char* name = "caftx.group_coordinator";
};

using group_ptr = caf::stateful_actor<group_state>*;

// The core already applied the change (writes complete in submission
// order, so memory = disk + what is in flight); the reply waits for the
// disk. A failed write leaves memory ahead of the disk: the reply is
// KAFKA_STORAGE_ERROR and the actor stops (storage_fault::write_failed);
// its supervisor restarts it from what is durable once the store writes
// again, as a partition leader's does.
void reply_when_durable(group_ptr self, leveldb::WriteBatch wb, caf::response_promise rp) {
  self->state.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
                        [self, rp](const status& s) mutable {
                          if (s.ok())
                            CAFTX_FAULT_POINT(self, "group_coordinator.write_durable");
                          rp.deliver(txn_response{s.code(), s.message()});
                          if (!s.ok())
                            self->quit(storage_exit(
                              storage_fault::write_failed,
                              "group-coordinator-" + std::to_string(self->state.partition) + ": "
                                + s.message()));
                        },
                        rp);
}

caf::result<caf::message> reply_when_durable(group_ptr self, leveldb::WriteBatch wb) {
  auto rp = self->make_response_promise();
  reply_when_durable(self, std::move(wb), rp);
  return rp;
}

// Keeps the offsets of a verified TxnOffsetCommit pending
// (docs/transactions.md §TxnOffsetCommit steps 8-9).
void txn_offset_commit(group_ptr self, const txn_offset_commit_request& req,
                       caf::response_promise rp) {
  auto& st = self->state;
  std::vector<std::pair<group_offset_key, offset_and_metadata>> offsets;
  for (size_t i = 0; i < req.partitions.size(); ++i)
    offsets.push_back({{req.group_id, req.partitions[i]}, {req.offsets[i], {}}});
  auto p = st.core.txn_offset_commit(req.pid, req.epoch, offsets);
  if (!p.ok()) {
    rp.deliver(txn_response{p.error().code(), p.error().message()});
    return;
  }
  leveldb::WriteBatch wb;
  wb.Put(keys::pending_offsets(st.partition, req.pid), codec::encode(req.pid, p.value()));
  reply_when_durable(self, std::move(wb), rp);
}

status check_request(group_ptr self, const std::string& group,
                     const std::vector<topic_partition>& tps, const std::vector<int64_t>& offsets) {
  if (group.empty())
    return {error_code::invalid_request, "empty group id"};
  if (tps.size() != offsets.size())
    return {error_code::invalid_request, "partitions and offsets differ in length"};
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
  return {};
}

caf::behavior group_fn(group_ptr self, std::shared_ptr<const node_context> ctx, int32_t partition) {
  auto& st = self->state;
  st.ctx = ctx;
  st.partition = partition;
  stop_on_storage_faults(self, "group-coordinator-" + std::to_string(partition));
  st.dq = durable_queue{ctx->store};
  std::map<group_offset_key, offset_and_metadata> committed;
  std::map<producer_id, pending_txn_offsets> pending;
  ctx->store->scan(keys::committed_prefix(partition), [&](const std::string& k, const std::string& v) {
    auto c = codec::decode_committed(v);
    if (!c.ok())
      throw storage_read_error(c.error().message() + " (key " + k + ")");
    committed.emplace(std::move(c).value());
    return true;
  });
  ctx->store->scan(keys::pending_prefix(partition), [&](const std::string& k, const std::string& v) {
    auto p = codec::decode_pending(v);
    if (!p.ok())
      throw storage_read_error(p.error().message() + " (key " + k + ")");
    pending.emplace(std::move(p).value());
    return true;
  });
  st.core.load(std::move(committed), std::move(pending));
  return {
    [=](storage_done& done) { self->state.dq.complete(done); },
    [=](const txn_offset_commit_request& req) -> caf::result<caf::message> {
      auto& st = self->state;
      if (auto s = check_request(self, req.group_id, req.partitions, req.offsets); !s.ok())
        return caf::make_message(txn_response{s.code(), s.message()});
      auto rp = self->make_response_promise();
      if (!st.core.needs_verification(req.pid, req.epoch)) {
        txn_offset_commit(self, req, rp);
        return rp;
      }
      // KIP-890 part 1 (docs/transactions.md §TxnOffsetCommit step 5): the
      // offsets partition must be in the producer's ongoing transaction, so
      // a late commit of a finished transaction cannot wait for the marker
      // of a later one.
      verify_in_transaction(self, *st.ctx, api_kind::txn_offset_commit, req.transactional_id,
                            req.pid, req.epoch, {consumer_offsets_topic, st.partition},
                            [self, req, rp](error_code e, std::string msg) mutable {
                              if (e == error_code::none)
                                txn_offset_commit(self, req, rp);
                              else
                                rp.deliver(txn_response{e, std::move(msg)});
                            });
      return rp;
    },
    [=](const offset_commit_request& req) -> caf::result<caf::message> {
      auto& st = self->state;
      if (auto s = check_request(self, req.group_id, req.partitions, req.offsets); !s.ok())
        return caf::make_message(txn_response{s.code(), s.message()});
      leveldb::WriteBatch wb;
      for (size_t i = 0; i < req.partitions.size(); ++i) {
        group_offset_key k{req.group_id, req.partitions[i]};
        offset_and_metadata v{req.offsets[i], {}};
        st.core.commit(k, v);
        wb.Put(keys::committed_offset(st.partition, k), codec::encode(k, v));
      }
      return reply_when_durable(self, std::move(wb));
    },
    [=](const offset_fetch_request& req) {
      auto& st = self->state;
      offset_fetch_response r;
      for (auto& tp : req.partitions) {
        group_offset_key k{req.group_id, tp};
        if (req.require_stable && st.core.has_pending(k))
          r.error = error_code::unstable_offset_commit;
        r.offsets.push_back(st.core.fetch(k).offset);
      }
      return r;
    },
    [=](const write_txn_marker_request& req) -> caf::result<caf::message> {
      auto& st = self->state;
      if (req.tp != topic_partition{consumer_offsets_topic, st.partition})
        return caf::make_message(txn_response{error_code::unknown_topic_or_partition,
                                              "this group coordinator does not host "
                                                + to_string(req.tp)});
      auto done = st.core.complete_txn(req.pid, req.epoch,
                                       req.committed ? control_type::commit : control_type::abort,
                                       req.transaction_version);
      if (!done.ok())
        return caf::make_message(txn_response{done.error().code(), done.error().message()});
      leveldb::WriteBatch wb;
      wb.Delete(keys::pending_offsets(st.partition, req.pid));
      for (auto& [k, v] : done.value())
        wb.Put(keys::committed_offset(st.partition, k), codec::encode(k, v));
      return reply_when_durable(self, std::move(wb));
    },
  };
}

} // namespace

caf::actor spawn_group_coordinator(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                                   int32_t partition) {
  return sys.spawn(group_fn, std::move(ctx), partition);
}

caf::actor spawn_supervised_group_coordinator(caf::actor_system& sys,
                                              std::shared_ptr<const node_context> ctx,
                                              int32_t partition) {
  auto opts = node_supervision(ctx, "group-coordinator-" + std::to_string(partition),
                               [ctx, partition](caf::actor_system& sys) {
                                 return spawn_group_coordinator(sys, ctx, partition);
                               });
  opts.unavailable = storage_aware_unavailable(
    status{error_code::coordinator_not_available, "group coordinator not available"});
  return spawn_supervisor(sys, std::move(opts));
}

} // namespace caftx
