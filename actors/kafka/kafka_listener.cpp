#include "actors/kafka/kafka_listener.hpp"

#include <caf/actor_system.hpp>
#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/system_messages.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "actors/controller/controller_core.hpp"
#include "actors/kafka/kafka_connection.hpp"
#include "protocol/kafka_api.hpp"
#include "runtime/broker_messages.hpp"

namespace caftx {

namespace {

using kafka::request_header;

// A connection with more requests than this waiting stops being read
// until they are answered.
constexpr size_t max_queued_requests = 64;

// A frame's body is read in pieces of at most this many bytes, so memory
// follows the bytes that arrived, not the size a client declared.
constexpr size_t read_chunk = 65536;

using slot_ptr = std::shared_ptr<kafka_listener::broker_slot>;
using kafka_connection::state;
using kafka_connection::state_ptr;
using kafka_connection::respond;

void next_request(caf::io::broker* self, const state_ptr& st);

} // namespace

namespace kafka_connection {

void close(self_ptr self, const state_ptr& st, const std::string& why) {
  if (st->closed)
    return;
  st->closed = true;
  emit_event(st->opts.events, node_event_level::debug, "kafka_connection_closed",
             "[SocketServer listenerType=ZK_BROKER, nodeId=" + std::to_string(st->opts.node_id)
               + "] closing a Kafka connection: " + why);
  self->close(st->hdl);
  self->quit();
}

void respond(self_ptr self, const state_ptr& st, const kafka::request_header& h,
             const std::string& body) {
  if (st->closed)
    return;
  auto frame = kafka::frame_response(h, body);
  self->write(st->hdl, frame.size(), frame.data());
  self->flush(st->hdl);
  no_response(self, st);
}

void no_response(self_ptr self, const state_ptr& st) {
  if (st->closed)
    return;
  st->busy = false;
  next_request(self, st);
}

} // namespace kafka_connection

namespace {

kafka::metadata_response to_metadata(const kafka_cluster_response& cluster,
                                     const describe_topics_response& described) {
  kafka::metadata_response m;
  for (auto& b : cluster.brokers)
    m.brokers.push_back({b.node_id, b.host, b.port,
                         b.rack.empty() ? std::optional<std::string>{} : std::optional<std::string>{b.rack}});
  m.cluster_id = cluster.cluster_id;
  m.controller_id = cluster.controller_id;
  for (auto& t : described.topics) {
    kafka::metadata_topic mt;
    mt.error = kafka::wire_error(t.error);
    mt.name = t.name;
    mt.internal = t.internal;
    for (auto& p : t.partitions) {
      kafka::metadata_partition mp;
      mp.index = p.partition;
      mp.leader = p.leader;
      // Kafka's MetadataCache: a partition without a live leader is
      // LEADER_NOT_AVAILABLE.
      if (p.leader < 0)
        mp.error = kafka::wire_error(error_code::leader_not_available);
      mp.replicas = p.replicas;
      mp.isr = p.isr;
      mt.partitions.push_back(std::move(mp));
    }
    m.topics.push_back(std::move(mt));
  }
  return m;
}

void answer_metadata(caf::io::broker* self, const state_ptr& st, const request_header& h,
                     kafka::metadata_request req) {
  auto timeout = std::chrono::milliseconds(st->opts.request_timeout_ms);
  auto broker = st->slot->get().first;
  // A node that has no cluster view yet (starting, before the controller's
  // first UpdateMetadata) closes the connection rather than describe an
  // empty cluster, which would make a client drop its partitions: Kafka
  // serves no data-plane request before its broker has started. The
  // client asks another bootstrap node or retries.
  auto not_ready = [self, st] {
    kafka_connection::close(self, st, "Metadata before the node has the cluster's metadata");
  };
  if (!broker) {
    not_ready();
    return;
  }
  auto failed = [self, st, h](const caf::error&) {
    // Metadata has no top-level error: Kafka's answer to a broker that
    // cannot serve is an empty one, after which clients ask another node.
    respond(self, st, h, kafka::encode_metadata_response({}, h.api_version));
  };
  self->request(broker, timeout, kafka_cluster_request{})
    .then(
      [self, st, h, req, broker, timeout, failed, not_ready](const kafka_cluster_response& cluster) {
        if (cluster.brokers.empty()) {
          not_ready();
          return;
        }
        // Each name once (Kafka's MetadataRequest keeps a set); a name
        // Kafka's Topic.validate refuses is INVALID_TOPIC_EXCEPTION.
        describe_topics_request d;
        describe_topics_response invalid;
        if (req.topics) {
          std::set<std::string> seen;
          for (auto& name : *req.topics) {
            if (!seen.insert(name).second)
              continue;
            if (!controller::invalid_topic_name(name))
              d.topics.push_back(name);
            else
              invalid.topics.push_back({name, error_code::invalid_topic_exception, false, {}});
          }
          // v1+: an empty list asks for no topics (null for all).
          if (d.topics.empty()) {
            respond(self, st, h,
                    kafka::encode_metadata_response(to_metadata(cluster, invalid), h.api_version));
            return;
          }
        }
        auto finish = [self, st, h, cluster, invalid](describe_topics_response described) {
          for (auto& t : invalid.topics)
            described.topics.push_back(t);
          respond(self, st, h,
                  kafka::encode_metadata_response(to_metadata(cluster, described),
                                                  h.api_version));
        };
        self->request(broker, timeout, d)
          .then(
            [self, broker, timeout, d, req, finish, failed](describe_topics_response described) {
              // Missing topics the client lets the broker create (v4's
              // AllowAutoTopicCreation; always before v4): the broker
              // creates them when auto.create.topics.enable is on and
              // answers once they have leaders; then they are described
              // again.
              metadata_request create;
              for (auto& t : described.topics)
                if (t.error == error_code::unknown_topic_or_partition)
                  create.topics.push_back(t.name);
              if (create.topics.empty() || !req.topics || !req.allow_auto_topic_creation) {
                finish(std::move(described));
                return;
              }
              self->request(broker, timeout, std::move(create))
                .then(
                  [self, broker, timeout, d, finish, failed](const metadata_response&) {
                    self->request(broker, timeout, d).then(finish, failed);
                  },
                  failed);
            },
            failed);
      },
      failed);
}

// Answers the request at the head of the queue.
void next_request(caf::io::broker* self, const state_ptr& st) {
  if (st->busy || st->closed)
    return;
  if (st->queued.empty())
    return;
  auto frame = std::move(st->queued.front());
  st->queued.pop_front();
  if (st->halted && st->queued.size() < max_queued_requests / 2) {
    st->halted = false;
    self->trigger(st->hdl);
  }
  st->busy = true;
  kafka::reader r{frame};
  auto h = kafka::read_request_header(r);
  if (!r.ok()) {
    kafka_connection::close(self, st, "a request header that does not parse (" + r.what() + ")");
    return;
  }
  auto range = kafka::supported(h.api_key);
  if (h.api_key == kafka::api::api_versions
      && (!range || h.api_version > range->max_version || h.api_version < range->min_version)) {
    // KIP-511: a v0 body with UNSUPPORTED_VERSION and ApiVersions' range.
    auto v0 = h;
    v0.api_version = 0;
    respond(self, st, v0,
            kafka::encode_api_versions_response(0, kafka::unsupported_version, {*range}));
    return;
  }
  if (!range || h.api_version < range->min_version || h.api_version > range->max_version) {
    kafka_connection::close(self, st,
                     "API key " + std::to_string(h.api_key) + " version "
                       + std::to_string(h.api_version) + " is not served");
    return;
  }
  // Reads the body with `read` and hands it to `answer`; a body that does
  // not parse closes the connection, as Kafka does.
  auto serve = [&](const char* name, auto read, auto answer) {
    auto req = read(r, h.api_version);
    if (!r.ok()) {
      kafka_connection::close(self, st, std::string(name) + " does not parse (" + r.what() + ")");
      return;
    }
    answer(self, st, h, std::move(req));
  };
  namespace kc = kafka_connection;
  switch (h.api_key) {
    case kafka::api::api_versions:
      return serve("ApiVersions", kafka::read_api_versions_request,
                   [](auto self, auto& st, auto& h, auto&&) {
                     respond(self, st, h,
                             kafka::encode_api_versions_response(h.api_version, 0,
                                                                 kafka::supported_apis()));
                   });
    case kafka::api::metadata:
      return serve("Metadata", kafka::read_metadata_request, answer_metadata);
    case kafka::api::produce:
      return serve("Produce", kafka::read_produce_request, kc::answer_produce);
    case kafka::api::fetch:
      return serve("Fetch", kafka::read_fetch_request, kc::answer_fetch);
    case kafka::api::list_offsets:
      return serve("ListOffsets", kafka::read_list_offsets_request, kc::answer_list_offsets);
    case kafka::api::find_coordinator:
      return serve("FindCoordinator", kafka::read_find_coordinator_request,
                   kc::answer_find_coordinator);
    case kafka::api::init_producer_id:
      return serve("InitProducerId", kafka::read_init_producer_id_request,
                   kc::answer_init_producer_id);
    case kafka::api::add_partitions_to_txn:
      return serve("AddPartitionsToTxn", kafka::read_add_partitions_to_txn_request,
                   kc::answer_add_partitions_to_txn);
    case kafka::api::add_offsets_to_txn:
      return serve("AddOffsetsToTxn", kafka::read_add_offsets_to_txn_request,
                   kc::answer_add_offsets_to_txn);
    case kafka::api::end_txn:
      return serve("EndTxn", kafka::read_end_txn_request, kc::answer_end_txn);
    case kafka::api::offset_commit:
      return serve("OffsetCommit", kafka::read_offset_commit_request, kc::answer_offset_commit);
    case kafka::api::offset_fetch:
      return serve("OffsetFetch", kafka::read_offset_fetch_request, kc::answer_offset_fetch);
    case kafka::api::create_topics:
      return serve("CreateTopics", kafka::read_create_topics_request, kc::answer_create_topics);
    case kafka::api::delete_topics:
      return serve("DeleteTopics", kafka::read_delete_topics_request, kc::answer_delete_topics);
    case kafka::api::write_txn_markers:
      return serve("WriteTxnMarkers", kafka::read_write_txn_markers_request,
                   kc::answer_write_txn_markers);
    case kafka::api::describe_producers:
      return serve("DescribeProducers", kafka::read_describe_producers_request,
                   kc::answer_describe_producers);
    case kafka::api::describe_transactions:
      return serve("DescribeTransactions", kafka::read_describe_transactions_request,
                   kc::answer_describe_transactions);
    case kafka::api::list_transactions:
      return serve("ListTransactions", kafka::read_list_transactions_request,
                   kc::answer_list_transactions);
    case kafka::api::describe_configs:
      return serve("DescribeConfigs", kafka::read_describe_configs_request,
                   kc::answer_describe_configs);
    case kafka::api::create_partitions:
      return serve("CreatePartitions", kafka::read_create_partitions_request,
                   kc::answer_create_partitions);
    case kafka::api::delete_records:
      return serve("DeleteRecords", kafka::read_delete_records_request, kc::answer_delete_records);
    case kafka::api::txn_offset_commit:
      return serve("TxnOffsetCommit", kafka::read_txn_offset_commit_request,
                   kc::answer_txn_offset_commit);
    case kafka::api::join_group:
      return serve("JoinGroup", kafka::read_join_group_request, kc::answer_join_group);
    case kafka::api::sync_group:
      return serve("SyncGroup", kafka::read_sync_group_request, kc::answer_sync_group);
    case kafka::api::heartbeat:
      return serve("Heartbeat", kafka::read_heartbeat_request, kc::answer_heartbeat);
    case kafka::api::leave_group:
      return serve("LeaveGroup", kafka::read_leave_group_request, kc::answer_leave_group);
    case kafka::api::describe_groups:
      return serve("DescribeGroups", kafka::read_describe_groups_request,
                   kc::answer_describe_groups);
    case kafka::api::list_groups:
      return serve("ListGroups", kafka::read_list_groups_request, kc::answer_list_groups);
    case kafka::api::delete_groups:
      return serve("DeleteGroups", kafka::read_delete_groups_request, kc::answer_delete_groups);
    default:
      kafka_connection::close(self, st, "API key " + std::to_string(h.api_key) + " is not served");
  }
}

// Reads the next piece of the frame: its 4-byte size, or up to read_chunk
// bytes of its body.
void read_next(caf::io::broker* self, const state_ptr& st) {
  if (st->reading_size)
    self->configure_read(st->hdl, caf::io::receive_policy::exactly(4));
  else
    self->configure_read(st->hdl, caf::io::receive_policy::at_most(
                                    std::min(read_chunk, st->body_size - st->body.size())));
}

caf::behavior kafka_connection(caf::io::broker* self, caf::io::connection_handle hdl,
                               kafka_listener_options opts, slot_ptr slot) {
  auto st = std::make_shared<state>();
  st->opts = std::move(opts);
  st->slot = std::move(slot);
  st->hdl = hdl;
  st->client_host = "/" + self->remote_addr(hdl);
  read_next(self, st);
  return {
    [self, st](const caf::io::new_data_msg& msg) {
      if (st->closed)
        return;
      if (st->reading_size) {
        const std::string size_bytes(msg.buf.data(), msg.buf.size());
        kafka::reader r{size_bytes};
        auto size = r.int32();
        if (size < 8 || size > st->opts.max_request_bytes) {
          // Kafka's NetworkReceive: InvalidReceiveException closes it.
          kafka_connection::close(self, st,
                           "a request of " + std::to_string(size) + " bytes (socket.request.max.bytes "
                             + std::to_string(st->opts.max_request_bytes) + ")");
          return;
        }
        st->reading_size = false;
        st->body_size = static_cast<size_t>(size);
        st->body.clear();
        read_next(self, st);
        return;
      }
      st->body.append(msg.buf.data(), msg.buf.size());
      if (st->body.size() < st->body_size) {
        read_next(self, st);
        return;
      }
      st->reading_size = true;
      read_next(self, st);
      st->queued.push_back(std::move(st->body));
      st->body = std::string();
      if (st->queued.size() >= max_queued_requests && !st->halted) {
        st->halted = true;
        self->halt(st->hdl);
      }
      next_request(self, st);
    },
    [self, st](const caf::io::connection_closed_msg&) {
      st->closed = true;
      self->quit();
    },
  };
}


caf::behavior kafka_server(caf::io::broker* self, kafka_listener_options opts, slot_ptr slot,
                           std::shared_ptr<std::promise<status_or<uint16_t>>> bound) {
  auto r = self->add_tcp_doorman(opts.port, opts.host.empty() ? nullptr : opts.host.c_str(), true);
  if (!r) {
    bound->set_value(status{error_code::unknown_server_error,
                            "cannot listen on PLAINTEXT://" + opts.host + ":"
                              + std::to_string(opts.port) + ": " + self->system().render(r.error())});
    self->quit();
    return {};
  }
  bound->set_value(r->second);
  // Connections are linked: the listener's stop ends them. One that ends
  // by itself (its client left, a bad request) does not end the listener.
  auto connections = std::make_shared<std::set<caf::actor_addr>>();
  self->set_exit_handler([self, connections](caf::exit_msg& em) {
    if (connections->erase(em.source) > 0)
      return;
    self->quit(em.reason);
  });
  return {
    [self, opts, slot, connections](const caf::io::new_connection_msg& msg) {
      auto conn = self->fork(kafka_connection, msg.handle, opts, slot);
      connections->insert(conn.address());
      self->link_to(conn);
    },
    [self](const caf::io::acceptor_closed_msg&) { self->quit(); },
  };
}

} // namespace

status_or<std::unique_ptr<kafka_listener>> kafka_listener::start(caf::actor_system& sys,
                                                                kafka_listener_options opts) {
  auto slot = std::make_shared<broker_slot>();
  auto bound = std::make_shared<std::promise<status_or<uint16_t>>>();
  auto result = bound->get_future();
  auto server = sys.middleman().spawn_broker(kafka_server, std::move(opts), slot, bound);
  auto port = result.get();
  if (!port.ok())
    return port.error();
  return std::unique_ptr<kafka_listener>(
    new kafka_listener(caf::actor_cast<caf::actor>(server), *port, std::move(slot)));
}

kafka_listener::~kafka_listener() {
  stop();
}

void kafka_listener::set_broker(caf::actor broker,
                                std::shared_ptr<const actor_directory> directory) {
  std::lock_guard<std::mutex> guard{slot_->mtx};
  slot_->broker = std::move(broker);
  slot_->directory = std::move(directory);
}

void kafka_listener::stop() {
  if (!server_)
    return;
  caf::anon_send_exit(server_, caf::exit_reason::user_shutdown);
  server_ = nullptr;
  set_broker(nullptr, nullptr);
}

} // namespace caftx
