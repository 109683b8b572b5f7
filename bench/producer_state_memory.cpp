// Memory of a partition leader's producer state per producer id.
//
// Two partitions are built side by side in one run from the same number of
// one-record batches: in A every batch comes from a different producer id,
// in B all come from one producer. Their logs are the same size, so
// (heap(A) - heap(B)) / N is what each producer id costs in producer
// state. Printed next to Kafka's figure (about 5 GB of heap for 1.8
// million producer ids, ~2.8 KB each) and the 300-byte target.
//
// Usage: caftx-bench-producer-state [N ...]   (default 10000 100000 1800000)
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "actors/partition/partition_core.hpp"

namespace {

size_t heap_in_use() {
  auto mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

caftx::record_batch one_record(int64_t pid, int32_t sequence) {
  caftx::record_batch b;
  b.pid = caftx::producer_id{pid};
  b.epoch = caftx::producer_epoch{0};
  b.base_sequence = sequence;
  b.records.push_back({"key", "value", {}, 1700000000000});
  return b;
}

// Heap bytes a partition holds after `n` one-record batches, from `n`
// producers (distinct = true) or from one.
size_t build(size_t n, bool distinct) {
  malloc_trim(0);
  auto before = heap_in_use();
  auto core = std::make_unique<caftx::partition_core>(caftx::topic_partition{"bench", 0});
  for (size_t i = 0; i < n; ++i) {
    auto b = distinct ? one_record(static_cast<int64_t>(i), 0)
                      : one_record(0, static_cast<int32_t>(i));
    auto d = core->validate_produce(caftx::info_of(b));
    if (!d.ok() || d->duplicate) {
      std::fprintf(stderr, "unexpected: %s\n", d.ok() ? "duplicate" : d.error().to_string().c_str());
      std::exit(1);
    }
    core->append(caftx::info_of(b));
  }
  core->set_high_watermark(core->log_end_offset());
  if (core->producers().size() != (distinct ? n : 1)) {
    std::fprintf(stderr, "unexpected producer count\n");
    std::exit(1);
  }
  auto used = heap_in_use() - before;
  core.reset();
  return used;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i)
    sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty())
    sizes = {10000, 100000, 1800000};
  constexpr double kafka_bytes_per_id = 5e9 / 1.8e6; // ~2778
  constexpr double target = 300;
  std::printf("%12s %16s %14s %18s %10s %8s\n", "producer ids", "state bytes/id", "kafka bytes/id",
              "caftx/kafka ratio", "target", "met");
  for (auto n : sizes) {
    auto a = build(n, true);
    auto b = build(n, false);
    double per_id = (static_cast<double>(a) - static_cast<double>(b)) / static_cast<double>(n);
    std::printf("%12zu %16.1f %14.0f %18.3f %10.0f %8s\n", n, per_id, kafka_bytes_per_id,
                per_id / kafka_bytes_per_id, target, per_id <= target ? "yes" : "no");
  }
}
