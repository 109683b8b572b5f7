#include "runtime/coordinator_records.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace caftx::coordinator_records {

namespace {

// -- Kafka's primitive types (big-endian; unsigned varints for flexible
// versions) -------------------------------------------------------------------

struct writer {
  std::string out;

  template <class T>
  void put(T v) {
    using U = std::make_unsigned_t<T>;
    auto u = static_cast<U>(v);
    for (int i = static_cast<int>(sizeof(T)) - 1; i >= 0; --i)
      out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
  void uvarint(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  void string(std::string_view s) { // int16 length
    put<int16_t>(static_cast<int16_t>(s.size()));
    out.append(s);
  }
  void compact_string(std::string_view s) { // uvarint length + 1
    uvarint(s.size() + 1);
    out.append(s);
  }
  void nullable_string(std::string_view s) { // "" as null (-1)
    if (s.empty())
      put<int16_t>(-1);
    else
      string(s);
  }
  void bytes(std::string_view s) { // int32 length
    put<int32_t>(static_cast<int32_t>(s.size()));
    out.append(s);
  }
};

struct reader {
  explicit reader(std::string_view bytes) : in(bytes) {}
  std::string_view in;
  size_t pos = 0;
  std::string failed; // the field that did not read

  bool need(size_t n, const char* field) {
    if (!failed.empty())
      return false;
    if (in.size() - pos < n) {
      failed = field;
      return false;
    }
    return true;
  }
  template <class T>
  T get(const char* field) {
    if (!need(sizeof(T), field))
      return T{};
    using U = std::make_unsigned_t<T>;
    U u = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      u = static_cast<U>((u << 8) | static_cast<unsigned char>(in[pos++]));
    return static_cast<T>(u);
  }
  uint64_t uvarint(const char* field) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!need(1, field))
        return 0;
      auto c = static_cast<unsigned char>(in[pos++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0)
        return v;
    }
    failed = field;
    return 0;
  }
  // `n` bytes; a negative length (null where none is allowed) fails.
  std::string take(int64_t n, const char* field) {
    if (n < 0) {
      if (failed.empty())
        failed = field;
      return {};
    }
    if (!need(static_cast<size_t>(n), field))
      return {};
    std::string s(in.substr(pos, static_cast<size_t>(n)));
    pos += static_cast<size_t>(n);
    return s;
  }
  std::string string(const char* field) { return take(get<int16_t>(field), field); }
  // A nullable string; null reads as "".
  std::string nullable_string(const char* field) {
    auto n = get<int16_t>(field);
    return n == -1 ? std::string() : take(n, field);
  }
  std::string bytes(const char* field) { return take(get<int32_t>(field), field); }
  std::string compact_string(const char* field) {
    auto n = uvarint(field);
    if (n == 0) { // null: not allowed where caftx reads one
      if (failed.empty())
        failed = field;
      return {};
    }
    if (!need(n - 1, field))
      return {};
    std::string s(in.substr(pos, n - 1));
    pos += n - 1;
    return s;
  }
  // Skips a tagged-field section; `fn(tag, bytes)` sees each field.
  template <class F>
  void tagged_fields(const char* field, F&& fn) {
    auto count = uvarint(field);
    for (uint64_t i = 0; i < count && failed.empty(); ++i) {
      auto tag = uvarint(field);
      auto size = uvarint(field);
      if (!need(size, field))
        return;
      fn(tag, in.substr(pos, size));
      pos += size;
    }
  }
};

status corrupt(const std::string& what) {
  return {error_code::corrupt_message, what};
}

// The tags of TransactionLogValue v1 (Kafka's TransactionLogValue.json) and
// caftx's own, which Kafka's readers skip as unknown tagged fields.
constexpr uint64_t tag_previous_producer_id = 0;
constexpr uint64_t tag_next_producer_id = 1;
constexpr uint64_t tag_client_transaction_version = 2;
constexpr uint64_t tag_ended_by_producer_id = 100;
constexpr uint64_t tag_ended_by_producer_epoch = 101;
constexpr uint64_t tag_last_producer_epoch = 102;

template <class T>
std::string be(T v) {
  writer w;
  w.put<T>(v);
  return std::move(w.out);
}

template <class T>
bool read_be(std::string_view bytes, T& out) {
  if (bytes.size() != sizeof(T))
    return false;
  reader r{bytes};
  out = r.get<T>("tag");
  return true;
}

} // namespace

