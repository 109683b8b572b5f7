#include "actors/kafka/kafka_listener.hpp"

#include <caf/actor_system.hpp>
#include <caf/io/broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/system_messages.hpp>

#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <string>

#include "protocol/kafka_api.hpp"
#include "runtime/broker_messages.hpp"

namespace caftx {

namespace {

using kafka::request_header;

// A connection with more requests than this waiting stops being read
// until they are answered.
constexpr size_t max_queued_requests = 64;

struct connection_state {
  kafka_listener_options opts;
  caf::io::connection_handle hdl;
  bool reading_size = true;
  std::deque<std::string> queued; // whole requests, header and body
  bool busy = false;              // a request is being answered
  bool halted = false;
  bool closed = false;
};

using state_ptr = std::shared_ptr<connection_state>;

void next_request(caf::io::broker* self, const state_ptr& st);

void close_connection(caf::io::broker* self, const state_ptr& st, const std::string& why) {
  if (st->closed)
    return;
  st->closed = true;
  emit_event(st->opts.events, node_event_level::debug, "kafka_connection_closed",
             "[SocketServer listenerType=ZK_BROKER, nodeId=" + std::to_string(st->opts.node_id)
               + "] closing a Kafka connection: " + why);
  self->close(st->hdl);
  self->quit();
}

// Sends one response and goes on with the next request.
void respond(caf::io::broker* self, const state_ptr& st, const request_header& h,
             const std::string& body) {
  if (st->closed)
    return;
  auto frame = kafka::frame_response(h, body);
  self->write(st->hdl, frame.size(), frame.data());
  self->flush(st->hdl);
  st->busy = false;
  next_request(self, st);
}

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
  auto broker = st->opts.broker;
  auto failed = [self, st, h](const caf::error&) {
    // Metadata has no top-level error: Kafka's answer to a broker that
    // cannot serve is an empty one, after which clients ask another node.
    respond(self, st, h, kafka::encode_metadata_response({}, h.api_version));
  };
  self->request(broker, timeout, kafka_cluster_request{})
    .then(
      [self, st, h, req, broker, timeout, failed](const kafka_cluster_response& cluster) {
        describe_topics_request d;
        // v1+: an empty list asks for no topics (null for all).
        if (req.topics && req.topics->empty()) {
          respond(self, st, h,
                  kafka::encode_metadata_response(to_metadata(cluster, {}), h.api_version));
          return;
        }
        if (req.topics)
          d.topics = *req.topics;
        self->request(broker, timeout, std::move(d))
          .then(
            [self, st, h, cluster](const describe_topics_response& described) {
              respond(self, st, h,
                      kafka::encode_metadata_response(to_metadata(cluster, described),
                                                      h.api_version));
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
    close_connection(self, st, "a request header that does not parse (" + r.what() + ")");
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
    close_connection(self, st,
                     "API key " + std::to_string(h.api_key) + " version "
                       + std::to_string(h.api_version) + " is not served");
    return;
  }
  switch (h.api_key) {
    case kafka::api::api_versions: {
      kafka::read_api_versions_request(r, h.api_version);
      if (!r.ok()) {
        close_connection(self, st, "ApiVersions does not parse (" + r.what() + ")");
        return;
      }
      respond(self, st, h,
              kafka::encode_api_versions_response(h.api_version, 0, kafka::supported_apis()));
      return;
    }
    case kafka::api::metadata: {
      auto req = kafka::read_metadata_request(r, h.api_version);
      if (!r.ok()) {
        close_connection(self, st, "Metadata does not parse (" + r.what() + ")");
        return;
      }
      answer_metadata(self, st, h, std::move(req));
      return;
    }
    default:
      close_connection(self, st, "API key " + std::to_string(h.api_key) + " is not served");
  }
}

caf::behavior kafka_connection(caf::io::broker* self, caf::io::connection_handle hdl,
                               kafka_listener_options opts) {
  auto st = std::make_shared<connection_state>();
  st->opts = std::move(opts);
  st->hdl = hdl;
  self->configure_read(hdl, caf::io::receive_policy::exactly(4));
  return {
    [self, st](const caf::io::new_data_msg& msg) {
      if (st->closed)
        return;
      if (st->reading_size) {
        kafka::reader r{std::string_view{msg.buf.data(), msg.buf.size()}};
        auto size = r.int32();
        if (size < 8 || size > st->opts.max_request_bytes) {
          // Kafka's NetworkReceive: InvalidReceiveException closes it.
          close_connection(self, st,
                           "a request of " + std::to_string(size) + " bytes (socket.request.max.bytes "
                             + std::to_string(st->opts.max_request_bytes) + ")");
          return;
        }
        st->reading_size = false;
        self->configure_read(st->hdl, caf::io::receive_policy::exactly(static_cast<size_t>(size)));
        return;
      }
      st->reading_size = true;
      self->configure_read(st->hdl, caf::io::receive_policy::exactly(4));
      st->queued.emplace_back(msg.buf.data(), msg.buf.size());
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

caf::behavior kafka_server(caf::io::broker* self, kafka_listener_options opts,
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
  return {
    [self, opts](const caf::io::new_connection_msg& msg) {
      self->fork(kafka_connection, msg.handle, opts);
    },
    [self](const caf::io::acceptor_closed_msg&) { self->quit(); },
  };
}

} // namespace

status_or<uint16_t> start_kafka_listener(caf::actor_system& sys, kafka_listener_options opts) {
  auto bound = std::make_shared<std::promise<status_or<uint16_t>>>();
  auto result = bound->get_future();
  sys.middleman().spawn_broker(kafka_server, std::move(opts), bound);
  return result.get();
}

} // namespace caftx
