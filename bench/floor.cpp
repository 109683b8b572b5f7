// The floor of this machine, measured at the start and the end of a run:
// fsync of 4 KiB appends, LevelDB synchronous puts from 1 and 64 writers
// (LevelDB group-commits concurrent writers), and a CAF local round trip
// (an event-based actor asking another, and a blocking caller asking an
// actor, as caftx's clients do).
#include "bench/suite.hpp"

#include <atomic>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <leveldb/db.h>

#include "runtime/messages.hpp"

namespace caftx::bench {

namespace {

struct bench_config : caf::actor_system_config {
  bench_config() { register_message_types(*this); }
};

// Synchronous puts/s into a fresh LevelDB database from `writers` threads.
double leveldb_sync_puts(const std::string& dir, int writers, int puts_per_writer) {
  leveldb::Options o;
  o.create_if_missing = true;
  leveldb::DB* raw = nullptr;
  auto st = leveldb::DB::Open(o, dir, &raw);
  if (!st.ok())
    throw std::runtime_error("LevelDB open " + dir + ": " + st.ToString());
  std::unique_ptr<leveldb::DB> db{raw};
  std::string value(100, 'v');
  std::atomic<bool> failed{false};
  auto t0 = clock_type::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      leveldb::WriteOptions wo;
      wo.sync = true;
      for (int i = 0; i < puts_per_writer; ++i)
        if (!db->Put(wo, "k" + std::to_string(w) + "-" + std::to_string(i), value).ok())
          failed = true;
    });
  for (auto& t : threads)
    t.join();
  auto ms = ms_since(t0);
  if (failed)
    throw std::runtime_error("LevelDB put failed in " + dir);
  db.reset();
  leveldb::DestroyDB(dir, leveldb::Options{});
  return writers * puts_per_writer / (ms / 1000);
}

caf::behavior pong(caf::event_based_actor*) {
  return {[](int32_t x) { return x + 1; }};
}

// Asks `target` n times in a row, then answers the one who started it.
caf::behavior ping(caf::event_based_actor* self, caf::actor target) {
  return {[=](int32_t n) -> caf::result<int32_t> {
    auto rp = self->make_response_promise<int32_t>();
    auto step = std::make_shared<std::function<void(int32_t)>>();
    *step = [=](int32_t left) mutable {
      if (left == 0) {
        rp.deliver(n);
        return;
      }
      self->request(target, caf::infinite, left).then([=](int32_t) { (*step)(left - 1); });
    };
    (*step)(n);
    return rp;
  }};
}

} // namespace

namespace {

std::unique_ptr<bench_config> system_config;
std::unique_ptr<caf::actor_system> system_instance;

} // namespace

caf::actor_system& shared_system() {
  if (!system_instance) {
    system_config = std::make_unique<bench_config>();
    system_instance = std::make_unique<caf::actor_system>(*system_config);
  }
  return *system_instance;
}

void stop_shared_system() {
  system_instance.reset(); // waits for every actor to terminate
  system_config.reset();
}

floor_figures measure_floor(const context& ctx) {
  floor_figures f;
  f.fsync_ms = fsync_appends(ctx.dir, ctx.quick ? 20 : 200);
  f.leveldb_sync_1 = leveldb_sync_puts(ctx.dir + "/floor-leveldb-1", 1, ctx.quick ? 20 : 400);
  f.leveldb_sync_64 = leveldb_sync_puts(ctx.dir + "/floor-leveldb-64", 64, ctx.quick ? 2 : 40);
  auto& sys = shared_system();
  auto target = sys.spawn(pong);
  auto pinger = sys.spawn(ping, target);
  caf::scoped_actor self{sys};
  int32_t n = ctx.quick ? 1000 : 50000;
  // Event-based: one untimed warm-up round, then the timed one.
  for (int round = 0; round < 2; ++round) {
    auto t0 = clock_type::now();
    self->request(pinger, caf::infinite, n).receive([](int32_t) {}, [](caf::error&) {});
    if (round == 1)
      f.caf_round_trip_us = ms_since(t0) * 1000 / n;
  }
  int32_t m = ctx.quick ? 200 : 5000;
  auto t0 = clock_type::now();
  for (int32_t i = 0; i < m; ++i)
    self->request(target, caf::infinite, i).receive([](int32_t) {}, [](caf::error&) {});
  f.caf_blocking_us = ms_since(t0) * 1000 / m;
  self->send_exit(pinger, caf::exit_reason::user_shutdown);
  self->send_exit(target, caf::exit_reason::user_shutdown);
  return f;
}

} // namespace caftx::bench