// -- __transaction_state -------------------------------------------------------

std::string encode_txn_key(const std::string& transactional_id) {
  writer w;
  w.put<int16_t>(0);
  w.string(transactional_id);
  return std::move(w.out);
}

status_or<std::string> decode_txn_key(std::string_view key) {
  reader r{key};
  auto version = r.get<int16_t>("key version");
  if (r.failed.empty() && version != 0)
    return corrupt("TransactionLogKey: unknown version " + std::to_string(version));
  auto id = r.string("transactional id");
  if (!r.failed.empty())
    return corrupt("TransactionLogKey: truncated " + r.failed);
  if (r.pos != key.size())
    return corrupt("TransactionLogKey: bytes after the transactional id");
  return id;
}

std::string encode_txn_value(const txn_card& card) {
  writer w;
  w.put<int16_t>(1);
  w.put<int64_t>(card.pid.value);
  w.put<int16_t>(card.epoch.value);
  w.put<int32_t>(card.txn_timeout_ms);
  w.put<int8_t>(static_cast<int8_t>(card.state));
  if (card.state == txn_state::empty) {
    w.uvarint(0); // null, as Kafka writes it for Empty
  } else {
    std::map<std::string, std::vector<int32_t>> by_topic;
    for (auto& tp : card.partitions)
      by_topic[tp.topic].push_back(tp.partition);
    w.uvarint(by_topic.size() + 1);
    for (auto& [topic, parts] : by_topic) {
      w.compact_string(topic);
      w.uvarint(parts.size() + 1);
      for (auto p : parts)
        w.put<int32_t>(p);
      w.uvarint(0); // no tagged fields
    }
  }
  w.put<int64_t>(card.last_update_ms);
  w.put<int64_t>(card.txn_start_ms);
  std::vector<std::pair<uint64_t, std::string>> tags;
  if (card.previous_pid != no_producer_id)
    tags.emplace_back(tag_previous_producer_id, be<int64_t>(card.previous_pid.value));
  if (card.next_pid != no_producer_id)
    tags.emplace_back(tag_next_producer_id, be<int64_t>(card.next_pid.value));
  tags.emplace_back(tag_client_transaction_version, be<int16_t>(card.client_transaction_version));
  if (card.ended_by_pid != no_producer_id)
    tags.emplace_back(tag_ended_by_producer_id, be<int64_t>(card.ended_by_pid.value));
  if (card.ended_by_epoch != no_producer_epoch)
    tags.emplace_back(tag_ended_by_producer_epoch, be<int16_t>(card.ended_by_epoch.value));
  if (card.last_epoch != no_producer_epoch)
    tags.emplace_back(tag_last_producer_epoch, be<int16_t>(card.last_epoch.value));
  w.uvarint(tags.size());
  for (auto& [tag, bytes] : tags) {
    w.uvarint(tag);
    w.uvarint(bytes.size());
    w.out.append(bytes);
  }
  return std::move(w.out);
}

