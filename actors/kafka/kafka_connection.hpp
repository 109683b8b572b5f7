// Inside the Kafka listener (actors/kafka/kafka_listener.hpp): one
// connection's state and the handlers of its requests. A handler answers
// through respond() (or no_response()) exactly once, after which the
// connection goes on with its next request; until then the connection
// reads no further request of that client (responses leave in order).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include <caf/actor.hpp>
#include <caf/io/broker.hpp>
#include <caf/io/handle.hpp>
#include <caf/sec.hpp>

#include <chrono>
#include <functional>
#include <type_traits>

#include "actors/broker/node_context.hpp"
#include "actors/kafka/kafka_listener.hpp"
#include "protocol/kafka_api.hpp"
#include "protocol/kafka_data_api.hpp"
#include "protocol/kafka_admin_api.hpp"
#include "protocol/kafka_group_api.hpp"
#include "protocol/kafka_txn_admin_api.hpp"
#include "protocol/kafka_txn_api.hpp"
#include "runtime/actor_interfaces.hpp"
#include "runtime/error_code.hpp"
#include "runtime/group_coordinator_messages.hpp"
#include "runtime/ids.hpp"
#include "runtime/txn_coordinator_messages.hpp"

namespace caftx {

class actor_directory;

/// What the listener asks: the node's broker and its directory (null
/// until the node runs).
struct kafka_listener::broker_slot {
  std::mutex mtx;
  caf::actor broker;
  std::shared_ptr<const actor_directory> directory;
  std::pair<caf::actor, std::shared_ptr<const actor_directory>> get() {
    std::lock_guard<std::mutex> guard{mtx};
    return {broker, directory};
  }
};

namespace kafka_connection {

struct state {
  kafka_listener_options opts;
  std::shared_ptr<kafka_listener::broker_slot> slot;
  caf::io::connection_handle hdl;
  bool reading_size = true;
  size_t body_size = 0; // the frame being read
  std::string body;     // its bytes so far
  std::deque<std::string> queued; // whole requests, header and body
  bool busy = false;              // a request is being answered
  bool halted = false;
  bool closed = false;
  /// The client's address as Kafka reports it ("/127.0.0.1").
  std::string client_host;
};

using state_ptr = std::shared_ptr<state>;
using self_ptr = caf::io::broker*;

/// Sends the response to the request `h` and goes on with the next one.
void respond(self_ptr self, const state_ptr& st, const kafka::request_header& h,
             const std::string& body);
/// Goes on with the next request without answering (Produce with acks=0).
void no_response(self_ptr self, const state_ptr& st);
/// Closes the connection (logged at debug with `why`).
void close(self_ptr self, const state_ptr& st, const std::string& why);

/// Calls `done` once every started part has finished: start() per part
/// begun, finish() per part ended, close() once all were begun (callbacks
/// run on the connection's actor, one at a time).
class countdown {
public:
  explicit countdown(std::function<void()> done) : done_(std::move(done)) {}
  void start() { ++left_; }
  void finish() {
    if (--left_ == 0)
      done_();
  }
  void close() { finish(); }

private:
  size_t left_ = 1; // the parts are still being begun
  std::function<void()> done_;
};

/// An actor that did not answer: REQUEST_TIMED_OUT when the wait ran out,
/// else `gone` (NOT_LEADER_OR_FOLLOWER for a partition leader: the client
/// looks the leader up again, as after Kafka's answer to a moved
/// partition; NOT_COORDINATOR for a coordinator).
inline error_code from_caf(const caf::error& e,
                           error_code gone = error_code::not_leader_or_follower) {
  return e == caf::sec::request_timeout ? error_code::request_timed_out : gone;
}

/// Kafka's answer to a client of these versions, which predate the
/// error: PRODUCER_FENCED (KIP-588) is INVALID_PRODUCER_EPOCH, and
/// TRANSACTION_ABORTABLE (KIP-890) is INVALID_TXN_STATE.
inline error_code legacy_error(error_code e) {
  switch (e) {
    case error_code::producer_fenced: return error_code::invalid_producer_epoch;
    case error_code::transaction_abortable: return error_code::invalid_txn_state;
    default: return e;
  }
}

/// The leader of `tp` on this node, or why there is none here: the topic
/// is unknown (UNKNOWN_TOPIC_OR_PARTITION, also for a partition index it
/// does not have) or another node leads it (NOT_LEADER_OR_FOLLOWER).
std::pair<partition_actor, error_code> leader_here(const actor_directory* dir,
                                                    const topic_partition& tp);

/// Whether `tp` exists as far as this node knows (Kafka's
/// metadataCache.contains).
bool partition_known(const actor_directory* dir, const topic_partition& tp);

/// FindCoordinator's key types.
inline constexpr int8_t group_key = 0;
inline constexpr int8_t transaction_key = 1;

/// The coordinator of `key` (of `key_type`) when this node leads its
/// internal topic's partition: `found` gets the partition; `failed` gets
/// COORDINATOR_NOT_AVAILABLE (none yet, or the node is starting),
/// NOT_COORDINATOR (another node leads it) or the lookup's INVALID_REQUEST.
void on_coordinator(self_ptr self, const state_ptr& st, int8_t key_type, const std::string& key,
                    std::function<void(int32_t)> found, std::function<void(error_code)> failed);

/// Whether `Request` goes to a group coordinator (else to a transaction
/// coordinator).
template <class Request>
inline constexpr bool to_group_coordinator =
  std::is_same_v<Request, txn_offset_commit_request> || std::is_same_v<Request, offset_commit_request>
  || std::is_same_v<Request, offset_fetch_request> || std::is_same_v<Request, join_group_request>
  || std::is_same_v<Request, sync_group_request> || std::is_same_v<Request, heartbeat_request>
  || std::is_same_v<Request, leave_group_request>
  || std::is_same_v<Request, describe_groups_request>
  || std::is_same_v<Request, delete_groups_request>;

/// `r` to the coordinator of `key` on this node: a group coordinator for
/// the group APIs (to_group_coordinator), else the transaction
/// coordinator. `reply` gets its answer; `failed` why it was not asked or
/// did not answer (INVALID_GROUP_ID for an empty group id; as
/// on_coordinator; NOT_COORDINATOR for a coordinator gone,
/// REQUEST_TIMED_OUT).
template <class Response, class Request>
void ask_coordinator(self_ptr self, const state_ptr& st, const std::string& key, Request r,
                     std::function<void(const Response&)> reply,
                     std::function<void(error_code)> failed) {
  constexpr bool to_group = to_group_coordinator<Request>;
  if (to_group && key.empty()) {
    failed(error_code::invalid_group_id);
    return;
  }
  auto dir = st->slot->get().second;
  auto timeout = std::chrono::milliseconds(st->opts.request_timeout_ms);
  on_coordinator(
    self, st, to_group ? group_key : transaction_key, key,
    [self, dir, r = std::move(r), timeout, reply, failed](int32_t partition) {
      auto lost = [failed](const caf::error& e) { failed(from_caf(e, error_code::not_coordinator)); };
      if constexpr (to_group)
        self->request(dir->group_coordinator(partition), timeout, r).then(reply, lost);
      else
        self->request(dir->txn_coordinator(partition), timeout, r).then(reply, lost);
    },
    failed);
}

/// A reply handler that hands a response's error to `answer`.
inline auto errors_to(std::function<void(error_code)> answer) {
  return [answer](const auto& response) { answer(response.error); };
}

/// Produce v3-7: each partition's batch to its leader on this node.
void answer_produce(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                    kafka::produce_request req);
/// Fetch v4-11: the node's multi-partition fetch over the partitions it leads.
void answer_fetch(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                  kafka::fetch_request req);
/// ListOffsets v0-3: each partition's leader on this node.
void answer_list_offsets(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                         kafka::list_offsets_request req);

/// DeleteRecords v0-1: each partition's leader on this node moves its log
/// start offset (KIP-107).
void answer_delete_records(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                           kafka::delete_records_request req);

/// FindCoordinator v0-2: the node and Kafka address of a group's or
/// transactional id's coordinator.
void answer_find_coordinator(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                             kafka::find_coordinator_request req);
/// InitProducerId v0-1: an idempotent producer's id from any shard, a
/// transactional one's from its coordinator, which must be on this node.
void answer_init_producer_id(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                             kafka::init_producer_id_request req);
/// AddPartitionsToTxn v0-1, AddOffsetsToTxn v0-1, EndTxn v0-1 (Kafka's
/// transaction version 1: the epoch stays) to the transaction coordinator
/// on this node.
void answer_add_partitions_to_txn(self_ptr self, const state_ptr& st,
                                  const kafka::request_header& h,
                                  kafka::add_partitions_to_txn_request req);
void answer_add_offsets_to_txn(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                               kafka::add_offsets_to_txn_request req);
void answer_end_txn(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                    kafka::end_txn_request req);
/// TxnOffsetCommit v0-3 to the group coordinator on this node (v3 with the
/// consumer's generation and member id, KIP-447).
void answer_txn_offset_commit(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                              kafka::txn_offset_commit_request req);
/// OffsetCommit v2-7 and OffsetFetch v1-5 to the group coordinator on this
/// node, which checks the committing member's generation.
void answer_offset_commit(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                          kafka::offset_commit_request req);
void answer_offset_fetch(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                         kafka::offset_fetch_request req);
/// JoinGroup v0-5, SyncGroup v0-3, Heartbeat v0-3, LeaveGroup v0-3 to the
/// group's coordinator on this node; DescribeGroups v0-4 and DeleteGroups
/// v0-1 to each group's; ListGroups v0-2 to every group coordinator on
/// this node.
void answer_join_group(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                       kafka::join_group_request req);
void answer_sync_group(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                       kafka::sync_group_request req);
void answer_heartbeat(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                      kafka::heartbeat_request req);
void answer_leave_group(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                        kafka::leave_group_request req);
void answer_describe_groups(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                            kafka::describe_groups_request req);
void answer_list_groups(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                        kafka::list_groups_request req);
void answer_delete_groups(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                          kafka::delete_groups_request req);
/// CreateTopics v0-4 and DeleteTopics v0-1 through the node's broker.
void answer_create_topics(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                          kafka::create_topics_request req);
void answer_delete_topics(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                          kafka::delete_topics_request req);
/// KIP-664: DescribeProducers v0 at each partition's leader here,
/// DescribeTransactions v0 at each id's coordinator here, ListTransactions
/// v0-1 over this node's coordinator shards (Kafka's admin client asks
/// every broker and merges).
void answer_describe_producers(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                               kafka::describe_producers_request req);
void answer_describe_transactions(self_ptr self, const state_ptr& st,
                                  const kafka::request_header& h,
                                  kafka::describe_transactions_request req);
void answer_list_transactions(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                              kafka::list_transactions_request req);
/// WriteTxnMarkers v0-1 (kafka-transactions.sh abort): each marker to its
/// partition's leader here, as an admin's marker (KIP-664); the internal
/// topics are refused (their coordinators write their markers).
void answer_write_txn_markers(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                              kafka::write_txn_markers_request req);
/// DescribeConfigs v0-2 (topics and this node) through the node's broker.
void answer_describe_configs(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                             kafka::describe_configs_request req);
/// CreatePartitions v0-1 (KIP-195) through the node's broker.
void answer_create_partitions(self_ptr self, const state_ptr& st, const kafka::request_header& h,
                              kafka::create_partitions_request req);

} // namespace kafka_connection
} // namespace caftx
