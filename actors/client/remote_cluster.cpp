#include "actors/client/remote_cluster.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include "actors/client/client.hpp"
#include "actors/client/client_context.hpp"
#include "actors/common/middleman.hpp"
#include "runtime/messages.hpp"

namespace caftx::detail {

using std::chrono::milliseconds;

struct remote_cluster::shared {
  std::mutex mtx;
  std::condition_variable cv;
  std::atomic<uint64_t> generation{0};
  std::string last_error = "not connected yet";
  // The broker the relay forwards to now (null: none), under mtx.
  caf::strong_actor_ptr broker;
  // The middleman connects the relay has asked for and not had answered,
  // under mtx: the actor system must not be destroyed while one runs (its
  // detached middleman actor then never ends and ~actor_system waits for
  // it forever). `stopping`: no new connects.
  int connects_in_flight = 0;
  bool stopping = false;
};

namespace {

using reconnect_atom = caf::atom_constant<caf::atom("reconnect")>;
using peers_atom = caf::atom_constant<caf::atom("peers")>;

// Counts a middleman connect of the relay in flight (false once stopping:
// then none is started).
bool begin_connect(remote_cluster::shared& sh) {
  std::lock_guard<std::mutex> guard{sh.mtx};
  if (sh.stopping)
    return false;
  ++sh.connects_in_flight;
  return true;
}

void end_connect(remote_cluster::shared& sh) {
  {
    std::lock_guard<std::mutex> guard{sh.mtx};
    --sh.connects_in_flight;
  }
  sh.cv.notify_all();
}

// How often the relay asks for the cluster's nodes to connect to.
constexpr int64_t peer_refresh_ms = 2000;

struct relay_state {
  client_connection_config cfg;
  std::shared_ptr<remote_cluster::shared> shared;
  caf::actor broker;
  // The handle of the broker this relay lost last: the middleman may still
  // hand it out for that address (its cache) while the node stops. The
  // same broker reached again (a paused node resumed) comes through a new
  // proxy, a handle of its own.
  caf::strong_actor_ptr lost;
  // The cluster of the first connection: later ones must be to it too.
  std::string cluster_id;
  size_t next_server = 0;
  size_t failures_in_round = 0;
  int64_t backoff_ms = 0;
  bool connecting = false;
  static inline const char* name = "caftx.broker_relay";
};

using relay_ptr = caf::stateful_actor<relay_state>*;

void connect_next(relay_ptr self);

void fail_attempt(relay_ptr self, std::string why) {
  auto& st = self->state;
  {
    std::lock_guard<std::mutex> guard{st.shared->mtx};
    st.shared->last_error = std::move(why);
  }
  st.next_server = (st.next_server + 1) % st.cfg.bootstrap_servers.size();
  if (++st.failures_in_round < st.cfg.bootstrap_servers.size()) {
    connect_next(self);
    return;
  }
  // Every bootstrap server failed: wait, then another round.
  st.failures_in_round = 0;
  st.connecting = false;
  auto wait = st.backoff_ms;
  st.backoff_ms = std::min<int64_t>(std::max<int64_t>(1, st.backoff_ms * 2),
                                    st.cfg.reconnect_backoff_max_ms);
  self->delayed_send(self, milliseconds(wait), reconnect_atom::value);
}

// Connects this client's middleman directly to every other live node of
// the cluster (cluster_nodes_request): handles of their actors, learned
// through the bootstrap node, are then routed straight to them rather than
// through it (CAF routes over a direct connection when there is one).
void connect_peers(relay_ptr self) {
  auto& st = self->state;
  if (!st.broker)
    return;
  auto timeout = milliseconds(st.cfg.socket_connection_setup_timeout_ms);
  self->request(st.broker, timeout, cluster_nodes_request{})
    .then(
      [self, timeout](const cluster_nodes_response& r) {
        auto mm = self->system().middleman().actor_handle();
        auto sh = self->state.shared;
        for (auto& e : r.endpoints) {
          auto colon = e.rfind(':');
          if (colon == std::string::npos || !begin_connect(*sh))
            continue;
          auto port = static_cast<uint16_t>(std::strtoul(e.c_str() + colon + 1, nullptr, 10));
          self->request(mm, timeout, caf::connect_atom::value, e.substr(0, colon), port)
            .then([sh](const caf::node_id&, caf::strong_actor_ptr&,
                       const std::set<std::string>&) { end_connect(*sh); },
                  [sh](const caf::error&) { end_connect(*sh); }); // unreachable now: tried again later
        }
      },
      [](const caf::error&) {});
}

void connected(relay_ptr self, caf::actor broker, const cluster_hello_response& hello) {
  auto& st = self->state;
  st.broker = std::move(broker);
  st.cluster_id = hello.cluster_id;
  st.connecting = false;
  st.failures_in_round = 0;
  st.backoff_ms = st.cfg.reconnect_backoff_ms;
  self->monitor(st.broker);
  {
    std::lock_guard<std::mutex> guard{st.shared->mtx};
    st.shared->last_error.clear();
    st.shared->broker = caf::actor_cast<caf::strong_actor_ptr>(st.broker);
    st.shared->generation.fetch_add(1);
  }
  st.shared->cv.notify_all();
  connect_peers(self);
}

// One attempt at bootstrap server next_server: CAF's connect, then the hello.
void connect_next(relay_ptr self) {
  auto& st = self->state;
  st.connecting = true;
  auto at = st.cfg.bootstrap_servers[st.next_server];
  auto timeout = milliseconds(st.cfg.socket_connection_setup_timeout_ms);
  auto mm = self->system().middleman().actor_handle();
  if (!begin_connect(*st.shared))
    return;
  self->request(mm, timeout, caf::connect_atom::value, at.host, at.port)
    .then(
      [self, at, timeout](const caf::node_id&, caf::strong_actor_ptr& ptr,
                          const std::set<std::string>&) {
        end_connect(*self->state.shared);
        auto broker = caf::actor_cast<caf::actor>(ptr);
        if (!broker)
          return fail_attempt(self, at.to_string() + ": no broker published there");
        if (ptr.get() == self->state.lost.get())
          return fail_attempt(self, at.to_string() + ": its broker has stopped");
        cluster_hello_request hello{0, self->state.cluster_id, -1, wire_build_id()};
        self->request(broker, timeout, hello)
          .then(
            [self, at, broker](const cluster_hello_response& r) {
              auto& st = self->state;
              if (r.error != error_code::none)
                return fail_attempt(self, at.to_string() + ": " + to_string(r.error) + ": "
                                            + r.message);
              if (r.build != wire_build_id())
                return fail_attempt(self, at.to_string() + " runs build " + r.build);
              if (!st.cluster_id.empty() && r.cluster_id != st.cluster_id)
                return fail_attempt(self, at.to_string() + " belongs to cluster '" + r.cluster_id
                                            + "', not '" + st.cluster_id
                                            + "' (INCONSISTENT_CLUSTER_ID)");
              connected(self, broker, r);
            },
            [self, at](const caf::error& e) {
              fail_attempt(self, at.to_string() + ": no answer to the hello: "
                                   + connection_failure_text(self->system(), e));
            });
      },
      [self, at](const caf::error& e) {
        end_connect(*self->state.shared);
        fail_attempt(self, "cannot connect to " + at.to_string() + ": "
                             + connection_failure_text(self->system(), e));
      });
}

caf::behavior relay_fn(relay_ptr self, client_connection_config cfg,
                       std::shared_ptr<remote_cluster::shared> shared) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.shared = std::move(shared);
  st.backoff_ms = st.cfg.reconnect_backoff_ms;
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (!st.broker || dm.source != st.broker.address())
      return;
    st.lost = caf::actor_cast<caf::strong_actor_ptr>(st.broker);
    st.broker = nullptr;
    {
      std::lock_guard<std::mutex> guard{st.shared->mtx};
      st.shared->last_error = "lost the connection to the broker: " + self->system().render(dm.reason);
      st.shared->broker = nullptr;
    }
    // The next bootstrap server first: the lost node is most likely
    // stopping (Kafka's client, too, leaves a node it just lost for the
    // least loaded other one).
    st.next_server = (st.next_server + 1) % st.cfg.bootstrap_servers.size();
    if (!st.connecting)
      connect_next(self);
  });
  // Everything else is a request for the broker.
  self->set_default_handler(
    [self](caf::scheduled_actor*, caf::message_view& x) -> caf::result<caf::message> {
      auto& st = self->state;
      if (!st.broker) {
        std::string why;
        {
          std::lock_guard<std::mutex> guard{st.shared->mtx};
          why = st.shared->last_error;
        }
        return caf::make_error(caf::sec::cannot_connect_to_node,
                               "no connection to the cluster (" + why + ")");
      }
      return self->delegate(st.broker, x.move_content_to_message());
    });
  connect_next(self);
  self->delayed_send(self, milliseconds(peer_refresh_ms), peers_atom::value);
  return {
    [self](reconnect_atom) {
      if (!self->state.broker && !self->state.connecting)
        connect_next(self);
    },
    [self](peers_atom) {
      connect_peers(self);
      self->delayed_send(self, milliseconds(peer_refresh_ms), peers_atom::value);
    },
  };
}

} // namespace