status_or<txn_card> decode_txn_value(std::string transactional_id, std::string_view value) {
  reader r{value};
  auto version = r.get<int16_t>("version");
  if (!r.failed.empty())
    return corrupt("TransactionLogValue: truncated version");
  if (version != 0 && version != 1)
    return corrupt("TransactionLogValue: unknown version " + std::to_string(version));
  bool flexible = version == 1;
  txn_card card;
  card.transactional_id = std::move(transactional_id);
  card.pid = producer_id{r.get<int64_t>("ProducerId")};
  card.epoch = producer_epoch{r.get<int16_t>("ProducerEpoch")};
  card.txn_timeout_ms = r.get<int32_t>("TransactionTimeoutMs");
  auto state = r.get<int8_t>("TransactionStatus");
  if (r.failed.empty() && (state < 0 || state > 5))
    return corrupt("TransactionLogValue: state id " + std::to_string(state)
                   + " is not a persisted state (0-5)");
  card.state = static_cast<txn_state>(state);
  auto add_topic = [&](const std::string& topic, int64_t count) {
    // A count beyond the bytes left is caught by the reads below.
    if (count > 0 && static_cast<size_t>(count) <= (r.in.size() - r.pos) / 4)
      card.partitions.reserve(card.partitions.size() + static_cast<size_t>(count));
    for (int64_t i = 0; i < count && r.failed.empty(); ++i)
      card.partitions.push_back({topic, r.get<int32_t>("PartitionIds")});
  };
  if (flexible) {
    auto n = r.uvarint("TransactionPartitions");
    for (uint64_t i = 1; i < n && r.failed.empty(); ++i) {
      auto topic = r.compact_string("Topic");
      auto parts = r.uvarint("PartitionIds");
      if (parts == 0 && r.failed.empty())
        r.failed = "PartitionIds";
      add_topic(topic, static_cast<int64_t>(parts) - 1);
      r.tagged_fields("partition tagged fields", [](uint64_t, std::string_view) {});
    }
  } else {
    auto n = r.get<int32_t>("TransactionPartitions");
    for (int32_t i = 0; i < n && r.failed.empty(); ++i) {
      auto topic = r.string("Topic");
      add_topic(topic, r.get<int32_t>("PartitionIds"));
    }
  }
  card.last_update_ms = r.get<int64_t>("TransactionLastUpdateTimestampMs");
  card.txn_start_ms = r.get<int64_t>("TransactionStartTimestampMs");
  if (flexible) {
    std::string bad_tag;
    r.tagged_fields("tagged fields", [&](uint64_t tag, std::string_view bytes) {
      bool ok = true;
      int64_t id = -1;
      int16_t epoch = -1;
      switch (tag) {
        case tag_previous_producer_id:
          ok = read_be(bytes, id);
          card.previous_pid = producer_id{id};
          break;
        case tag_next_producer_id:
          ok = read_be(bytes, id);
          card.next_pid = producer_id{id};
          break;
        case tag_ended_by_producer_id:
          ok = read_be(bytes, id);
          card.ended_by_pid = producer_id{id};
          break;
        case tag_ended_by_producer_epoch:
          ok = read_be(bytes, epoch);
          card.ended_by_epoch = producer_epoch{epoch};
          break;
        case tag_last_producer_epoch:
          ok = read_be(bytes, epoch);
          card.last_epoch = producer_epoch{epoch};
          break;
        case tag_client_transaction_version: {
          int16_t tv = 2;
          ok = read_be(bytes, tv);
          card.client_transaction_version = tv;
          break;
        }
        default: // tags of later versions
          break;
      }
      if (!ok && bad_tag.empty())
        bad_tag = std::to_string(tag);
    });
    if (!bad_tag.empty())
      return corrupt("TransactionLogValue: tagged field " + bad_tag + " has the wrong size");
  }
  if (!r.failed.empty())
    return corrupt("TransactionLogValue: truncated " + r.failed);
  if (r.pos != value.size())
    return corrupt("TransactionLogValue: bytes after the value");
  std::sort(card.partitions.begin(), card.partitions.end());
  card.partitions.erase(std::unique(card.partitions.begin(), card.partitions.end()),
                        card.partitions.end());
  return card;
}

// -- __consumer_offsets --------------------------------------------------------

std::string encode_offset_key(const group_offset_key& key) {
  writer w;
  w.put<int16_t>(1);
  w.string(key.group);
  w.string(key.tp.topic);
  w.put<int32_t>(key.tp.partition);
  return std::move(w.out);
}

