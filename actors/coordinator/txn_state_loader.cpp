#include "actors/coordinator/txn_state_loader.hpp"

#include <algorithm>
#include <set>

#include "runtime/coordinator_records.hpp"
#include "runtime/record_batch.hpp"
#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"

namespace caftx {

status_or<txn_shard_meta> read_txn_shard_meta(const node_store& store, int32_t shard) {
  txn_shard_meta meta;
  auto key = keys::next_pid(shard);
  if (auto v = store.get(key)) {
    auto x = codec::decode_int64(*v);
    if (!x.ok())
      return status{x.error().code(), "key " + key + ": " + x.error().message()};
    meta.next_pid_counter = x.value();
  }
  return meta;
}

status_or<bool> txn_state_loader::next_chunk(txn_coordinator_core& core, size_t max_cards) {
  constexpr const char* what = "__transaction_state";
  if (!reserved_) {
    // The partition is compacted: about one record per live id, at most
    // (min.cleanable.dirty.ratio) twice that. Sizing the table once saves
    // its rehashes; the cap bounds what a huge dirty log reserves.
    constexpr int64_t cap = int64_t{1} << 22;
    core.reserve(static_cast<size_t>(std::min(remaining(), cap)));
    reserved_ = true;
  }
  size_t read = 0;
  v2::batch_header h;
  std::string_view bytes;
  while (read < max_cards) {
    auto more = next_batch(what, h, bytes);
    if (!more.ok() || !*more) {
      core.install(chunk_, in_prepare_);
      if (!more.ok())
        return more.error();
      break;
    }
    if ((h.attributes & attr_control) != 0) {
      replayed(h, 0);
      continue;
    }
    status failed;
    size_t records = 0;
    // Views into the fetched bytes: only the cards are built.
    auto walked = v2::for_each_record(bytes, h, [&](const v2::record_view& r) {
      if (!failed.ok())
        return;
      ++records;
      auto offset = h.base_offset + r.offset_delta;
      auto id = coordinator_records::decode_txn_key(r.key);
      if (!id.ok()) {
        failed = bad(what, offset, id.error().message());
        return;
      }
      if (r.null_value) {
        core.install(chunk_, in_prepare_); // in log order
        core.forget(*id);
        return;
      }
      auto card = coordinator_records::decode_txn_value(std::move(*id), r.value);
      if (!card.ok()) {
        failed = bad(what, offset, card.error().message());
        return;
      }
      chunk_.push_back(std::move(card).value());
    });
    if (!walked.ok())
      failed = bad(what, h.base_offset, walked.message());
    if (!failed.ok()) {
      core.install(chunk_, in_prepare_); // the records before it
      return failed;
    }
    read += records;
    replayed(h, records);
  }
  core.install(chunk_, in_prepare_);
  return used_up();
}

std::vector<std::string> txn_state_loader::in_prepare(const txn_coordinator_core& core) const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto i = in_prepare_.rbegin(); i != in_prepare_.rend(); ++i) {
    if (!seen.insert(*i).second)
      continue;
    auto* card = core.find(*i);
    if (card
        && (card->state == txn_state::prepare_commit || card->state == txn_state::prepare_abort))
      out.push_back(*i);
  }
  return {out.rbegin(), out.rend()};
}

} // namespace caftx
