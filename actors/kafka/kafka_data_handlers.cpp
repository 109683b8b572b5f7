// Produce, Fetch and ListOffsets of a Kafka connection
// (actors/kafka/kafka_connection.hpp): Kafka's KafkaApis handlers over
// caftx's partition leaders on this node. docs/kafka-protocol.md §Produce,
// §Fetch, §ListOffsets.
#include "actors/kafka/kafka_connection.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/broker/node_context.hpp"
#include "runtime/broker_messages.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx::kafka_connection {

namespace {

using kafka::request_header;
using kafka::wire_error;

// Kafka's ProduceRequest.validateRecords for v3+: exactly one batch, of
// magic 2 (INVALID_RECORD); a header that does not read is CORRUPT_MESSAGE.
// The leader checks the rest (CRC, records, compression). Produce v0-2
// carries message format 0 or 1, which caftx does not keep
// (UNSUPPORTED_FOR_MESSAGE_FORMAT; Kafka refuses magic 2 there).
error_code check_records(const std::optional<std::string>& records, int16_t version) {
  if (!records || records->size() <= v2::magic_pos)
    return error_code::invalid_record;
  auto magic = (*records)[v2::magic_pos];
  if (version < 3)
    return magic < v2::magic && magic >= 0 ? error_code::unsupported_for_message_format
                                           : error_code::invalid_record;
  if (magic != v2::magic)
    return error_code::invalid_record;
  auto header = v2::read_header(*records);
  if (!header.ok())
    return error_code::corrupt_message;
  if (static_cast<size_t>(header->size()) != records->size())
    return error_code::invalid_record;
  return error_code::none;
}

// Shapes `out` as `topics` (each topic's name, each partition's index) and
// calls `each(t, p, tp, in, answer)` per partition: its topic and
// partition position, its topic_partition, its request entry and its
// answer entry.
template <class InTopic, class OutTopic, class F>
void mirror(std::vector<InTopic>& topics, std::vector<OutTopic>& out, F each) {
  out.resize(topics.size());
  for (size_t t = 0; t < topics.size(); ++t) {
    auto& topic = topics[t];
    out[t].name = topic.name;
    out[t].partitions.resize(topic.partitions.size());
    for (size_t p = 0; p < topic.partitions.size(); ++p) {
      auto& in = topic.partitions[p];
      auto& answer = out[t].partitions[p];
      answer.index = in.index;
      each(t, p, topic_partition{topic.name, in.index}, in, answer);
    }
  }
}

} // namespace

bool partition_known(const actor_directory* dir, const topic_partition& tp) {
  if (dir == nullptr)
    return false;
  auto topic = dir->topic(tp.topic);
  return topic && tp.partition >= 0 && tp.partition < static_cast<int32_t>(topic->size());
}

std::pair<partition_actor, error_code> leader_here(const actor_directory* dir,
                                                    const topic_partition& tp) {
  if (dir == nullptr)
    return {{}, error_code::not_leader_or_follower}; // the node is starting
  if (auto leader = dir->local_leader(tp))
    return {leader, error_code::none};
  if (!partition_known(dir, tp))
    return {{}, error_code::unknown_topic_or_partition};
  return {{}, error_code::not_leader_or_follower};
}

void answer_produce(self_ptr self, const state_ptr& st, const request_header& h,
                    kafka::produce_request req) {
  auto dir = st->slot->get().second;
  auto out = std::make_shared<std::vector<kafka::produce_topic_response>>();
  const bool acks_valid = req.acks == -1 || req.acks == 0 || req.acks == 1;
  const auto acks = req.acks;
  auto version = h.api_version;
  auto done = std::make_shared<countdown>([self, st, h, out, acks, version] {
    if (acks != 0) {
      respond(self, st, h, kafka::encode_produce_response(*out, version));
      return;
    }
    // acks=0: no answer. An error closes the connection, so that the
    // producer notices and refreshes its metadata (Kafka's KafkaApis).
    for (auto& t : *out)
      for (auto& p : t.partitions)
        if (p.error != 0) {
          close(self, st,
                "Produce with acks=0 to " + t.name + "-" + std::to_string(p.index)
                  + " failed with error " + std::to_string(p.error));
          return;
        }
    no_response(self, st);
  });
  auto timeout = std::chrono::milliseconds(
    req.timeout_ms > 0 ? req.timeout_ms : st->opts.request_timeout_ms);
  auto transactional_id = req.transactional_id.value_or("");
  mirror(req.topics, *out, [&](size_t t, size_t p, const topic_partition& tp,
                                kafka::produce_partition_data& data,
                                kafka::produce_partition_response& answer) {
    auto error = acks_valid ? check_records(data.records, version)
                            : error_code::invalid_required_acks;
    partition_actor leader;
    if (error == error_code::none)
      std::tie(leader, error) = leader_here(dir.get(), tp);
    if (error != error_code::none) {
      answer.error = wire_error(error);
      return;
    }
    produce_request pr;
    pr.tp = tp;
    pr.transactional_id = transactional_id;
    pr.records = std::move(*data.records);
    pr.acks = acks;
    done->start();
    self->request(leader, timeout, std::move(pr))
      .then(
        [out, done, t, p](const produce_response& r) {
          auto& a = (*out)[t].partitions[p];
          a.error = wire_error(legacy_error(r.error));
          a.base_offset = r.error == error_code::none ? r.base_offset : -1;
          a.log_start_offset = r.error == error_code::none ? r.log_start_offset : -1;
          done->finish();
        },
        [out, done, t, p](const caf::error& e) {
          (*out)[t].partitions[p].error = wire_error(from_caf(e));
          done->finish();
        });
  });
  done->close();
}

