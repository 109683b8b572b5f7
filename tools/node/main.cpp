// caftx-node: one caftx node as a server process (docs/node.md).
//
//   caftx-node --config server.properties [--override key=value ...]
//
// Reads Kafka's server.properties names (config/server_config.hpp), opens
// log.dirs, publishes the node's broker on `listeners` over CAF's
// middleman, serves its metrics on metrics.listeners (docs/metrics.md) and
// logs the node's events with spdlog. SIGTERM or SIGINT stops
// it cleanly (exit 0); any bad config, an unusable data directory or a
// listener that cannot be bound stops it with exit 2 and one line naming
// the problem.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <pthread.h>
#include <string>
#include <vector>

#include "actors/broker/network_drill.hpp"
#include "actors/broker/node.hpp"
#include "actors/coordination/zookeeper_store.hpp"
#include "actors/kafka/kafka_listener.hpp"
#include "actors/common/middleman.hpp"
#include "config/server_config.hpp"
#include "runtime/metrics.hpp"
#include "tools/cli/cli_common.hpp"
#include "tools/node/metrics_http.hpp"

namespace {

constexpr int exit_bad_input = 2;

spdlog::level::level_enum to_spdlog(caftx::node_event_level l) {
  switch (l) {
    case caftx::node_event_level::trace: return spdlog::level::trace;
    case caftx::node_event_level::debug: return spdlog::level::debug;
    case caftx::node_event_level::info: return spdlog::level::info;
    case caftx::node_event_level::warn: return spdlog::level::warn;
    case caftx::node_event_level::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

// log.level (validated by server_config) as the lowest event level taken.
caftx::node_event_level from_log_level(const std::string& level) {
  if (level == "trace")
    return caftx::node_event_level::trace;
  if (level == "debug")
    return caftx::node_event_level::debug;
  if (level == "info")
    return caftx::node_event_level::info;
  return level == "warn" ? caftx::node_event_level::warn : caftx::node_event_level::error;
}

int refuse(const std::string& why) {
  std::fprintf(stderr, "caftx-node: %s\n", why.c_str());
  return exit_bad_input;
}

// Set by the node when it cannot go on (a duplicate node.id); the main
// thread then stops it with exit 2.
std::atomic<bool> fatal_stop{false};
std::string fatal_reason;
pthread_t main_thread;

std::string zookeeper_text(const caftx::zookeeper_connect& zk) {
  std::string out;
  for (auto& s : zk.servers)
    out += (out.empty() ? "" : ",") + s.to_string();
  return out + zk.chroot;
}

std::string listener_text(const caftx::endpoint& e) {
  return "caftx://" + e.to_string();
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"caftx-node: one caftx node, serving clients over CAF's middleman"};
  std::string config_path;
  std::vector<std::string> overrides;
  app.add_option("--config", config_path, "server.properties (Kafka's names)")->required();
  app.add_option("--override", overrides, "key=value over the file (repeatable)");
  if (auto code = caftx::cli::parse_command_line(app, argc, argv))
    return *code;
  auto props = caftx::load_properties_file(config_path);
  if (!props.ok())
    return refuse(props.error().message());
  for (auto& o : overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      return refuse("--override '" + o + "' must be key=value");
    (*props)[o.substr(0, eq)] = o.substr(eq + 1);
  }
  auto parsed = caftx::server_config::parse(*props);
  if (!parsed.ok())
    return refuse(config_path + ": " + parsed.error().message());
  auto& sc = *parsed;

  auto log = std::make_shared<spdlog::logger>(
    "caftx", std::make_shared<spdlog::sinks::stdout_sink_mt>());
  log->set_pattern("[%Y-%m-%d %H:%M:%S,%e] %^%l%$ %v");
  log->set_level(spdlog::level::from_str(sc.log_level));
  log->flush_on(spdlog::level::trace);

  // SIGTERM and SIGINT wait for sigwait() below: blocked before any CAF
  // thread exists, so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // The metrics endpoint first: a port that cannot be bound stops the
  // node before it opens log.dirs.
  std::shared_ptr<caftx::metrics::registry> metrics;
  std::unique_ptr<caftx::metrics_http_server> metrics_server;
  if (sc.metrics_listener) {
    metrics = std::make_shared<caftx::metrics::registry>();
    auto server = caftx::metrics_http_server::start(metrics, sc.metrics_listener->host,
                                                    sc.metrics_listener->port);
    if (!server.ok()) {
      log->error(server.error().message());
      return refuse(server.error().message());
    }
    metrics_server = std::move(server).value();
  }

  caf::actor_system_config cfg;
  caftx::configure_middleman(cfg, sc.middleman);
  {
    caf::actor_system sys{cfg};
    caftx::node_options opts;
    if (sc.node.drills_enable) {
      // The fault drills: this process's fault handler, installed before
      // any actor runs (docs/node.md §Drill hook).
      opts.faults = std::make_shared<caftx::fault_drills>();
      caftx::install_fault_drills(opts.faults);
    }
    // The Kafka listener before the node: a port that cannot be bound
    // stops it before it opens log.dirs (Kafka binds its sockets first).
    // It answers with the node's broker once the node runs.
    std::unique_ptr<caftx::kafka_listener> kafka;
    if (sc.kafka_listener) {
      caftx::kafka_listener_options ko;
      ko.host = sc.kafka_listener->host;
      ko.port = sc.kafka_listener->port;
      ko.request_timeout_ms = sc.node.request_timeout_ms;
      ko.node_id = sc.node_id;
      ko.events = [log](const caftx::node_event& e) { log->log(to_spdlog(e.level), e.text); };
      auto started_listener = caftx::kafka_listener::start(sys, ko);
      if (!started_listener.ok()) {
        log->error(started_listener.error().message());
        return refuse(started_listener.error().message());
      }
      kafka = std::move(started_listener).value();
    }
    opts.node_id = sc.node_id;
    opts.metrics = metrics;
    opts.events_from = from_log_level(sc.log_level);
    opts.cluster_id = sc.cluster_id;
    opts.advertised_listener = sc.advertised.to_string();
    if (sc.kafka_advertised) {
      opts.kafka_advertised_host = sc.kafka_advertised->host;
      opts.kafka_advertised_port = sc.kafka_advertised->port;
    }
    // Set once the ZooKeeper session connected.
    auto registered = std::make_shared<std::atomic<bool>>(false);
    opts.events = [log, registered](const caftx::node_event& e) {
      if (e.kind == "zookeeper_connected")
        registered->store(true);
      log->log(to_spdlog(e.level), e.text);
    };
    std::string prefix = "[KafkaServer id=" + std::to_string(sc.node_id) + "] ";
    if (sc.zookeeper) {
      // Cluster mode: the controller on ZooKeeper (docs/node.md §Cluster mode).
      caftx::zookeeper_store_options zo;
      zo.connect = zookeeper_text(*sc.zookeeper);
      zo.session_timeout_ms = sc.zookeeper_session_timeout_ms;
      opts.spawn_store = [&sys, zo](caf::actor owner) {
        auto o = zo;
        o.owner = std::move(owner);
        return caftx::spawn_zookeeper_store(sys, o);
      };
      // A znode /nodes/<id> left by this node's previous process (SIGKILL)
      // lives until that session expires: waited for that long.
      opts.duplicate_wait_ms = sc.zookeeper_session_timeout_ms + 2000;
      opts.advertised_host = sc.advertised.host;
      opts.advertised_port = sc.advertised.port;
      main_thread = pthread_self();
      opts.on_fatal = [](const caftx::status& why) {
        if (fatal_stop.exchange(true))
          return;
        fatal_reason = why.to_string();
        pthread_kill(main_thread, SIGTERM);
      };
      log->info(prefix + "connecting to ZooKeeper at " + zo.connect + " (session timeout "
                + std::to_string(zo.session_timeout_ms) + " ms)");
    }
    auto started = caftx::node::start(sys, sc.node, opts);
    if (!started.ok()) {
      log->error(prefix + "cannot start on log.dirs " + sc.node.data_dir + ": "
                 + started.error().to_string());
      return refuse("log.dirs " + sc.node.data_dir + ": " + started.error().to_string());
    }
    auto node = std::move(started).value();
    auto port = caftx::publish_broker(sys, node->published_broker(), sc.listener);
    if (!port.ok()) {
      node->stop();
      log->error(prefix + port.error().message());
      return refuse(port.error().message());
    }
    auto bound = sc.listener;
    bound.port = *port;
    log->info(prefix + "started (node.id " + std::to_string(sc.node_id) + ", cluster '"
              + sc.cluster_id + "', listener " + listener_text(bound) + ", advertised "
              + listener_text(sc.advertised) + ", log.dirs " + sc.node.data_dir + ", build "
              + caftx::wire_build_id() + ")");
    if (kafka) {
      kafka->set_broker(node->broker(), node->directory());
      auto k = *sc.kafka_listener;
      k.port = kafka->port();
      log->info(prefix + "serving Kafka's wire protocol on PLAINTEXT://" + k.to_string()
                + " (advertised PLAINTEXT://" + sc.kafka_advertised->to_string() + ")");
    }
    if (metrics_server) {
      auto m = *sc.metrics_listener;
      m.port = metrics_server->port();
      log->info(prefix + "serving metrics on http://" + m.to_string() + "/metrics");
    }
    int sig = 0;
    if (sc.zookeeper) {
      // Kafka's zookeeper.connection.timeout.ms: a node that cannot
      // connect in time stops instead of waiting unseen.
      auto deadline = std::chrono::steady_clock::now()
                      + std::chrono::milliseconds(sc.zookeeper_connection_timeout_ms);
      while (sig == 0 && !registered->load() && !fatal_stop) {
        if (std::chrono::steady_clock::now() >= deadline) {
          auto why = "could not connect to ZooKeeper at " + zookeeper_text(*sc.zookeeper)
                     + " within zookeeper.connection.timeout.ms = "
                     + std::to_string(sc.zookeeper_connection_timeout_ms)
                     + " ms: is ZooKeeper running there?";
          log->error(prefix + why);
          node->stop();
          node.reset();
          return refuse(why);
        }
        timespec ts{0, 100 * 1000 * 1000};
        int got = sigtimedwait(&stop_signals, nullptr, &ts);
        if (got > 0)
          sig = got;
      }
    }
    if (sig == 0)
      sigwait(&stop_signals, &sig);
    if (fatal_stop) {
      node->stop();
      node.reset();
      log->error(prefix + "stopped: " + fatal_reason);
      return refuse(fatal_reason);
    }
    log->info(prefix + "shutting down (" + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ")");
    // Kafka's shutdown stops the socket server's request processing first.
    if (kafka)
      kafka->stop();
    node->stop();
    for (auto& f : node->failed_components())
      log->error(prefix + "failed component: " + f);
    node.reset();
    log->info(prefix + "shut down completed");
  }
  return 0;
}
