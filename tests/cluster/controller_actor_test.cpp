// The controller actor over a real ZooKeeper (tests/cluster/zk_server.hpp)
// and over the local store: node registration (node epoch = czxid), the
// election (one controller, epoch + 1 at every change), failover when the
// controller's session ends, a duplicate node.id refused, and the first
// decision of a new controller (UpdateMetadata to every live node).
#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <unistd.h>
#include <variant>

#include "actors/controller/controller_actor.hpp"
#include "actors/controller/znodes.hpp"
#include "actors/coordination/local_store.hpp"
#include "actors/coordination/zookeeper_store.hpp"
#include "runtime/coordination_messages.hpp"
#include "runtime/messages.hpp"
#include "storage/node_store.hpp"
#include "tests/cluster/zk_server.hpp"

namespace caftx {
namespace {

using namespace std::chrono_literals;
using testing::zk_server;

struct config : caf::actor_system_config {
  config() { register_message_types(*this); }
};

// What the controllers reported, by node id, waited on with a deadline.
class recorder {
public:
  void registered(controller::node_id n, int64_t epoch) {
    update([&] { node_epochs_[n].push_back(epoch); });
  }
  void elected(controller::node_id n, int32_t epoch) {
    update([&] { elections_.push_back({n, epoch}); });
  }
  void resigned(controller::node_id n) {
    update([&] { ++resignations_[n]; });
  }
  void fatal(controller::node_id n, const status& s) {
    update([&] { fatal_[n] = s.message(); });
  }
  void sent(const controller::outbound_request& r) {
    update([&] { sent_.push_back(r); });
  }

  template <class Pred>
  bool wait(Pred pred, std::chrono::milliseconds deadline = 30s) {
    std::unique_lock<std::mutex> lock{mtx_};
    return cv_.wait_for(lock, deadline, [&] { return pred(*this); });
  }

  // Read under the lock (inside wait's predicate) or after the actors are done.
  std::map<controller::node_id, std::vector<int64_t>> node_epochs_;
  std::vector<std::pair<controller::node_id, int32_t>> elections_;
  std::map<controller::node_id, int> resignations_;
  std::map<controller::node_id, std::string> fatal_;
  std::vector<controller::outbound_request> sent_;

private:
  template <class F>
  void update(F f) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      f();
    }
    cv_.notify_all();
  }
  std::mutex mtx_;
  std::condition_variable cv_;
};

// A store in front of `real` that answers the next `lose` reads of the
// /nodes children ZCONNECTIONLOSS, as ZooKeeper's client answers a request
// that was outstanding when its connection dropped (the session lives on).
caf::behavior lossy_store(caf::event_based_actor* self, caf::actor real,
                          std::shared_ptr<std::atomic<int>> lose) {
  self->link_to(real);
  self->set_default_handler(
    [self, real, lose](caf::scheduled_actor*, caf::message_view& xs) -> caf::result<caf::message> {
      auto msg = xs.move_content_to_message();
      if (msg.match_elements<coord_get_children_request>()
          && msg.get_as<coord_get_children_request>(0).path == controller::nodes_path
          && lose->load() > 0) {
        --*lose;
        return caf::make_message(coord_children_response{zrc::ZCONNECTIONLOSS, {}, {}});
      }
      return self->delegate(real, std::move(msg));
    });
  return {[](caf::unit_t) {}};
}

class ControllerActorTest : public ::testing::Test {
protected:
  void TearDown() override {
    for (auto& c : controllers)
      caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
    for (auto& c : controllers)
      self->wait_for(c);
  }

  controller_options options(controller::node_id id,
                             std::function<caf::actor(caf::actor)> spawn_store) {
    controller_options o;
    o.node_id = id;
    o.advertised = {"127.0.0.1", static_cast<uint16_t>(9190 + id)};
    o.build = "test";
    o.spawn_store = std::move(spawn_store);
    o.send = [this](const controller::outbound_request& r) { rec.sent(r); };
    o.events.registered = [this, id](int64_t e) { rec.registered(id, e); };
    o.events.elected = [this, id](int32_t e) { rec.elected(id, e); };
    o.events.resigned = [this, id](const std::string&) { rec.resigned(id); };
    o.events.fatal = [this, id](const status& s) { rec.fatal(id, s); };
    return o;
  }