status_or<group_offset_key> decode_offset_key(std::string_view key) {
  reader r{key};
  auto version = r.get<int16_t>("key version");
  if (r.failed.empty() && (version < 0 || version > 1))
    return corrupt("OffsetCommitKey: key version " + std::to_string(version)
                   + " is not an offset commit (0-1)");
  group_offset_key k;
  k.group = r.string("Group");
  k.tp.topic = r.string("Topic");
  k.tp.partition = r.get<int32_t>("Partition");
  if (!r.failed.empty())
    return corrupt("OffsetCommitKey: truncated " + r.failed);
  if (r.pos != key.size())
    return corrupt("OffsetCommitKey: bytes after the partition");
  return k;
}

std::string encode_offset_value(const offset_and_metadata& value, int64_t commit_timestamp_ms,
                                int32_t leader_epoch) {
  writer w;
  w.put<int16_t>(3);
  w.put<int64_t>(value.offset);
  w.put<int32_t>(leader_epoch);
  w.string(value.metadata);
  w.put<int64_t>(commit_timestamp_ms);
  return std::move(w.out);
}

status_or<offset_and_metadata> decode_offset_value(std::string_view value,
                                                   int64_t* commit_timestamp_ms) {
  reader r{value};
  auto version = r.get<int16_t>("version");
  if (r.failed.empty() && (version < 0 || version > 3))
    return corrupt("OffsetCommitValue: unknown version " + std::to_string(version));
  offset_and_metadata v;
  v.offset = r.get<int64_t>("Offset");
  if (version >= 3)
    (void) r.get<int32_t>("LeaderEpoch");
  v.metadata = r.string("Metadata");
  auto ts = r.get<int64_t>("CommitTimestamp");
  if (version == 1)
    (void) r.get<int64_t>("ExpireTimestamp");
  if (!r.failed.empty())
    return corrupt("OffsetCommitValue: truncated " + r.failed);
  if (r.pos != value.size())
    return corrupt("OffsetCommitValue: bytes after the value");
  if (commit_timestamp_ms)
    *commit_timestamp_ms = ts;
  return v;
}

bool is_group_key(std::string_view key) {
  return key.size() >= 2 && key[0] == 0 && key[1] == 2;
}

std::string encode_group_key(const std::string& group) {
  writer w;
  w.put<int16_t>(2);
  w.string(group);
  return std::move(w.out);
}

status_or<std::string> decode_group_key(std::string_view key) {
  reader r{key};
  auto version = r.get<int16_t>("key version");
  if (r.failed.empty() && version != 2)
    return corrupt("GroupMetadataKey: key version " + std::to_string(version)
                   + " is not a group's (2)");
  auto group = r.string("Group");
  if (!r.failed.empty())
    return corrupt("GroupMetadataKey: truncated " + r.failed);
  if (r.pos != key.size())
    return corrupt("GroupMetadataKey: bytes after the group id");
  return group;
}

std::string encode_group_value(const group_metadata_record& g) {
  writer w;
  w.put<int16_t>(3);
  w.string(g.protocol_type);
  w.put<int32_t>(g.generation);
  w.nullable_string(g.protocol_name);
  w.nullable_string(g.leader);
  w.put<int64_t>(g.state_timestamp_ms);
  w.put<int32_t>(static_cast<int32_t>(g.members.size()));
  for (auto& m : g.members) {
    w.string(m.member_id);
    w.nullable_string(m.group_instance_id);
    w.string(m.client_id);
    w.string(m.client_host);
    w.put<int32_t>(m.rebalance_timeout_ms);
    w.put<int32_t>(m.session_timeout_ms);
    w.bytes(m.subscription);
    w.bytes(m.assignment);
  }
  return std::move(w.out);
}

