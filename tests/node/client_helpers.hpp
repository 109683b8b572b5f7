// Clients of the process tests (tests/node/, tests/cluster/): properties
// of a client that knows only bootstrap.servers, with the short middleman
// timeouts the tests' nodes use, and read_committed reads.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "node_process.hpp"

namespace caftx::testing {

/// bootstrap.servers = `servers`, heartbeats every 200 ms, a silent peer
/// dropped after 2 s, reconnects backed off up to 200 ms; `extra` on top.
inline properties remote_client_props(const std::string& servers, const properties& extra = {}) {
  properties p{{"bootstrap.servers", servers},
               {"caftx.middleman.heartbeat.interval.ms", "200"},
               {"caftx.middleman.connection.timeout.ms", "2000"},
               {"reconnect.backoff.max.ms", "200"}};
  for (auto& [k, v] : extra)
    p[k] = v;
  return p;
}

/// Every record of `tps` a read_committed consumer built from `props` sees
/// from the earliest offset, as "partition:value": polled until `expected`
/// arrived (up to 30 s), then once more, so that a record beyond them
/// shows up too.
inline std::multiset<std::string> read_committed_records(properties props,
                                                         const std::vector<topic_partition>& tps,
                                                         size_t expected) {
  using namespace std::chrono_literals;
  props["isolation.level"] = "read_committed";
  props["auto.offset.reset"] = "earliest";
  consumer c{props};
  c.assign(tps);
  std::multiset<std::string> got;
  auto take = [&](std::chrono::milliseconds wait) {
    for (auto& r : c.poll(wait))
      got.insert(std::to_string(r.partition) + ":" + r.value);
  };
  wait_until(
    [&] {
      take(100ms);
      return got.size() >= expected;
    },
    30s);
  take(200ms);
  return got;
}

/// Calls abort_transaction() until it returns (up to `deadline`), as a
/// user does after retriable errors; `errors` gets each error met.
inline bool abort_until_done(producer& p, std::chrono::milliseconds deadline,
                             std::vector<std::string>& errors) {
  return wait_until(
    [&] {
      try {
        p.abort_transaction();
        return true;
      } catch (const kafka_exception& e) {
        errors.push_back(e.what());
        return false;
      }
    },
    deadline);
}

/// Commits the open transaction of a producer another one with its
/// transactional.id fenced: the commit must fail fatally, with
/// PRODUCER_FENCED (or INVALID_PRODUCER_EPOCH when a partition saw the new
/// epoch first).
inline void expect_commit_fenced(producer& zombie) {
  try {
    zombie.commit_transaction();
    ADD_FAILURE() << "the zombie committed";
  } catch (const kafka_exception& e) {
    EXPECT_TRUE(e.code() == error_code::producer_fenced
                || e.code() == error_code::invalid_producer_epoch)
      << e.what();
    EXPECT_TRUE(e.is_fatal()) << e.what();
  }
}

} // namespace caftx::testing
