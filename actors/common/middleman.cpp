#include "actors/common/middleman.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/atom.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>

#include <string>
#include <vector>

namespace caftx {

void configure_middleman(caf::actor_system_config& cfg, const middleman_config& m) {
  cfg.load<caf::io::middleman>();
  cfg.set("middleman.heartbeat-interval",
          caf::timespan{std::chrono::milliseconds(m.heartbeat_interval_ms)});
  cfg.set("middleman.connection-timeout",
          caf::timespan{std::chrono::milliseconds(m.connection_timeout_ms)});
  cfg.set("middleman.app-identifiers", std::vector<std::string>{wire_build_id()});
  cfg.set("middleman.attach-utility-actors", false);
  register_message_types(cfg);
}

status_or<uint16_t> publish_broker(caf::actor_system& sys, const caf::actor& broker,
                                   const endpoint& listener) {
  const char* in = listener.host.empty() ? nullptr : listener.host.c_str();
  auto port = sys.middleman().publish(broker, listener.port, in, /*reuse_addr=*/true);
  if (!port)
    return status{error_code::invalid_config,
                  "listeners: cannot listen on caftx://" + listener.to_string() + ": "
                    + sys.render(port.error())};
  return *port;
}

std::string connection_failure_text(caf::actor_system& sys, const caf::error& e) {
  if (e.category() == caf::atom("system")) {
    switch (static_cast<caf::sec>(e.code())) {
      case caf::sec::cannot_connect_to_node:
        return "the connection was refused or the host is unreachable";
      case caf::sec::malformed_basp_message:
      case caf::sec::disconnect_during_handshake:
      case caf::sec::unexpected_message:
        return "what answers there is not a caftx node";
      case caf::sec::incompatible_application_ids:
      case caf::sec::incompatible_versions:
        return "the node there runs another caftx build or CAF version";
      case caf::sec::request_timeout:
        return "no answer in time";
      case caf::sec::request_receiver_down:
        return "the other side went away";
      default:
        break;
    }
  }
  return sys.render(e);
}

status_or<connected_node> connect_to_node(caf::actor_system& sys, const endpoint& at,
                                          const cluster_hello_request& hello,
                                          std::chrono::milliseconds timeout) {
  auto h = sys.middleman().remote_actor(at.host, at.port);
  if (!h)
    return status{error_code::request_timed_out,
                  "cannot connect to " + at.to_string() + ": "
                    + connection_failure_text(sys, h.error())};
  connected_node out{*h, {}};
  status st;
  caf::scoped_actor self{sys};
  self->request(out.broker, timeout, hello)
    .receive([&](cluster_hello_response& r) { out.hello = std::move(r); },
             [&](caf::error& e) {
               st = status{error_code::request_timed_out,
                           "no answer to the hello from " + at.to_string() + ": "
                             + sys.render(e)};
             });
  if (!st.ok())
    return st;
  if (out.hello.error != error_code::none)
    return status{out.hello.error, at.to_string() + ": " + out.hello.message};
  if (out.hello.build != wire_build_id())
    return status{error_code::invalid_request,
                  at.to_string() + " runs build " + out.hello.build + ", this process "
                    + wire_build_id()};
  return out;
}

} // namespace caftx