void answer_fetch(self_ptr self, const state_ptr& st, const request_header& h,
                  kafka::fetch_request req) {
  auto [broker, dir] = st->slot->get();
  auto version = h.api_version;
  kafka::fetch_response resp;
  // KIP-227: caftx keeps no fetch sessions. A full fetch (epoch 0 or -1)
  // is answered sessionless (session id 0, as Kafka does when its session
  // cache is full); an incremental one names a session that cannot exist.
  if (version >= 7 && req.session_epoch > 0) {
    resp.error = wire_error(error_code::fetch_session_id_not_found);
    respond(self, st, h, kafka::encode_fetch_response(resp, version));
    return;
  }
  if (req.isolation_level != 0 && req.isolation_level != 1) {
    close(self, st, "Fetch with isolation level " + std::to_string(req.isolation_level));
    return;
  }
  auto isolation = req.isolation_level == 1 ? isolation_level::read_committed
                                            : isolation_level::read_uncommitted;
  // The answer in the request's shape; the partitions led here are
  // fetched together, the others answered at once.
  node_fetch_request nf;
  nf.max_wait_ms = std::max(req.max_wait_ms, 0);
  nf.min_bytes = req.min_bytes;
  nf.max_bytes = req.max_bytes;
  // Where nf.partitions[i]'s answer goes: (topic, partition) positions in
  // `resp`. Each partition once (Kafka keys a sessionless fetch by
  // partition).
  std::vector<std::pair<size_t, size_t>> fetched;
  std::set<topic_partition> seen;
  for (auto& topic : req.topics) {
    kafka::fetch_topic_response tr;
    tr.name = topic.name;
    for (auto& part : topic.partitions) {
      if (!seen.insert({topic.name, part.index}).second)
        continue;
      kafka::fetch_partition_response pr;
      pr.index = part.index;
      topic_partition tp{topic.name, part.index};
      // A follower's fetch (replica id >= 0) is not Kafka's here: caftx
      // replicates between its own nodes over CAF (docs/replication.md).
      auto [leader, error] = req.replica_id >= 0
                               ? std::pair<partition_actor, error_code>{{}, error_code::not_leader_or_follower}
                               : leader_here(dir.get(), tp);
      if (error != error_code::none) {
        pr.error = wire_error(error);
      } else {
        fetch_request f;
        f.tp = tp;
        f.fetch_offset = part.fetch_offset;
        f.max_bytes = part.max_bytes;
        f.isolation = isolation;
        // KIP-320: a client that knows a newer leader epoch than the
        // leader's gets UNKNOWN_LEADER_EPOCH.
        f.last_seen_leader_epoch = part.current_leader_epoch;
        nf.partitions.push_back(std::move(f));
        fetched.emplace_back(resp.topics.size(), tr.partitions.size());
      }
      tr.partitions.push_back(std::move(pr));
    }
    if (!tr.partitions.empty())
      resp.topics.push_back(std::move(tr));
  }
  if (nf.partitions.empty() || !broker) {
    for (auto [t, p] : fetched)
      resp.topics[t].partitions[p].error = wire_error(error_code::not_leader_or_follower);
    respond(self, st, h, kafka::encode_fetch_response(resp, version));
    return;
  }
  auto timeout = std::chrono::milliseconds(nf.max_wait_ms + st->opts.request_timeout_ms);
  auto shared = std::make_shared<kafka::fetch_response>(std::move(resp));
  auto read_committed = isolation == isolation_level::read_committed;
  self->request(broker, timeout, std::move(nf))
    .then(
      [self, st, h, shared, fetched, read_committed](node_fetch_response& r) {
        for (size_t i = 0; i < fetched.size() && i < r.partitions.size(); ++i) {
          auto& from = r.partitions[i];
          auto& to = shared->topics[fetched[i].first].partitions[fetched[i].second];
          to.error = wire_error(from.error);
          if (from.error != error_code::none)
            continue;
          to.high_watermark = from.high_watermark;
          to.last_stable_offset = from.last_stable_offset;
          to.log_start_offset = from.log_start_offset;
          if (read_committed) {
            // Sorted by first offset: KafkaJS relies on the order.
            std::vector<kafka::fetch_aborted_transaction> aborted;
            for (auto& a : from.aborted_transactions)
              aborted.push_back({a.pid.value, a.first_offset});
            std::sort(aborted.begin(), aborted.end(), [](const auto& a, const auto& b) {
              return a.first_offset < b.first_offset;
            });
            to.aborted_transactions = std::move(aborted);
          }
          to.records = std::move(from.records);
        }
        respond(self, st, h, kafka::encode_fetch_response(*shared, h.api_version));
      },
      [self, st, h, shared, fetched](const caf::error& e) {
        for (auto [t, p] : fetched)
          shared->topics[t].partitions[p].error = wire_error(from_caf(e));
        respond(self, st, h, kafka::encode_fetch_response(*shared, h.api_version));
      });
}

