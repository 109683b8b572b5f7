#include "runtime/record_batch_v2.hpp"

#include "runtime/compression.hpp"

#include <boost/crc.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace caftx::v2 {

namespace {

// -- CRC-32C -------------------------------------------------------------------

using boost_crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(std::string_view bytes) {
  auto p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  uint64_t crc = 0xFFFFFFFFu;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = _mm_crc32_u64(crc, word);
    p += 8;
    n -= 8;
  }
  auto c = static_cast<uint32_t>(crc);
  while (n-- > 0)
    c = _mm_crc32_u8(c, *p++);
  return c ^ 0xFFFFFFFFu;
}

bool have_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

// -- big-endian integers and zigzag varints --------------------------------------

template <class T>
void put(std::string& out, T v) {
  using U = std::make_unsigned_t<T>;
  auto u = static_cast<U>(v);
  for (int i = static_cast<int>(sizeof(T)) - 1; i >= 0; --i)
    out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

template <class T>
void put_at(std::string& out, size_t pos, T v) {
  using U = std::make_unsigned_t<T>;
  auto u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(T); ++i)
    out[pos + i] = static_cast<char>((u >> (8 * (sizeof(T) - 1 - i))) & 0xff);
}

template <class T>
T get_at(std::string_view in, size_t pos) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    u = static_cast<U>((u << 8) | static_cast<unsigned char>(in[pos + i]));
  return static_cast<T>(u);
}

void put_varlong(std::string& out, int64_t v) {
  auto z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<char>(z));
}

// A bounds-checked reader of one record's fields.
struct reader {
  std::string_view in;
  size_t pos = 0;
  bool failed = false;

  bool need(size_t n) {
    if (failed || in.size() - pos < n) {
      failed = true;
      return false;
    }
    return true;
  }
  int8_t i8() {
    if (!need(1))
      return 0;
    return static_cast<int8_t>(in[pos++]);
  }
  // Zigzag varint of at most `max_bytes` bytes (5 for int32, 10 for int64).
  int64_t varlong(int max_bytes = 10) {
    uint64_t z = 0;
    for (int shift = 0, k = 0; k < max_bytes; ++k, shift += 7) {
      if (!need(1))
        return 0;
      auto c = static_cast<unsigned char>(in[pos++]);
      z |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0)
        return static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
    }
    failed = true;
    return 0;
  }
  int32_t varint() {
    auto v = varlong(5);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      failed = true;
    return static_cast<int32_t>(v);
  }
  // A length-prefixed byte string; -1 (null) reads as empty and sets
  // `*is_null` when given.
  std::string_view bytes(bool* is_null = nullptr) {
    auto n = varint();
    if (is_null)
      *is_null = n == -1;
    if (failed || n < -1) {
      failed = true;
      return {};
    }
    if (n == -1)
      return {};
    if (!need(static_cast<size_t>(n)))
      return {};
    auto s = in.substr(pos, static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
    return s;
  }
};

status corrupt(std::string what) {
  return {error_code::corrupt_message, "RecordBatch v2: " + std::move(what)};
}

// Walks the records of a batch whose header `h` was read: calls fn (when
// given) for each with its view and, with `headers`, its headers; checks
// the record count and that the records end exactly at the batch's end.
// Offset deltas: with `dense` (a batch as a producer sends it) 0, 1, 2,
// ...; otherwise (a stored batch, which the cleaner may have thinned)
// strictly increasing within [0, last offset delta].
using record_fn = std::function<void(const record_view&, std::vector<record_header>&&)>;

status walk_records(std::string_view batch, const batch_header& h, const record_fn* fn,
                    bool dense, bool headers) {
  reader r{batch, header_size};
  int64_t previous_delta = -1;
  for (int32_t i = 0; i < h.record_count; ++i) {
    auto length = r.varint();
    if (r.failed || length < 0 || r.in.size() - r.pos < static_cast<size_t>(length))
      return corrupt("record " + std::to_string(i) + " runs past the batch");
    size_t end = r.pos + static_cast<size_t>(length);
    reader rec{batch.substr(0, end), r.pos};
    (void) rec.i8(); // record attributes: unused in v2
    record_view v;
    v.timestamp_ms = h.base_timestamp + rec.varlong();
    size_t tail_start = rec.pos;
    v.offset_delta = rec.varint();
    bool null_key = false;
    v.key = rec.bytes(&null_key);
    v.has_key = !null_key;
    v.value = rec.bytes(&v.null_value);
    auto header_count = rec.varint();
    if (!rec.failed && header_count < 0)
      rec.failed = true;
    std::vector<record_header> hs;
    for (int32_t k = 0; !rec.failed && k < header_count; ++k) {
      auto hk = rec.bytes();
      auto hv = rec.bytes();
      if (headers)
        hs.push_back({std::string(hk), std::string(hv)});
    }
    if (rec.failed || rec.pos != end)
      return corrupt("record " + std::to_string(i) + " is malformed");
    bool in_order = dense ? v.offset_delta == i
                          : v.offset_delta > previous_delta && v.offset_delta <= h.last_offset_delta;
    if (!in_order)
      return corrupt("record " + std::to_string(i) + " has offset delta "
                     + std::to_string(v.offset_delta));
    previous_delta = v.offset_delta;
    v.tail = batch.substr(tail_start, end - tail_start);
    if (fn)
      (*fn)(v, std::move(hs));
    r.pos = end;
  }
  if (r.pos != batch.size())
    return corrupt("bytes after the last of " + std::to_string(h.record_count) + " records");
  return {};
}

