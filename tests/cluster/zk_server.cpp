#include "tests/cluster/zk_server.hpp"
#include "tests/freeze_child.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace caftx::testing {

namespace {

const char* server_jar = "/usr/share/java/zookeeper.jar";

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0)
      ::close(fd);
    throw std::runtime_error("zk_server: no free port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// One four-letter-word command; "" if the server did not answer in time.
std::string four_letter(int port, const char* cmd, std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return {};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0
      && ::write(fd, cmd, std::strlen(cmd)) == static_cast<ssize_t>(std::strlen(cmd))) {
    pollfd p{fd, POLLIN, 0};
    char buf[256];
    while (::poll(&p, 1, static_cast<int>(timeout.count())) > 0) {
      auto n = ::read(fd, buf, sizeof buf);
      if (n <= 0)
        break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

bool exited(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

// True once the server on `port` serves: imok comes before it takes
// sessions, srvr names its mode only once it serves (in an ensemble, once
// a quorum elected a leader).
bool serving(int port) {
  return four_letter(port, "ruok", std::chrono::milliseconds(500)) == "imok"
         && four_letter(port, "srvr", std::chrono::milliseconds(500)).find("Mode: ")
              != std::string::npos;
}

// Starts a ZooKeeper server JVM on `cfg_path`, its output in `log_path`:
// the JVM's pid (the child becomes java itself).
pid_t spawn_server(const std::string& cfg_path, const std::string& log_path) {
  pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error("zk_server: fork failed");
  if (pid == 0) {
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    const char* argv[] = {"java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                          "-cp", server_jar,
                          "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg_path.c_str(),
                          nullptr};
    ::execvp("java", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  return pid;
}

// Stops server `pid` (SIGTERM, SIGKILL after 10 s), reaps it, sets it -1.
void stop_server(pid_t& pid) {
  ::kill(pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!exited(pid)) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10)); // poll interval
  }
  pid = -1;
}

// The settings every test server shares (its own dataDir and client port
// follow).
const char* common_config = "tickTime=500\ninitLimit=10\nsyncLimit=5\n"
                            "admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n"
                            "minSessionTimeout=1000\nmaxSessionTimeout=60000\nforceSync=no\n";

} // namespace

zk_server& zk_server::shared() {
  static zk_server server;
  return server;
}

zk_server::zk_server() {
  char tmpl[] = "/tmp/caftx-zk-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr)
    throw std::runtime_error("zk_server: mkdtemp failed");
  dir_ = tmpl;
  // A port found free may be taken before java binds it: try a few.
  for (int attempt = 0; attempt < 3; ++attempt) {
    try {
      start();
      return;
    } catch (const std::exception&) {
      stop();
      if (attempt == 2) {
        std::filesystem::remove_all(dir_);
        throw;
      }
    }
  }
}

zk_server::~zk_server() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string zk_server::hosts() const {
  return "127.0.0.1:" + std::to_string(port_);
}

std::string zk_server::fresh_chroot(const std::string& name) {
  std::string clean;
  for (char c : name)
    clean.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return "/test-" + clean + "-" + std::to_string(next_chroot_++);
}

void zk_server::start() {
  if (!std::filesystem::exists(server_jar))
    throw std::runtime_error(std::string("zk_server: ") + server_jar
                             + " missing (package libzookeeper-java)");
  port_ = free_port();
  auto data = dir_ + "/data";
  std::filesystem::create_directories(data);
  {
    std::ofstream cfg(dir_ + "/zoo.cfg");
    cfg << common_config << "dataDir=" << data << "\n"
        << "clientPortAddress=127.0.0.1\nclientPort=" << port_ << "\n";
  }
  auto cfg_path = dir_ + "/zoo.cfg";
  auto log_path = dir_ + "/server.log";
  pid_ = spawn_server(cfg_path, log_path);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (serving(port_))
      return;
    if (exited(pid_)) {
      pid_ = -1;
      throw std::runtime_error("zk_server: java exited at start (see " + log_path + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // poll interval
  }
  throw std::runtime_error("zk_server: no imok within 30 s");
}

void zk_server::stop() {
  if (pid_ <= 0)
    return;
  if (paused_)
    resume();
  stop_server(pid_);
}

void zk_server::pause() {
  // The JVM is this process's child: freeze_child returns once it stopped,
  // so no request sent after pause() is answered before resume().
  int status = -1;
  if (!freeze_child(pid_, status)) {
    if (status != -1)
      pid_ = -1; // reaped: never signal that pid again
    throw std::runtime_error("zk_server: java did not stop on SIGSTOP (see " + dir_
                             + "/server.log)");
  }
  paused_ = true;
}

void zk_server::resume() {
  ::kill(pid_, SIGCONT);
  paused_ = false;
}

bool zk_server::ready_within(std::chrono::milliseconds deadline) const {
  auto end = std::chrono::steady_clock::now() + deadline;
  do {
    if (four_letter(port_, "ruok", std::chrono::milliseconds(200)) == "imok")
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20)); // poll interval
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

namespace {

struct connect_wait {
  std::mutex mtx;
  std::condition_variable cv;
  int state = 0; // the handle's last session state
};

void on_second_handle(zhandle_t*, int type, int state, const char*, void* ctx) {
  auto w = static_cast<connect_wait*>(ctx);
  if (type == ZOO_SESSION_EVENT) {
    std::lock_guard<std::mutex> guard{w->mtx};
    w->state = state;
    w->cv.notify_all();
  }
}

} // namespace

bool expire_zookeeper_session(const std::string& connect, int64_t session_id,
                              const std::string& password, std::chrono::milliseconds deadline) {
  clientid_t id{};
  id.client_id = session_id;
  std::memcpy(id.passwd, password.data(), std::min(password.size(), sizeof id.passwd));
  auto end = std::chrono::steady_clock::now() + deadline;
  // The session's own handle may take it back between our connect and our
  // close, and a close then closes nothing: repeat until a handle that
  // resumes the session is told it expired.
  while (std::chrono::steady_clock::now() < end) {
    auto wait = std::make_unique<connect_wait>();
    auto zh = zookeeper_init(connect.c_str(), on_second_handle, 4000, &id, wait.get(), 0);
    if (zh == nullptr)
      return false;
    int state;
    {
      std::unique_lock<std::mutex> lock{wait->mtx};
      wait->cv.wait_until(lock, end, [&] {
        return wait->state == ZOO_CONNECTED_STATE || wait->state == ZOO_EXPIRED_SESSION_STATE;
      });
      state = wait->state;
    }
    zookeeper_close(zh); // connected: closes the session
    if (state == ZOO_EXPIRED_SESSION_STATE)
      return true;
  }
  return false;
}

zk_ensemble::zk_ensemble(int n) {
  char tmpl[] = "/tmp/caftx-zk-ensemble-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr)
    throw std::runtime_error("zk_ensemble: mkdtemp failed");
  dir_ = tmpl;
  std::string members;
  for (int i = 0; i < n; ++i) {
    ports_.push_back(free_port());
    members += "server." + std::to_string(i + 1) + "=127.0.0.1:" + std::to_string(free_port())
               + ":" + std::to_string(free_port()) + "\n";
  }
  for (int i = 0; i < n; ++i) {
    auto dir = dir_ + "/" + std::to_string(i + 1);
    std::filesystem::create_directories(dir + "/data");
    std::ofstream(dir + "/data/myid") << i + 1 << "\n";
    std::ofstream(dir + "/zoo.cfg") << common_config << "dataDir=" << dir << "/data\n"
                                    << "clientPortAddress=127.0.0.1\nclientPort=" << ports_[i]
                                    << "\n" << members;
    pids_.push_back(spawn_server(dir + "/zoo.cfg", dir + "/server.log"));
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0; i < n; ++i)
    while (!serving(ports_[i])) {
      if (std::chrono::steady_clock::now() > deadline || exited(pids_[i])) {
        stop_all();
        throw std::runtime_error("zk_ensemble: server " + std::to_string(i + 1)
                                 + " did not serve within 60 s (see " + dir_ + ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20)); // poll interval
    }
}

zk_ensemble::~zk_ensemble() {
  stop_all();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void zk_ensemble::stop_all() {
  for (auto& pid : pids_)
    if (pid > 0)
      stop_server(pid);
}

std::string zk_ensemble::hosts() const {
  std::string out;
  for (auto port : ports_)
    out += (out.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(port);
  return out;
}

int zk_ensemble::leader() const {
  for (size_t i = 0; i < ports_.size(); ++i)
    if (pids_[i] > 0
        && four_letter(ports_[i], "srvr", std::chrono::milliseconds(500)).find("Mode: leader")
             != std::string::npos)
      return static_cast<int>(i);
  return -1;
}

void zk_ensemble::kill(int i) {
  auto& pid = pids_.at(static_cast<size_t>(i));
  if (pid <= 0)
    return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  pid = -1;
}


} // namespace caftx::testing
