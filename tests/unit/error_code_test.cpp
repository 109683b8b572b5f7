// Kafka error names and numbers, and the Java client's classification
// (docs/errors.md §Codes, §Classification).
#include <gtest/gtest.h>

#include "runtime/error_code.hpp"
#include "runtime/status.hpp"

namespace caftx {
namespace {

TEST(ErrorCode, NumbersAreKafkas) {
  EXPECT_EQ(static_cast<int>(error_code::concurrent_transactions), 51);
  EXPECT_EQ(static_cast<int>(error_code::producer_fenced), 90);
  EXPECT_EQ(static_cast<int>(error_code::invalid_producer_epoch), 47);
  EXPECT_EQ(static_cast<int>(error_code::out_of_order_sequence_number), 45);
  EXPECT_EQ(static_cast<int>(error_code::coordinator_load_in_progress), 14);
  EXPECT_EQ(static_cast<int>(error_code::invalid_transaction_timeout), 50);
  EXPECT_STREQ(to_string(error_code::producer_fenced), "PRODUCER_FENCED");
}

TEST(ErrorCode, ControllerErrorsAreKafkasNumbersAndNames) {
  EXPECT_EQ(static_cast<int>(error_code::leader_not_available), 5);
  EXPECT_EQ(static_cast<int>(error_code::broker_not_available), 8);
  EXPECT_EQ(static_cast<int>(error_code::stale_controller_epoch), 11);
  EXPECT_EQ(static_cast<int>(error_code::invalid_replication_factor), 38);
  EXPECT_EQ(static_cast<int>(error_code::invalid_replica_assignment), 39);
  EXPECT_EQ(static_cast<int>(error_code::not_controller), 41);
  EXPECT_EQ(static_cast<int>(error_code::stale_broker_epoch), 77);
  EXPECT_EQ(static_cast<int>(error_code::preferred_leader_not_available), 80);
  EXPECT_EQ(static_cast<int>(error_code::election_not_needed), 84);
  EXPECT_STREQ(to_string(error_code::preferred_leader_not_available),
               "PREFERRED_LEADER_NOT_AVAILABLE");
  EXPECT_STREQ(to_string(error_code::election_not_needed), "ELECTION_NOT_NEEDED");
  EXPECT_STREQ(to_string(error_code::leader_not_available), "LEADER_NOT_AVAILABLE");
  EXPECT_STREQ(to_string(error_code::broker_not_available), "BROKER_NOT_AVAILABLE");
  EXPECT_STREQ(to_string(error_code::stale_controller_epoch), "STALE_CONTROLLER_EPOCH");
  EXPECT_STREQ(to_string(error_code::invalid_replication_factor), "INVALID_REPLICATION_FACTOR");
  EXPECT_STREQ(to_string(error_code::invalid_replica_assignment), "INVALID_REPLICA_ASSIGNMENT");
  EXPECT_STREQ(to_string(error_code::not_controller), "NOT_CONTROLLER");
  EXPECT_STREQ(to_string(error_code::stale_broker_epoch), "STALE_BROKER_EPOCH");
  // LeaderNotAvailableException and NotControllerException are retriable;
  // the epoch and replication factor errors are not.
  EXPECT_TRUE(is_retriable(error_code::leader_not_available));
  EXPECT_TRUE(is_retriable(error_code::not_controller));
  for (auto e : {error_code::stale_controller_epoch, error_code::stale_broker_epoch,
                 error_code::invalid_replication_factor, error_code::broker_not_available})
    EXPECT_FALSE(is_retriable(e)) << to_string(e);
}

TEST(ErrorCode, InvalidTxnStateIsFatalFromEndTxnButAbortableFromProduce) {
  EXPECT_EQ(classify(api_kind::end_txn, error_code::invalid_txn_state), error_class::fatal);
  EXPECT_EQ(classify(api_kind::produce, error_code::invalid_txn_state), error_class::abortable);
}

TEST(ErrorCode, InvalidProducerEpochIsAbortableFromProduceAndProducerFencedIsFatal) {
  EXPECT_EQ(classify(api_kind::produce, error_code::invalid_producer_epoch), error_class::abortable);
  EXPECT_EQ(classify(api_kind::produce, error_code::producer_fenced), error_class::fatal);
  EXPECT_EQ(classify(api_kind::init_producer_id, error_code::producer_fenced), error_class::fatal);
  EXPECT_EQ(classify(api_kind::end_txn, error_code::producer_fenced), error_class::fatal);
}

TEST(ErrorCode, CoordinatorBusyErrorsAreRetriable) {
  for (auto e : {error_code::concurrent_transactions, error_code::coordinator_load_in_progress,
                 error_code::not_coordinator, error_code::coordinator_not_available})
    EXPECT_EQ(classify(api_kind::end_txn, e), error_class::retriable) << to_string(e);
  EXPECT_EQ(classify(api_kind::init_producer_id, error_code::invalid_transaction_timeout),
            error_class::fatal);
}

TEST(ErrorCode, TransactionalIdNotFoundIs105AndNotRetriable) {
  // Kafka's TransactionalIdNotFoundException is a plain ApiException: the
  // Admin call fails, nothing is retried.
  EXPECT_EQ(static_cast<int>(error_code::transactional_id_not_found), 105);
  EXPECT_STREQ(to_string(error_code::transactional_id_not_found), "TRANSACTIONAL_ID_NOT_FOUND");
  EXPECT_FALSE(is_retriable(error_code::transactional_id_not_found));
  EXPECT_EQ(static_cast<int>(error_code::inconsistent_cluster_id), 104);
  EXPECT_STREQ(to_string(error_code::inconsistent_cluster_id), "INCONSISTENT_CLUSTER_ID");
  EXPECT_FALSE(is_retriable(error_code::inconsistent_cluster_id));
  EXPECT_EQ(classify(api_kind::end_txn, error_code::transactional_id_not_found), error_class::fatal);
}

// -- verification_error: a verified write's answer (docs/errors.md §Verification)

TEST(VerificationError, NotInTheTransactionIsTransactionAbortable) {
  for (auto api : {api_kind::produce, api_kind::txn_offset_commit})
    EXPECT_EQ(verification_error(api, error_code::transaction_abortable),
              error_code::transaction_abortable);
}

TEST(VerificationError, ProducerFencedIsInvalidProducerEpoch) {
  for (auto api : {api_kind::produce, api_kind::txn_offset_commit})
    EXPECT_EQ(verification_error(api, error_code::producer_fenced),
              error_code::invalid_producer_epoch);
}

TEST(VerificationError, InvalidProducerIdMappingAndNonePassThrough) {
  for (auto api : {api_kind::produce, api_kind::txn_offset_commit}) {
    EXPECT_EQ(verification_error(api, error_code::invalid_producer_id_mapping),
              error_code::invalid_producer_id_mapping);
    EXPECT_EQ(verification_error(api, error_code::none), error_code::none);
  }
}

TEST(VerificationError, ConcurrentTransactionsIsNotEnoughReplicasForProduceOnly) {
  EXPECT_EQ(verification_error(api_kind::produce, error_code::concurrent_transactions),
            error_code::not_enough_replicas);
  EXPECT_EQ(verification_error(api_kind::txn_offset_commit, error_code::concurrent_transactions),
            error_code::concurrent_transactions);
}

TEST(VerificationError, UnavailableCoordinatorIsNotEnoughReplicasOrCoordinatorLoadInProgress) {
  // Produce: retriable without a metadata refresh; TxnOffsetCommit: Kafka's
  // mapping of NETWORK_EXCEPTION (no reply).
  for (auto e : {error_code::coordinator_not_available, error_code::coordinator_load_in_progress,
                 error_code::not_coordinator, error_code::request_timed_out}) {
    EXPECT_EQ(verification_error(api_kind::produce, e), error_code::not_enough_replicas)
      << to_string(e);
    EXPECT_EQ(verification_error(api_kind::txn_offset_commit, e),
              error_code::coordinator_load_in_progress)
      << to_string(e);
  }
}

TEST(Status, CarriesCodeAndMessage) {
  status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.to_string(), "OK");
  status st{error_code::producer_fenced, "epoch 3 < 4"};
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.to_string(), "PRODUCER_FENCED: epoch 3 < 4");
  status_or<int> v{7};
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 7);
  status_or<int> e{st};
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), error_code::producer_fenced);
}

TEST(Status, ValueOfAnErrorThrowsTheError) {
  status_or<std::string> e{status{error_code::kafka_storage_error, "cannot open data directory /d"}};
  try {
    (void)e.value();
    FAIL() << "value() of an error returned";
  } catch (const status_error& ex) {
    EXPECT_STREQ(ex.what(), "KAFKA_STORAGE_ERROR: cannot open data directory /d");
    EXPECT_EQ(ex.code(), error_code::kafka_storage_error);
    EXPECT_EQ(ex.status().message(), "cannot open data directory /d");
  }
  const auto& ce = e;
  EXPECT_THROW((void)ce.value(), status_error);
  EXPECT_THROW((void)std::move(e).value(), std::runtime_error);
  status_or<std::string> v{std::string("x")};
  EXPECT_EQ(std::move(v).value(), "x");
}

} // namespace
} // namespace caftx
