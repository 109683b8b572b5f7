// FindCoordinator and the transaction APIs of a Kafka connection
// (actors/kafka/kafka_connection.hpp): Kafka's KafkaApis handlers over
// caftx's transaction and group coordinators. As in Kafka, a request for a
// coordinator goes to the node that leads its internal topic's partition;
// another node answers NOT_COORDINATOR and the client looks it up again.
// docs/kafka-protocol.md §Transactions.
#include "actors/kafka/kafka_connection.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/broker/node_context.hpp"
#include "runtime/broker_messages.hpp"

namespace caftx::kafka_connection {

namespace {

using kafka::request_header;
using kafka::wire_error;

// Answers a response of throttle time and error only (AddOffsetsToTxn,
// EndTxn) with Kafka's error for these versions.
std::function<void(error_code)> error_answer(self_ptr self, const state_ptr& st,
                                             const request_header& h) {
  return [self, st, h](error_code e) {
    respond(self, st, h, kafka::encode_error_response(wire_error(legacy_error(e))));
  };
}

std::vector<topic_partition> partitions_of(const std::vector<kafka::txn_topic>& topics) {
  std::vector<topic_partition> out;
  for (auto& t : topics)
    for (auto p : t.partitions)
      out.push_back({t.name, p});
  return out;
}

// Per topic and partition of `topics`, the error `error_of(tp)` gives.
template <class Topics, class IndexOf, class ErrorOf>
std::vector<kafka::topic_partition_errors> per_partition(const Topics& topics, IndexOf index_of,
                                                         ErrorOf error_of) {
  std::vector<kafka::topic_partition_errors> out;
  for (auto& t : topics) {
    kafka::topic_partition_errors te;
    te.name = t.name;
    for (auto& p : t.partitions) {
      auto index = index_of(p);
      te.partitions.push_back({index, wire_error(error_of(topic_partition{t.name, index}))});
    }
    out.push_back(std::move(te));
  }
  return out;
}

} // namespace

void on_coordinator(self_ptr self, const state_ptr& st, int8_t key_type, const std::string& key,
                    std::function<void(int32_t)> found, std::function<void(error_code)> failed) {
  auto [broker, dir] = st->slot->get();
  if (!broker || !dir) {
    failed(error_code::coordinator_not_available);
    return;
  }
  auto topic = key_type == transaction_key ? transaction_state_topic : consumer_offsets_topic;
  self->request(broker, std::chrono::milliseconds(st->opts.request_timeout_ms),
                kafka_coordinator_request{key_type, key})
    .then(
      [dir = dir, topic, found, failed](const kafka_coordinator_response& r) {
        if (r.error != error_code::none) {
          failed(r.error);
          return;
        }
        if (!dir->local_leader({topic, r.partition})) {
          failed(error_code::not_coordinator);
          return;
        }
        found(r.partition);
      },
      [failed](const caf::error&) { failed(error_code::coordinator_not_available); });
}

void answer_find_coordinator(self_ptr self, const state_ptr& st, const request_header& h,
                             kafka::find_coordinator_request req) {
  auto broker = st->slot->get().first;
  auto version = h.api_version;
  auto answer = [self, st, h, version](const kafka_coordinator_response& r) {
    kafka::find_coordinator_response f;
    f.error = wire_error(r.error);
    if (r.error == error_code::none) {
      f.node_id = r.node_id;
      f.host = r.host;
      f.port = r.port;
    } else if (!r.message.empty()) {
      f.error_message = r.message;
    }
    respond(self, st, h, kafka::encode_find_coordinator_response(f, version));
  };
  auto unavailable = [answer](error_code e, std::string why) {
    kafka_coordinator_response r;
    r.error = e;
    r.message = std::move(why);
    answer(r);
  };
  if (!broker) {
    unavailable(error_code::coordinator_not_available, "the node is starting");
    return;
  }
  self->request(broker, std::chrono::milliseconds(st->opts.request_timeout_ms),
                kafka_coordinator_request{req.key_type, req.key})
    .then(answer, [unavailable](const caf::error& e) {
      unavailable(from_caf(e, error_code::coordinator_not_available), "the node did not answer");
    });
}

void answer_init_producer_id(self_ptr self, const state_ptr& st, const request_header& h,
                             kafka::init_producer_id_request req) {
  auto version = h.api_version;
  auto answer = [self, st, h, version](error_code e, producer_id pid, producer_epoch epoch) {
    kafka::init_producer_id_response r;
    // PRODUCER_FENCED exists for InitProducerId from v4 on (KIP-588).
    r.error = wire_error(version >= 4 && e == error_code::producer_fenced ? e : legacy_error(e));
    if (e == error_code::none) {
      r.producer_id = pid.value;
      r.producer_epoch = epoch.value;
    }
    respond(self, st, h, kafka::encode_init_producer_id_response(r, version));
  };
  auto timeout = std::chrono::milliseconds(st->opts.request_timeout_ms);
  auto [broker, dir] = st->slot->get();
  if (!broker || !dir) {
    answer(error_code::coordinator_not_available, {}, {});
    return;
  }
  auto reply = [answer](const init_producer_id_response& r) { answer(r.error, r.pid, r.epoch); };
  auto lost = [answer](const caf::error& e) {
    answer(from_caf(e, error_code::not_coordinator), {}, {});
  };
  if (!req.transactional_id) {
    // An idempotent producer: any shard hands out its producer id (the
    // timeout it sends, -1 from librdkafka, means nothing then).
    init_producer_id_request r;
    self->request(broker, timeout, std::move(r)).then(reply, lost);
    return;
  }
  // Kafka's TransactionCoordinator.handleInitProducerId: "" is refused.
  if (req.transactional_id->empty()) {
    answer(error_code::invalid_request, {}, {});
    return;
  }
  init_producer_id_request r;
  r.has_transactional_id = true;
  r.transactional_id = *req.transactional_id;
  r.transaction_timeout_ms = req.transaction_timeout_ms;
  // v3+ (KIP-360): the producer's own id and epoch, so that the
  // coordinator bumps that epoch (aborting its open transaction) instead
  // of treating the call as a new producer's; -1/-1 is a new producer.
  r.pid = producer_id{req.producer_id};
  r.epoch = producer_epoch{req.producer_epoch};
  on_coordinator(
    self, st, transaction_key, r.transactional_id,
    [self, dir = dir, r, timeout, reply, lost](int32_t shard) {
      self->request(dir->txn_coordinator(shard), timeout, r).then(reply, lost);
    },
    [answer](error_code e) { answer(e, {}, {}); });
}

void answer_add_partitions_to_txn(self_ptr self, const state_ptr& st, const request_header& h,
                                  kafka::add_partitions_to_txn_request req) {
  auto dir = st->slot->get().second;
  auto topics = std::make_shared<std::vector<kafka::txn_topic>>(std::move(req.topics));
  auto answer = [self, st, h, topics](std::function<error_code(const topic_partition&)> error_of) {
    respond(self, st, h,
            kafka::encode_partition_errors_response(
              per_partition(*topics, [](int32_t p) { return p; }, error_of)));
  };
  auto all = [answer](error_code e) {
    answer([e](const topic_partition&) { return legacy_error(e); });
  };
  // Kafka's KafkaApis: a partition it does not know is
  // UNKNOWN_TOPIC_OR_PARTITION, every other one OPERATION_NOT_ATTEMPTED,
  // and the coordinator is not asked.
  auto partitions = partitions_of(*topics);
  bool unknown = false;
  for (auto& tp : partitions)
    unknown = unknown || !partition_known(dir.get(), tp);
  if (unknown) {
    answer([dir = dir](const topic_partition& tp) {
      return partition_known(dir.get(), tp) ? error_code::operation_not_attempted
                                            : error_code::unknown_topic_or_partition;
    });
    return;
  }
  add_partitions_to_txn_request r;
  r.transactional_id = req.transactional_id;
  r.pid = producer_id{req.producer_id};
  r.epoch = producer_epoch{req.producer_epoch};
  r.partitions = std::move(partitions);
  ask_coordinator<txn_response>(self, st, req.transactional_id, std::move(r), errors_to(all), all);
}

void answer_add_offsets_to_txn(self_ptr self, const state_ptr& st, const request_header& h,
                               kafka::add_offsets_to_txn_request req) {
  auto answer = error_answer(self, st, h);
  add_offsets_to_txn_request r;
  r.transactional_id = req.transactional_id;
  r.pid = producer_id{req.producer_id};
  r.epoch = producer_epoch{req.producer_epoch};
  r.group_id = req.group_id;
  ask_coordinator<txn_response>(self, st, req.transactional_id, std::move(r), errors_to(answer),
                                answer);
}

void answer_end_txn(self_ptr self, const state_ptr& st, const request_header& h,
                    kafka::end_txn_request req) {
  auto answer = error_answer(self, st, h);
  end_txn_request r;
  r.transactional_id = req.transactional_id;
  r.pid = producer_id{req.producer_id};
  r.epoch = producer_epoch{req.producer_epoch};
  r.committed = req.committed;
  // EndTxn below v5: Kafka's transaction version 1, the epoch stays.
  r.client_transaction_version = 1;
  ask_coordinator<end_txn_response>(self, st, req.transactional_id, std::move(r),
                                    errors_to(answer), answer);
}

void answer_txn_offset_commit(self_ptr self, const state_ptr& st, const request_header& h,
                              kafka::txn_offset_commit_request req) {
  auto dir = st->slot->get().second;
  auto topics = std::make_shared<std::vector<kafka::txn_offset_commit_topic>>(std::move(req.topics));
  auto version = h.api_version;
  auto answer = [self, st, h, topics,
                 version](std::function<error_code(const topic_partition&)> error_of) {
    respond(self, st, h,
            kafka::encode_txn_offset_commit_response(
              per_partition(
                *topics, [](const kafka::txn_offset_commit_partition& p) { return p.index; },
                error_of),
              version));
  };
  auto all = [answer](error_code e) {
    answer([e](const topic_partition&) { return legacy_error(e); });
  };
  txn_offset_commit_request r;
  r.transactional_id = req.transactional_id;
  r.group_id = req.group_id;
  r.pid = producer_id{req.producer_id};
  r.epoch = producer_epoch{req.producer_epoch};
  r.generation_id = req.generation_id; // KIP-447 (v3)
  r.member_id = req.member_id;
  r.group_instance_id = req.group_instance_id.value_or("");
  bool unknown = false;
  for (auto& t : *topics)
    for (auto& p : t.partitions) {
      topic_partition tp{t.name, p.index};
      unknown = unknown || !partition_known(dir.get(), tp);
      r.partitions.push_back(tp);
      r.offsets.push_back(p.committed_offset);
      r.metadata.push_back(p.committed_metadata.value_or(""));
    }
  // Kafka's KafkaApis: offsets of partitions it does not know are
  // UNKNOWN_TOPIC_OR_PARTITION; caftx then commits none of the request's.
  if (unknown) {
    answer([dir = dir](const topic_partition& tp) {
      return partition_known(dir.get(), tp) ? error_code::operation_not_attempted
                                            : error_code::unknown_topic_or_partition;
    });
    return;
  }
  ask_coordinator<txn_response>(self, st, req.group_id, std::move(r), errors_to(all), all);
}

} // namespace caftx::kafka_connection
