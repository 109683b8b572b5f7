// Google Benchmark micro-benchmarks of the hot paths, run inside
// caftx-bench (repetitions randomly interleaved by Google Benchmark):
//   card encode/decode   a state card with 4 partitions as a TransactionLogValue
//   sequence check       partition_core::validate_produce of an in-order batch
//   aborted-index lookup a read_committed fetch of one batch from a log with
//                        N aborted transactions (the index is searched per fetch)
//   batch append         validate + append + encode of a 16 KiB batch of
//                        100-byte records, as the partition leader does
// Each line prints the median, min-max over the repetitions and the ratio to
// the CAF local round trip of the floor (how many such operations one
// message hop costs).
#include "bench/suite.hpp"

#include <map>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "actors/client/read_committed_filter.hpp"
#include "actors/partition/memory_log.hpp"
#include "actors/partition/partition_core.hpp"
#include "runtime/record_batch_v2.hpp"
#include "runtime/coordinator_records.hpp"
#include "storage/codec.hpp"

namespace caftx::bench {

namespace {

txn_card sample_card() {
  txn_card c;
  c.transactional_id = "orders-enricher-7f3a91c2-17";
  c.pid = producer_id{4711};
  c.epoch = producer_epoch{12};
  c.txn_timeout_ms = 60000;
  c.state = txn_state::ongoing;
  for (int32_t p = 0; p < 4; ++p)
    c.partitions.push_back({"orders", p});
  c.txn_start_ms = 1700000000000;
  c.last_update_ms = 1700000000250;
  return c;
}

record_batch data_batch(producer_id pid, producer_epoch epoch, int32_t seq, int records,
                        bool transactional) {
  record_batch b;
  b.pid = pid;
  b.epoch = epoch;
  b.base_sequence = seq;
  b.attributes = transactional ? attr_transactional : 0;
  for (int i = 0; i < records; ++i)
    b.records.push_back({"", std::string(100, 'v'), {}, 1700000000000});
  return b;
}

void card_encode(benchmark::State& state) {
  auto card = sample_card();
  for (auto _ : state)
    benchmark::DoNotOptimize(coordinator_records::encode_txn_value(card));
}

void card_decode(benchmark::State& state) {
  auto bytes = coordinator_records::encode_txn_value(sample_card());
  for (auto _ : state) {
    auto c = coordinator_records::decode_txn_value("txn-A", bytes);
    benchmark::DoNotOptimize(c);
  }
}

void sequence_check(benchmark::State& state) {
  partition_core core{{"bench", 0}};
  int32_t seq = 0;
  for (int i = 0; i < 5; ++i) {
    auto b = data_batch(producer_id{1}, producer_epoch{0}, seq, 10, false);
    seq += 10;
    core.append(info_of(b));
  }
  auto next = info_of(data_batch(producer_id{1}, producer_epoch{0}, seq, 10, false));
  for (auto _ : state) {
    auto d = core.validate_produce(next);
    benchmark::DoNotOptimize(d);
  }
}

// A log of `n` transactions of one 10-record batch each, alternately
// committed and aborted, by distinct producer ids.
struct logged_core {
  std::unique_ptr<partition_core> core;
  memory_log log;
};

logged_core log_with_aborts(int n) {
  logged_core l{std::make_unique<partition_core>(topic_partition{"bench", 0}), {}};
  for (int t = 0; t < n; ++t) {
    producer_id pid{t + 1};
    auto b = data_batch(pid, producer_epoch{0}, 0, 10, true);
    b.base_offset = l.core->append(info_of(b)).base_offset;
    l.log.put(b.base_offset, v2::encode(b, 0));
    end_txn_marker m{t % 2 == 0 ? control_type::abort : control_type::commit, coordinator_epoch{0}};
    auto marker = l.core->append_marker(pid, producer_epoch{1}, m, 0).first;
    l.log.put(marker.base_offset, v2::encode(marker, 0));
  }
  l.core->set_high_watermark(l.core->log_end_offset());
  return l;
}

void aborted_index_lookup(benchmark::State& state) {
  auto n = static_cast<int>(state.range(0));
  auto l = log_with_aborts(n);
  int64_t mid = l.core->log_end_offset() / 2;
  auto read = l.log.reader();
  for (auto _ : state) {
    auto r = l.core->fetch(read, mid, 1, isolation_level::read_committed);
    benchmark::DoNotOptimize(r);
  }
}

void read_committed_filter(benchmark::State& state) {
  auto l = log_with_aborts(1000);
  auto r = l.core->fetch(l.log.reader(), 0, 1 << 20, isolation_level::read_committed);
  auto batches = v2::decode_all(r->records).value();
  for (auto _ : state) {
    auto f = filter_fetched({"bench", 0}, 0, batches, r->aborted,
                            isolation_level::read_committed, 1000000);
    benchmark::DoNotOptimize(f);
  }
}

void batch_append(benchmark::State& state) {
  auto core = std::make_unique<partition_core>(topic_partition{"bench", 0});
  // 130 records of 100 bytes: one batch.size (16 KiB) batch.
  auto proto = data_batch(producer_id{1}, producer_epoch{0}, 0, 130, false);
  int32_t seq = 0;
  int64_t appended = 0;
  for (auto _ : state) {
    if (++appended % 4096 == 0) { // bound the producer state
      state.PauseTiming();
      core = std::make_unique<partition_core>(topic_partition{"bench", 0});
      seq = 0;
      state.ResumeTiming();
    }
    auto b = proto;
    b.base_sequence = seq;
    seq += 130;
    // What the producer session encodes, and what the leader checks
    // (CRC, records), decides and stamps before it stores the bytes.
    auto bytes = v2::encode(b);
    auto h = v2::validate(bytes);
    auto info = v2::info_of(*h, bytes);
    auto d = core->validate_produce(info);
    benchmark::DoNotOptimize(d);
    v2::stamp(bytes, core->append(info).base_offset, 0);
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * 130);
}

BENCHMARK(card_encode);
BENCHMARK(card_decode);
BENCHMARK(sequence_check);
BENCHMARK(aborted_index_lookup)->Arg(100)->Arg(10000);
BENCHMARK(read_committed_filter);
BENCHMARK(batch_append);

// Collects every repetition of every benchmark.
class collector : public benchmark::BenchmarkReporter {
public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (auto& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred)
        continue;
      double ns = r.GetAdjustedRealTime();
      switch (r.time_unit) {
        case benchmark::kSecond: ns *= 1e9; break;
        case benchmark::kMillisecond: ns *= 1e6; break;
        case benchmark::kMicrosecond: ns *= 1e3; break;
        default: break;
      }
      auto& l = lines_[r.benchmark_name()];
      l.push_back(ns);
    }
  }
  std::map<std::string, std::vector<double>> lines_;
};

} // namespace

void bench_micro(const context& ctx, const std::string& filter) {
  std::vector<std::string> args{"caftx-bench",
                                "--benchmark_filter=" + filter,
                                "--benchmark_repetitions=" + std::to_string(std::max(ctx.reps, 2)),
                                "--benchmark_enable_random_interleaving=true",
                                std::string("--benchmark_min_time=") + (ctx.quick ? "0.005" : "0.1")};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  collector c;
  benchmark::RunSpecifiedBenchmarks(&c);
  double hop_ns = ctx.caf_round_trip_us * 1000;
  for (auto& [name, ns] : c.lines_) {
    line l;
    l.benchmark = "micro";
    l.variant = name;
    l.unit = "ns/op";
    l.higher_is_better = false;
    for (auto x : ns)
      l.reps.push_back({x, 0, {}});
    if (hop_ns > 0) {
      l.ratio = l.stats().median / hop_ns;
      l.ratio_of = "/ CAF round trip";
    }
    report(l);
  }
}

} // namespace caftx::bench
