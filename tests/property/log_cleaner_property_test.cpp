// Properties of the cleaner (docs/compaction.md) over random histories of
// keyed records and tombstones from idempotent and plain producers,
// committed and aborted transactions, time passing and cleaning rounds of
// random step sizes: the key -> last value map a read_committed consumer
// builds from the cleaned log equals the one it builds from the same log
// never cleaned (a tombstone removes its key in both, so tombstones the
// cleaner dropped after their horizon change nothing), and every record
// the cleaned log still holds is the uncleaned log's record at that offset.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "actors/client/read_committed_filter.hpp"
#include "actors/partition/log_cleaner.hpp"
#include "actors/partition/memory_log.hpp"
#include "actors/partition/partition_core.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx {
namespace {

// A partition core with its log in memory.
struct stored_partition {
  partition_core core{topic_partition{"t", 0}};
  memory_log log;

  void append(record_batch b) {
    auto info = info_of(b);
    info.size_bytes = static_cast<int32_t>(v2::encode(b, 0).size());
    b.base_offset = core.append(info).base_offset;
    log.put(b.base_offset, v2::encode(b, 0));
    core.set_high_watermark(core.log_end_offset());
  }

  void append_marker(producer_id pid, control_type type, int64_t now) {
    auto [b, r] = core.append_marker(pid, producer_epoch{0}, {type, coordinator_epoch{0}}, now);
    log.put(b.base_offset, v2::encode(b, 0));
    core.set_high_watermark(core.log_end_offset());
  }

