// How long a coordinator shard takes to load its cards from its partition
// of `__transaction_state`, against a bare scan of the same partition.
//
// For each size, one shard's partition in a fresh LevelDB database is
// filled with that many cards of transactional ids that hash to the shard,
// 1-3 partitions each, one record per id as compaction leaves the
// partition: each a RecordBatch v2 as the coordinator appends it (key
// TransactionLogKey, value TransactionLogValue) under its log key, as the
// partition stores it (unsynced, in write batches).
// Then, interleaved A B A B ... in one run:
//   A  a bare scan: one LevelDB iterator over the partition's log, keys
//      and values touched, nothing decoded;
//   B  the shard's load path: the partition's read (a floor seek, each
//      batch's CRC checked, batches concatenated into 1 MiB fetches) fed to
//      txn_state_loader::next_chunk into a fresh txn_coordinator_core,
//      caftx.coordinator.load.chunk.cards (1000) at a time, as the
//      coordinator actor does (decode, check, install).
// Printed per size: median and min-max of each, and B/A of the medians
// (target: B <= 2 x A). The machine may be shared and noisy; only the
// ratio, measured side by side, is meant to be compared.
//
// Usage: caftx-bench-coordinator-load [--max-ids N] [--reps N] [--json]
//   --max-ids N  leave out the sizes above N (10 000, 100 000, 1 000 000);
//                if N is below all of them, measure N ids alone
//   --reps N     repetitions of A and of B per size (default 5, at least 1)
//   --json       one JSON object instead of the table
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <leveldb/write_batch.h>
#include <nlohmann/json.hpp>

#include "actors/coordinator/txn_coordinator_core.hpp"
#include "bench/stats.hpp"
#include "actors/coordinator/txn_state_loader.hpp"
#include "runtime/coordinator_records.hpp"
#include "runtime/partitioner.hpp"
#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"

namespace {

using namespace caftx;
using bench::summarize;
using bench::summary;

constexpr int32_t shard = 17;
constexpr int32_t shard_count = 50;
constexpr size_t chunk_cards = 1000; // the default caftx.coordinator.load.chunk.cards
constexpr double target_ratio = 2.0;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "caftx-bench-coordinator-load: %s\n", what.c_str());
  std::exit(1);
}

// Ids as applications name their transactional producers: an application
// name, an instance and a task, only those hashing to `shard`.
class id_source {
public:
  std::string next() {
    static const char* apps[] = {"orders-enricher", "payments-settlement", "inventory-sync",
                                 "fraud-scoring", "shipment-tracker"};
    for (;;) {
      // The instance is a bijection of the running number: ids never repeat.
      char buf[96];
      std::snprintf(buf, sizeof(buf), "%s-%08x-%u", apps[n_ % 5],
                    static_cast<uint32_t>(n_ * 2654435761u), static_cast<unsigned>(n_ % 64));
      ++n_;
      if (partition_for(buf, shard_count) == shard)
        return buf;
    }
  }

private:
  uint64_t n_ = 0;
};

txn_card make_card(const std::string& tid, std::mt19937& rng, int64_t k) {
  static const char* topics[] = {"orders", "payments", "inventory-events", "shipments"};
  txn_card c;
  c.transactional_id = tid;
  c.pid = producer_id{shard + shard_count * k};
  c.epoch = producer_epoch{static_cast<int16_t>(rng() % 40)};
  c.txn_timeout_ms = 60000;
  auto roll = rng() % 20;
  c.state = roll == 0 ? txn_state::prepare_commit
            : roll == 1 ? txn_state::prepare_abort
                        : txn_state::ongoing;
  auto parts = 1 + rng() % 3;
  for (size_t i = 0; i < parts; ++i)
    c.partitions.push_back({topics[rng() % 4], static_cast<int32_t>(rng() % 64)});
  std::sort(c.partitions.begin(), c.partitions.end());
  c.partitions.erase(std::unique(c.partitions.begin(), c.partitions.end()), c.partitions.end());
  c.txn_start_ms = 1700000000000 + static_cast<int64_t>(rng() % 1000000);
  c.last_update_ms = c.txn_start_ms + 250;
  return c;
}

const topic_partition partition{transaction_state_topic, shard};

