// caftx-message-echo: the far side of the message test across a real
// middleman. Publishes an actor on 127.0.0.1 (port 0) with caftx's
// middleman settings that answers every request with the message it
// received (after deserializing it, and serializing it again), prints
// "port <n>" and serves until SIGTERM.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/send.hpp>

#include <csignal>
#include <cstdio>
#include <pthread.h>

#include "actors/common/middleman.hpp"

int main() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  caf::actor_system_config cfg;
  caftx::configure_middleman(cfg, caftx::middleman_config{});
  caf::actor_system sys{cfg};
  auto echo = sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::reflect);
    return {[](caf::ok_atom) {}};
  });
  auto port = sys.middleman().publish(echo, 0, "127.0.0.1", true);
  if (!port) {
    std::fprintf(stderr, "publish failed: %s\n", sys.render(port.error()).c_str());
    return 2;
  }
  std::printf("port %u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  return 0;
}
