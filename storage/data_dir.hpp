// The identity of a node's data directory: `meta.properties`, as Kafka keeps
// one in every log directory (kafka.server.BrokerMetadataCheckpoint,
// org.apache.kafka.metadata.properties.MetaProperties). It is written, synced,
// once the directory's LevelDB database has been created, so its presence
// says "a database lives here": a directory that has it but lost LevelDB's
// CURRENT file is refused instead of being re-created empty (LevelDB's
// create_if_missing would start a new database and delete the old table
// files), and a non-empty directory without it is refused instead of having a
// database created among foreign files. Format: storage/FORMAT.md, "Data
// directory identity".
//
// Uses only the given leveldb::Env for file access (the real disk, or the
// simulator's in-memory one). Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/status.hpp"

namespace leveldb {
class Env;
}

namespace caftx {

/// The identity file's name inside the data directory.
inline constexpr const char* meta_properties_file = "meta.properties";
/// The only `version=` this release reads and writes.
inline constexpr int32_t meta_properties_version = 1;

/// The parsed contents of meta.properties.
struct meta_properties {
  int32_t version = meta_properties_version;
  int32_t node_id = 0;
  /// Kafka's cluster.id; not written yet, kept when present.
  std::optional<std::string> cluster_id;
};

/// Parses `text` (java.util.Properties lines: `key=value`, `#` or `!`
/// comments, blank lines; a trailing '\r' is dropped). Unknown keys are
/// ignored, as Kafka does. Errors: KAFKA_STORAGE_ERROR "<file>:<line>: ..."
/// for a line without '=' or with an empty key, a `version` other than 1,
/// a `node.id` that is not an integer in [0, 2^31-1]; "<file>: ..." when
/// `version` or `node.id` is missing.
status_or<meta_properties> parse_meta_properties(const std::string& text, const std::string& file);

/// The text written for `props` (a comment line, then version, node.id and
/// cluster.id if set).
std::string format_meta_properties(const meta_properties& props);

/// What open() found in a data directory.
enum class data_dir_kind {
  fresh,    // no database files: create the database, then write_identity()
  existing, // meta.properties (matching node id) and LevelDB's CURRENT present
  adopted,  // as existing, but meta.properties says node.id=0 and another id
            // is configured (written when every node kept 0): open(), then
            // write_identity() with the configured id
};

/// Inspects `dir` before LevelDB opens it (creating it if missing). Fresh:
/// no meta.properties and none of LevelDB's files (files of other names
/// are left alone, as LevelDB leaves them). Errors, all KAFKA_STORAGE_ERROR
/// naming the directory: LevelDB files without meta.properties (the files
/// found are named); meta.properties that
/// does not parse (file and line) or names another node.id than 0 (see
/// data_dir_kind::adopted) or the configured one; CURRENT missing
/// although the identity says a database was created here (the table files
/// still there are counted and named).
status_or<data_dir_kind> inspect_data_dir(leveldb::Env* env, const std::string& dir,
                                          int32_t node_id);

/// Writes `dir`/meta.properties durably: a synced temporary file renamed
/// into place, then (on the real disk) the directory synced. Errors:
/// KAFKA_STORAGE_ERROR with the file and the OS error.
status write_identity(leveldb::Env* env, const std::string& dir, const meta_properties& props);

} // namespace caftx
