// Kafka's protocol primitives (the "Protocol Primitive Types" of Kafka's
// protocol guide and its generated message classes): fixed-width
// big-endian integers, zig-zag varints, length-prefixed strings, bytes and
// arrays, and from the first flexible version of each API (KIP-482) the
// compact forms (unsigned varint length + 1) and tagged fields.
// docs/kafka-protocol.md has the framing and the APIs built on these.
// Pure: no CAF, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace caftx::kafka {

/// Reads primitives from one request body (a view: the bytes must outlive
/// the reader). A read past the end or a
/// negative length where none is allowed marks the reader failed (ok()
/// false, what() the first problem); every later read returns a zero value,
/// so a decoder reads on and checks ok() once at its end (Kafka answers
/// such a request by closing the connection).
class reader {
public:
  explicit reader(std::string_view data) : data_(data) {}
  /// A view of a temporary would dangle.
  explicit reader(std::string&&) = delete;

  int8_t int8();
  int16_t int16();
  int32_t int32();
  int64_t int64();
  bool boolean() { return int8() != 0; }
  /// Unsigned LEB128 varint of at most 5 bytes (Kafka's
  /// ByteUtils.readUnsignedVarint).
  uint32_t uvarint();
  /// Zig-zag varint of at most 5 bytes.
  int32_t varint();
  /// Zig-zag varlong of at most 10 bytes.
  int64_t varlong();

  /// int16 length, then bytes; -1 is refused.
  std::string string();
  /// int16 length, -1 = null.
  std::optional<std::string> nullable_string();
  /// uvarint length + 1; 0 (null) is refused.
  std::string compact_string();
  std::optional<std::string> compact_nullable_string();
  /// int32 length, -1 = null.
  std::optional<std::string> nullable_bytes();
  /// Non-null bytes (int32 length + bytes); null fails.
  std::string bytes() { return required(nullable_bytes()); }
  std::optional<std::string> compact_nullable_bytes();

  /// An array's element count: int32 (-1 = null, nullopt), or the compact
  /// uvarint count + 1 (0 = null). A count above the bytes left is
  /// refused, so a hostile count allocates nothing.
  std::optional<int32_t> array_length(bool compact);
  /// Skips a tagged-field section (KIP-482): a uvarint count, then per
  /// field a uvarint tag, a uvarint size and that many bytes.
  void skip_tagged_fields();

  std::string_view rest() const { return data_.substr(pos_); }
  size_t remaining() const { return data_.size() - pos_; }
  bool ok() const { return error_.empty(); }
  const std::string& what() const { return error_; }
  void fail(const std::string& why);

private:
  bool need(size_t n);
  /// `n` bytes (-1: null) of a `what` ("string", "bytes").
  std::optional<std::string> sized(int64_t n, const char* what);
  /// `s`, or a failure when it is null.
  std::string required(std::optional<std::string> s);
  template <class T>
  T fixed();
  std::string_view data_;
  size_t pos_ = 0;
  std::string error_;
};

/// Writes primitives into a growing buffer.
class writer {
public:
  void int8(int8_t v) { out_.push_back(static_cast<char>(v)); }
  void int16(int16_t v);
  void int32(int32_t v);
  void int64(int64_t v);
  void boolean(bool v) { int8(v ? 1 : 0); }
  void uvarint(uint32_t v);
  void varint(int32_t v);

  void string(std::string_view s);
  void nullable_string(const std::optional<std::string>& s);
  void compact_string(std::string_view s);
  void compact_nullable_string(const std::optional<std::string>& s);
  void nullable_bytes(const std::optional<std::string>& b);
  void bytes(std::string_view b) {
    int32(static_cast<int32_t>(b.size()));
    raw(b);
  }
  void compact_nullable_bytes(const std::optional<std::string>& b);
  /// An array's count: int32, or uvarint count + 1 when compact (-1: null).
  void array_length(int32_t n, bool compact);
  /// An empty tagged-field section.
  void no_tagged_fields() { uvarint(0); }
  void raw(std::string_view bytes) { out_.append(bytes.data(), bytes.size()); }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }
  size_t size() const { return out_.size(); }

private:
  std::string out_;
};

/// Reads a required (non-null) array: its int32 count, then each element
/// with `read_one(r)`, stopping at the first failure. A null array fails
/// the reader.
/// `compact`: the unsigned varint count + 1 of KIP-482's flexible versions.
template <class F>
auto read_array(reader& r, F&& read_one, bool compact = false)
  -> std::vector<decltype(read_one(r))> {
  std::vector<decltype(read_one(r))> out;
  auto n = r.array_length(compact);
  if (!n) {
    if (r.ok())
      r.fail("null where an array is required");
    return out;
  }
  for (int32_t i = 0; i < *n && r.ok(); ++i)
    out.push_back(read_one(r));
  return out;
}

/// Writes an int32 count (`compact`: varint count + 1) and each element
/// with `write_one(w, element)`.
template <class T, class F>
void write_array(writer& w, const std::vector<T>& xs, F&& write_one, bool compact = false) {
  w.array_length(static_cast<int32_t>(xs.size()), compact);
  for (const auto& x : xs)
    write_one(w, x);
}

} // namespace caftx::kafka