  // What a read_committed consumer sees from the log start: offset ->
  // (key, value or nullopt for a tombstone).
  std::map<int64_t, std::pair<std::string, std::optional<std::string>>> visible() const {
    auto f = core.fetch(log.reader(), core.log_start_offset(), 1 << 30, isolation_level::read_committed);
    RC_ASSERT(f.ok());
    auto batches = v2::decode_all(f->records);
    RC_ASSERT(batches.ok());
    auto rs = filter_fetched(core.tp(), core.log_start_offset(), *batches, f->aborted,
                             isolation_level::read_committed, static_cast<size_t>(-1));
    std::map<int64_t, std::pair<std::string, std::optional<std::string>>> out;
    for (auto& r : rs.records)
      out[r.offset] = {r.key, r.null_value ? std::nullopt : std::optional{r.value}};
    return out;
  }
};

std::map<std::string, std::string>
last_values(const std::map<int64_t, std::pair<std::string, std::optional<std::string>>>& records) {
  std::map<std::string, std::string> out;
  for (auto& [off, kv] : records) {
    if (kv.second)
      out[kv.first] = *kv.second;
    else
      out.erase(kv.first);
  }
  return out;
}

enum op_kind { plain = 0, idempotent, txn_data, txn_end, pass_time, clean, op_kinds };

RC_GTEST_PROP(LogCleanerProperty, TheCompactedLogHasTheSameLastValuePerKeyAsTheUncompactedOne,
              ()) {
  auto ops = *rc::gen::container<std::vector<std::tuple<int, int, int, int>>>(
    rc::gen::tuple(rc::gen::inRange(0, static_cast<int>(op_kinds)), rc::gen::inRange(0, 6),
                   rc::gen::inRange(0, 10), rc::gen::inRange(1, 4)));
  stored_partition cleaned, full;
  compaction_policy policy{*rc::gen::inRange<int64_t>(0, 3000), 0.5, 0,
                           static_cast<size_t>(*rc::gen::inRange(1, 8))};
  cleaner_checkpoint checkpoint;
  int64_t now = 1000000;
  std::map<int64_t, int32_t> next_sequence; // idempotent producers 1, 2
  std::map<int64_t, int32_t> txn_sequence;  // transactional producers 10, 11
  std::set<int64_t> open_txns;
  int value = 0;
  auto make = [&](int64_t pid, int32_t seq, int key, int count, bool txn) {
    record_batch b;
    b.pid = producer_id{pid};
    b.epoch = producer_epoch{static_cast<int16_t>(pid < 0 ? -1 : 0)};
    b.base_sequence = pid < 0 ? no_sequence : seq;
    b.attributes = txn ? attr_transactional : 0;
    for (int i = 0; i < count; ++i) {
      record r{"k" + std::to_string((key + i) % 6), "v" + std::to_string(value++), {}, now};
      r.null_value = (value % 7) == 0;
      if (r.null_value)
        r.value.clear();
      b.records.push_back(r);
    }
    return b;
  };
  auto both = [&](const record_batch& b) {
    RC_ASSERT(cleaned.core.validate_produce(info_of(b)).ok());
    cleaned.append(b);
    full.append(b);
  };
  for (auto [kind, a, b, count] : ops) {
    switch (kind) {
      case plain:
        both(make(-1, 0, a, count, false));
        break;
      case idempotent: {
        int64_t pid = 1 + a % 2;
        both(make(pid, next_sequence[pid], b, count, false));
        next_sequence[pid] += count;
        break;
      }
      case txn_data: {
        int64_t pid = 10 + a % 2;
        open_txns.insert(pid);
        both(make(pid, txn_sequence[pid], b, count, true));
        txn_sequence[pid] += count;
        break;
      }
      case txn_end: {
        int64_t pid = 10 + a % 2;
        if (!open_txns.count(pid))
          break;
        auto type = b % 2 == 0 ? control_type::commit : control_type::abort;
        cleaned.append_marker(producer_id{pid}, type, now);
        full.append_marker(producer_id{pid}, type, now);
        open_txns.erase(pid);
        break;
      }
      case pass_time:
        now += int64_t{b} * 300;
        break;
      case clean: {
        auto& c = cleaned.core;
        int64_t bound = std::min(c.last_stable_offset(), c.high_watermark());
        int64_t dirty_position = checkpoint.clean_offset >= c.log_start_offset()
                                   ? checkpoint.clean_position
                                   : c.log_start_position();
        cleaning_round round{policy, checkpoint, c.log_start_offset(), dirty_position, bound, now,
                             c.aborted_index()};
        auto step = static_cast<size_t>(1 + b % 4);
        for (;;) {
          auto m = round.build_map(cleaned.log.reader(), step);
          RC_ASSERT(m.ok());
          if (*m)
            break;
        }
        for (;;) {
          auto chunk = round.clean(cleaned.log.reader(), c.log_start_offset(), c.producers(), step);
          RC_ASSERT(chunk.ok());
          for (auto& w : chunk->rewrites) {
            if (w.bytes)
              cleaned.log.put(w.base_offset, *w.bytes);
            else
              cleaned.log.erase(w.base_offset);
          }
          c.apply_cleaned(chunk->bytes_removed, chunk->dropped_aborted);
          if (chunk->done)
            break;
        }
        checkpoint = round.checkpoint();
        RC_ASSERT(checkpoint.clean_offset <= bound);
        break;
      }
    }
  }
  auto after = cleaned.visible();
  auto before = full.visible();
  RC_ASSERT(last_values(after) == last_values(before));
  for (auto& [off, kv] : after) {
    auto i = before.find(off);
    RC_ASSERT(i != before.end());
    RC_ASSERT(i->second == kv);
  }
  // Nothing above the last round's end was touched, and the log's size
  // follows the stored bytes.
  int64_t stored = 0;
  for (auto& [base, bytes] : cleaned.log.batches()) {
    stored += static_cast<int64_t>(bytes.size());
    if (base >= checkpoint.clean_offset)
      RC_ASSERT(bytes == full.log.batches().at(base));
  }
  RC_ASSERT(cleaned.core.log_size_bytes() == stored);
  RC_ASSERT(cleaned.core.log_end_offset() == full.core.log_end_offset());
}

} // namespace
} // namespace caftx