std::shared_ptr<remote_cluster>
connect_remote(const properties& props, const std::function<void(const properties& rest)>& validate) {
  auto rest = props;
  auto c = client_connection_config::take(rest);
  if (!c.ok())
    throw kafka_exception(c.error(), error_class::fatal);
  validate(rest);
  return std::make_shared<remote_cluster>(std::move(c).value());
}

void watch_metadata(client_channel& ch, const std::shared_ptr<remote_cluster>& cluster) {
  ch.set_metadata_source([cluster] { return cluster->generation(); },
                         cluster->config().metadata_max_age_ms);
  ch.set_relay_target([cluster] { return cluster->current_broker(); });
}

remote_cluster::remote_cluster(client_connection_config cfg) : cfg_(std::move(cfg)) {
  sys_cfg_ = std::make_unique<caf::actor_system_config>();
  configure_middleman(*sys_cfg_, cfg_.middleman);
  sys_ = std::make_unique<caf::actor_system>(*sys_cfg_);
  shared_ = std::make_shared<shared>();
  relay_ = sys_->spawn(relay_fn, cfg_, shared_);
  std::unique_lock<std::mutex> lock{shared_->mtx};
  shared_->cv.wait_for(lock, milliseconds(cfg_.socket_connection_setup_timeout_ms),
                       [this] { return shared_->generation.load() > 0; });
}

remote_cluster::~remote_cluster() {
  // No new connects; the running ones end within their timeout.
  {
    std::unique_lock<std::mutex> lock{shared_->mtx};
    shared_->stopping = true;
    shared_->cv.wait_for(lock, milliseconds(cfg_.socket_connection_setup_timeout_ms + 1000),
                         [this] { return shared_->connects_in_flight == 0; });
  }
  caf::anon_send_exit(relay_, caf::exit_reason::user_shutdown);
  relay_ = nullptr;
}

caf::strong_actor_ptr remote_cluster::current_broker() const {
  std::lock_guard<std::mutex> guard{shared_->mtx};
  return shared_->broker;
}

uint64_t remote_cluster::generation() const {
  return shared_->generation.load();
}

} // namespace caftx::detail
