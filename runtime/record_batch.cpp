#include "runtime/record_batch.hpp"

#include <algorithm>
#include <limits>

namespace caftx {

int32_t add_sequence(int32_t sequence, int32_t delta) {
  constexpr int64_t max = std::numeric_limits<int32_t>::max();
  int64_t sum = static_cast<int64_t>(sequence) + delta;
  if (sum > max)
    sum -= max + 1;
  return static_cast<int32_t>(sum);
}

int32_t record_batch::last_sequence() const {
  if (base_sequence == no_sequence)
    return no_sequence;
  return add_sequence(base_sequence, offset_count() - 1);
}

int32_t batch_info::last_sequence() const {
  if (base_sequence == no_sequence)
    return no_sequence;
  return add_sequence(base_sequence, record_count - 1);
}

batch_info info_of(const record_batch& b) {
  batch_info i;
  i.base_offset = b.base_offset;
  i.record_count = b.offset_count();
  i.pid = b.pid;
  i.epoch = b.epoch;
  i.base_sequence = b.base_sequence;
  i.attributes = b.attributes;
  i.max_timestamp_ms = b.max_timestamp_ms();
  if (b.is_control())
    i.marker = parse_control_batch(b);
  return i;
}

int64_t record_batch::max_timestamp_ms() const {
  int64_t ts = -1;
  for (auto& r : records)
    ts = std::max(ts, r.timestamp_ms);
  return ts;
}

namespace {

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_be(const std::string& in, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v = (v << 8) | static_cast<unsigned char>(in[pos + i]);
  return v;
}

} // namespace

record_batch make_control_batch(producer_id pid, producer_epoch epoch,
                                end_txn_marker marker, int64_t timestamp_ms) {
  record_batch b;
  b.pid = pid;
  b.epoch = epoch;
  b.base_sequence = no_sequence;
  b.attributes = attr_transactional | attr_control;
  record r;
  put_be(r.key, 0, 2);
  put_be(r.key, static_cast<uint16_t>(marker.type), 2);
  put_be(r.value, 0, 2);
  put_be(r.value, static_cast<uint32_t>(marker.cepoch.value), 4);
  r.timestamp_ms = timestamp_ms;
  b.records.push_back(std::move(r));
  return b;
}

std::optional<end_txn_marker> parse_control_batch(const record_batch& batch) {
  if (!batch.is_control() || batch.records.size() != 1)
    return std::nullopt;
  auto& r = batch.records.front();
  if (r.key.size() != 4 || r.value.size() != 6)
    return std::nullopt;
  auto type = static_cast<int16_t>(get_be(r.key, 2, 2));
  if (type != 0 && type != 1)
    return std::nullopt;
  end_txn_marker m;
  m.type = static_cast<control_type>(type);
  m.cepoch = coordinator_epoch{static_cast<int32_t>(get_be(r.value, 2, 4))};
  return m;
}

} // namespace caftx
