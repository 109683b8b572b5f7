// Two CreateTopics racing for one name: the second gets
// TOPIC_ALREADY_EXISTS while the first's record is being written, so one set
// of partition leaders serves the topic.
#include "fixture.hpp"

namespace caftx::testing {
namespace {

class CreateTopicsTest : public node_fixture {
protected:
  void SetUp() override { start_node(); }
};

TEST_F(CreateTopicsTest, TwoCreateTopicsAtOnceCreateOneTopic) {
  auto first = self->request(broker(), caf::infinite, create_topic_request{"x", 2, {}});
  auto second = self->request(broker(), caf::infinite, create_topic_request{"x", 3, {}});
  sched.run();
  std::vector<error_code> errors;
  for (auto* h : {&first, &second})
    h->receive([&](const txn_response& r) { errors.push_back(r.error); },
               [&](const caf::error& e) { ADD_FAILURE() << sys.render(e); });
  EXPECT_EQ(errors, (std::vector<error_code>{error_code::none, error_code::topic_already_exists}));
  auto md = call<metadata_response>(broker(), metadata_request{{"x"}});
  ASSERT_EQ(md.topics.size(), 1u);
  EXPECT_EQ(md.topics[0].partitions.size(), 2u);
}

} // namespace
} // namespace caftx::testing
