// The Kafka listener (actors/kafka/kafka_listener.hpp,
// docs/kafka-protocol.md) of three caftx-node processes, judged by an
// unmodified Kafka client, kcat (librdkafka 2.0.2): its ApiVersions v3
// handshake and Metadata v4 name every node with its PLAINTEXT:// address,
// the controller and each partition's leader, replicas and ISR as the
// controller decided them, and follow a killed node out. Malformed,
// oversized and unknown requests on a raw socket close that connection
// only; the node goes on answering.
#include "cluster_fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>

#include "protocol/kafka_api.hpp"

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
  std::optional<std::string> response() {
    auto size = read(4);
    if (!size)
      return std::nullopt;
    kafka::reader r{*size};
    return read(static_cast<size_t>(r.int32()));
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

  // kcat -L -J against node `id`: its metadata as JSON, or null when kcat failed.
  nlohmann::json kcat_metadata(int32_t id) {
    std::string kcat = CAFTX_KCAT;
    EXPECT_FALSE(kcat.empty()) << "kcat not found: tools/install-deps.sh installs it";
    if (kcat.empty())
      return nullptr;
    auto name = "kcat-" + std::to_string(runs++);
    child_process p{tmp.path(), name,
                    {kcat, "-L", "-J", "-m", "10", "-b",
                     "127.0.0.1:" + std::to_string(kafka_ports.at(id))}};
    auto status = p.wait_exit(60s);
    if (exit_code(status) != 0) {
      ADD_FAILURE() << "kcat exited " << exit_code(status) << ": " << p.err();
      return nullptr;
    }
    return nlohmann::json::parse(p.out(), nullptr, false);
  }
};

TEST_F(KafkaListener, KcatSeesEveryNodeTheControllerAndTheLeadersAsTheControllerDecided) {
  start_cluster(3);
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("orders", 3, {}, 3).ok());
  auto described = admin.describe_topics({"orders"});
  ASSERT_TRUE(described.ok());
  auto& parts = described->at(0).partitions;

  auto md = kcat_metadata(2);
  ASSERT_TRUE(md.is_object()) << md.dump();
  std::map<int, std::string> brokers;
  for (auto& b : md["brokers"])
    brokers[b["id"].get<int>()] = b["name"].get<std::string>();
  EXPECT_EQ(brokers, (std::map<int, std::string>{
                       {1, "127.0.0.1:" + std::to_string(kafka_ports[1])},
                       {2, "127.0.0.1:" + std::to_string(kafka_ports[2])},
                       {3, "127.0.0.1:" + std::to_string(kafka_ports[3])}}));
  int controller = md["controllerid"].get<int>();
  EXPECT_TRUE(logged(controller, "elected controller at")) << "controller " << controller;
  nlohmann::json orders;
  std::set<std::string> names;
  for (auto& t : md["topics"]) {
    names.insert(t["topic"].get<std::string>());
    if (t["topic"] == "orders")
      orders = t;
  }
  EXPECT_TRUE(names.count("orders"));
  ASSERT_EQ(orders["partitions"].size(), 3u) << md.dump();
  for (auto& p : orders["partitions"]) {
    auto& want = parts.at(p["partition"].get<size_t>());
    EXPECT_EQ(p["leader"].get<int>(), want.leader);
    std::vector<int32_t> replicas, isr;
    for (auto& r : p["replicas"])
      replicas.push_back(r["id"].get<int32_t>());
    for (auto& r : p["isrs"])
      isr.push_back(r["id"].get<int32_t>());
    EXPECT_EQ(replicas, want.replicas);
    EXPECT_EQ(isr, want.isr);
  }

  // A killed node leaves the broker list once its session expired, and
  // leads nothing.
  int32_t victim = controller == 3 ? 1 : 3;
  ASSERT_TRUE(nodes[victim]->proc().stop(SIGKILL, 10s));
  nlohmann::json after;
  EXPECT_TRUE(wait_until(
    [&] {
      after = kcat_metadata(2);
      return after.is_object() && after["brokers"].size() == 2;
    },
    60s))
    << after.dump();
  for (auto& t : after["topics"])
    for (auto& p : t["partitions"])
      EXPECT_NE(p["leader"].get<int>(), victim) << t["topic"] << "-" << p["partition"];
}

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