void answer_list_offsets(self_ptr self, const state_ptr& st, const request_header& h,
                         kafka::list_offsets_request req) {
  auto dir = st->slot->get().second;
  auto out = std::make_shared<std::vector<kafka::list_offsets_topic_response>>();
  auto version = h.api_version;
  auto done = std::make_shared<countdown>([self, st, h, out, version] {
    respond(self, st, h, kafka::encode_list_offsets_response(*out, version));
  });
  if (req.isolation_level != 0 && req.isolation_level != 1) {
    close(self, st, "ListOffsets with isolation level " + std::to_string(req.isolation_level));
    return;
  }
  auto isolation = req.isolation_level == 1 ? isolation_level::read_committed
                                            : isolation_level::read_uncommitted;
  auto timeout = std::chrono::milliseconds(st->opts.request_timeout_ms);
  mirror(req.topics, *out, [&](size_t t, size_t p, const topic_partition& tp,
                                kafka::list_offsets_partition& part,
                                kafka::list_offsets_partition_response& answer) {
    auto [leader, error] = leader_here(dir.get(), tp);
    if (error != error_code::none) {
      answer.error = wire_error(error);
      return;
    }
    done->start();
    self->request(leader, timeout, list_offsets_request{tp, part.timestamp, isolation})
      .then(
        [out, done, t, p](const list_offsets_response& r) {
          auto& a = (*out)[t].partitions[p];
          a.error = wire_error(r.error);
          a.offset = r.offset;
          a.timestamp = r.timestamp;
          done->finish();
        },
        [out, done, t, p](const caf::error& e) {
          (*out)[t].partitions[p].error = wire_error(from_caf(e));
          done->finish();
        });
  });
  done->close();
}

void answer_delete_records(self_ptr self, const state_ptr& st, const request_header& h,
                           kafka::delete_records_request req) {
  auto dir = st->slot->get().second;
  auto out = std::make_shared<std::vector<kafka::delete_records_topic_response>>();
  auto done = std::make_shared<countdown>([self, st, h, out] {
    respond(self, st, h, kafka::encode_delete_records_response(*out));
  });
  // The wait covers the leader's write of the new log start offset.
  auto timeout = std::chrono::milliseconds(
    req.timeout_ms > 0 ? req.timeout_ms : st->opts.request_timeout_ms);
  mirror(req.topics, *out, [&](size_t t, size_t p, const topic_partition& tp,
                                kafka::delete_records_partition& part,
                                kafka::delete_records_partition_response& answer) {
    auto [leader, error] = leader_here(dir.get(), tp);
    if (error != error_code::none) {
      answer.error = wire_error(error);
      return;
    }
    done->start();
    self->request(leader, timeout, delete_records_request{tp, part.offset})
      .then(
        [out, done, t, p](const delete_records_response& r) {
          auto& a = (*out)[t].partitions[p];
          a.error = wire_error(r.error);
          a.low_watermark = r.low_watermark;
          done->finish();
        },
        [out, done, t, p](const caf::error& e) {
          (*out)[t].partitions[p].error = wire_error(from_caf(e));
          done->finish();
        });
  });
  done->close();
}

} // namespace caftx::kafka_connection