// The compression id of a header (attributes bits 0-2).
int16_t codec_of(const batch_header& h) {
  return static_cast<int16_t>(h.attributes & 0x07);
}

} // namespace

uint32_t crc32c_portable(std::string_view bytes) {
  boost_crc32c crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

uint32_t crc32c(std::string_view bytes) {
#if defined(__x86_64__)
  if (have_sse42())
    return crc32c_sse42(bytes);
#endif
  return crc32c_portable(bytes);
}

std::string encode(const record_batch& b, int32_t partition_leader_epoch) {
  int64_t base_ts = b.records.empty() ? -1 : b.records.front().timestamp_ms;
  int64_t max_ts = b.max_timestamp_ms();
  size_t estimate = header_size;
  for (auto& r : b.records)
    estimate += 16 + r.key.size() + r.value.size();
  std::string out;
  out.reserve(estimate);
  put<int64_t>(out, b.base_offset);
  put<int32_t>(out, 0); // batch length, below
  put<int32_t>(out, partition_leader_epoch);
  put<int8_t>(out, magic);
  put<uint32_t>(out, 0); // CRC, below
  put<int16_t>(out, static_cast<int16_t>(b.attributes & (attr_transactional | attr_control)));
  put<int32_t>(out, b.record_count() - 1);
  put<int64_t>(out, base_ts);
  put<int64_t>(out, max_ts);
  put<int64_t>(out, b.pid.value);
  put<int16_t>(out, b.epoch.value);
  put<int32_t>(out, b.base_sequence);
  put<int32_t>(out, b.record_count());
  std::string body;
  for (int32_t i = 0; i < b.record_count(); ++i) {
    auto& r = b.records[static_cast<size_t>(i)];
    body.clear();
    body.push_back(0); // attributes
    put_varlong(body, r.timestamp_ms - base_ts);
    put_varlong(body, i);
    if (r.key.empty()) {
      put_varlong(body, -1);
    } else {
      put_varlong(body, static_cast<int64_t>(r.key.size()));
      body.append(r.key);
    }
    if (r.null_value) {
      put_varlong(body, -1);
    } else {
      put_varlong(body, static_cast<int64_t>(r.value.size()));
      body.append(r.value);
    }
    put_varlong(body, static_cast<int64_t>(r.headers.size()));
    for (auto& h : r.headers) {
      put_varlong(body, static_cast<int64_t>(h.key.size()));
      body.append(h.key);
      put_varlong(body, static_cast<int64_t>(h.value.size()));
      body.append(h.value);
    }
    put_varlong(out, static_cast<int64_t>(body.size()));
    out.append(body);
  }
  put_at<int32_t>(out, batch_length_pos, static_cast<int32_t>(out.size() - 12));
  put_at<uint32_t>(out, crc_pos,
                   crc32c(std::string_view{out}.substr(attributes_pos)));
  return out;
}

status_or<batch_header> read_header(std::string_view bytes) {
  if (bytes.size() < header_size)
    return corrupt(std::to_string(bytes.size()) + " bytes, shorter than the 61-byte header");
  batch_header h;
  h.base_offset = get_at<int64_t>(bytes, base_offset_pos);
  h.batch_length = get_at<int32_t>(bytes, batch_length_pos);
  h.partition_leader_epoch = get_at<int32_t>(bytes, leader_epoch_pos);
  h.magic = get_at<int8_t>(bytes, magic_pos);
  h.crc = get_at<uint32_t>(bytes, crc_pos);
  h.attributes = get_at<int16_t>(bytes, attributes_pos);
  h.last_offset_delta = get_at<int32_t>(bytes, 23);
  h.base_timestamp = get_at<int64_t>(bytes, 27);
  h.max_timestamp = get_at<int64_t>(bytes, 35);
  h.producer_id = get_at<int64_t>(bytes, 43);
  h.producer_epoch = get_at<int16_t>(bytes, 51);
  h.base_sequence = get_at<int32_t>(bytes, 53);
  h.record_count = get_at<int32_t>(bytes, 57);
  if (h.magic != magic)
    return corrupt("magic " + std::to_string(h.magic) + ", expected 2");
  if (h.batch_length < static_cast<int32_t>(header_size - 12)
      || static_cast<size_t>(h.batch_length) + 12 > bytes.size())
    return corrupt("batch length " + std::to_string(h.batch_length) + " outside [49, "
                   + std::to_string(bytes.size() - 12) + "]");
  // A cleaned batch keeps its offset range with fewer records, or none
  // (docs/compaction.md); a client's batch must be dense (validate()).
  if (h.last_offset_delta < 0 || h.record_count < 0
      || h.record_count > int64_t{h.last_offset_delta} + 1)
    return corrupt("record count " + std::to_string(h.record_count) + " with last offset delta "
                   + std::to_string(h.last_offset_delta));
  return h;
}

bool crc_matches(std::string_view bytes, const batch_header& h) {
  auto covered = bytes.substr(attributes_pos, static_cast<size_t>(h.size()) - attributes_pos);
  return crc32c(covered) == h.crc;
}

status_or<batch_header> validate(std::string_view bytes) {
  auto h = read_header(bytes);
  if (!h.ok())
    return h;
  if (static_cast<size_t>(h->size()) != bytes.size())
    return corrupt("expected exactly one batch of " + std::to_string(h->size()) + " bytes, got "
                   + std::to_string(bytes.size()));
  if (!crc_matches(bytes, *h))
    return corrupt("CRC-32C mismatch");
  if (h->record_count == 0)
    return corrupt("a batch without records");
  if (h->last_offset_delta != h->record_count - 1)
    return corrupt("record count " + std::to_string(h->record_count) + " with last offset delta "
                   + std::to_string(h->last_offset_delta));
  if ((h->attributes & attr_delete_horizon) != 0)
    return corrupt("the delete horizon flag (attributes bit 6) is the cleaner's");
  if (codec_of(*h) != compression::none) {
    // Checked on the records as they decompress; stored as sent.
    auto plain = inflate(bytes, *h);
    if (!plain.ok())
      return plain.error();
    if (auto st = walk_records(*plain, *h, nullptr, true, false); !st.ok())
      return st;
    return h;
  }
  if (auto st = walk_records(bytes, *h, nullptr, true, false); !st.ok())
    return st;
  return h;
}

status_or<std::string> inflate(std::string_view bytes, const batch_header& h) {
  auto batch = bytes.substr(0, static_cast<size_t>(h.size()));
  auto records = compression::decompress(codec_of(h), batch.substr(header_size));
  if (!records.ok())
    return records.error();
  std::string out;
  out.reserve(header_size + records->size());
  out.append(batch.substr(0, header_size));
  out.append(*records);
  put_at<int16_t>(out, attributes_pos, static_cast<int16_t>(h.attributes & ~0x07));
  put_at<int32_t>(out, batch_length_pos, static_cast<int32_t>(out.size() - 12));
  put_at<uint32_t>(out, crc_pos, crc32c(std::string_view{out}.substr(attributes_pos)));
  return out;
}

status_or<record_batch> decode(std::string_view bytes) {
  auto h = read_header(bytes);
  if (!h.ok())
    return h.error();
  auto batch = bytes.substr(0, static_cast<size_t>(h->size()));
  if (!crc_matches(batch, *h))
    return corrupt("CRC-32C mismatch");
  if (codec_of(*h) != compression::none) {
    auto plain = inflate(batch, *h);
    if (!plain.ok())
      return plain.error();
    return decode(*plain);
  }
  record_batch b;
  b.base_offset = h->base_offset;
  b.pid = producer_id{h->producer_id};
  b.epoch = producer_epoch{h->producer_epoch};
  b.base_sequence = h->base_sequence;
  b.attributes = static_cast<int16_t>(h->attributes & (attr_transactional | attr_control));
  b.last_offset_delta = h->last_offset_delta;
  b.records.reserve(static_cast<size_t>(h->record_count));
  record_fn add = [&](const record_view& v, std::vector<record_header>&& headers) {
    record r{std::string(v.key), std::string(v.value), std::move(headers), v.timestamp_ms,
             v.null_value, v.offset_delta};
    b.records.push_back(std::move(r));
  };
  if (auto st = walk_records(batch, *h, &add, false, true); !st.ok())
    return st;
  return b;
}

status for_each_batch(std::string_view records,
                      const std::function<bool(const batch_header&, std::string_view)>& fn) {
  size_t pos = 0;
  while (pos < records.size()) {
    auto rest = records.substr(pos);
    auto h = read_header(rest);
    if (!h.ok())
      return status{h.error().code(),
                    h.error().message() + " (at byte " + std::to_string(pos) + ")"};
    auto size = static_cast<size_t>(h->size());
    if (!fn(*h, rest.substr(0, size)))
      break;
    pos += size;
  }
  return {};
}

status_or<std::vector<record_batch>> decode_all(std::string_view records) {
  std::vector<record_batch> out;
  status err;
  auto st = for_each_batch(records, [&](const batch_header&, std::string_view bytes) {
    auto b = decode(bytes);
    if (!b.ok()) {
      err = b.error();
      return false;
    }
    out.push_back(std::move(b).value());
    return true;
  });
  if (!st.ok())
    return st;
  if (!err.ok())
    return err;
  return out;
}

void stamp(std::string& bytes, int64_t base_offset, int32_t partition_leader_epoch) {
  put_at<int64_t>(bytes, base_offset_pos, base_offset);
  put_at<int32_t>(bytes, leader_epoch_pos, partition_leader_epoch);
}

batch_info info_of(const batch_header& h, std::string_view bytes) {
  batch_info i;
  i.base_offset = h.base_offset;
  i.record_count = h.last_offset_delta + 1; // offsets, also of a cleaned batch
  i.pid = producer_id{h.producer_id};
  i.epoch = producer_epoch{h.producer_epoch};
  i.base_sequence = h.base_sequence;
  i.attributes = static_cast<int16_t>(h.attributes & (attr_transactional | attr_control));
  i.max_timestamp_ms = h.max_timestamp;
  i.size_bytes = h.size();
  if (i.is_control()) {
    auto b = decode(bytes.substr(0, static_cast<size_t>(h.size())));
    if (b.ok())
      i.marker = parse_control_batch(*b);
  }
  return i;
}

status for_each_record(std::string_view bytes, const batch_header& h,
                       const std::function<void(const record_view&)>& fn, std::string* scratch) {
  record_fn each = [&](const record_view& v, std::vector<record_header>&&) { fn(v); };
  if (codec_of(h) != compression::none) {
    if (scratch == nullptr)
      return status{error_code::unsupported_compression_type,
                    "RecordBatch v2: a compressed batch's records need a buffer to decompress into"};
    auto plain = inflate(bytes, h);
    if (!plain.ok())
      return plain.error();
    *scratch = std::move(*plain);
    return walk_records(*scratch, h, &each, false, false);
  }
  return walk_records(bytes.substr(0, static_cast<size_t>(h.size())), h, &each, false, false);
}

std::string rebuild(const batch_header& h, const std::vector<record_view>& kept,
                    std::optional<int64_t> delete_horizon_ms) {
  if (kept.empty())
    delete_horizon_ms.reset(); // an empty batch has nothing to drop later
  // Written uncompressed: the kept records are views of decompressed bytes.
  int16_t attributes = static_cast<int16_t>(h.attributes & ~attr_delete_horizon & ~0x07);
  if (delete_horizon_ms)
    attributes = static_cast<int16_t>(attributes | attr_delete_horizon);
  int64_t base_ts = delete_horizon_ms ? *delete_horizon_ms
                    : kept.empty()    ? -1
                                      : h.base_timestamp;
  std::string out;
  size_t estimate = header_size;
  for (auto& v : kept)
    estimate += 16 + v.tail.size();
  out.reserve(estimate);
  put<int64_t>(out, h.base_offset);
  put<int32_t>(out, 0); // batch length, below
  put<int32_t>(out, h.partition_leader_epoch);
  put<int8_t>(out, magic);
  put<uint32_t>(out, 0); // CRC, below
  put<int16_t>(out, attributes);
  put<int32_t>(out, h.last_offset_delta);
  put<int64_t>(out, base_ts);
  put<int64_t>(out, h.max_timestamp);
  put<int64_t>(out, h.producer_id);
  put<int16_t>(out, h.producer_epoch);
  put<int32_t>(out, h.base_sequence);
  put<int32_t>(out, static_cast<int32_t>(kept.size()));
  std::string body;
  for (auto& v : kept) {
    body.clear();
    body.push_back(0); // attributes
    put_varlong(body, v.timestamp_ms - base_ts);
    body.append(v.tail);
    put_varlong(out, static_cast<int64_t>(body.size()));
    out.append(body);
  }
  put_at<int32_t>(out, batch_length_pos, static_cast<int32_t>(out.size() - 12));
  put_at<uint32_t>(out, crc_pos, crc32c(std::string_view{out}.substr(attributes_pos)));
  return out;
}

std::optional<int64_t> delete_horizon(const batch_header& h) {
  if ((h.attributes & attr_delete_horizon) == 0)
    return std::nullopt;
  return h.base_timestamp;
}

} // namespace caftx::v2
