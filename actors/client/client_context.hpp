// Internal to the client API: a blocking channel from plain C++ threads to
// a node's actors, with a metadata and coordinator cache. One per producer
// or consumer; used under that client's mutex.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/client/client.hpp"
#include "actors/common/lost_connection.hpp"
#include "runtime/messages.hpp"
#include "runtime/status.hpp"

namespace caftx::detail {

/// Maps a CAF delivery failure (no reply) to a retriable Kafka error:
/// REQUEST_TIMED_OUT, or `receiver_down` when the receiver is gone (a
/// partition leader that stopped or moved: NOT_LEADER_OR_FOLLOWER; a
/// coordinator: NOT_COORDINATOR, the default), as a Kafka broker that no
/// longer leads answers.
status from_caf_error(caf::actor_system& sys, const caf::error& e,
                      error_code receiver_down = error_code::not_coordinator);

/// An error after which a client's cached leader may be wrong and is
/// looked up again: Kafka's InvalidMetadataException family
/// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
/// LEADER_NOT_AVAILABLE, FENCED_LEADER_EPOCH) and REQUEST_TIMED_OUT (no
/// reply: a lost connection or a stopped leader).
bool stale_metadata_error(error_code e);

class client_channel {
public:
  client_channel(caf::actor_system& sys, caf::actor broker);

  /// One request/response with a timeout; no reply -> REQUEST_TIMED_OUT
  /// (or, if the receiver is gone or unknown, NOT_LEADER_OR_FOLLOWER for a
  /// partition leader and NOT_COORDINATOR for anything else).
  template <class Resp, class Handle, class Req>
  status_or<Resp> call(const Handle& dest, Req req, std::chrono::milliseconds timeout) {
    constexpr auto gone = std::is_same_v<Handle, partition_actor> ? error_code::not_leader_or_follower
                                                                  : error_code::not_coordinator;
    status_or<Resp> result{status{error_code::request_timed_out, "no reply"}};
    if (!dest)
      return status{gone, "no destination"};
    auto handle = self_->request(dest, timeout, std::move(req));
    auto watch = watch_reply(handle.id(), dest);
    if (after_send_)
      after_send_();
    await(handle.id());
    handle.receive([&](Resp& r) { result = std::move(r); },
                   [&](caf::error& e) {
                     result = from_caf_error(*sys_, e, gone);
                     note_error(result.error().code());
                   });
    return result;
  }

  /// Runs after each request is sent, before its reply is awaited. Under
  /// CAF's deterministic test scheduler it runs the scheduler, so that the
  /// reply is in the mailbox; nothing otherwise.
  void set_after_send(std::function<void()> f) { after_send_ = std::move(f); }

  /// Partition leaders of `topic`; UNKNOWN_TOPIC_OR_PARTITION if unknown.
  status_or<std::vector<partition_actor>> partitions(const std::string& topic, bool refresh,
                                                std::chrono::milliseconds timeout);
  /// The same list without copying it (a topic may have 10 000 partitions
  /// and a producer looks it up at every send): valid until the next
  /// lookup of `topic` with `refresh`. With `offline_ok`, a topic some of
  /// whose partitions have no leader (LEADER_NOT_AVAILABLE in a cluster)
  /// is returned with null handles for those, as Kafka's metadata lists
  /// them with leader -1 (the producer queues records for them and its
  /// session waits for a leader).
  status_or<const std::vector<partition_actor>*>
  partitions_view(const std::string& topic, bool refresh, std::chrono::milliseconds timeout,
                  bool offline_ok = false);
  /// The coordinator for key_type 1 (transactional id) or 0 (group).
  status_or<caf::actor> coordinator(int8_t key_type, const std::string& key, bool refresh,
                                    std::chrono::milliseconds timeout);

  /// For a client that owns its connection (remote_cluster): `generation`
  /// counts its connections; the cached leaders and coordinators are
  /// dropped when it changes (they were proxies of a lost connection), when
  /// they are older than `max_age_ms` (metadata.max.age.ms), and on
  /// note_error(). Unset (embedded clients): caches live until a refresh.
  void set_metadata_source(std::function<uint64_t()> generation, int64_t max_age_ms);
  /// For a client that owns its connection: the broker its relay forwards
  /// to now, whose lost connection ends a request sent to broker() (the
  /// relay's own handle is local, so it alone would not).
  void set_relay_target(std::function<caf::strong_actor_ptr()> f) { relay_target_ = std::move(f); }
  const std::function<caf::strong_actor_ptr()>& relay_target() const { return relay_target_; }
  /// Ends the request `id` that self() sent to `dest` at once when the
  /// connection to the receiver's node is lost (lost_connection.hpp); for
  /// the relay, the connection of the broker it forwards to now.
  template <class Handle>
  lost_connection_watch watch_reply(caf::message_id id, const Handle& dest) const {
    auto receiver = caf::actor_cast<caf::strong_actor_ptr>(dest);
    if (relay_target_ && receiver == caf::actor_cast<caf::strong_actor_ptr>(broker_))
      receiver = relay_target_();
    return {caf::actor_cast<caf::strong_actor_ptr>(self_.ptr()), id, receiver};
  }

  /// A response's error: a stale_metadata_error() or NOT_COORDINATOR
  /// (REQUEST_TIMED_OUT among them: the handle may be a dead proxy) drops
  /// the caches of a client with a metadata source, so the next lookup
  /// asks the broker again.
  void note_error(error_code e);

  /// True for a client of a cluster (bootstrap.servers): its node's
  /// metadata may lag the controller's (a topic just created elsewhere).
  bool has_metadata_source() const { return static_cast<bool>(generation_); }

  /// The client's time and waiting (client.hpp); default: real time.
  void set_driver(client_driver d) { driver_ = std::move(d); }
  /// True once a driver replaced real time: the calling thread then runs
  /// the actors, so waiting means letting them run (sleep_ms).
  bool has_driver() const { return static_cast<bool>(driver_.sleep_ms); }
  /// Milliseconds for deadlines: the driver's clock, else the steady clock.
  int64_t deadline_clock_ms() const;
  /// Milliseconds for record timestamps: the driver's clock, else the
  /// system clock.
  int64_t timestamp_ms() const;
  /// Waits `ms`: the driver's sleep, else this thread sleeps.
  void sleep_ms(int64_t ms);
  /// Before a blocking receive on self() for `reply` (a response handle's
  /// id): the driver's await, if any.
  void await(caf::message_id reply) {
    if (driver_.await)
      driver_.await(self_, reply);
  }

  caf::scoped_actor& self() { return self_; }
  caf::actor_system& system() { return *sys_; }
  /// The broker (or the relay standing for it), typed: a request it does
  /// not take is a compile error.
  const broker_actor& broker() const { return broker_; }

private:
  caf::actor_system* sys_;
  broker_actor broker_;
  caf::scoped_actor self_;
  std::map<std::string, std::vector<partition_actor>> topics_;
  std::map<std::pair<int8_t, std::string>, caf::actor> coordinators_;
  std::function<void()> after_send_;
  client_driver driver_;
  std::function<uint64_t()> generation_;
  std::function<caf::strong_actor_ptr()> relay_target_;
  uint64_t cached_generation_ = 0;
  int64_t max_age_ms_ = 0;
  int64_t cached_at_ms_ = 0;
  // Drops the caches when the metadata source says they are stale.
  void expire_caches();
};

} // namespace caftx::detail
