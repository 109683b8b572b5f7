// Properties of a partition leader's producer state over random histories
// of new batches, retries (of any earlier batch), epoch bumps, producer-state
// snapshots and restarts (a fresh leader restores the newest snapshot and
// replays the stored RecordBatch v2 bytes after it, as a node restart does):
// no acknowledged batch is lost or duplicated, offsets are dense and
// increasing, and a retry answered as a duplicate always carries the
// original offset — also when the batch lies before the snapshot.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "actors/partition/partition_core.hpp"
#include "actors/partition/memory_log.hpp"
#include "actors/partition/snapshot_codec.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx {
namespace {

enum op_kind { new_batch = 0, retry = 1, epoch_bump = 2, restart = 3, take_snapshot = 4, op_kinds = 5 };

// One acknowledged batch as the producer remembers it.
struct sent {
  int16_t epoch;
  int32_t base_sequence;
  int32_t count;
  int64_t base_offset;
};

struct producer_model {
  int64_t pid = 0;
  int16_t epoch = 0;
  int32_t next_sequence = 0;
  std::vector<sent> acked; // in send order
};

record_batch make_batch(const producer_model& p, int16_t epoch, int32_t base_sequence,
                        int32_t count) {
  record_batch b;
  b.pid = producer_id{p.pid};
  b.epoch = producer_epoch{epoch};
  b.base_sequence = base_sequence;
  for (int32_t i = 0; i < count; ++i)
    b.records.push_back({"k", std::to_string(p.pid) + ":" + std::to_string(epoch) + ":"
                                + std::to_string(add_sequence(base_sequence, i)),
                         {}, 0});
  return b;
}

std::unique_ptr<partition_core> restart_from(const partition_core& old,
                                             const memory_log& stored,
                                             const std::optional<std::string>& snapshot) {
  auto fresh = std::make_unique<partition_core>(old.tp());
  int64_t from = 0;
  if (snapshot) {
    auto s = snapshot_codec::decode(*snapshot);
    RC_ASSERT(s.ok());
    fresh->restore(*s, {});
    from = s->offset;
  }
  for (auto i = stored.batches().lower_bound(from); i != stored.batches().end(); ++i) {
    auto h = v2::validate(i->second);
    RC_ASSERT(h.ok());
    RC_ASSERT(fresh->replay(v2::info_of(*h, i->second)).ok());
  }
  fresh->load_high_watermark(fresh->log_end_offset()); // one replica: all of it is committed
  return fresh;
}

RC_GTEST_PROP(ProducerStateProperty, NoAcknowledgedBatchIsLostOrDuplicatedAndRetriesGetTheOriginalOffset,
              ()) {
  auto ops = *rc::gen::container<std::vector<std::tuple<int, int, int>>>(
    rc::gen::tuple(rc::gen::inRange(0, static_cast<int>(op_kinds)), rc::gen::inRange(0, 3),
                   rc::gen::inRange(0, 9)));
  std::vector<producer_model> producers(3);
  for (size_t i = 0; i < producers.size(); ++i)
    producers[i].pid = 100 * static_cast<int64_t>(i + 1);
  auto core = std::make_unique<partition_core>(topic_partition{"p", 0});
  memory_log stored;                   // the durable log, as LevelDB holds it
  std::optional<std::string> snapshot;   // the newest producer-state snapshot
  int64_t records_acked = 0;
  // Sequences run near the wrap-around point for one producer: the log
  // starts with its batch at 2147483639, written before (a partition
  // without state for it would take only sequence 0, docs/producer-state.md
  // §First-batches), so every restart finds it again.
  {
    auto& p = producers[2];
    auto b = make_batch(p, 0, 2147483639, 1);
    b.base_offset = 0;
    RC_ASSERT(core->replay(info_of(b)).ok());
    stored.put(0, v2::encode(b, 0));
    p.acked.push_back({0, 2147483639, 1, 0});
    p.next_sequence = 2147483640;
    records_acked = 1;
  }
  for (auto [kind, who, arg] : ops) {
    auto& p = producers[who];
    switch (kind) {
      case new_batch: {
        int32_t count = arg + 1;
        auto b = make_batch(p, p.epoch, p.next_sequence, count);
        auto d = core->validate_produce(info_of(b));
        RC_ASSERT(d.ok());
        RC_ASSERT(!d->duplicate);
        RC_ASSERT(d->base_offset == core->log_end_offset());
        b.base_offset = core->append(info_of(b)).base_offset;
        stored.put(b.base_offset, v2::encode(b, 0));
        core->set_high_watermark(core->log_end_offset());
        p.acked.push_back({p.epoch, p.next_sequence, count, b.base_offset});
        p.next_sequence = add_sequence(p.next_sequence, count);
        records_acked += count;
        break;
      }
      case retry: {
        if (p.acked.empty())
          break;
        auto back = std::min<size_t>(static_cast<size_t>(arg), p.acked.size() - 1);
        auto& s = p.acked[p.acked.size() - 1 - back];
        auto d = core->validate_produce(info_of(make_batch(p, s.epoch, s.base_sequence, s.count)));
        // How many batches of the current epoch were sent after it.
        size_t newer_same_epoch = 0;
        for (size_t k = p.acked.size() - back; k < p.acked.size(); ++k)
          newer_same_epoch += p.acked[k].epoch == s.epoch;
        // The partition knows the epoch of the newest batch it appended; a
        // local bump is unknown to it until a batch carries it.
        if (s.epoch < p.acked.back().epoch) {
          RC_ASSERT(!d.ok());
          RC_ASSERT(d.error().code() == error_code::invalid_producer_epoch);
        } else if (newer_same_epoch < producer_state_entry::batches_to_retain) {
          RC_ASSERT(d.ok());
          RC_ASSERT(d->duplicate);
          RC_ASSERT(d->base_offset == s.base_offset);
          RC_ASSERT(d->last_offset == s.base_offset + s.count - 1);
        } else {
          RC_ASSERT(!d.ok());
          RC_ASSERT(d.error().code() == error_code::out_of_order_sequence_number);
        }
        break;
      }
      case epoch_bump: // KIP-360: an idempotent producer bumps locally
        if (p.epoch < 32000) {
          ++p.epoch;
          p.next_sequence = 0;
        }
        break;
      case restart:
        core = restart_from(*core, stored, snapshot);
        break;
      case take_snapshot:
        snapshot = snapshot_codec::encode(core->snapshot());
        break;
    }
  }
  // The log holds every acknowledged batch once, at its offset, densely.
  core = restart_from(*core, stored, snapshot);
  auto fetched = core->fetch(stored.reader(), 0, 1 << 30, isolation_level::read_uncommitted);
  RC_ASSERT(fetched.ok());
  auto all = v2::decode_all(fetched->records);
  RC_ASSERT(all.ok());
  int64_t next = 0;
  int64_t records = 0;
  std::map<int64_t, const record_batch*> by_offset;
  for (auto& b : *all) {
    RC_ASSERT(b.base_offset == next);
    next = b.last_offset() + 1;
    records += b.record_count();
    by_offset[b.base_offset] = &b;
  }
  RC_ASSERT(next == core->log_end_offset());
  RC_ASSERT(records == records_acked);
  for (auto& p : producers)
    for (auto& s : p.acked) {
      auto i = by_offset.find(s.base_offset);
      RC_ASSERT(i != by_offset.end());
      RC_ASSERT(i->second->pid == producer_id{p.pid});
      RC_ASSERT(i->second->epoch == producer_epoch{s.epoch});
      RC_ASSERT(i->second->base_sequence == s.base_sequence);
      RC_ASSERT(i->second->record_count() == s.count);
    }
}

} // namespace
} // namespace caftx