  controller_actor start_on_zookeeper(controller::node_id id) {
    auto connect = this->connect;
    auto& sys = this->sys;
    auto c = spawn_controller(sys, options(id, [&sys, connect](caf::actor owner) {
                                return spawn_zookeeper_store(sys, {connect, 4000, owner});
                              }));
    controllers.push_back(c);
    return c;
  }

  void stop(const controller_actor& c) {
    caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
    self->wait_for(c);
    controllers.erase(std::find(controllers.begin(), controllers.end(), c));
  }

  static size_t update_metadata_to(const recorder& r, controller::node_id target, int32_t epoch) {
    size_t n = 0;
    for (auto& s : r.sent_)
      if (auto* um = std::get_if<controller::update_metadata_request>(&s.request))
        if (s.target == target && um->controller_epoch == epoch)
          ++n;
    return n;
  }

  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::string connect = zk_server::shared().connect(zk_server::shared().fresh_chroot(
    ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  recorder rec;
  std::vector<controller_actor> controllers;
};

TEST_F(ControllerActorTest, TwoNodesRegisterAndExactlyOneIsControllerAtEpochOne) {
  start_on_zookeeper(1);
  start_on_zookeeper(2);
  ASSERT_TRUE(rec.wait([](const recorder& r) {
    return r.node_epochs_.count(1) && r.node_epochs_.count(2) && !r.elections_.empty();
  }));
  // The winner's first decision: UpdateMetadata to both nodes (Kafka's
  // onControllerFailover sends it before anything else).
  ASSERT_TRUE(rec.wait([](const recorder& r) {
    return update_metadata_to(r, 1, 1) > 0 && update_metadata_to(r, 2, 1) > 0;
  }));
  // A second (wrong) election would have had time to show up by now.
  rec.wait([](const recorder&) { return false; }, 500ms);
  for (controller::node_id n : {1, 2}) {
    auto first = std::find_if(rec.sent_.begin(), rec.sent_.end(),
                              [n](const auto& s) { return s.target == n; });
    ASSERT_NE(first, rec.sent_.end());
    EXPECT_TRUE(std::holds_alternative<controller::update_metadata_request>(first->request));
  }
  EXPECT_EQ(rec.elections_.size(), 1u);
  EXPECT_EQ(rec.elections_.front().second, 1);
  // Node epochs are the /nodes znodes' czxids: distinct and positive.
  EXPECT_GT(rec.node_epochs_[1].front(), 0);
  EXPECT_GT(rec.node_epochs_[2].front(), 0);
  EXPECT_NE(rec.node_epochs_[1].front(), rec.node_epochs_[2].front());
  // The UpdateMetadata lists both live nodes with their node epochs.
  for (auto& s : rec.sent_)
    if (auto* um = std::get_if<controller::update_metadata_request>(&s.request)) {
      ASSERT_EQ(um->live_nodes.size(), 2u);
      EXPECT_EQ(um->node_epoch, rec.node_epochs_[s.target].front());
      EXPECT_EQ(um->controller_id, rec.elections_.front().first);
    }
}

TEST_F(ControllerActorTest, ANodeSeenWhileTheStoreConnectionWasLostIsReadAgain) {
  auto lose = std::make_shared<std::atomic<int>>(0);
  auto connect = this->connect;
  auto& sys = this->sys;
  controllers.push_back(spawn_controller(sys, options(1, [&sys, connect, lose](caf::actor owner) {
                                           auto real = spawn_zookeeper_store(sys, {connect, 4000, owner});
                                           return sys.spawn(lossy_store, real, lose);
                                         })));
  ASSERT_TRUE(rec.wait([](const recorder& r) { return update_metadata_to(r, 1, 1) > 0; }));
  // Node 2 registers while the controller's connection is down: its read
  // of /nodes after the watch fired is lost. The session lives on, so no
  // new election reads everything again; the controller must read again.
  lose->store(1);
  start_on_zookeeper(2);
  ASSERT_TRUE(rec.wait([](const recorder& r) { return update_metadata_to(r, 2, 1) > 0; }))
    << "node 2 was never seen by the controller";
  EXPECT_EQ(lose->load(), 0); // the loss did happen
  EXPECT_EQ(rec.elections_.size(), 1u);
}

TEST_F(ControllerActorTest, WhenTheControllersSessionEndsTheOtherNodeTakesOverAtTheNextEpoch) {
  auto one = start_on_zookeeper(1);
  ASSERT_TRUE(rec.wait([](const recorder& r) { return !r.elections_.empty(); }));
  ASSERT_EQ(rec.elections_.front(), (std::pair<controller::node_id, int32_t>{1, 1}));
  start_on_zookeeper(2);
  ASSERT_TRUE(rec.wait([](const recorder& r) { return r.node_epochs_.count(2) > 0; }));
  stop(one); // its store's session closes: /controller and /nodes/1 go
  ASSERT_TRUE(rec.wait([](const recorder& r) { return r.elections_.size() == 2; }));
  EXPECT_EQ(rec.elections_.back(), (std::pair<controller::node_id, int32_t>{2, 2}));
  // Its first decision: UpdateMetadata to the one live node.
  ASSERT_TRUE(rec.wait([](const recorder& r) { return update_metadata_to(r, 2, 2) > 0; }));
  EXPECT_EQ(update_metadata_to(rec, 1, 2), 0u);
}

TEST_F(ControllerActorTest, AnExpiredControllerResignsAndReRegistersWithANewNodeEpoch) {
  auto& sys = this->sys;
  auto connect = this->connect;
  auto store_of_one = std::make_shared<caf::actor>();
  controllers.push_back(
    spawn_controller(sys, options(1, [&sys, connect, store_of_one](caf::actor owner) {
                       *store_of_one = spawn_zookeeper_store(sys, {connect, 4000, owner});
                       return *store_of_one;
                     })));
  ASSERT_TRUE(rec.wait([](const recorder& r) { return !r.elections_.empty(); }));
  start_on_zookeeper(2);
  ASSERT_TRUE(rec.wait([](const recorder& r) { return r.node_epochs_.count(2) > 0; }));
  coord_session_response session;
  self->request(*store_of_one, 10s, coord_session_request{})
    .receive([&](coord_session_response& r) { session = r; },
             [&](caf::error& e) { FAIL() << sys.render(e); });
  ASSERT_TRUE(testing::expire_zookeeper_session(connect, session.session_id, session.password, 20s));
  // Node 1 resigns and registers again with the next session; one of the
  // two nodes (whichever wins the race) is controller at epoch 2.
  bool done = rec.wait([](const recorder& r) {
    return r.resignations_.count(1) > 0 && r.elections_.size() >= 2
           && r.node_epochs_.count(1) && r.node_epochs_.at(1).size() == 2;
  });
  std::string seen;
  for (auto& [n, e] : rec.elections_)
    seen += " " + std::to_string(n) + "@" + std::to_string(e);
  ASSERT_TRUE(done) << "elections:" << seen << "; node 1 registrations "
                    << rec.node_epochs_[1].size() << ", resignations " << rec.resignations_[1];
  rec.wait([](const recorder&) { return false; }, 500ms); // a wrong third election shows up
  ASSERT_EQ(rec.elections_.size(), 2u) << seen;
  EXPECT_EQ(rec.elections_.back().second, 2);
  EXPECT_GT(rec.node_epochs_[1][1], rec.node_epochs_[1][0]);
  // The new controller sends node 1 an UpdateMetadata at epoch 2 carrying
  // its new node epoch (a bounced node to it, or its own registration).
  auto new_epoch = rec.node_epochs_[1][1];
  ASSERT_TRUE(rec.wait([new_epoch](const recorder& r) {
    for (auto& s : r.sent_)
      if (auto* um = std::get_if<controller::update_metadata_request>(&s.request))
        if (s.target == 1 && um->controller_epoch == 2 && um->node_epoch == new_epoch)
          return true;
    return false;
  }));
}

TEST_F(ControllerActorTest, ASecondNodeWithTheSameNodeIdIsRefused) {
  start_on_zookeeper(1);
  ASSERT_TRUE(rec.wait([](const recorder& r) { return r.node_epochs_.count(1) > 0; }));
  auto& sys = this->sys;
  auto connect = this->connect;
  auto o = options(7, [&sys, connect](caf::actor owner) {
    return spawn_zookeeper_store(sys, {connect, 4000, owner});
  });
  o.node_id = 1;
  o.events.fatal = [this](const status& s) { rec.fatal(99, s); };
  o.events.registered = [this](int64_t e) { rec.registered(99, e); };
  controllers.push_back(spawn_controller(sys, o));
  ASSERT_TRUE(rec.wait([](const recorder& r) { return r.fatal_.count(99) > 0; }));
  EXPECT_NE(rec.fatal_[99].find("node.id 1 is already registered by another live node"),
            std::string::npos)
    << rec.fatal_[99];
  EXPECT_EQ(rec.node_epochs_.count(99), 0u);
}

// Requests that arrive together: two CreateTopics of one name (the second
// is TOPIC_ALREADY_EXISTS and does not answer the first), and the block
// claims of many shards starting at once (each gets its own block, none
// runs out of attempts against the others).
TEST_F(ControllerActorTest, ConcurrentCreatesOfOneTopicAndConcurrentBlockClaimsEachGetTheirOwnAnswer) {
  auto c = start_on_zookeeper(1);
  ASSERT_TRUE(rec.wait([](const recorder& r) { return r.elections_.size() == 1; }));
  auto first = self->request(c, 10s, controller_create_topic_request{"x", 2, 1, {}});
  auto second = self->request(c, 10s, controller_create_topic_request{"x", 3, 1, {}});
  std::vector<error_code> created;
  for (auto* h : {&first, &second})
    h->receive([&](const txn_response& r) { created.push_back(r.error); },
               [&](const caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_EQ(created, (std::vector<error_code>{error_code::none, error_code::topic_already_exists}));
  constexpr int shards = 24; // more than the 20 attempts one claim may take
  using handle = decltype(self->request(c, 10s, producer_id_block_request{}));
  std::vector<handle> claims;
  for (int i = 0; i < shards; ++i)
    claims.push_back(self->request(c, 10s, producer_id_block_request{}));
  std::set<int64_t> starts;
  for (auto& h : claims)
    h.receive(
      [&](const producer_id_block_response& r) {
        EXPECT_EQ(r.error, error_code::none) << r.message;
        EXPECT_EQ(r.last - r.first, 999);
        starts.insert(r.first);
      },
      [&](const caf::error& e) { ADD_FAILURE() << sys.render(e); });
  ASSERT_EQ(starts.size(), static_cast<size_t>(shards));
  EXPECT_EQ(*starts.begin(), 0);
  EXPECT_EQ(*starts.rbegin(), (shards - 1) * 1000);
}

TEST_F(ControllerActorTest, OnTheLocalStoreTheNodeIsControllerAndEachStartIsTheNextEpoch) {
  auto dir = (std::filesystem::temp_directory_path()
              / ("caftx-ctl-" + std::to_string(::getpid())))
               .string();
  std::filesystem::remove_all(dir);
  for (int32_t start = 1; start <= 2; ++start) {
    auto store = node_store::open(dir);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
    std::shared_ptr<node_store> db = std::move(*store);
    auto& sys = this->sys;
    auto c = spawn_controller(sys, options(1, [&sys, db](caf::actor owner) {
                                return spawn_local_store(sys, {db, owner, nullptr});
                              }));
    controllers.push_back(c);
    ASSERT_TRUE(rec.wait([start](const recorder& r) {
      return static_cast<int32_t>(r.elections_.size()) == start;
    }));
    EXPECT_EQ(rec.elections_.back(), (std::pair<controller::node_id, int32_t>{1, start}));
    stop(c);
  }
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace caftx