status_or<group_metadata_record> decode_group_value(std::string group, std::string_view value) {
  reader r{value};
  auto version = r.get<int16_t>("version");
  if (!r.failed.empty())
    return corrupt("GroupMetadataValue: truncated version");
  if (version < 0 || version > 3)
    return corrupt("GroupMetadataValue: unknown version " + std::to_string(version));
  group_metadata_record g;
  g.group_id = std::move(group);
  g.protocol_type = r.string("ProtocolType");
  g.generation = r.get<int32_t>("Generation");
  g.protocol_name = r.nullable_string("Protocol");
  g.leader = r.nullable_string("Leader");
  if (version >= 2)
    g.state_timestamp_ms = r.get<int64_t>("CurrentStateTimestamp");
  auto n = r.get<int32_t>("Members");
  if (r.failed.empty() && n < 0)
    return corrupt("GroupMetadataValue: negative member count");
  for (int32_t i = 0; i < n && r.failed.empty(); ++i) {
    group_record_member m;
    m.member_id = r.string("MemberId");
    if (version >= 3)
      m.group_instance_id = r.nullable_string("GroupInstanceId");
    m.client_id = r.string("ClientId");
    m.client_host = r.string("ClientHost");
    if (version >= 1)
      m.rebalance_timeout_ms = r.get<int32_t>("RebalanceTimeout");
    m.session_timeout_ms = r.get<int32_t>("SessionTimeout");
    if (version == 0)
      m.rebalance_timeout_ms = m.session_timeout_ms;
    m.subscription = r.bytes("Subscription");
    m.assignment = r.bytes("Assignment");
    if (r.failed.empty())
      g.members.push_back(std::move(m));
  }
  if (!r.failed.empty())
    return corrupt("GroupMetadataValue: truncated " + r.failed);
  if (r.pos != value.size())
    return corrupt("GroupMetadataValue: bytes after the value");
  return g;
}

// -- formatting ------------------------------------------------------------------

std::string describe(const std::string& topic, std::string_view key, std::string_view value,
                     bool null_value) {
  if (topic == transaction_state_topic) {
    auto id = decode_txn_key(key);
    if (!id.ok())
      return id.error().message();
    auto line = "transactional.id=" + *id;
    if (null_value)
      return line + " <null>";
    auto card = decode_txn_value(*id, value);
    if (!card.ok())
      return line + " " + card.error().message();
    line += " producerId=" + std::to_string(card->pid.value)
            + " producerEpoch=" + std::to_string(card->epoch.value)
            + " state=" + to_string(card->state) + " partitions=[";
    for (size_t i = 0; i < card->partitions.size(); ++i)
      line += (i ? "," : "") + to_string(card->partitions[i]);
    line += "] txnTimeoutMs=" + std::to_string(card->txn_timeout_ms)
            + " txnStartTimestamp=" + std::to_string(card->txn_start_ms)
            + " txnLastUpdateTimestamp=" + std::to_string(card->last_update_ms);
    return line;
  }
  if (topic == consumer_offsets_topic && is_group_key(key)) {
    auto group = decode_group_key(key);
    if (!group.ok())
      return group.error().message();
    auto line = "group=" + *group;
    if (null_value)
      return line + " <null>";
    auto g = decode_group_value(*group, value);
    if (!g.ok())
      return line + " " + g.error().message();
    line += " generation=" + std::to_string(g->generation) + " protocolType=" + g->protocol_type
            + " protocol=" + g->protocol_name + " leader=" + g->leader + " members=[";
    for (size_t i = 0; i < g->members.size(); ++i) {
      line += (i ? "," : "") + g->members[i].member_id;
      if (!g->members[i].group_instance_id.empty())
        line += "(instance=" + g->members[i].group_instance_id + ")";
    }
    return line + "]";
  }
  if (topic == consumer_offsets_topic) {
    auto k = decode_offset_key(key);
    if (!k.ok())
      return k.error().message();
    auto line = "group=" + k->group + " topic=" + k->tp.topic
                + " partition=" + std::to_string(k->tp.partition);
    if (null_value)
      return line + " <null>";
    int64_t ts = -1;
    auto v = decode_offset_value(value, &ts);
    if (!v.ok())
      return line + " " + v.error().message();
    return line + " offset=" + std::to_string(v->offset) + " metadata=" + v->metadata
           + " commitTimestamp=" + std::to_string(ts);
  }
  return "not an internal topic: " + topic;
}

} // namespace caftx::coordinator_records
