// OffsetCommit, OffsetFetch, CreateTopics, DeleteTopics, CreatePartitions
// and DescribeConfigs of a Kafka
// connection (actors/kafka/kafka_connection.hpp): Kafka's KafkaApis
// handlers over caftx's group coordinators and its broker.
// docs/kafka-protocol.md §Offsets, §Topics.
#include "actors/kafka/kafka_connection.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/controller/controller_core.hpp"
#include "runtime/broker_messages.hpp"

namespace caftx::kafka_connection {

namespace {

using kafka::request_header;
using kafka::wire_error;

// Hands one topic's request to the node's broker; its answer fills
// (*out)[i]: the error and, when `with_message`, the message of an error.
template <class Request>
void ask_broker(self_ptr self, const caf::actor& broker, std::chrono::milliseconds timeout,
                Request req, std::shared_ptr<std::vector<kafka::topic_error>> out, size_t i,
                std::shared_ptr<countdown> done, bool with_message) {
  done->start();
  self->request(broker, timeout, std::move(req))
    .then(
      [out, done, i, with_message](const txn_response& r) {
        auto& a = (*out)[i];
        a.error = wire_error(r.error);
        if (with_message && r.error != error_code::none)
          a.message = r.message;
        done->finish();
      },
      [out, done, i](const caf::error& e) {
        (*out)[i].error = wire_error(from_caf(e, error_code::request_timed_out));
        done->finish();
      });
}

} // namespace

void answer_offset_commit(self_ptr self, const state_ptr& st, const request_header& h,
                          kafka::offset_commit_request req) {
  auto dir = st->slot->get().second;
  auto version = h.api_version;
  // The answer per topic and partition; known partitions wait for the
  // coordinator's one answer.
  auto out = std::make_shared<std::vector<kafka::topic_partition_errors>>();
  std::vector<std::pair<size_t, size_t>> asked;
  offset_commit_request r;
  r.group_id = req.group_id;
  r.generation_id = req.generation_id;
  r.member_id = req.member_id;
  r.group_instance_id = req.group_instance_id.value_or(""); // v7, KIP-345
  for (auto& t : req.topics) {
    kafka::topic_partition_errors te{t.name, {}};
    for (auto& p : t.partitions) {
      topic_partition tp{t.name, p.index};
      auto error = error_code::none;
      if (!partition_known(dir.get(), tp)) {
        error = error_code::unknown_topic_or_partition; // the others are committed
      } else {
        asked.emplace_back(out->size(), te.partitions.size());
        r.partitions.push_back(tp);
        r.offsets.push_back(p.committed_offset);
        r.metadata.push_back(p.committed_metadata.value_or(""));
      }
      te.partitions.push_back({p.index, wire_error(error)});
    }
    out->push_back(std::move(te));
  }
  auto answer = [self, st, h, out, asked, version](error_code e) {
    for (auto [t, p] : asked)
      (*out)[t].partitions[p].error = wire_error(e);
    respond(self, st, h, kafka::encode_offset_commit_response(*out, version));
  };
  if (r.partitions.empty()) {
    answer(error_code::none);
    return;
  }
  ask_coordinator<txn_response>(self, st, req.group_id, std::move(r), errors_to(answer), answer);
}

void answer_offset_fetch(self_ptr self, const state_ptr& st, const request_header& h,
                         kafka::offset_fetch_request req) {
  auto version = h.api_version;
  offset_fetch_request r;
  r.group_id = req.group_id;
  r.require_stable = req.require_stable; // KIP-447 (v7)
  if (req.topics)
    for (auto& t : *req.topics)
      for (auto p : t.partitions)
        r.partitions.push_back({t.name, p});
  auto requested = r.partitions;
  auto reply = [self, st, h, version](const offset_fetch_response& resp) {
    kafka::offset_fetch_response f;
    // KIP-447: UNSTABLE_OFFSET_COMMIT is an error of the partitions a
    // transaction holds offsets for, not of the group.
    bool unstable = resp.error == error_code::unstable_offset_commit;
    f.error = version >= 2 && !unstable ? wire_error(resp.error) : int16_t{0};
    std::map<std::string, size_t> index; // topic -> position in f.topics
    for (size_t i = 0; i < resp.partitions.size(); ++i) {
      auto& tp = resp.partitions[i];
      auto [it, added] = index.emplace(tp.topic, f.topics.size());
      if (added)
        f.topics.push_back({tp.topic, {}});
      kafka::offset_fetch_partition p;
      p.index = tp.partition;
      p.committed_offset = i < resp.offsets.size() ? resp.offsets[i] : -1;
      p.metadata = i < resp.metadata.size() ? resp.metadata[i] : std::string();
      p.error = wire_error(resp.error);
      if (unstable) {
        bool held = std::find(resp.unstable.begin(), resp.unstable.end(), tp) != resp.unstable.end();
        p.error = held ? wire_error(resp.error) : int16_t{0};
        if (held)
          p.committed_offset = -1;
      }
      f.topics[it->second].partitions.push_back(std::move(p));
    }
    respond(self, st, h, kafka::encode_offset_fetch_response(f, version));
  };
  auto failed = [reply, requested](error_code e) {
    offset_fetch_response resp;
    resp.error = e;
    resp.partitions = requested;
    resp.offsets.assign(requested.size(), -1);
    reply(resp);
  };
  ask_coordinator<offset_fetch_response>(self, st, req.group_id, std::move(r), reply, failed);
}

void answer_create_topics(self_ptr self, const state_ptr& st, const request_header& h,
                          kafka::create_topics_request req) {
  auto [broker, dir] = st->slot->get();
  auto version = h.api_version;
  auto out = std::make_shared<std::vector<kafka::topic_error>>();
  auto done = std::make_shared<countdown>([self, st, h, out, version] {
    respond(self, st, h, kafka::encode_create_topics_response(*out, version));
  });
  std::map<std::string, int> count;
  for (auto& t : req.topics)
    ++count[t.name];
  auto timeout = std::chrono::milliseconds(
    std::max<int64_t>(req.timeout_ms, 0) + st->opts.request_timeout_ms);
  out->resize(req.topics.size());
  for (size_t i = 0; i < req.topics.size(); ++i) {
    auto& t = req.topics[i];
    auto& answer = (*out)[i];
    answer.name = t.name;
    auto fail = [&answer](error_code e, std::string why) {
      answer.error = wire_error(e);
      answer.message = std::move(why);
    };
    std::map<std::string, std::string> configs;
    bool null_config = false;
    for (auto& c : t.configs) {
      null_config = null_config || !c.value;
      configs[c.name] = c.value.value_or("");
    }
    // Kafka's AdminManager checks, in its order.
    if (count[t.name] > 1) {
      fail(error_code::invalid_request,
           "Create topics request from client contains duplicate topic names.");
    } else if (dir && dir->topic(t.name)) {
      // Also an internal topic: Kafka answers TOPIC_ALREADY_EXISTS for it.
      fail(error_code::topic_already_exists, "Topic '" + t.name + "' already exists.");
    } else if (auto why = controller::invalid_topic_name(t.name)) {
      fail(error_code::invalid_topic_exception, *why);
    } else if (!t.assignments.empty()) {
      // A written shortfall: caftx places replicas itself.
      fail(error_code::invalid_request,
           "replica assignments are not supported: give num_partitions and replication_factor");
    } else if (null_config) {
      fail(error_code::invalid_config, "Null value not supported for topic configs");
    } else if (t.num_partitions == 0 || t.num_partitions < -1) {
      fail(error_code::invalid_partitions, "Number of partitions was set to an invalid non-positive value.");
    } else if (t.replication_factor == 0 || t.replication_factor < -1) {
      fail(error_code::invalid_replication_factor,
           "Replication factor must be larger than 0, or -1 to use the default value.");
    } else if (!broker) {
      fail(error_code::not_controller, "the node is starting");
    } else if (req.validate_only) {
      // No dry run in caftx's controller: what the request shows is
      // checked above; nothing is created.
    } else {
      create_topic_request c;
      c.name = t.name;
      c.partitions = t.num_partitions;
      c.replication_factor = t.replication_factor;
      c.configs = std::move(configs);
      ask_broker(self, broker, timeout, std::move(c), out, i, done, true);
    }
  }
  done->close();
}

void answer_delete_topics(self_ptr self, const state_ptr& st, const request_header& h,
                          kafka::delete_topics_request req) {
  auto broker = st->slot->get().first;
  auto version = h.api_version;
  auto out = std::make_shared<std::vector<kafka::topic_error>>();
  auto done = std::make_shared<countdown>([self, st, h, out, version] {
    respond(self, st, h, kafka::encode_delete_topics_response(*out, version));
  });
  auto timeout = std::chrono::milliseconds(
    std::max<int64_t>(req.timeout_ms, 0) + st->opts.request_timeout_ms);
  std::set<std::string> seen;
  for (auto& name : req.names) {
    if (!seen.insert(name).second)
      continue; // Kafka's DeleteTopicsRequest keeps a set
    auto i = out->size();
    out->push_back({name, 0, std::nullopt});
    if (!broker) {
      (*out)[i].error = wire_error(error_code::not_controller);
      continue;
    }
    // DeleteTopics has no message before v5.
    ask_broker(self, broker, timeout, delete_topic_request{name, req.timeout_ms}, out, i, done,
               false);
  }
  done->close();
}

void answer_create_partitions(self_ptr self, const state_ptr& st, const request_header& h,
                              kafka::create_partitions_request req) {
  auto broker = st->slot->get().first;
  auto version = h.api_version;
  auto out = std::make_shared<std::vector<kafka::topic_error>>();
  auto done = std::make_shared<countdown>([self, st, h, out, version] {
    respond(self, st, h, kafka::encode_create_partitions_response(*out, version));
  });
  auto timeout = std::chrono::milliseconds(
    std::max<int64_t>(req.timeout_ms, 0) + st->opts.request_timeout_ms);
  // KafkaApis.handleCreatePartitionsRequest: a topic named twice gets
  // INVALID_REQUEST, once.
  std::map<std::string, int> count;
  for (auto& t : req.topics)
    ++count[t.name];
  std::set<std::string> answered;
  for (auto& t : req.topics) {
    if (!answered.insert(t.name).second)
      continue;
    auto i = out->size();
    out->push_back({t.name, 0, std::nullopt});
    auto fail = [&out, i](error_code e, std::string why) {
      (*out)[i].error = wire_error(e);
      (*out)[i].message = std::move(why);
    };
    if (count[t.name] > 1) {
      fail(error_code::invalid_request, "Duplicate topic in request.");
      continue;
    }
    if (!broker) {
      fail(error_code::not_controller, "the node is starting");
      continue;
    }
    create_partitions_request c;
    c.name = t.name;
    c.count = t.count;
    if (t.assignments)
      c.assignments = std::move(*t.assignments);
    c.validate_only = req.validate_only;
    c.timeout_ms = req.timeout_ms;
    ask_broker(self, broker, timeout, std::move(c), out, i, done, true);
  }
  done->close();
}

void answer_describe_configs(self_ptr self, const state_ptr& st, const request_header& h,
                             kafka::describe_configs_request req) {
  auto broker = st->slot->get().first;
  auto version = h.api_version;
  auto out = std::make_shared<std::vector<kafka::describe_configs_result>>();
  auto done = std::make_shared<countdown>([self, st, h, out, version] {
    respond(self, st, h, kafka::encode_describe_configs_response(*out, version));
  });
  auto synonyms = req.include_synonyms && version >= 1;
  for (auto& res : req.resources) {
    auto i = out->size();
    out->push_back({0, std::nullopt, res.type, res.name, {}});
    if (!broker) {
      (*out)[i].error = wire_error(error_code::request_timed_out);
      (*out)[i].message = "the node is starting";
      continue;
    }
    done->start();
    auto keys = res.keys;
    self
      ->request(broker, std::chrono::milliseconds(st->opts.request_timeout_ms),
                describe_configs_request{res.type, res.name})
      .then(
        [out, done, i, keys, synonyms](const describe_configs_response& r) {
          auto& result = (*out)[i];
          result.error = wire_error(r.error);
          if (r.error != error_code::none)
            result.message = r.message;
          for (auto& e : r.entries) {
            // Only the keys asked for (Kafka's ConfigHelper filter: null or
            // empty asks for all); unknown ones are left out.
            if (keys && !keys->empty()
                && std::find(keys->begin(), keys->end(), e.name) == keys->end())
              continue;
            kafka::describe_configs_entry w;
            w.name = e.name;
            w.value = e.value;
            w.read_only = e.read_only;
            w.is_default = e.source == config_source::default_config;
            w.source = static_cast<int8_t>(e.source);
            if (synonyms)
              for (auto& s : e.synonyms)
                w.synonyms.push_back({s.name, s.value, static_cast<int8_t>(s.source)});
            result.configs.push_back(std::move(w));
          }
          done->finish();
        },
        [out, done, i](const caf::error& e) {
          (*out)[i].error = wire_error(from_caf(e, error_code::request_timed_out));
          done->finish();
        });
  }
  done->close();
}

} // namespace caftx::kafka_connection