TEST_F(KafkaListener, BadRequestsCloseTheirConnectionOnlyAndTheNodeAnswersOn) {
  start_cluster(1);
  auto port = kafka_ports.at(1);
  // Until the controller's first UpdateMetadata the node knows no broker.
  ASSERT_TRUE(wait_until([&] { return brokers_listed(port) == 1; }, 30s));
  // Two ApiVersions v0 in one write: two answers, in order.
  {
    raw_connection c{port};
    c.send(request(18, 0, 41, "") + request(18, 0, 42, ""));
    for (int32_t corr : {41, 42}) {
      auto r = c.response();
      ASSERT_TRUE(r) << corr;
      kafka::reader rd{*r};
      EXPECT_EQ(rd.int32(), corr);
      EXPECT_EQ(rd.int16(), 0); // no error
      EXPECT_EQ(rd.rest(), kafka::encode_api_versions_response(0, 0, kafka::supported_apis()).substr(2));
    }
  }
  // KIP-511: a newer ApiVersions gets the v0 body with UNSUPPORTED_VERSION.
  {
    raw_connection c{port};
    c.send(request(18, 9, 7, ""));
    auto r = c.response();
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, std::string("\0\0\0\x07", 4)
                    + kafka::encode_api_versions_response(0, 35, {{18, 0, 3}}));
  }
  // Closed by the node: an API it does not serve, a version of Metadata it
  // does not serve, a truncated Metadata, a frame above
  // socket.request.max.bytes, a negative size.
  for (auto bad : std::vector<std::string>{
         request(77, 0, 1, ""), request(3, 12, 1, ""), request(3, 4, 1, std::string("\0\0\0\x01\0", 5)),
         std::string("\x7f\xff\xff\xff", 4), std::string("\xff\xff\xff\xfe", 4)}) {
    raw_connection c{port};
    c.send(bad);
    EXPECT_TRUE(c.closed_by_peer()) << "request bytes " << ::testing::PrintToString(bad);
  }
  // Random frames: each is answered or closes its connection; none stops
  // the node.
  std::mt19937 rng{1234};
  for (int i = 0; i < 200; ++i) {
    raw_connection c{port};
    std::string body(8 + rng() % 64, '\0');
    for (auto& ch : body)
      ch = static_cast<char>(rng());
    if (i % 2 == 0) { // a known API and version, garbage after the header
      body[0] = 0;
      body[1] = static_cast<char>(i % 4 == 0 ? 3 : 18);
      body[2] = 0;
      body[3] = static_cast<char>(rng() % 4);
    }
    kafka::writer w;
    w.int32(static_cast<int32_t>(body.size()));
    w.raw(body);
    c.send(w.bytes());
    c.response(); // an answer or a closed connection: either is fine
  }
  EXPECT_EQ(brokers_listed(port), 1) << "the node stopped answering";

  // Frames that declare 99 MiB and send 4 bytes: memory follows the bytes
  // that arrived, not the declared size (three such connections took 300
  // MB when the declared size was reserved).
  auto rss_kb = [&] {
    std::ifstream status{"/proc/" + std::to_string(nodes[1]->proc().pid()) + "/status"};
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0)
        return std::stol(line.substr(6));
    return -1L;
  };
  auto before = rss_kb();
  std::vector<std::unique_ptr<raw_connection>> partial;
  for (int i = 0; i < 3; ++i) {
    partial.push_back(std::make_unique<raw_connection>(port));
    kafka::writer w;
    w.int32(99 * 1024 * 1024);
    w.raw(std::string("\0\x12\0\0", 4));
    partial.back()->send(w.bytes());
  }
  // Answered after the three partial frames were read (one multiplexer
  // thread reads them in order of arrival).
  EXPECT_EQ(brokers_listed(port), 1);
  EXPECT_LT(rss_kb() - before, 50 * 1024) << "kB of RSS grew for 12 bytes sent";
  partial.clear();

  // Metadata names each topic once; a name Kafka's Topic.validate refuses
  // is INVALID_TOPIC_EXCEPTION (17), an unknown one UNKNOWN_TOPIC_OR_PARTITION.
  {
    raw_connection c{port};
    kafka::writer body;
    body.int32(3);
    for (auto name : {"nope", "nope", "bad/name"})
      body.string(name);
    body.boolean(false);
    c.send(request(3, 4, 9, body.bytes()));
    auto md = c.response();
    ASSERT_TRUE(md);
    kafka::reader rd{*md};
    EXPECT_EQ(rd.int32(), 9);
    rd.int32(); // throttle
    auto brokers = rd.array_length(false).value_or(-1);
    for (int32_t i = 0; i < brokers; ++i) {
      rd.int32();
      rd.string();
      rd.int32();
      rd.nullable_string();
    }
    rd.nullable_string(); // cluster id
    rd.int32();           // controller
    ASSERT_EQ(rd.array_length(false), 2);
    std::map<std::string, int16_t> errors;
    for (int i = 0; i < 2; ++i) {
      auto error = rd.int16();
      auto name = rd.string();
      rd.boolean();
      rd.array_length(false);
      errors[name] = error;
    }
    EXPECT_TRUE(rd.ok()) << rd.what();
    EXPECT_EQ(errors, (std::map<std::string, int16_t>{{"nope", 3}, {"bad/name", 17}}));
  }

  // SIGTERM: the listener and its connections stop with the node.
  raw_connection open_connection{port};
  auto stopped = nodes[1]->proc().stop(SIGTERM, 30s);
  ASSERT_TRUE(stopped) << "the node did not exit within 30 s of SIGTERM";
  EXPECT_EQ(exit_code(*stopped), 0);
}

} // namespace
} // namespace caftx::testing
