// The README's embedding example as a program: a node in a temporary
// directory, a transactional producer that commits and a zombie that gets
// fenced, and a read_committed consumer.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "actors/broker/node.hpp"
#include "actors/client/admin.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"

struct config : caf::actor_system_config {
  config() { caftx::register_message_types(*this); }
};

int main() {
  auto dir = std::filesystem::temp_directory_path() / "caftx-embedding-example";
  std::filesystem::remove_all(dir);
  {
    config cfg;
    caf::actor_system sys{cfg};
    caftx::node_config ncfg;
    ncfg.data_dir = dir.string();
    auto started = caftx::node::start(sys, ncfg);
    if (!started.ok()) {
      std::cerr << started.error().to_string() << "\n";
      return 1;
    }
    auto node = std::move(started).value();
    for (auto [topic, partitions] : {std::pair{"payments", 3}, std::pair{"requests", 1}})
      if (auto st = node->create_topic(topic, partitions); !st.ok()) {
        std::cerr << st.to_string() << "\n";
        return 1;
      }

    caftx::producer zombie{sys, node->broker(), caftx::properties{{"transactional.id", "payments-1"}}};
    zombie.init_transactions();
    zombie.begin_transaction();
    zombie.send({"payments", 0, "customer-7", "debit 99.00 (zombie)", {}, -1});
    zombie.flush();

    // A second instance with the same transactional.id fences the first.
    caftx::producer p{sys, node->broker(), caftx::properties{{"transactional.id", "payments-1"}}};
    p.init_transactions();
    p.begin_transaction();
    p.send({"payments", std::nullopt, "customer-7", "debit 10.00", {}, -1});
    p.send_offsets_to_transaction({{{"requests", 0}, 43}}, "payments-app");
    p.commit_transaction();
    try {
      zombie.commit_transaction();
    } catch (const caftx::kafka_exception& e) {
      std::cout << "zombie: " << e.what() << "\n";
    }

    // Wait for the markers, then read what was committed.
    while (caftx::describe_transaction(sys, node->broker(), "payments-1")->state != "CompleteCommit")
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    caftx::consumer c{sys, node->broker(), caftx::properties{{"isolation.level", "read_committed"},
                                                             {"auto.offset.reset", "earliest"}}};
    for (int32_t partition = 0; partition < 3; ++partition) {
      c.assign({{"payments", partition}});
      for (auto& r : c.poll(std::chrono::milliseconds(100)))
        std::cout << "payments-" << r.partition << "@" << r.offset << ": " << r.key << " "
                  << r.value << "\n";
    }
    std::cout << "committed offset of payments-app on requests-0: "
              << caftx::consumer{sys, node->broker(), caftx::properties{{"group.id", "payments-app"}}}
                   .committed({"requests", 0})
                   .value_or(-1)
              << "\n";
  }
  std::filesystem::remove_all(dir);
}
