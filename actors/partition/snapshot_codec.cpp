#include "actors/partition/snapshot_codec.hpp"

#include <cstring>

#include "runtime/record_batch_v2.hpp"

namespace caftx::snapshot_codec {

namespace {

template <class T>
void put(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T)); // little-endian on every platform caftx builds on
  out.append(buf, sizeof(T));
}

struct reader {
  std::string_view in;
  size_t pos = 0;
  bool failed = false;
  template <class T>
  T get() {
    T v{};
    if (failed || in.size() - pos < sizeof(T)) {
      failed = true;
      return v;
    }
    std::memcpy(&v, in.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
};

status corrupt(const char* what, std::string why) {
  return {error_code::kafka_storage_error, std::string(what) + ": " + std::move(why)};
}

// Snapshot flags (version 2).
constexpr uint8_t flag_producer_state_dropped = 0x01;

} // namespace

std::string encode(const producer_snapshot& s) {
  std::string body;
  body.reserve(40 + s.producers.size() * 72);
  put<int64_t>(body, s.offset);
  put<int64_t>(body, s.log_start_offset);
  put<int64_t>(body, s.log_start_position);
  put<int64_t>(body, s.log_end_position);
  put<uint8_t>(body, static_cast<uint8_t>(s.producer_state_dropped ? flag_producer_state_dropped : 0));
  put<uint32_t>(body, static_cast<uint32_t>(s.producers.size()));
  for (auto& [pid, e] : s.producers) {
    put<int64_t>(body, pid.value);
    put<int16_t>(body, e.epoch.value);
    put<int32_t>(body, e.cepoch.value);
    put<int64_t>(body, e.last_timestamp_ms);
    put<int64_t>(body, e.current_txn_first_offset.value_or(-1));
    put<uint8_t>(body, static_cast<uint8_t>(e.batches.size()));
    for (size_t k = 0; k < e.batches.size(); ++k) {
      auto m = e.batches[k];
      put<int32_t>(body, m.first_sequence);
      put<int64_t>(body, m.base_offset);
      put<int64_t>(body, m.last_offset);
    }
  }
  std::string out;
  out.reserve(5 + body.size());
  put<uint8_t>(out, version);
  put<uint32_t>(out, v2::crc32c(body));
  out += body;
  return out;
}

status_or<producer_snapshot> decode(std::string_view bytes) {
  constexpr const char* what = "producer-state snapshot";
  reader r{bytes};
  auto v = r.get<uint8_t>();
  auto crc = r.get<uint32_t>();
  if (r.failed)
    return corrupt(what, "cut short");
  if (v != version && v != 1)
    return corrupt(what, "unknown version " + std::to_string(v));
  if (v2::crc32c(bytes.substr(r.pos)) != crc)
    return corrupt(what, "CRC-32C mismatch");
  producer_snapshot s;
  s.offset = r.get<int64_t>();
  s.log_start_offset = r.get<int64_t>();
  s.log_start_position = r.get<int64_t>();
  s.log_end_position = r.get<int64_t>();
  if (v == 1) {
    s.producer_state_dropped = true; // unknown before version 2
  } else {
    auto flags = r.get<uint8_t>();
    if ((flags & ~flag_producer_state_dropped) != 0)
      return corrupt(what, "unknown flags " + std::to_string(flags));
    s.producer_state_dropped = (flags & flag_producer_state_dropped) != 0;
  }
  auto count = r.get<uint32_t>();
  for (uint32_t i = 0; i < count && !r.failed; ++i) {
    producer_id pid{r.get<int64_t>()};
    producer_state_entry e;
    e.epoch = producer_epoch{r.get<int16_t>()};
    e.cepoch = coordinator_epoch{r.get<int32_t>()};
    e.last_timestamp_ms = r.get<int64_t>();
    auto first = r.get<int64_t>();
    if (first >= 0)
      e.current_txn_first_offset = first;
    auto batches = r.get<uint8_t>();
    if (batches > batch_window::capacity)
      return corrupt(what, std::to_string(batches) + " batches for producer "
                             + std::to_string(pid.value));
    for (uint8_t k = 0; k < batches; ++k) {
      batch_metadata m;
      m.first_sequence = r.get<int32_t>();
      m.base_offset = r.get<int64_t>();
      m.last_offset = r.get<int64_t>();
      e.batches.push_back(m);
    }
    s.producers.emplace(pid, e);
  }
  if (r.failed)
    return corrupt(what, "cut short");
  if (r.pos != bytes.size())
    return corrupt(what, std::to_string(bytes.size() - r.pos) + " bytes after the last producer");
  return s;
}

std::string encode_log_start(int64_t offset, int64_t position) {
  std::string out;
  put<uint8_t>(out, 1);
  put<int64_t>(out, offset);
  put<int64_t>(out, position);
  return out;
}

status_or<std::pair<int64_t, int64_t>> decode_log_start(std::string_view bytes) {
  reader r{bytes};
  auto v = r.get<uint8_t>();
  auto offset = r.get<int64_t>();
  auto position = r.get<int64_t>();
  if (r.failed || r.pos != bytes.size())
    return corrupt("log start", std::to_string(bytes.size()) + " bytes, expected 17");
  if (v != 1)
    return corrupt("log start", "unknown version " + std::to_string(v));
  return std::make_pair(offset, position);
}

std::string encode_epochs(const std::vector<epoch_entry>& entries) {
  std::string out;
  put<uint8_t>(out, 1);
  put<uint32_t>(out, static_cast<uint32_t>(entries.size()));
  for (auto& e : entries) {
    put<int32_t>(out, e.epoch);
    put<int64_t>(out, e.start_offset);
  }
  return out;
}

status_or<std::vector<epoch_entry>> decode_epochs(std::string_view bytes) {
  reader r{bytes};
  auto v = r.get<uint8_t>();
  auto n = r.get<uint32_t>();
  if (r.failed)
    return corrupt("leader-epoch checkpoint", std::to_string(bytes.size()) + " bytes");
  if (v != 1)
    return corrupt("leader-epoch checkpoint", "unknown version " + std::to_string(v));
  if (bytes.size() != 5 + 12 * static_cast<size_t>(n))
    return corrupt("leader-epoch checkpoint", std::to_string(bytes.size()) + " bytes for "
                                                 + std::to_string(n) + " entries");
  std::vector<epoch_entry> out;
  for (uint32_t i = 0; i < n; ++i) {
    epoch_entry e;
    e.epoch = r.get<int32_t>();
    e.start_offset = r.get<int64_t>();
    if (!out.empty() && (e.epoch <= out.back().epoch || e.start_offset < out.back().start_offset))
      return corrupt("leader-epoch checkpoint", "entry " + std::to_string(i) + " (epoch "
                                                   + std::to_string(e.epoch) + ") is not after "
                                                   + "the one before");
    out.push_back(e);
  }
  return out;
}

std::string encode(const aborted_txn_entry& e) {
  std::string out;
  put<uint8_t>(out, 1);
  put<int64_t>(out, e.pid.value);
  put<int64_t>(out, e.first_offset);
  put<int64_t>(out, e.last_offset);
  put<int64_t>(out, e.last_stable_offset);
  return out;
}

status_or<aborted_txn_entry> decode_aborted(std::string_view bytes) {
  reader r{bytes};
  auto v = r.get<uint8_t>();
  aborted_txn_entry e;
  e.pid = producer_id{r.get<int64_t>()};
  e.first_offset = r.get<int64_t>();
  e.last_offset = r.get<int64_t>();
  e.last_stable_offset = r.get<int64_t>();
  if (r.failed || r.pos != bytes.size())
    return corrupt("aborted-index entry", std::to_string(bytes.size()) + " bytes, expected 33");
  if (v != 1)
    return corrupt("aborted-index entry", "unknown version " + std::to_string(v));
  return e;
}

} // namespace caftx::snapshot_codec
