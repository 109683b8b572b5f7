// caftx-node: one caftx node as a server process (docs/node.md).
//
//   caftx-node --config server.properties [--override key=value ...]
//
// Reads Kafka's server.properties names (config/server_config.hpp), opens
// log.dirs, publishes the node's broker on `listeners` over CAF's
// middleman and logs the node's events with spdlog. SIGTERM or SIGINT stops
// it cleanly (exit 0); any bad config, an unusable data directory or a
// listener that cannot be bound stops it with exit 2 and one line naming
// the problem.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <pthread.h>
#include <string>
#include <vector>

#include "actors/broker/node.hpp"
#include "actors/common/middleman.hpp"
#include "config/server_config.hpp"

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

int refuse(const std::string& why) {
  std::fprintf(stderr, "caftx-node: %s\n", why.c_str());
  return exit_bad_input;
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0)
      return app.exit(e);
    app.exit(e);
    return exit_bad_input;
  }
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
  if (sc.zookeeper)
    return refuse(config_path + ": config 'zookeeper.connect' is set, but the controller on "
                                "ZooKeeper is not wired yet: this caftx runs one node alone. "
                                "Remove zookeeper.connect to run a single node.");
  if (sc.default_replication_factor > 1)
    return refuse(config_path + ": config 'default.replication.factor' = "
                  + std::to_string(sc.default_replication_factor)
                  + " needs that many nodes; this caftx runs one node alone (no replication "
                    "yet): use 1");

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

  caf::actor_system_config cfg;
  caftx::configure_middleman(cfg, sc.middleman);
  {
    caf::actor_system sys{cfg};
    caftx::node_options opts;
    opts.node_id = sc.node_id;
    opts.cluster_id = sc.cluster_id;
    opts.advertised_listener = sc.advertised.to_string();
    opts.events = [log](const caftx::node_event& e) { log->log(to_spdlog(e.level), e.text); };
    std::string prefix = "[KafkaServer id=" + std::to_string(sc.node_id) + "] ";
    auto started = caftx::node::start(sys, sc.node, opts);
    if (!started.ok()) {
      log->error(prefix + "cannot start on log.dirs " + sc.node.data_dir + ": "
                 + started.error().to_string());
      return refuse("log.dirs " + sc.node.data_dir + ": " + started.error().to_string());
    }
    auto node = std::move(started).value();
    auto port = caftx::publish_broker(sys, node->broker(), sc.listener);
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
    int sig = 0;
    sigwait(&stop_signals, &sig);
    log->info(prefix + "shutting down (" + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ")");
    node->stop();
    for (auto& f : node->failed_components())
      log->error(prefix + "failed component: " + f);
    node.reset();
    log->info(prefix + "shut down completed");
  }
  return 0;
}
