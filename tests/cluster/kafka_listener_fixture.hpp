// The fixture of the Kafka listener tests (kafka_listener_test.cpp,
// kafka_group_test.cpp): caftx-node processes with a PLAINTEXT:// listener
// each, kcat against them, and a raw TCP connection that sends hand-built
// requests and reads their responses.
#pragma once
#include "cluster_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>

#include "../kafka_request_samples.hpp"
#include "protocol/kafka_api.hpp"
#include "runtime/partitioner.hpp"
#include "runtime/record_batch_v2.hpp"

namespace caftx::testing {
namespace {

// A blocking TCP connection to 127.0.0.1:port with reads bounded in time.
class raw_connection {
public:
  explicit raw_connection(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
  }
  ~raw_connection() { ::close(fd_); }

  void send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      auto n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0)
        return; // closed by the node: the reads tell
      done += static_cast<size_t>(n);
    }
  }

  // Exactly n bytes, or nullopt when the connection closed or nothing
  // came within the deadline.
  std::optional<std::string> read(size_t n, std::chrono::milliseconds within = 10s) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + within;
    while (out.size() < n) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        return std::nullopt;
      char buf[4096];
      auto got = ::recv(fd_, buf, std::min(sizeof(buf), n - out.size()), 0);
      if (got <= 0)
        return std::nullopt;
      out.append(buf, static_cast<size_t>(got));
    }
    return out;
  }

  // One response frame: the bytes after the size.
  std::optional<std::string> response(std::chrono::milliseconds within = 10s) {
    auto size = read(4, within);
    if (!size)
      return std::nullopt;
    kafka::reader r{*size};
    return read(static_cast<size_t>(r.int32()), within);
  }

  // True once the node closed the connection (a read gives end of file).
  bool closed_by_peer(std::chrono::milliseconds within = 10s) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(within.count())) <= 0)
      return false;
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

private:
  int fd_ = -1;
};

std::string request(int16_t key, int16_t version, int32_t correlation_id, const std::string& body) {
  kafka::writer w;
  w.int16(key);
  w.int16(version);
  w.int32(correlation_id);
  w.nullable_string(std::string("test"));
  if (kafka::is_flexible(key, version))
    w.no_tagged_fields();
  w.raw(body);
  kafka::writer framed;
  framed.int32(static_cast<int32_t>(w.size()));
  framed.raw(w.bytes());
  return framed.take();
}

class KafkaListener : public Cluster {
protected:
  std::map<int32_t, uint16_t> kafka_ports;
  int runs = 0;

  void SetUp() override {
    per_node = [this](int32_t id) {
      if (!kafka_ports.count(id))
        kafka_ports[id] = free_port();
      return std::map<std::string, std::string>{
        {"listeners", "caftx://127.0.0.1:" + std::to_string(ports.at(id))
                        + ",PLAINTEXT://127.0.0.1:" + std::to_string(kafka_ports[id])}};
    };
  }

  // kcat with `args` against node `id`'s Kafka listener, `input` on its
  // standard input: its output, or nullopt (a test failure) when kcat
  // failed.
  std::optional<std::string> kcat(int32_t id, std::vector<std::string> args,
                                  const std::string& input = "") {
    std::string bin = CAFTX_KCAT;
    EXPECT_FALSE(bin.empty()) << "kcat not found: tools/install-deps.sh installs it";
    if (bin.empty())
      return std::nullopt;
    auto name = "kcat-" + std::to_string(runs++);
    std::string in_path;
    if (!input.empty()) {
      in_path = tmp.path() + "/" + name + ".in";
      std::ofstream{in_path} << input;
    }
    args.insert(args.begin(), {bin, "-b", "127.0.0.1:" + std::to_string(kafka_ports.at(id))});
    child_process p{tmp.path(), name, args, in_path};
    auto status = p.wait_exit(60s);
    if (exit_code(status) != 0) {
      ADD_FAILURE() << "kcat exited " << exit_code(status) << ": " << p.err();
      return std::nullopt;
    }
    return p.out();
  }

  // kcat -L -J against node `id`: its metadata as JSON, or null when kcat failed.
  nlohmann::json kcat_metadata(int32_t id) {
    auto out = kcat(id, {"-L", "-J", "-m", "10"});
    if (!out)
      return nullptr;
    return nlohmann::json::parse(*out, nullptr, false);
  }

  // Every record of `topic` from the beginning to the end (the LSO under
  // read_committed), as kcat prints them: "partition/offset key=value",
  // in partition and offset order.
  std::vector<std::string> kcat_consume(int32_t id, const std::string& topic,
                                        const std::string& isolation) {
    auto out = kcat(id, {"-C", "-t", topic, "-o", "beginning", "-e", "-q", "-X",
                         "isolation.level=" + isolation, "-f", "%p/%o %k=%s\n"});
    std::vector<std::string> lines;
    if (!out)
      return lines;
    std::istringstream in{*out};
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    std::sort(lines.begin(), lines.end(), [](const std::string& a, const std::string& b) {
      auto key = [](const std::string& l) {
        auto slash = l.find('/');
        return std::make_pair(std::stoi(l.substr(0, slash)), std::stol(l.substr(slash + 1)));
      };
      return key(a) < key(b);
    });
    return lines;
  }
};

// The number of brokers a Metadata v1 for every topic from `port` lists
// (-1: no answer).
int32_t brokers_listed(uint16_t port) {
  raw_connection c{port};
  c.send(request(3, 1, 5, std::string("\xff\xff\xff\xff", 4)));
  auto md = c.response();
  if (!md)
    return -1;
  kafka::reader rd{*md};
  EXPECT_EQ(rd.int32(), 5); // the correlation id
  auto n = rd.int32();
  if (n > 0) {
    EXPECT_EQ(rd.int32(), 1); // node 1
  }
  return n;
}

// The error of a response whose body starts with the throttle time and an
// error (InitProducerId, AddOffsetsToTxn, EndTxn), and the rest.
std::pair<int16_t, std::string> throttle_then_error(raw_connection& c, int32_t correlation_id) {
  auto r = c.response();
  if (!r) {
    ADD_FAILURE() << "no response";
    return {-2, ""};
  }
  kafka::reader rd{*r};
  EXPECT_EQ(rd.int32(), correlation_id);
  EXPECT_EQ(rd.int32(), 0);
  auto error = rd.int16();
  return {error, std::string(rd.rest())};
}

} // namespace
} // namespace caftx::testing
