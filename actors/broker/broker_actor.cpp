#include "actors/broker/broker_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <vector>

#include "actors/broker/node_context.hpp"
#include "actors/broker/node_fetch.hpp"
#include "actors/common/durable_queue.hpp"
#include "actors/partition/partition_actor.hpp"
#include "runtime/messages.hpp"
#include "runtime/partitioner.hpp"
#include "storage/codec.hpp"

namespace caftx {

status validate_topic_name(const std::string& name) {
  if (name.empty() || name.size() > 249)
    return {error_code::invalid_request, "topic name must have 1 to 249 characters"};
  if (name == "." || name == "..")
    return {error_code::invalid_request, "topic name cannot be '.' or '..'"};
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return {error_code::invalid_request,
              "topic name '" + name + "' may only contain [a-zA-Z0-9._-]"};
  if (name.rfind("__", 0) == 0)
    return {error_code::invalid_request, "topic names starting with '__' are internal"};
  return {};
}

namespace {

struct broker_state {
  durable_queue dq;
  std::shared_ptr<const node_context> ctx;
  // Topics whose record is being written, with who waits for them: a
  // second CreateTopics of the name gets TOPIC_ALREADY_EXISTS, a second
  // auto-create waits for the first instead of spawning leaders again.
  std::map<std::string, std::vector<std::function<void(const status&)>>> creating;
  static inline const char* name = "caftx.broker";
};

using broker_ptr = caf::stateful_actor<broker_state>*;


// ListTransactions goes to every broker in Kafka, which answers for the
// `__transaction_state` partitions it leads: here, every shard of the node.
// A shard that is loading or down makes the whole answer its error.
caf::result<caf::message> list_transactions(broker_ptr self, const list_transactions_request& req) {
  auto& ctx = *self->state.ctx;
  auto shards = ctx.config.transaction_state_log_num_partitions;
  auto rp = self->make_response_promise();
  auto merged = std::make_shared<list_transactions_response>();
  auto remaining = std::make_shared<int32_t>(shards);
  auto add = [rp, merged, remaining](list_transactions_response r) mutable {
    if (r.error != error_code::none && merged->error == error_code::none) {
      merged->error = r.error;
      merged->message = std::move(r.message);
    }
    if (r.error == error_code::none) {
      merged->unknown_state_filters = std::move(r.unknown_state_filters);
      for (auto& t : r.transactions)
        merged->transactions.push_back(std::move(t));
    }
    if (--*remaining > 0)
      return;
    if (merged->error != error_code::none)
      merged->transactions.clear();
    std::sort(merged->transactions.begin(), merged->transactions.end(),
              [](const transaction_listing& a, const transaction_listing& b) {
                return a.transactional_id < b.transactional_id;
              });
    rp.deliver(std::move(*merged));
  };
  for (int32_t s = 0; s < shards; ++s)
    self->request(ctx.directory->txn_coordinator(s),
                  std::chrono::milliseconds(ctx.config.request_timeout_ms), req)
      .then([add](list_transactions_response& r) mutable { add(std::move(r)); },
            [add, s](caf::error&) mutable {
              add({error_code::coordinator_not_available,
                   "shard " + std::to_string(s) + " did not answer", {}, {}});
            });
  return rp;
}

// Persists the topic, then spawns its partition leaders; `then` gets the
// outcome.
void create_topic(broker_ptr self, const std::string& name, int32_t partitions,
                  std::map<std::string, std::string> configs, const topic_config& tc,
                  std::function<void(const status&)> then) {
  auto& creating = self->state.creating;
  if (auto i = creating.find(name); i != creating.end()) {
    i->second.push_back(std::move(then));
    return;
  }
  creating[name].push_back(std::move(then));
  auto finish = [self, name](const status& s) {
    auto waiting = std::move(self->state.creating[name]);
    self->state.creating.erase(name);
    for (auto& w : waiting)
      w(s);
  };
  leveldb::WriteBatch wb;
  wb.Put(keys::topic(name), codec::encode(codec::topic_record{name, partitions, std::move(configs)}));
  self->state.dq.submit(caf::actor_cast<caf::actor>(self), std::move(wb),
                        [self, name, partitions, tc, finish](const status& s) {
                          if (!s.ok()) {
                            finish(s);
                            return;
                          }
                          spawn_topic_leaders(self->system(), self->state.ctx, name,
                                              partitions, tc);
                          finish({});
                        });
}

caf::behavior broker_fn(broker_ptr self, std::shared_ptr<const node_context> ctx) {
  self->state.ctx = ctx;
  self->state.dq = durable_queue{ctx->store};
  return {
    [=](storage_done& done) { self->state.dq.complete(done); },
    [=](const create_topic_request& req) -> caf::result<caf::message> {
      if (auto s = validate_topic_name(req.name); !s.ok())
        return caf::make_message(txn_response{s.code(), s.message()});
      if (req.partitions < 1 || req.partitions > 10000)
        return caf::make_message(txn_response{
          error_code::invalid_partitions,
          "partition count " + std::to_string(req.partitions) + " is out of range [1, 10000]"});
      if (self->state.ctx->directory->topic(req.name) || self->state.creating.count(req.name))
        return caf::make_message(
          txn_response{error_code::topic_already_exists, "topic " + req.name + " already exists"});
      auto tc = topic_config::parse(req.configs, self->state.ctx->config);
      if (!tc.ok())
        return caf::make_message(txn_response{tc.error().code(), tc.error().message()});
      auto rp = self->make_response_promise();
      create_topic(self, req.name, req.partitions, req.configs, *tc, [rp](const status& s) mutable {
        rp.deliver(txn_response{s.code(), s.message()});
      });
      return rp;
    },
    [=](node_fetch_request& req) -> caf::result<node_fetch_response> {
      auto& ctx = *self->state.ctx;
      auto rp = self->make_response_promise<node_fetch_response>();
      // The leaders of this node's partitions, looked up once per topic.
      std::map<std::string, std::vector<caf::actor>> topics;
      auto leader_of = [&](const topic_partition& tp) -> caf::actor {
        auto i = topics.find(tp.topic);
        if (i == topics.end())
          i = topics.emplace(tp.topic, ctx.directory->topic(tp.topic).value_or(
                                         std::vector<caf::actor>{}))
                .first;
        if (tp.partition < 0 || tp.partition >= static_cast<int32_t>(i->second.size()))
          return {};
        return i->second[static_cast<size_t>(tp.partition)];
      };
      node_fetch(self, std::move(req), leader_of, ctx.config.request_timeout_ms, rp);
      return rp;
    },
    [=](const metadata_request& req) -> caf::result<caf::message> {
      auto& ctx = *self->state.ctx;
      auto names = req.topics.empty() ? ctx.directory->topic_names() : req.topics;
      std::vector<std::string> to_create;
      metadata_response resp;
      for (auto& n : names) {
        topic_metadata tm;
        tm.name = n;
        if (auto t = ctx.directory->topic(n))
          tm.partitions = *t;
        else if (ctx.config.auto_create_topics_enable && validate_topic_name(n).ok())
          to_create.push_back(n);
        else
          tm.error = error_code::unknown_topic_or_partition;
        resp.topics.push_back(std::move(tm));
      }
      if (to_create.empty())
        return caf::make_message(std::move(resp));
      // auto.create.topics.enable: create, then answer the same request again.
      auto rp = self->make_response_promise();
      auto remaining = std::make_shared<size_t>(to_create.size());
      for (auto& n : to_create)
        create_topic(self, n, ctx.config.num_partitions, {}, *topic_config::parse({}, ctx.config),
                     [self, rp, remaining, req](const status&) mutable {
          if (--*remaining == 0)
            rp.delegate(caf::actor_cast<caf::actor>(self), req);
        });
      return rp;
    },
    [=](init_producer_id_request& req) -> caf::result<caf::message> {
      // Idempotent producers may ask any broker (docs/transactions.md
      // §InitProducerId step 3);
      // shard 0 hands out their producer ids.
      if (req.has_transactional_id)
        return caf::make_message(
          init_producer_id_response{error_code::not_coordinator, "ask the transaction coordinator"});
      return self->delegate(self->state.ctx->directory->txn_coordinator(0), std::move(req));
    },
    [=](const list_transactions_request& req) { return list_transactions(self, req); },
    [=](const cluster_hello_request& req) {
      auto& ctx = *self->state.ctx;
      cluster_hello_response r{error_code::none, {}, ctx.cluster_id, ctx.node_id,
                               ctx.advertised_listener, wire_build_id()};
      if (req.build != r.build) {
        r.error = error_code::invalid_request;
        r.message = "node " + std::to_string(ctx.node_id) + " runs build " + r.build + ", not "
                    + req.build + ": messages of another build may not deserialize";
      } else if (req.role == 1 && req.cluster_id != ctx.cluster_id) {
        r.error = error_code::inconsistent_cluster_id;
        r.message = "node " + std::to_string(req.node_id) + " of cluster '" + req.cluster_id
                    + "' refused: node " + std::to_string(ctx.node_id) + " belongs to cluster '"
                    + ctx.cluster_id + "'";
      }
      if (r.error != error_code::none)
        ctx.emit(node_event_level::warn, "hello_refused", r.message);
      return r;
    },
    [=](const find_coordinator_request& req) {
      auto& ctx = *self->state.ctx;
      find_coordinator_response r;
      // Kafka's CoordinatorType.forId: only GROUP (0) and TRANSACTION (1).
      if (req.key_type != 0 && req.key_type != 1) {
        r.error = error_code::invalid_request;
        r.message = "unknown coordinator type " + std::to_string(req.key_type);
        return r;
      }
      if (req.key_type == 1) {
        if (req.key.empty()) {
          r.error = error_code::invalid_request;
          r.message = "empty transactional id";
          return r;
        }
        r.partition = partition_for(req.key, ctx.config.transaction_state_log_num_partitions);
        r.coordinator = ctx.directory->txn_coordinator(r.partition);
      } else {
        r.partition = partition_for(req.key, ctx.config.offsets_topic_num_partitions);
        r.coordinator = ctx.directory->group_coordinator(r.partition);
      }
      if (!r.coordinator)
        r.error = error_code::coordinator_not_available;
      return r;
    },
  };
}

} // namespace

caf::actor spawn_broker(caf::actor_system& sys, std::shared_ptr<const node_context> ctx) {
  return sys.spawn(broker_fn, std::move(ctx));
}

} // namespace caftx
