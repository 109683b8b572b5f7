// RecordBatch v2 (docs/record-batch.md) over random batches: decode(encode(b))
// gives b back field by field (an empty key is a null key both ways), the
// header read without decoding agrees, stamping keeps the CRC valid, and
// any single flipped bit in the CRC's range is CORRUPT_MESSAGE.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "runtime/record_batch_v2.hpp"

namespace caftx {
namespace {

// Bytes of any value, at most 200 of them (lengths cross the one-byte
// varint boundary at 64).
rc::Gen<std::string> gen_bytes() {
  return rc::gen::resize(200, rc::gen::container<std::string>(rc::gen::arbitrary<char>()));
}

rc::Gen<record> gen_record() {
  return rc::gen::build<record>(
    rc::gen::set(&record::key, gen_bytes()), rc::gen::set(&record::value, gen_bytes()),
    rc::gen::set(&record::headers,
                 rc::gen::resize(3, rc::gen::container<std::vector<record_header>>(
                                      rc::gen::build<record_header>(
                                        rc::gen::set(&record_header::key, gen_bytes()),
                                        rc::gen::set(&record_header::value, gen_bytes()))))),
    rc::gen::set(&record::timestamp_ms, rc::gen::inRange<int64_t>(0, int64_t{1} << 50)),
    rc::gen::set(&record::null_value, rc::gen::arbitrary<bool>()));
}

record_batch gen_batch() {
  record_batch b;
  b.base_offset = *rc::gen::inRange<int64_t>(0, int64_t{1} << 60);
  b.pid = producer_id{*rc::gen::inRange<int64_t>(-1, int64_t{1} << 62)};
  b.epoch = producer_epoch{*rc::gen::inRange<int16_t>(-1, 32767)};
  b.base_sequence = *rc::gen::inRange<int32_t>(-1, 2147483647);
  b.attributes = *rc::gen::element<int16_t>(0, attr_transactional);
  b.records = *rc::gen::resize(
    12, rc::gen::nonEmpty(rc::gen::container<std::vector<record>>(gen_record())));
  return b;
}

RC_GTEST_PROP(RecordBatchV2Property, DecodeOfEncodeIsTheBatchFieldByField, ()) {
  auto b = gen_batch();
  auto epoch = *rc::gen::inRange<int32_t>(-1, 1000);
  auto bytes = v2::encode(b, epoch);
  auto h = v2::validate(bytes);
  RC_ASSERT(h.ok());
  RC_ASSERT(h->base_offset == b.base_offset);
  RC_ASSERT(h->partition_leader_epoch == epoch);
  RC_ASSERT(h->record_count == b.record_count());
  RC_ASSERT(h->last_offset() == b.last_offset());
  RC_ASSERT(h->max_timestamp == b.max_timestamp_ms());
  auto d = v2::decode(bytes);
  RC_ASSERT(d.ok());
  RC_ASSERT(d->base_offset == b.base_offset);
  RC_ASSERT(d->pid == b.pid);
  RC_ASSERT(d->epoch == b.epoch);
  RC_ASSERT(d->base_sequence == b.base_sequence);
  RC_ASSERT(d->attributes == b.attributes);
  RC_ASSERT(d->records.size() == b.records.size());
  for (size_t i = 0; i < b.records.size(); ++i) {
    auto& x = d->records[i];
    auto& y = b.records[i];
    RC_ASSERT(x.key == y.key);
    RC_ASSERT(x.null_value == y.null_value); // a tombstone's value is null on the wire
    RC_ASSERT(x.value == (y.null_value ? std::string() : y.value));
    RC_ASSERT(x.offset_delta == static_cast<int32_t>(i));
    RC_ASSERT(x.timestamp_ms == y.timestamp_ms);
    RC_ASSERT(x.headers.size() == y.headers.size());
    for (size_t k = 0; k < y.headers.size(); ++k) {
      RC_ASSERT(x.headers[k].key == y.headers[k].key);
      RC_ASSERT(x.headers[k].value == y.headers[k].value);
    }
  }
  auto info = v2::info_of(*h, bytes);
  RC_ASSERT(info.last_sequence() == b.last_sequence());
  RC_ASSERT(info.size_bytes == static_cast<int32_t>(bytes.size()));
}

RC_GTEST_PROP(RecordBatchV2Property, StampKeepsTheCrcAndAFlippedBitIsCorrupt, ()) {
  auto bytes = v2::encode(gen_batch());
  auto base = *rc::gen::inRange<int64_t>(0, int64_t{1} << 62);
  v2::stamp(bytes, base, 7);
  auto h = v2::validate(bytes);
  RC_ASSERT(h.ok());
  RC_ASSERT(h->base_offset == base);
  auto pos = *rc::gen::inRange<size_t>(v2::attributes_pos, bytes.size());
  auto bit = *rc::gen::inRange(0, 8);
  bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << bit));
  auto bad = v2::validate(bytes);
  RC_ASSERT(!bad.ok());
  RC_ASSERT(bad.error().code() == error_code::corrupt_message);
}

} // namespace
} // namespace caftx
