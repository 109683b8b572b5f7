// What the operator tools (caftx-topics, caftx-transactions) share: the
// admin connection from --bootstrap-server and --command-config, Kafka's
// table layout, and the exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/client/admin.hpp"
#include "actors/client/client.hpp"

namespace caftx::cli {

/// Exit codes: 0 done; 1 the cluster refused or failed the operation
/// (Kafka's tools exit 1 there); 2 bad input (an unknown or missing
/// option, a malformed value, an unreadable --command-config file).
constexpr int exit_ok = 0;
constexpr int exit_failed = 1;
constexpr int exit_bad_input = 2;

/// Parses the command line: nullopt to go on, else the exit code (0 after
/// --help, exit_bad_input after CLI11's message for a bad option).
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0)
      return app.exit(e);
    app.exit(e);
    return exit_bad_input;
  }
  return std::nullopt;
}

/// A client exception as an operator reads it: "CODE: message", without
/// the error class the C++ API adds.
std::string error_text(const kafka_exception& e);

/// "k=v" into `out`; false if it is not of that shape (no '=', or an
/// empty key).
bool add_pair(const std::string& kv, properties& out);

/// A client's properties: those of `config_file` ("" for none), then each
/// `pairs` entry ("k=v", given as `option`), then bootstrap.servers. An
/// unreadable file (named with its line) or a malformed pair sets `error`.
std::optional<properties> client_properties(const std::string& config_file,
                                            const std::vector<std::string>& pairs,
                                            const std::string& option,
                                            const std::string& bootstrap, std::string& error);

/// "<tool>: <why>" on stderr; exit_bad_input.
int refuse(const char* tool, const std::string& why);

/// An admin client for `bootstrap` ("host:port[,host:port...]") with the
/// admin properties of `command_config` (a properties file; "" for none;
/// bootstrap.servers there is overridden), or null with the failure
/// reported as `tool` and its exit code in `exit`: refuse() for an
/// unreadable file or an unknown key, "<tool>: cannot reach <bootstrap>:
/// ..." (exit_failed) otherwise.
std::unique_ptr<admin_client> connect_or_report(const char* tool, const std::string& bootstrap,
                                                const std::string& command_config, int& exit);

/// Kafka's prettyPrintTable (TransactionsCommand): every column padded to
/// its widest value or header, each cell followed by a tab; header first.
std::string table(const std::vector<std::string>& headers,
                  const std::vector<std::vector<std::string>>& rows);

/// "1,2,3".
std::string join_ids(const std::vector<int32_t>& ids);

/// The leader of each partition of __transaction_state (index: partition),
/// -1 where none is known; empty if the topic does not exist yet.
std::vector<int32_t> transaction_state_leaders(admin_client& admin);

} // namespace caftx::cli
