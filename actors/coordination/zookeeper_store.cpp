#include "actors/coordination/zookeeper_store.hpp"

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/response_promise.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "actors/common/pending_replies.hpp"
#include "runtime/coordination_messages.hpp"

namespace caftx {

std::pair<std::string, std::string> split_zookeeper_connect(const std::string& connect) {
  auto slash = connect.find('/');
  if (slash == std::string::npos)
    return {connect, {}};
  auto chroot = connect.substr(slash);
  while (chroot.size() > 1 && chroot.back() == '/')
    chroot.pop_back();
  return {connect.substr(0, slash), chroot == "/" ? std::string{} : chroot};
}

namespace {

// zrc is ZooKeeper's ZOO_ERRORS, number for number: codes pass through.
static_assert(static_cast<int>(zrc::ZOK) == ZOK);
static_assert(static_cast<int>(zrc::ZRUNTIMEINCONSISTENCY) == ZRUNTIMEINCONSISTENCY);
static_assert(static_cast<int>(zrc::ZCONNECTIONLOSS) == ZCONNECTIONLOSS);
static_assert(static_cast<int>(zrc::ZOPERATIONTIMEOUT) == ZOPERATIONTIMEOUT);
static_assert(static_cast<int>(zrc::ZBADARGUMENTS) == ZBADARGUMENTS);
static_assert(static_cast<int>(zrc::ZINVALIDSTATE) == ZINVALIDSTATE);
static_assert(static_cast<int>(zrc::ZNONODE) == ZNONODE);
static_assert(static_cast<int>(zrc::ZBADVERSION) == ZBADVERSION);
static_assert(static_cast<int>(zrc::ZNOCHILDRENFOREPHEMERALS) == ZNOCHILDRENFOREPHEMERALS);
static_assert(static_cast<int>(zrc::ZNODEEXISTS) == ZNODEEXISTS);
static_assert(static_cast<int>(zrc::ZNOTEMPTY) == ZNOTEMPTY);
static_assert(static_cast<int>(zrc::ZSESSIONEXPIRED) == ZSESSIONEXPIRED);
static_assert(static_cast<int>(zrc::ZCLOSING) == ZCLOSING);
static_assert(static_cast<int>(zrc::ZTHROTTLEDOP) == ZTHROTTLEDOP);

// -- what the client's threads send to the actor (local only) ---------------

struct zk_call;

// One zhandle_t's context: the watcher's ctx and the owner of the calls it
// has in flight (deleted by their completion, or after zookeeper_close).
struct zk_box {
  caf::weak_actor_ptr self;
  uint64_t generation = 0;
  std::mutex mtx;
  std::set<zk_call*> calls;
  // Set by the opener once zookeeper_init returned, unless the store gave
  // the handle up before (abandoned): then the opener closes it itself.
  zhandle_t* handle = nullptr;
  bool abandoned = false;
  ~zk_box();
};

enum class call_kind : int8_t { create, get, exists, set, remove, children, multi, sync };

// One request in flight; the buffers a multi's results are written to.
struct zk_call {
  zk_box* box = nullptr;
  uint64_t ticket = 0;
  std::vector<coord_op> ops;
  std::vector<zoo_op_t> zops;
  std::vector<zoo_op_result_t> results;
  std::vector<std::vector<char>> path_bufs;
  std::vector<Stat> stats;
};

zk_box::~zk_box() {
  for (auto c : calls)
    delete c;
}

// A completion, as a message to the actor.
struct zk_done {
  uint64_t generation = 0;
  uint64_t ticket = 0;
  int32_t rc = 0;
  std::string data; // get: data; create, sync: the path
  znode_stat stat;
  std::vector<std::string> children;
  std::vector<coord_op_result> results;
};

// A watcher call, as a message to the actor.
struct zk_event {
  uint64_t generation = 0;
  int32_t type = 0;
  int32_t state = 0;
  std::string path;
  int64_t session_id = 0;
  std::string password;
};

// zookeeper_init of a generation returned (the handle is in its box).
struct zk_opened {
  uint64_t generation = 0;
};

// zookeeper_close of a generation returned.
struct zk_closed {
  uint64_t generation = 0;
};

// The close's wait for in-flight requests is over.
struct zk_close_deadline {};

// A request's last moment: unanswered by then, it is answered
// ZCONNECTIONLOSS (outcome unknown) whatever the client does later.
struct zk_request_deadline {
  uint64_t generation = 0;
  uint64_t ticket = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, zk_done& x) {
  return f(caf::meta::type_name("caftx::zk_done"), x.generation, x.ticket, x.rc, x.data, x.stat,
           x.children, x.results);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, zk_event& x) {
  return f(caf::meta::type_name("caftx::zk_event"), x.generation, x.type, x.state, x.path,
           x.session_id, x.password);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, zk_opened& x) {
  return f(caf::meta::type_name("caftx::zk_opened"), x.generation);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, zk_closed& x) {
  return f(caf::meta::type_name("caftx::zk_closed"), x.generation);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, zk_close_deadline&) {
  return f(caf::meta::type_name("caftx::zk_close_deadline"));
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, zk_request_deadline& x) {
  return f(caf::meta::type_name("caftx::zk_request_deadline"), x.generation, x.ticket);
}

void send_to(const caf::weak_actor_ptr& self, zk_done msg) {
  if (auto p = self.lock())
    caf::anon_send(caf::actor_cast<caf::actor>(p), std::move(msg));
}

znode_stat to_stat(const Stat* s) {
  znode_stat st;
  if (s == nullptr)
    return st;
  st.czxid = s->czxid;
  st.mzxid = s->mzxid;
  st.pzxid = s->pzxid;
  st.ctime = s->ctime;
  st.mtime = s->mtime;
  st.version = s->version;
  st.cversion = s->cversion;
  st.aversion = s->aversion;
  st.ephemeral_owner = s->ephemeralOwner;
  st.data_length = s->dataLength;
  st.num_children = s->numChildren;
  return st;
}

// -- callbacks: on ZooKeeper's completion thread; forward and return --------

// Takes `data` (a zk_call) back from its box; the caller deletes it.
zk_call* take_call(const void* data, zk_done& msg) {
  auto call = static_cast<zk_call*>(const_cast<void*>(data));
  {
    std::lock_guard<std::mutex> guard{call->box->mtx};
    call->box->calls.erase(call);
  }
  msg.generation = call->box->generation;
  msg.ticket = call->ticket;
  return call;
}

void finish(zk_call* call, zk_done msg) {
  auto self = call->box->self;
  delete call;
  send_to(self, std::move(msg));
}

void on_void(int rc, const void* data) {
  zk_done msg;
  auto call = take_call(data, msg);
  msg.rc = rc;
  finish(call, std::move(msg));
}

void on_string(int rc, const char* value, const void* data) {
  zk_done msg;
  auto call = take_call(data, msg);
  msg.rc = rc;
  if (rc == ZOK && value != nullptr)
    msg.data = value;
  finish(call, std::move(msg));
}

void on_string_stat(int rc, const char* value, const Stat* stat, const void* data) {
  zk_done msg;
  auto call = take_call(data, msg);
  msg.rc = rc;
  if (rc == ZOK && value != nullptr)
    msg.data = value;
  if (rc == ZOK)
    msg.stat = to_stat(stat);
  finish(call, std::move(msg));
}

void on_stat(int rc, const Stat* stat, const void* data) {
  zk_done msg;
  auto call = take_call(data, msg);
  msg.rc = rc;
  if (rc == ZOK)
    msg.stat = to_stat(stat);
  finish(call, std::move(msg));
}

void on_data(int rc, const char* value, int len, const Stat* stat, const void* data) {
  zk_done msg;
  auto call = take_call(data, msg);
  msg.rc = rc;
  if (rc == ZOK) {
    if (value != nullptr && len > 0)
      msg.data.assign(value, static_cast<size_t>(len));
    msg.stat = to_stat(stat);
  }
  finish(call, std::move(msg));
}

void on_children(int rc, const String_vector* strings, const Stat* stat, const void* data) {
  zk_done msg;
  auto call = take_call(data, msg);
  msg.rc = rc;
  if (rc == ZOK) {
    if (strings != nullptr)
      for (int32_t i = 0; i < strings->count; ++i)
        msg.children.emplace_back(strings->data[i]);
    std::sort(msg.children.begin(), msg.children.end());
    msg.stat = to_stat(stat);
  }
  finish(call, std::move(msg));
}

// Marks a result the client never filled in (the request did not reach a
// reply: connection loss, expiry, close).
constexpr int unfilled = 1;

void on_multi(int rc, const void* data) {
  zk_done msg;
  auto call = take_call(data, msg);
  msg.rc = rc;
  bool filled = std::none_of(call->results.begin(), call->results.end(),
                             [](const zoo_op_result_t& r) { return r.err == unfilled; });
  if (filled) {
    for (size_t i = 0; i < call->ops.size(); ++i) {
      coord_op_result r;
      r.rc = static_cast<zrc>(call->results[i].err);
      if (r.rc == zrc::ZOK && call->ops[i].kind == coord_op::create)
        r.path = call->path_bufs[i].data();
      if (r.rc == zrc::ZOK && call->ops[i].kind == coord_op::set)
        r.stat = to_stat(&call->stats[i]);
      msg.results.push_back(std::move(r));
    }
  }
  finish(call, std::move(msg));
}

void on_watch(zhandle_t* zh, int type, int state, const char* path, void* ctx) {
  auto box = static_cast<zk_box*>(ctx);
  if (box == nullptr)
    return;
  zk_event ev{box->generation, type, state, path != nullptr ? path : "", 0, {}};
  if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
    if (auto id = zoo_client_id(zh)) {
      ev.session_id = id->client_id;
      ev.password.assign(id->passwd, sizeof(id->passwd));
    }
  }
  if (auto p = box->self.lock())
    caf::anon_send(caf::actor_cast<caf::actor>(p), std::move(ev));
}

void on_watch_ignore(zhandle_t*, int, int, const char*, void*) {}

// -- blocking calls, on a blocking actor of their own --------------------------

// Creates `chroot` and its parents over a session without chroot; ZNODEEXISTS
// is fine. A connection lost meanwhile (a server that just started may drop
// the first connections) is retried until twice the session timeout has
// passed. Errors go to stderr: requests then answer ZNONODE.
void ensure_chroot(const std::string& hosts, const std::string& chroot, int timeout_ms) {
  auto zh = zookeeper_init(hosts.c_str(), on_watch_ignore, timeout_ms, nullptr, nullptr, 0);
  if (zh == nullptr) {
    std::fprintf(stderr, "caftx: ZooKeeper %s: zookeeper_init failed\n", hosts.c_str());
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2 * timeout_ms);
  for (size_t pos = 1; pos <= chroot.size(); ++pos) {
    if (pos != chroot.size() && chroot[pos] != '/')
      continue;
    auto prefix = chroot.substr(0, pos);
    int rc;
    for (;;) {
      // The sync call fails at once while the handle is not connected.
      while (zoo_state(zh) != ZOO_CONNECTED_STATE && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10)); // a blocking actor's own thread
      rc = zoo_create(zh, prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
      if ((rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT)
          || std::chrono::steady_clock::now() >= deadline)
        break;
    }
    if (rc != ZOK && rc != ZNODEEXISTS) {
      std::fprintf(stderr, "caftx: ZooKeeper %s: creating chroot %s: %s\n", hosts.c_str(),
                   prefix.c_str(), zerror(rc));
      break;
    }
  }
  zookeeper_close(zh);
}

// -- the actor --------------------------------------------------------------

struct zk_pending {
  caf::response_promise rp;
  call_kind kind;
};

struct zk_state {
  zookeeper_store_options opts;
  std::string hosts;
  std::string chroot;
  bool chroot_created = false;
  uint64_t generation = 0;
  zhandle_t* zh = nullptr;           // of `generation`, once opened
  std::shared_ptr<zk_box> box;       // of `generation`
  session_state state = session_state::connecting;
  bool expired = false;              // between expiry and the next session
  int64_t session_id = 0;
  std::string password;
  uint64_t next_ticket = 1;
  std::map<uint64_t, zk_pending> pending;
  bool closing = false;
  std::optional<caf::response_promise> close_rp;
  // The drill hook cut the node off from ZooKeeper (actors/broker/
  // network_drill.hpp): the client connects to nowhere until healed.
  bool drill_cut = false;
  // Which cut or heal is the latest (its blocking actor stops otherwise).
  std::shared_ptr<std::atomic<uint64_t>> drill_seq = std::make_shared<std::atomic<uint64_t>>(0);
  caf::actor_system* sys = nullptr;
  // Hands the open handle to a blocking actor that closes it.
  void close_handle(bool notify);
  ~zk_state() {
    for (auto& [t, p] : pending)
      p.rp.deliver(caf::make_error(caf::sec::request_receiver_down));
    close_handle(false);
  }
  static inline const char* name = "coordination_zookeeper_store";
};

using zk_ptr = caf::stateful_actor<zk_state>*;

void zk_state::close_handle(bool notify) {
  auto b = box;
  zh = nullptr;
  box.reset();
  if (b == nullptr)
    return;
  caf::actor self;
  if (notify)
    if (auto p = b->self.lock())
      self = caf::actor_cast<caf::actor>(p);
  auto gen = b->generation;
  zhandle_t* h;
  {
    std::lock_guard<std::mutex> guard{b->mtx};
    h = b->handle;
    b->handle = nullptr;
    b->abandoned = true; // still opening: the opener closes it
  }
  if (h == nullptr) {
    if (self)
      caf::anon_send(self, zk_closed{gen});
    return;
  }
  // zookeeper_close joins the client's threads: never on a scheduler thread,
  // never inside a callback. The box (watcher context, calls never
  // completed) lives until it returned.
  sys->spawn([h, b, self, gen](caf::blocking_actor*) {
    if (h != nullptr)
      zookeeper_close(h);
    if (self)
      caf::anon_send(self, zk_closed{gen});
  });
}

// Where a client cut off by the drill hook connects: ports nothing listens
// on, so every attempt is refused at once. More addresses than the
// ensemble has (`extra` more): a new list the client takes for the one it
// has is ignored.
std::string drill_nowhere(const std::string& hosts, int extra = 1) {
  auto n = 1 + std::count(hosts.begin(), hosts.end(), ',');
  std::string out;
  for (long i = 1; i <= n + extra; ++i)
    out += (out.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(i);
  return out;
}

// Points the open handle at the ensemble again, or at nowhere: a client
// whose server is no longer in its list drops the connection (zoo_set_servers),
// as a network partition would; its session then expires on the ensemble
// unless healed within the session timeout. The client (3.8) does not
// always act on a new list (its own re-resolution of the old one can
// overtake it), so the list is set again, alternating its length, until
// the connection is gone (cut) or back (healed: connected, or told the
// session expired), for at most twice the session timeout, unless a later
// cut or heal took over. On a blocking actor of its own: the calls take
// the client's locks and it sleeps between them.
void apply_drill_cut(zk_ptr self) {
  auto& st = self->state;
  auto box = st.box;
  if (box == nullptr)
    return; // the next handle opens with the cut applied
  auto seq = ++*st.drill_seq;
  auto latest = st.drill_seq;
  auto cut = st.drill_cut;
  auto hosts = st.hosts;
  auto deadline = std::chrono::steady_clock::now()
                  + std::chrono::milliseconds(2 * st.opts.session_timeout_ms);
  st.sys->spawn([box, seq, latest, cut, hosts, deadline](caf::blocking_actor*) {
    for (int attempt = 0; *latest == seq && std::chrono::steady_clock::now() < deadline;
         ++attempt) {
      {
        std::lock_guard<std::mutex> guard{box->mtx};
        if (box->handle == nullptr)
          return;
        auto state = zoo_state(box->handle);
        bool connected = state == ZOO_CONNECTED_STATE;
        if (attempt > 0 && (cut ? !connected : connected || state == ZOO_EXPIRED_SESSION_STATE))
          return;
        auto servers = cut ? drill_nowhere(hosts, 1 + attempt % 2) : hosts;
        zoo_set_servers(box->handle, servers.c_str());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

void open_handle(zk_ptr self) {
  auto& st = self->state;
  st.generation += 1;
  st.box = std::make_shared<zk_box>();
  st.box->self = caf::weak_actor_ptr{self->ctrl()};
  st.box->generation = st.generation;
  st.state = session_state::connecting;
  auto box = st.box;
  auto connect = st.drill_cut ? drill_nowhere(st.hosts) + st.chroot : st.opts.connect;
  auto hosts = st.hosts;
  auto chroot = st.chroot_created ? std::string{} : st.chroot;
  st.chroot_created = true;
  auto timeout = st.opts.session_timeout_ms;
  st.sys->spawn([box, connect, hosts, chroot, timeout](caf::blocking_actor*) {
    if (!chroot.empty())
      ensure_chroot(hosts, chroot, timeout);
    auto h = zookeeper_init(connect.c_str(), on_watch, timeout, nullptr, box.get(), 0);
    if (h == nullptr) {
      std::fprintf(stderr, "caftx: ZooKeeper %s: zookeeper_init failed\n", connect.c_str());
      return;
    }
    bool abandoned;
    {
      std::lock_guard<std::mutex> guard{box->mtx};
      abandoned = box->abandoned;
      if (!abandoned)
        box->handle = h;
    }
    if (abandoned) {
      zookeeper_close(h); // the box lives until this returned
      return;
    }
    if (auto p = box->self.lock())
      caf::anon_send(caf::actor_cast<caf::actor>(p), zk_opened{box->generation});
  });
}

caf::message reply_of(call_kind kind, zk_done& d) {
  auto rc = static_cast<zrc>(d.rc);
  switch (kind) {
    case call_kind::create:
      return caf::make_message(coord_create_response{rc, std::move(d.data), d.stat});
    case call_kind::get:
      return caf::make_message(coord_get_response{rc, std::move(d.data), d.stat});
    case call_kind::exists:
    case call_kind::set:
      return caf::make_message(coord_stat_response{rc, d.stat});
    case call_kind::children:
      return caf::make_message(coord_children_response{rc, std::move(d.children), d.stat});
    case call_kind::multi:
      return caf::make_message(coord_multi_response{rc, std::move(d.results)});
    case call_kind::remove:
    case call_kind::sync:
      break;
  }
  return caf::make_message(coord_rc_response{rc});
}

caf::message reply_of(call_kind kind, zrc rc) {
  zk_done d;
  d.rc = static_cast<int32_t>(rc);
  return reply_of(kind, d);
}

void finish_close(zk_ptr self) {
  auto& st = self->state;
  for (auto& [t, p] : st.pending)
    p.rp.deliver(reply_of(p.kind, zrc::ZCONNECTIONLOSS));
  st.pending.clear();
  if (st.box == nullptr) {
    // Nothing open: done.
    self->send(st.opts.owner, coord_session_event{session_state::closed, st.session_id});
    if (st.close_rp)
      st.close_rp->deliver(caf::make_message(coord_rc_response{}));
    self->quit();
    return;
  }
  st.close_handle(true);
}

// The rc a request gets at once, if it cannot be sent now.
std::optional<zrc> unavailable(zk_ptr self) {
  auto& st = self->state;
  if (st.closing)
    return zrc::ZCLOSING;
  if (st.expired)
    return zrc::ZSESSIONEXPIRED;
  if (st.zh == nullptr || st.state != session_state::connected)
    return zrc::ZCONNECTIONLOSS;
  return std::nullopt;
}

// Sends one request: `submit(zh, call)` calls the zoo_a* function.
template <class Submit>
caf::result<caf::message> issue(zk_ptr self, call_kind kind, Submit submit,
                                std::vector<coord_op> ops = {}) {
  if (auto rc = unavailable(self))
    return reply_of(kind, *rc);
  auto& st = self->state;
  auto call = new zk_call;
  call->box = st.box.get();
  auto ticket = st.next_ticket++;
  call->ticket = ticket;
  call->ops = std::move(ops);
  {
    std::lock_guard<std::mutex> guard{st.box->mtx};
    st.box->calls.insert(call);
  }
  // Once the client queued the request, `call` belongs to the completion
  // thread, which may answer and delete it before `submit` returns: only
  // the local copy of the ticket is read after this line.
  auto rc = submit(st.zh, call);
  if (rc != ZOK) {
    // Not queued: no completion will come.
    {
      std::lock_guard<std::mutex> guard{st.box->mtx};
      st.box->calls.erase(call);
    }
    delete call;
    return reply_of(kind, static_cast<zrc>(rc));
  }
  auto rp = self->make_response_promise();
  st.pending.emplace(ticket, zk_pending{rp, kind});
  // The client fails a request of a connection that went quiet within
  // about 2/3 of the session timeout; twice the timeout guards against a
  // completion that never comes, so that no caller waits forever.
  self->delayed_send(self, std::chrono::milliseconds(2 * int64_t{st.opts.session_timeout_ms}),
                     zk_request_deadline{st.generation, ticket});
  return rp;
}

int submit_multi(zhandle_t* zh, zk_call* call) {
  auto n = call->ops.size();
  call->zops.resize(n);
  call->results.resize(n);
  call->path_bufs.resize(n);
  call->stats.resize(n);
  for (size_t i = 0; i < n; ++i) {
    auto& op = call->ops[i];
    call->results[i].err = unfilled;
    switch (op.kind) {
      case coord_op::check:
        zoo_check_op_init(&call->zops[i], op.path.c_str(), op.version);
        break;
      case coord_op::create:
        if ((op.flags & ~(znode_ephemeral | znode_sequential)) != 0)
          return ZBADARGUMENTS;
        call->path_bufs[i].assign(op.path.size() + 32, '\0');
        zoo_create_op_init(&call->zops[i], op.path.c_str(), op.data.data(),
                           static_cast<int>(op.data.size()), &ZOO_OPEN_ACL_UNSAFE, op.flags,
                           call->path_bufs[i].data(), static_cast<int>(call->path_bufs[i].size()));
        break;
      case coord_op::set:
        zoo_set_op_init(&call->zops[i], op.path.c_str(), op.data.data(),
                        static_cast<int>(op.data.size()), op.version, &call->stats[i]);
        break;
      case coord_op::remove:
        zoo_delete_op_init(&call->zops[i], op.path.c_str(), op.version);
        break;
      default:
        return ZBADARGUMENTS;
    }
  }
  return zoo_amulti(zh, static_cast<int>(n), call->zops.data(), call->results.data(), on_multi,
                    call);
}

void on_session_event(zk_ptr self, const zk_event& ev) {
  auto& st = self->state;
  auto& owner = st.opts.owner;
  if (ev.state == ZOO_CONNECTED_STATE) {
    st.state = session_state::connected;
    st.expired = false;
    st.session_id = ev.session_id;
    st.password = ev.password;
    // Told once requests can be sent: if the handle is not known yet,
    // zk_opened tells.
    if (st.zh != nullptr)
      self->send(owner, coord_session_event{session_state::connected, st.session_id});
  } else if (ev.state == ZOO_CONNECTING_STATE || ev.state == ZOO_ASSOCIATING_STATE) {
    if (st.state == session_state::connected)
      self->send(owner, coord_session_event{session_state::connecting, st.session_id});
    st.state = session_state::connecting;
  } else if (ev.state == ZOO_EXPIRED_SESSION_STATE || ev.state == ZOO_AUTH_FAILED_STATE) {
    // Kafka's ZooKeeperClient: close the handle and open a new session;
    // everything of the old one (ephemerals, watches) is gone.
    st.expired = true;
    st.state = session_state::expired;
    self->send(owner, coord_session_event{session_state::expired, st.session_id});
    for (auto& [t, p] : st.pending)
      p.rp.deliver(reply_of(p.kind, zrc::ZSESSIONEXPIRED));
    st.pending.clear();
    st.close_handle(false);
    if (!st.closing)
      open_handle(self);
  }
}

caf::behavior zookeeper_store_fn(zk_ptr self, zookeeper_store_options opts) {
  // The C client's own log is off: with no server reachable it writes a
  // line per connection attempt, hundreds a second. The store reports what
  // matters as session events, and caftx-node names an unreachable
  // ZooKeeper itself (zookeeper.connection.timeout.ms).
  static std::once_flag log_level;
  std::call_once(log_level, [] { zoo_set_debug_level(static_cast<ZooLogLevel>(0)); });
  auto& st = self->state;
  st.sys = &self->system();
  std::tie(st.hosts, st.chroot) = split_zookeeper_connect(opts.connect);
  st.opts = std::move(opts);
  open_handle(self);
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    for (auto& [t, p] : st.pending)
      p.rp.deliver(reply_of(p.kind, zrc::ZCONNECTIONLOSS));
    st.pending.clear();
    if (st.close_rp)
      st.close_rp->deliver(caf::make_message(coord_rc_response{zrc::ZCONNECTIONLOSS}));
    st.close_rp.reset();
    st.close_handle(false);
    self->quit(msg.reason);
  });
  return {
    [=](const zk_opened& o) {
      auto& st = self->state;
      if (o.generation != st.generation || st.box == nullptr)
        return; // given up meanwhile: closed with its box
      zhandle_t* h;
      {
        std::lock_guard<std::mutex> guard{st.box->mtx};
        h = st.box->handle;
      }
      st.zh = h;
      if (h != nullptr && st.state == session_state::connected)
        self->send(st.opts.owner, coord_session_event{session_state::connected, st.session_id});
    },
    [=](const zk_event& ev) {
      auto& st = self->state;
      if (ev.generation != st.generation)
        return; // an old handle's
      if (ev.type == ZOO_SESSION_EVENT) {
        if (!st.closing) // closing: the owner hears `closed` and nothing else
          on_session_event(self, ev);
        return;
      }
      watch_event_type t;
      if (ev.type == ZOO_CREATED_EVENT)
        t = watch_event_type::created;
      else if (ev.type == ZOO_DELETED_EVENT)
        t = watch_event_type::deleted;
      else if (ev.type == ZOO_CHANGED_EVENT)
        t = watch_event_type::changed;
      else if (ev.type == ZOO_CHILD_EVENT)
        t = watch_event_type::child;
      else
        return; // ZOO_NOTWATCHING_EVENT
      self->send(st.opts.owner, coord_watch_event{t, ev.path});
    },
    [=](zk_done& d) {
      auto& st = self->state;
      auto i = st.pending.find(d.ticket);
      if (d.generation != st.generation || i == st.pending.end())
        return; // answered already (expiry, close)
      auto p = std::move(i->second);
      st.pending.erase(i);
      // The C client fails requests of a connection that timed out with
      // ZOPERATIONTIMEOUT; ZooKeeper's Java client (Kafka's) reports
      // CONNECTIONLOSS there. Both mean: outcome unknown.
      if (d.rc == ZOPERATIONTIMEOUT)
        d.rc = ZCONNECTIONLOSS;
      p.rp.deliver(reply_of(p.kind, d));
      if (st.closing && st.pending.empty() && st.box != nullptr)
        finish_close(self);
    },
    [=](const zk_closed& c) {
      auto& st = self->state;
      if (!st.closing || c.generation != st.generation)
        return;
      self->send(st.opts.owner, coord_session_event{session_state::closed, st.session_id});
      if (st.close_rp)
        st.close_rp->deliver(caf::make_message(coord_rc_response{}));
      st.close_rp.reset();
      self->quit();
    },
    [=](const zk_request_deadline& d) {
      auto& st = self->state;
      auto i = st.pending.find(d.ticket);
      if (d.generation != st.generation || i == st.pending.end())
        return; // answered
      auto p = std::move(i->second);
      st.pending.erase(i);
      p.rp.deliver(reply_of(p.kind, zrc::ZCONNECTIONLOSS));
      if (st.closing && st.pending.empty() && st.box != nullptr)
        finish_close(self);
    },
    [=](const zk_close_deadline&) {
      if (self->state.closing && self->state.box != nullptr)
        finish_close(self);
    },
    [=](zookeeper_drill_cut_atom, bool cut) {
      auto& st = self->state;
      if (st.drill_cut == cut)
        return;
      st.drill_cut = cut;
      apply_drill_cut(self);
    },
    [=](const coord_create_request& req) {
      auto flags = req.flags;
      if ((flags & ~(znode_ephemeral | znode_sequential)) != 0)
        return caf::result<caf::message>{
          caf::make_message(coord_create_response{zrc::ZBADARGUMENTS, {}, {}})};
      return issue(self, call_kind::create, [req](zhandle_t* zh, zk_call* call) {
        return zoo_acreate2(zh, req.path.c_str(), req.data.data(),
                            static_cast<int>(req.data.size()), &ZOO_OPEN_ACL_UNSAFE, req.flags,
                            on_string_stat, call);
      });
    },
    [=](const coord_get_request& req) {
      return issue(self, call_kind::get, [req](zhandle_t* zh, zk_call* call) {
        return zoo_aget(zh, req.path.c_str(), req.watch ? 1 : 0, on_data, call);
      });
    },
    [=](const coord_exists_request& req) {
      return issue(self, call_kind::exists, [req](zhandle_t* zh, zk_call* call) {
        return zoo_aexists(zh, req.path.c_str(), req.watch ? 1 : 0, on_stat, call);
      });
    },
    [=](const coord_set_request& req) {
      return issue(self, call_kind::set, [req](zhandle_t* zh, zk_call* call) {
        return zoo_aset(zh, req.path.c_str(), req.data.data(), static_cast<int>(req.data.size()),
                        req.version, on_stat, call);
      });
    },
    [=](const coord_delete_request& req) {
      return issue(self, call_kind::remove, [req](zhandle_t* zh, zk_call* call) {
        return zoo_adelete(zh, req.path.c_str(), req.version, on_void, call);
      });
    },
    [=](const coord_get_children_request& req) {
      return issue(self, call_kind::children, [req](zhandle_t* zh, zk_call* call) {
        return zoo_aget_children2(zh, req.path.c_str(), req.watch ? 1 : 0, on_children, call);
      });
    },
    [=](const coord_multi_request& req) {
      if (req.ops.empty() && !unavailable(self))
        return caf::result<caf::message>{caf::make_message(coord_multi_response{})};
      return issue(self, call_kind::multi, submit_multi, req.ops);
    },
    [=](const coord_sync_request& req) {
      return issue(self, call_kind::sync, [req](zhandle_t* zh, zk_call* call) {
        return zoo_async(zh, req.path.c_str(), on_string, call);
      });
    },
    [=](const coord_session_request&) {
      auto& st = self->state;
      return coord_session_response{st.closing ? session_state::closed : st.state,
                                    st.session_id, st.password};
    },
    [=](const coord_close_request&) -> caf::result<caf::message> {
      auto& st = self->state;
      if (st.closing)
        return caf::make_message(coord_rc_response{zrc::ZCLOSING});
      st.closing = true;
      auto rp = self->make_response_promise();
      st.close_rp = rp;
      if (st.pending.empty())
        finish_close(self);
      else
        self->delayed_send(self, std::chrono::milliseconds(st.opts.session_timeout_ms),
                           zk_close_deadline{});
      return rp;
    },
  };
}

} // namespace

caf::actor spawn_zookeeper_store(caf::actor_system& sys, zookeeper_store_options opts) {
  return sys.spawn(zookeeper_store_fn, std::move(opts));
}

} // namespace caftx
