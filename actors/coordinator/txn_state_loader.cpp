#include "actors/coordinator/txn_state_loader.hpp"

#include <set>

#include "runtime/coordinator_records.hpp"
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

void txn_state_loader::feed(std::string records) {
  fed_ = std::move(records);
  pos_ = 0;
}

status_or<bool> txn_state_loader::next_chunk(txn_coordinator_core& core, size_t max_cards) {
  auto bad = [&](int64_t offset, const std::string& what) {
    core.install(chunk_, in_prepare_); // the records before it
    return status{error_code::kafka_storage_error, "__transaction_state record at offset "
                                                     + std::to_string(offset) + ": " + what};
  };
  size_t read = 0;
  std::string_view all{fed_};
  while (pos_ < all.size() && read < max_cards && !done()) {
    auto h = v2::read_header(all.substr(pos_));
    if (!h.ok())
      return bad(next_offset_, h.error().message());
    auto bytes = all.substr(pos_, static_cast<size_t>(h->size()));
    pos_ += bytes.size();
    if (h->last_offset() < next_offset_)
      continue; // the batch holding the offset a fetch started before
    auto b = v2::decode(bytes);
    if (!b.ok())
      return bad(h->base_offset, b.error().message());
    next_offset_ = h->last_offset() + 1;
    if (b->is_control())
      continue;
    int64_t offset = h->base_offset;
    for (auto& r : b->records) {
      ++read;
      ++loaded_;
      auto id = coordinator_records::decode_txn_key(r.key);
      if (!id.ok())
        return bad(offset, id.error().message());
      if (r.null_value) {
        core.install(chunk_, in_prepare_); // in log order
        core.forget(*id);
      } else {
        auto card = coordinator_records::decode_txn_value(*id, r.value);
        if (!card.ok())
          return bad(offset, card.error().message());
        chunk_.push_back(std::move(card).value());
      }
      ++offset;
    }
  }
  core.install(chunk_, in_prepare_);
  return pos_ >= all.size() || done();
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
