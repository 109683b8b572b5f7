// KIP-664's DescribeProducers, DescribeTransactions and ListTransactions,
// and WriteTxnMarkers, of a Kafka connection (actors/kafka/kafka_connection.hpp): Kafka's
// KafkaApis handlers over the partition leaders, transaction coordinators
// and broker of this node. docs/kafka-protocol.md §Transactions admin.
#include "actors/kafka/kafka_connection.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/partition_messages.hpp"

namespace caftx::kafka_connection {

using kafka::request_header;
using kafka::wire_error;

void answer_describe_producers(self_ptr self, const state_ptr& st, const request_header& h,
                               kafka::describe_producers_request req) {
  auto dir = st->slot->get().second;
  auto version = h.api_version;
  auto out = std::make_shared<std::vector<kafka::describe_producers_topic>>();
  auto done = std::make_shared<countdown>([self, st, h, out, version] {
    respond(self, st, h, kafka::encode_describe_producers_response(*out, version));
  });
  auto timeout = std::chrono::milliseconds(st->opts.request_timeout_ms);
  for (auto& t : req.topics) {
    auto ti = out->size();
    out->push_back({t.name, {}});
    for (auto index : t.partitions) {
      auto pi = (*out)[ti].partitions.size();
      (*out)[ti].partitions.push_back({index, 0, std::nullopt, {}});
      // Kafka answers it at the partition's leader only.
      auto [leader, error] = leader_here(dir.get(), {t.name, index});
      if (error != error_code::none) {
        (*out)[ti].partitions[pi].error = wire_error(error);
        continue;
      }
      done->start();
      self->request(leader, timeout, describe_producers_request{{t.name, index}})
        .then(
          [out, done, ti, pi](const describe_producers_response& r) {
            auto& p = (*out)[ti].partitions[pi];
            p.error = wire_error(r.error);
            if (r.error != error_code::none && !r.message.empty())
              p.message = r.message;
            for (auto& a : r.active_producers)
              p.active_producers.push_back({a.pid.value, a.epoch.value, a.last_sequence,
                                            a.last_timestamp_ms, a.coordinator_epoch,
                                            a.current_txn_start_offset});
            done->finish();
          },
          [out, done, ti, pi](const caf::error& e) {
            (*out)[ti].partitions[pi].error =
              wire_error(from_caf(e, error_code::not_leader_or_follower));
            done->finish();
          });
    }
  }
  done->close();
}

void answer_describe_transactions(self_ptr self, const state_ptr& st, const request_header& h,
                                  kafka::describe_transactions_request req) {
  auto version = h.api_version;
  auto out = std::make_shared<std::vector<kafka::transaction_state_description>>();
  auto done = std::make_shared<countdown>([self, st, h, out, version] {
    respond(self, st, h, kafka::encode_describe_transactions_response(*out, version));
  });
  for (auto& tid : req.transactional_ids) {
    auto i = out->size();
    out->push_back({});
    (*out)[i].transactional_id = tid;
    done->start();
    // At the id's coordinator (NOT_COORDINATOR elsewhere, as Kafka's).
    ask_coordinator<describe_transaction_response>(
      self, st, tid, describe_transaction_request{tid},
      [out, done, i](const describe_transaction_response& r) {
        auto& s = (*out)[i];
        s.error = wire_error(r.error);
        if (r.error == error_code::none) {
          s.state = r.state;
          s.timeout_ms = r.transaction_timeout_ms;
          s.start_time_ms = r.transaction_start_ms;
          s.producer_id = r.pid.value;
          s.producer_epoch = r.epoch.value;
          std::map<std::string, std::vector<int32_t>> by_topic;
          for (auto& tp : r.partitions)
            by_topic[tp.topic].push_back(tp.partition);
          for (auto& [name, partitions] : by_topic)
            s.topics.push_back({name, partitions});
        }
        done->finish();
      },
      [out, done, i](error_code e) {
        (*out)[i].error = wire_error(e);
        done->finish();
      });
  }
  done->close();
}

void answer_list_transactions(self_ptr self, const state_ptr& st, const request_header& h,
                              kafka::list_transactions_request req) {
  auto broker = st->slot->get().first;
  auto version = h.api_version;
  auto reply = [self, st, h, version](const list_transactions_response& r) {
    kafka::list_transactions_response out;
    out.error = wire_error(r.error);
    out.unknown_state_filters = r.unknown_state_filters;
    for (auto& t : r.transactions)
      out.transactions.push_back({t.transactional_id, t.pid.value, t.state});
    respond(self, st, h, kafka::encode_list_transactions_response(out, version));
  };
  if (!broker) {
    reply({error_code::coordinator_not_available, "the node is starting", {}, {}});
    return;
  }
  list_transactions_request r;
  r.filter.states = std::move(req.state_filters);
  for (auto pid : req.producer_id_filters)
    r.filter.producer_ids.push_back(producer_id{pid});
  r.filter.duration_ms = req.duration_filter_ms < 0 ? -1 : req.duration_filter_ms;
  self->request(broker, std::chrono::milliseconds(st->opts.request_timeout_ms), std::move(r))
    .then(reply, [reply](const caf::error& e) {
      reply({from_caf(e, error_code::coordinator_not_available), "", {}, {}});
    });
}

void answer_write_txn_markers(self_ptr self, const state_ptr& st, const request_header& h,
                              kafka::write_txn_markers_request req) {
  auto dir = st->slot->get().second;
  auto version = h.api_version;
  auto out = std::make_shared<std::vector<kafka::txn_marker_result>>();
  auto done = std::make_shared<countdown>([self, st, h, out, version] {
    respond(self, st, h, kafka::encode_write_txn_markers_response(*out, version));
  });
  auto timeout = std::chrono::milliseconds(st->opts.request_timeout_ms);
  for (auto& m : req.markers) {
    auto mi = out->size();
    out->push_back({m.producer_id, {}});
    for (auto& t : m.topics) {
      auto ti = (*out)[mi].topics.size();
      (*out)[mi].topics.push_back({t.name, {}});
      for (auto index : t.partitions) {
        auto pi = (*out)[mi].topics[ti].partitions.size();
        (*out)[mi].topics[ti].partitions.push_back({index, 0});
        auto& answer = (*out)[mi].topics[ti].partitions[pi];
        // caftx's coordinators write the markers of their own topics
        // (a group coordinator materializes the offsets its markers commit).
        // A marker needs a producer: no producer id or epoch is no marker.
        if (is_internal_topic(t.name) || m.producer_id < 0 || m.producer_epoch < 0) {
          answer.error = wire_error(error_code::invalid_request);
          continue;
        }
        auto [leader, error] = leader_here(dir.get(), {t.name, index});
        if (error != error_code::none) {
          answer.error = wire_error(error);
          continue;
        }
        // An admin's marker (KIP-664): the producer's current epoch, which
        // the partition takes unless a newer epoch or coordinator epoch
        // took over (write_txn_marker_request, transaction version 1).
        write_txn_marker_request w;
        w.pid = producer_id{m.producer_id};
        w.epoch = producer_epoch{m.producer_epoch};
        w.coordinator_epoch = m.coordinator_epoch;
        w.committed = m.committed;
        w.tp = {t.name, index};
        w.transaction_version = 1;
        done->start();
        self->request(leader, timeout, std::move(w))
          .then(
            [out, done, mi, ti, pi](const txn_response& r) {
              (*out)[mi].topics[ti].partitions[pi].error = wire_error(r.error);
              done->finish();
            },
            [out, done, mi, ti, pi](const caf::error& e) {
              (*out)[mi].topics[ti].partitions[pi].error =
                wire_error(from_caf(e, error_code::not_leader_or_follower));
              done->finish();
            });
      }
    }
  }
  done->close();
}

} // namespace caftx::kafka_connection
