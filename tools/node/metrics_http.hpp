// The Prometheus endpoint of caftx-node (docs/metrics.md): GET /metrics on
// `metrics.listeners` answers the node's registry in the text format
// 0.0.4; every other path is 404. One thread of its own accepts and
// answers scrapes, reading the registry only: a scrape never sends a
// message to an actor nor waits for one, and never runs on a CAF
// scheduler thread. Over cpp-httplib.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/metrics.hpp"
#include "runtime/status.hpp"

namespace caftx {

class metrics_http_server {
public:
  /// Binds `host`:`port` (empty host: every interface; port 0: one the OS
  /// chooses, see port()) and starts serving `reg`. Errors: INVALID_CONFIG
  /// naming metrics.listeners when the address cannot be bound (in use,
  /// not local).
  static status_or<std::unique_ptr<metrics_http_server>>
  start(std::shared_ptr<metrics::registry> reg, const std::string& host, uint16_t port);

  /// Stops serving and joins the thread.
  ~metrics_http_server();
  metrics_http_server(const metrics_http_server&) = delete;
  metrics_http_server& operator=(const metrics_http_server&) = delete;

  /// The bound port.
  uint16_t port() const { return port_; }

private:
  struct impl;
  explicit metrics_http_server(std::unique_ptr<impl> p, uint16_t port);
  std::unique_ptr<impl> impl_;
  uint16_t port_ = 0;
};

} // namespace caftx