// Appends `n` cards to the shard's partition; returns their batch bytes.
size_t fill(node_store& store, size_t n) {
  id_source ids;
  std::mt19937 rng{7};
  size_t bytes = 0;
  leveldb::WriteBatch wb;
  for (size_t i = 0; i < n; ++i) {
    auto card = make_card(ids.next(), rng, static_cast<int64_t>(i));
    record_batch b;
    b.records.push_back({coordinator_records::encode_txn_key(card.transactional_id),
                         coordinator_records::encode_txn_value(card), {}, card.last_update_ms});
    auto batch = v2::encode(b);
    v2::stamp(batch, static_cast<int64_t>(i), 0);
    bytes += batch.size();
    wb.Put(keys::log_entry(partition, static_cast<int64_t>(i)), batch);
    if ((i + 1) % 10000 == 0 || i + 1 == n) {
      if (auto st = store.write_now(wb); !st.ok())
        die(st.to_string());
      wb.Clear();
    }
  }
  return bytes;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A: one iterator over the partition's log, no decode.
double bare_scan(const node_store& store, size_t expected) {
  size_t entries = 0;
  size_t touched = 0;
  auto t0 = std::chrono::steady_clock::now();
  store.scan_after(keys::log_prefix(partition), "", SIZE_MAX,
                   [&](std::string_view k, std::string_view v) {
                     ++entries;
                     touched += k.size() + v.size() + static_cast<unsigned char>(v.back());
                   });
  auto ms = ms_since(t0);
  if (entries != expected || touched == 0)
    die("bare scan saw " + std::to_string(entries) + " entries");
  return ms;
}

// The partition's read of `max_bytes` from `offset`, as a fetch from the
// store returns it: whole batches, CRCs checked, concatenated.
std::string read_fetch(const node_store& store, int64_t offset, size_t max_bytes) {
  std::string out;
  store.scan_from_floor(keys::log_prefix(partition), keys::log_entry(partition, offset),
                        [&](std::string_view, std::string_view v) {
                          auto h = v2::read_header(v);
                          if (!h.ok() || !v2::crc_matches(v, *h))
                            die("stored batch does not read back");
                          if (h->last_offset() < offset)
                            return true;
                          out.append(v);
                          return out.size() < max_bytes;
                        });
  return out;
}

// B: the shard's load path, into a fresh core (destroyed after the clock).
double load_path(const node_store& store, size_t expected) {
  auto core = std::make_unique<txn_coordinator_core>(
    txn_coordinator_settings{shard, shard_count, 900000});
  auto t0 = std::chrono::steady_clock::now();
  auto meta = read_txn_shard_meta(store, shard);
  if (!meta.ok())
    die(meta.error().to_string());
  core->set_next_pid_counter(meta->next_pid_counter);
  txn_state_loader loader{static_cast<int64_t>(expected)};
  while (!loader.done()) {
    loader.feed(read_fetch(store, loader.next_offset(), 1 << 20));
    for (;;) {
      auto used_up = loader.next_chunk(*core, chunk_cards);
      if (!used_up.ok())
        die(used_up.error().to_string());
      if (used_up.value())
        break;
    }
  }
  auto ms = ms_since(t0);
  if (core->size() != expected || loader.loaded() != expected)
    die("load installed " + std::to_string(core->size()) + " cards");
  return ms;
}

nlohmann::json to_json(const summary& s) {
  return {{"median_ms", s.median}, {"min_ms", s.min}, {"max_ms", s.max}};
}

} // namespace

int main(int argc, char** argv) {
  size_t max_ids = SIZE_MAX;
  int reps = 5;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json")
      json = true;
    else if (a == "--max-ids" && i + 1 < argc)
      max_ids = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else
      die("usage: caftx-bench-coordinator-load [--max-ids N] [--reps N] [--json]");
  }
  if (max_ids == 0)
    die("--max-ids must be at least 1");
  std::vector<size_t> sizes;
  for (size_t n : {10000, 100000, 1000000})
    if (n <= max_ids)
      sizes.push_back(n);
  if (sizes.empty())
    sizes.push_back(max_ids);

  auto root = std::filesystem::temp_directory_path()
              / ("caftx-bench-coordinator-load-" + std::to_string(::getpid()));
  nlohmann::json out = {{"benchmark", "coordinator-load"},
                        {"shard", shard},
                        {"chunk_cards", chunk_cards},
                        {"repetitions", reps},
                        {"target_ratio", target_ratio},
                        {"sizes", nlohmann::json::array()}};
  if (!json)
    std::printf("%10s %10s | %9s %19s | %9s %19s | %7s %5s\n", "ids", "MiB", "A scan ms",
                "A min-max", "B load ms", "B min-max", "B/A", "met");
  for (auto n : sizes) {
    auto dir = root / std::to_string(n);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    node_store_options so;
    so.sync = false;
    so.background_writer = false;
    auto open = [&] {
      auto opened = node_store::open(dir.string(), so);
      if (!opened.ok())
        die(opened.error().to_string());
      return std::move(opened).value();
    };
    auto store = open();
    auto bytes = fill(*store, n);
    // Reopened as a restarted node would: what was still in LevelDB's
    // write buffer is in its tables now, where a shard loads from.
    store.reset();
    store = open();
    // One untimed round of each warms LevelDB's and the OS's caches.
    bare_scan(*store, n);
    load_path(*store, n);
    std::vector<double> a, b;
    for (int r = 0; r < reps; ++r) {
      a.push_back(bare_scan(*store, n));
      b.push_back(load_path(*store, n));
    }
    auto sa = summarize(a);
    auto sb = summarize(b);
    double ratio = sb.median / sa.median;
    bool met = ratio <= target_ratio;
    if (json) {
      out["sizes"].push_back({{"ids", n},
                              {"value_bytes", bytes},
                              {"bare_scan", to_json(sa)},
                              {"load", to_json(sb)},
                              {"ratio", ratio},
                              {"met", met}});
    } else {
      char amm[32], bmm[32];
      std::snprintf(amm, sizeof(amm), "%.2f-%.2f", sa.min, sa.max);
      std::snprintf(bmm, sizeof(bmm), "%.2f-%.2f", sb.min, sb.max);
      std::printf("%10zu %10.1f | %9.2f %19s | %9.2f %19s | %7.2f %5s\n", n,
                  static_cast<double>(bytes) / (1 << 20), sa.median, amm, sb.median, bmm, ratio,
                  met ? "yes" : "no");
      std::fflush(stdout);
    }
    store.reset();
    std::filesystem::remove_all(dir);
  }
  std::filesystem::remove_all(root);
  if (json)
    std::printf("%s\n", out.dump(2).c_str());
}
