#include "tools/cli/cli_common.hpp"

#include <algorithm>
#include <cstdio>

#include "actors/client/client.hpp"
#include "config/config.hpp"
#include "runtime/ids.hpp"

namespace caftx::cli {

std::string error_text(const kafka_exception& e) {
  // "CODE: message (fatal)": the class means nothing to an operator.
  std::string text = e.what();
  auto cls = std::string(" (") + to_string(e.cls()) + ")";
  if (text.size() >= cls.size() && text.compare(text.size() - cls.size(), cls.size(), cls) == 0)
    text.erase(text.size() - cls.size());
  return text;
}

bool add_pair(const std::string& kv, properties& out) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  out[kv.substr(0, eq)] = kv.substr(eq + 1);
  return true;
}

std::optional<properties> client_properties(const std::string& config_file,
                                            const std::vector<std::string>& pairs,
                                            const std::string& option,
                                            const std::string& bootstrap, std::string& error) {
  properties props;
  if (!config_file.empty()) {
    auto loaded = load_properties_file(config_file);
    if (!loaded.ok()) {
      error = loaded.error().message();
      return std::nullopt;
    }
    props = std::move(*loaded);
  }
  for (auto& kv : pairs)
    if (!add_pair(kv, props)) {
      error = option + " '" + kv + "' must be key=value";
      return std::nullopt;
    }
  props["bootstrap.servers"] = bootstrap;
  return props;
}

int refuse(const char* tool, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", tool, why.c_str());
  return exit_bad_input;
}

std::unique_ptr<admin_client> connect_or_report(const char* tool, const std::string& bootstrap,
                                                const std::string& command_config, int& exit) {
  std::string error;
  auto props = client_properties(command_config, {}, "", bootstrap, error);
  if (!props) {
    exit = refuse(tool, error);
    return nullptr;
  }
  try {
    return std::make_unique<admin_client>(*props);
  } catch (const kafka_exception& e) {
    if (e.code() == error_code::invalid_config) {
      exit = refuse(tool, error_text(e));
      return nullptr;
    }
    error = error_text(e);
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::fprintf(stderr, "%s: cannot reach %s: %s\n", tool, bootstrap.c_str(), error.c_str());
  exit = exit_failed;
  return nullptr;
}

std::string table(const std::vector<std::string>& headers,
                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (auto& h : headers)
    width.push_back(h.size());
  for (auto& r : rows)
    for (size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < width.size(); ++i) {
      const std::string& v = i < cells.size() ? cells[i] : std::string{};
      out += v;
      out.append(width[i] - v.size(), ' ');
      out += '\t';
    }
    out += '\n';
  };
  line(headers);
  for (auto& r : rows)
    line(r);
  return out;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (auto id : ids)
    out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

std::vector<int32_t> transaction_state_leaders(admin_client& admin) {
  std::vector<int32_t> out;
  auto d = admin.describe_topics({transaction_state_topic});
  if (!d.ok() || d->empty() || d->front().error != error_code::none)
    return out;
  for (auto& p : d->front().partitions) {
    if (p.partition >= static_cast<int32_t>(out.size()))
      out.resize(p.partition + 1, -1);
    out[p.partition] = p.leader;
  }
  return out;
}

} // namespace caftx::cli
