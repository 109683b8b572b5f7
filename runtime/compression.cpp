#include "runtime/compression.hpp"

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <array>
#include <cstring>
#include <memory>

namespace caftx::compression {

namespace {

status corrupt(const char* codec, const std::string& why) {
  return {error_code::corrupt_message,
          std::string("RecordBatch v2: ") + codec + " records: " + why};
}

status too_large(const char* codec, size_t limit) {
  return corrupt(codec, "they decompress to more than " + std::to_string(limit) + " bytes");
}

status_or<std::string> gunzip(std::string_view in, size_t limit) {
  z_stream zs{};
  // 15 + 32: a gzip or zlib header, detected.
  if (inflateInit2(&zs, 15 + 32) != Z_OK)
    return corrupt("gzip", "zlib did not initialise");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard{&zs, inflateEnd};
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  std::array<char, 65536> chunk;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk.data());
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END)
      return corrupt("gzip", zs.msg != nullptr ? zs.msg : "inflate failed");
    out.append(chunk.data(), chunk.size() - zs.avail_out);
    if (out.size() > limit)
      return too_large("gzip", limit);
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0)
      return corrupt("gzip", "the stream is cut short");
  }
  return out;
}

status_or<std::string> unsnappy_block(std::string_view in, size_t limit) {
  size_t length = 0;
  if (snappy_uncompressed_length(in.data(), in.size(), &length) != SNAPPY_OK)
    return corrupt("snappy", "not a snappy block");
  if (length > limit)
    return too_large("snappy", limit);
  std::string out(length, '\0');
  if (snappy_uncompress(in.data(), in.size(), out.data(), &length) != SNAPPY_OK)
    return corrupt("snappy", "the block does not decompress");
  out.resize(length);
  return out;
}

// Raw snappy, or xerial's framing (Kafka's Java client, SnappyOutputStream):
// the magic "\x82SNAPPY\0", two int32 versions, then blocks of a
// big-endian int32 length and a raw snappy block.
status_or<std::string> unsnappy(std::string_view in, size_t limit) {
  static constexpr char magic[8] = {'\x82', 'S', 'N', 'A', 'P', 'P', 'Y', '\0'};
  if (in.size() < 16 || std::memcmp(in.data(), magic, sizeof(magic)) != 0)
    return unsnappy_block(in, limit);
  std::string out;
  size_t pos = 16;
  while (pos < in.size()) {
    if (in.size() - pos < 4)
      return corrupt("snappy", "a xerial block length is cut short");
    auto b = reinterpret_cast<const unsigned char*>(in.data() + pos);
    size_t n = (size_t{b[0]} << 24) | (size_t{b[1]} << 16) | (size_t{b[2]} << 8) | b[3];
    pos += 4;
    if (n > in.size() - pos)
      return corrupt("snappy", "a xerial block runs past the records");
    auto block = unsnappy_block(in.substr(pos, n), limit - out.size());
    if (!block.ok())
      return block;
    out += *block;
    pos += n;
  }
  return out;
}

status_or<std::string> unlz4(std::string_view in, size_t limit) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION)))
    return corrupt("lz4", "no decompression context");
  std::unique_ptr<LZ4F_dctx, LZ4F_errorCode_t (*)(LZ4F_dctx*)> guard{ctx,
                                                                     LZ4F_freeDecompressionContext};
  std::string out;
  std::array<char, 65536> chunk;
  size_t pos = 0;
  size_t hint = 1;
  while (hint != 0) {
    if (pos >= in.size())
      return corrupt("lz4", "the frame is cut short");
    size_t out_size = chunk.size();
    size_t in_size = in.size() - pos;
    hint = LZ4F_decompress(ctx, chunk.data(), &out_size, in.data() + pos, &in_size, nullptr);
    if (LZ4F_isError(hint))
      return corrupt("lz4", LZ4F_getErrorName(hint));
    pos += in_size;
    out.append(chunk.data(), out_size);
    if (out.size() > limit)
      return too_large("lz4", limit);
  }
  return out;
}

status_or<std::string> unzstd(std::string_view in, size_t limit) {
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> ds{ZSTD_createDStream(),
                                                              ZSTD_freeDStream};
  if (!ds || ZSTD_isError(ZSTD_initDStream(ds.get())))
    return corrupt("zstd", "no decompression stream");
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::string out;
  std::array<char, 65536> chunk;
  size_t left = 1;
  while (left != 0) {
    ZSTD_outBuffer output{chunk.data(), chunk.size(), 0};
    left = ZSTD_decompressStream(ds.get(), &output, &input);
    if (ZSTD_isError(left))
      return corrupt("zstd", ZSTD_getErrorName(left));
    out.append(chunk.data(), output.pos);
    if (out.size() > limit)
      return too_large("zstd", limit);
    if (left != 0 && input.pos == input.size && output.pos < output.size)
      return corrupt("zstd", "the frame is cut short");
  }
  return out;
}

status unsupported(int16_t codec) {
  return {error_code::unsupported_compression_type,
          "compression type " + std::to_string(codec) + " is not one of Kafka's (gzip 1, snappy "
            "2, lz4 3, zstd 4)"};
}

} // namespace

status_or<std::string> decompress(int16_t codec, std::string_view in, size_t limit) {
  switch (codec) {
    case gzip: return gunzip(in, limit);
    case snappy: return unsnappy(in, limit);
    case lz4: return unlz4(in, limit);
    case zstd: return unzstd(in, limit);
    default: return unsupported(codec);
  }
}

status_or<std::string> compress(int16_t codec, std::string_view in) {
  std::string out;
  switch (codec) {
    case gzip: {
      z_stream zs{};
      // 15 + 16: a gzip header, as Java's GZIPOutputStream writes.
      deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
      out.resize(deflateBound(&zs, static_cast<uLong>(in.size())) + 32);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      zs.avail_in = static_cast<uInt>(in.size());
      zs.next_out = reinterpret_cast<Bytef*>(out.data());
      zs.avail_out = static_cast<uInt>(out.size());
      deflate(&zs, Z_FINISH);
      out.resize(zs.total_out);
      deflateEnd(&zs);
      return out;
    }
    case snappy: {
      size_t n = snappy_max_compressed_length(in.size());
      out.resize(n);
      snappy_compress(in.data(), in.size(), out.data(), &n);
      out.resize(n);
      return out;
    }
    case lz4: {
      out.resize(LZ4F_compressFrameBound(in.size(), nullptr));
      auto n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), nullptr);
      out.resize(n);
      return out;
    }
    case zstd: {
      out.resize(ZSTD_compressBound(in.size()));
      auto n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
      out.resize(n);
      return out;
    }
    default:
      return unsupported(codec);
  }
}

} // namespace caftx::compression
