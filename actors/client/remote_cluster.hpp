// Internal to the client API: what a producer, consumer or admin client
// built from properties alone (`bootstrap.servers`) owns: its own CAF
// actor system with the middleman (actors/common/middleman.hpp), and a
// local relay actor that stands for the cluster's broker. The relay
// connects to a bootstrap server (caftx's hello after CAF's handshake),
// forwards every request to that broker (the broker's reply goes straight
// to the requester, so a request whose node is lost ends at its own
// timeout), and on a lost connection (a down message of the broker's
// proxy, within caftx.middleman.connection.timeout.ms for a frozen node)
// connects again, trying the bootstrap servers in turn with
// reconnect.backoff.ms doubled per failed round up to
// reconnect.backoff.max.ms. While it has no broker it answers at once with
// an error the client maps to a retriable REQUEST_TIMED_OUT. Each new
// connection bumps generation(): the client then drops the partition
// leaders and coordinators it cached (their handles were proxies of the
// lost connection).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "config/server_config.hpp"

namespace caftx::detail {

class client_channel;
class remote_cluster;

/// The start of a client built from properties alone: splits the
/// connection keys off `props` (client_connection_config::take), calls
/// `validate` with the rest (it parses the client's own config and throws
/// on a bad one) and only then connects. Throws kafka_exception
/// (INVALID_CONFIG, fatal) for a bad connection key.
std::shared_ptr<remote_cluster>
connect_remote(const properties& props, const std::function<void(const properties& rest)>& validate);

/// Makes `ch` drop its cached metadata on each new connection of `cluster`
/// and every metadata.max.age.ms (client_channel::set_metadata_source), and
/// end a request sent through the relay when the relay's connection is
/// lost (client_channel::set_relay_target).
void watch_metadata(client_channel& ch, const std::shared_ptr<remote_cluster>& cluster);

class remote_cluster {
public:
  /// Starts connecting; waits up to socket.connection.setup.timeout.ms
  /// for the first connection, then returns either way (the relay goes on
  /// trying).
  explicit remote_cluster(client_connection_config cfg);
  /// Stops the relay and the actor system (after the client's actors).
  ~remote_cluster();
  remote_cluster(const remote_cluster&) = delete;
  remote_cluster& operator=(const remote_cluster&) = delete;

  caf::actor_system& system() { return *sys_; }
  /// The relay: a local handle, stable across reconnections.
  const caf::actor& broker() const { return relay_; }
  /// The broker the relay forwards to now (null while it has none): a
  /// request sent through the relay is answered by it, and ends when its
  /// connection is lost (actors/common/lost_connection.hpp).
  caf::strong_actor_ptr current_broker() const;
  /// Connections made so far (0 before the first).
  uint64_t generation() const;
  const client_connection_config& config() const { return cfg_; }

  struct shared;

private:
  client_connection_config cfg_;
  std::unique_ptr<caf::actor_system_config> sys_cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::shared_ptr<shared> shared_;
  caf::actor relay_;
};

} // namespace caftx::detail
