#include "tools/node/metrics_http.hpp"

#include <httplib.h>

#include <chrono>
#include <thread>

namespace caftx {

struct metrics_http_server::impl {
  httplib::Server server;
  std::thread thread;
};

metrics_http_server::metrics_http_server(std::unique_ptr<impl> p, uint16_t port)
  : impl_(std::move(p)), port_(port) {
}

status_or<std::unique_ptr<metrics_http_server>>
metrics_http_server::start(std::shared_ptr<metrics::registry> reg, const std::string& host,
                           uint16_t port) {
  auto p = std::make_unique<impl>();
  auto& srv = p->server;
  // One worker: scrapes are rare and must not take threads from the node.
  srv.new_task_queue = [] { return new httplib::ThreadPool(1); };
  // SO_REUSEADDR only (a restart binds at once while old connections are
  // in TIME_WAIT): cpp-httplib's default adds SO_REUSEPORT, which would let
  // a second process bind the same port without an error.
  srv.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  srv.Get("/metrics", [reg](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics::render_text(reg->collect()), metrics::text_content_type);
  });
  auto bind_host = host.empty() ? std::string("0.0.0.0") : host;
  int bound = -1;
  if (port == 0)
    bound = srv.bind_to_any_port(bind_host);
  else if (srv.bind_to_port(bind_host, port))
    bound = port;
  if (bound <= 0)
    return status{error_code::invalid_config,
                  "config 'metrics.listeners' = 'http://" + host + ":" + std::to_string(port)
                    + "': cannot bind " + bind_host + ":" + std::to_string(port)
                    + " (in use, or not an address of this host)"};
  auto* s = &srv;
  p->thread = std::thread([s] { s->listen_after_bind(); });
  // stop() does nothing to a server not yet running: the destructor could
  // then wait for the accept loop forever. It runs within microseconds.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!srv.is_running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  return std::unique_ptr<metrics_http_server>(
    new metrics_http_server(std::move(p), static_cast<uint16_t>(bound)));
}

metrics_http_server::~metrics_http_server() {
  impl_->server.stop();
  if (impl_->thread.joinable())
    impl_->thread.join();
}

} // namespace caftx
