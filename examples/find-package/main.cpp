// A program built against an installed caftx (find_package(caftx)): an
// embedded node in a temporary directory, one committed transaction, read
// back by a read_committed consumer. Exit status 0 when the record read is
// the one committed.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <unistd.h>

#include "actors/broker/node.hpp"
#include "actors/client/admin.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "runtime/messages.hpp"

struct config : caf::actor_system_config {
  config() { caftx::register_message_types(*this); }
};

int run(const std::filesystem::path& dir) {
  config cfg;
  caf::actor_system sys{cfg};
  caftx::node_config ncfg;
  ncfg.data_dir = dir.string();
  auto started = caftx::node::start(sys, ncfg);
  if (!started.ok()) {
    std::cerr << started.error().to_string() << "\n";
    return 2;
  }
  auto node = std::move(started).value();
  if (auto st = node->create_topic("payments", 1); !st.ok()) {
    std::cerr << st.to_string() << "\n";
    return 2;
  }
  caftx::producer p{sys, node->broker(), caftx::properties{{"transactional.id", "payments-1"}}};
  p.init_transactions();
  p.begin_transaction();
  p.send({"payments", 0, "customer-7", "debit 10.00", {}, -1});
  p.commit_transaction();
  // The markers follow the commit; wait for them, then read.
  while (caftx::describe_transaction(sys, node->broker(), "payments-1")->state != "CompleteCommit")
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  caftx::consumer c{sys, node->broker(), caftx::properties{{"isolation.level", "read_committed"},
                                                           {"auto.offset.reset", "earliest"}}};
  c.assign({{"payments", 0}});
  auto records = c.poll(std::chrono::milliseconds(1000));
  if (records.size() != 1 || records[0].key != "customer-7" || records[0].value != "debit 10.00") {
    std::cerr << "expected one committed record, read " << records.size() << "\n";
    return 1;
  }
  std::cout << "committed and read: " << records[0].key << " " << records[0].value << "\n";
  return 0;
}

int main() {
  auto dir = std::filesystem::temp_directory_path()
             / ("caftx-find-package-example-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  int rc = 1;
  try {
    rc = run(dir);
  } catch (const std::exception& e) { // a kafka_exception from the clients, say
    std::cerr << e.what() << "\n";
  }
  std::filesystem::remove_all(dir);
  return rc;
}
