// The Northwind orders pipeline end to end: exactly once through crashes
// and node restarts, and a malformed input file that must leave nothing
// visible.
#include "fixture.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

#include "actors/client/consumer.hpp"
#include "pipeline.hpp"

namespace caftx::testing {
namespace {

const std::string input = CAFTX_NORTHWIND_DIR;

TEST(Northwind, SequentialReferenceResult) {
  auto r = northwind::sequential_result(input);
  EXPECT_EQ(r.confirmed.size(), 95u);
  EXPECT_EQ(r.rejected.size(), 735u);
  EXPECT_EQ(r.lines_written, 160);
  EXPECT_EQ(r.final_stock.size(), 77u);
  EXPECT_EQ(r.final_stock.at(1), 4);   // Chai: 39 in stock
  EXPECT_EQ(r.final_stock.at(61), 98); // never fully sold out
  EXPECT_EQ(r.confirmed.front(), 10248);
}

class NorthwindPipeline : public threaded_fixture {
protected:
  northwind::job_options options(uint64_t seed, int crashes, int node_restarts,
                                 int orders_per_transaction = 10) const {
    northwind::job_options opts;
    opts.input_dir = input;
    opts.data_dir = dir;
    opts.seed = seed;
    opts.crashes = crashes;
    opts.node_restarts = node_restarts;
    opts.orders_per_transaction = orders_per_transaction;
    return opts;
  }
};

TEST_F(NorthwindPipeline, WithCrashesAndANodeRestartEqualsTheSequentialComputation) {
  auto report = northwind::run_job(sys, options(7, 4, 1));
  EXPECT_EQ(report.crashes_injected, 4);
  EXPECT_EQ(report.node_restarts, 1);
  EXPECT_EQ(report.actual.confirmed, report.expected.confirmed);
  EXPECT_EQ(report.actual.rejected, report.expected.rejected);
  EXPECT_EQ(report.actual.lines_written, report.expected.lines_written);
  EXPECT_EQ(report.actual.final_stock, report.expected.final_stock);
  EXPECT_TRUE(report.equal());
}

TEST_F(NorthwindPipeline, EveryCrashPointAndSeedGivesTheSameResult) {
  for (uint64_t seed : {11, 12, 13}) {
    std::filesystem::remove_all(dir);
    auto report = northwind::run_job(sys, options(seed, 6, 1, 25));
    EXPECT_EQ(report.crashes_injected + report.node_restarts, 7) << "seed " << seed;
    EXPECT_TRUE(report.equal()) << "seed " << seed;
  }
}

TEST_F(NorthwindPipeline, ARerunOnTheSameDataDirectoryResumesWithoutLoadingTwice) {
  auto opts = options(1, 1, 0);
  auto first = northwind::run_job(sys, opts);
  EXPECT_EQ(first.orders_loaded, 830);
  EXPECT_TRUE(first.equal());
  auto second = northwind::run_job(sys, opts);
  EXPECT_EQ(second.orders_loaded, 0);
  EXPECT_EQ(second.transactions_committed, 0);
  EXPECT_TRUE(second.equal());
}

// Copies the Northwind CSVs to a fresh directory, replacing line `line_no`
// of `file` with `replacement`.
std::string corrupted_input(const std::string& file, int line_no, const std::string& replacement) {
  auto out_dir = fresh_dir("-input");
  for (auto f : {"products.csv", "order_details.csv", "orders.csv"}) {
    std::ifstream in{input + "/" + f};
    std::ofstream out{out_dir + "/" + f};
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      out << (f == file && n == line_no ? replacement : line) << "\n";
  }
  return out_dir;
}

std::string sequential_error(const std::string& dir) {
  try {
    northwind::sequential_result(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(NorthwindInput, EmptyNumericFieldIsAnErrorNamingFileLineAndColumn) {
  auto dir = corrupted_input("products.csv", 3, "2,Chang,1,1,24 - 12 oz bottles,19,,40,25,1");
  EXPECT_EQ(sequential_error(dir), dir + "/products.csv:3: column units_in_stock: '' is not a whole number");
  std::filesystem::remove_all(dir);
}

TEST(NorthwindInput, DuplicateOrderIdIsAnErrorNamingFileAndLine) {
  auto dir = corrupted_input("orders.csv", 3, "10248,VINET,1996-07-04,1996-08-01,1996-07-16,3,32.38,Reims,France");
  EXPECT_EQ(sequential_error(dir), dir + "/orders.csv:3: duplicate order_id 10248");
  std::filesystem::remove_all(dir);
}

TEST(NorthwindInput, QuantityAboveAMillionIsRejectedInsteadOfOverflowing) {
  auto dir = corrupted_input("order_details.csv", 2, "10248,11,14,2147483647,0");
  EXPECT_EQ(sequential_error(dir),
            dir + "/order_details.csv:2: column quantity: 2147483647 is out of range [1, 1000000]");
  std::filesystem::remove_all(dir);
}

TEST(NorthwindInput, NonFiniteOrOutOfRangePriceIsAnErrorNamingFileLineAndColumn) {
  struct bad_case {
    std::string row;
    std::string error;
  };
  std::vector<bad_case> cases = {
    {"10248,11,1e999,12,0", ":2: column unit_price: 1e999 is out of range [0, 1000000]"},
    {"10248,11,inf,12,0", ":2: column unit_price: 'inf' is not a decimal number"},
    {"10248,11,nan,12,0", ":2: column unit_price: 'nan' is not a decimal number"},
    {"10248,11,-3.5,12,0", ":2: column unit_price: -3.5 is out of range [0, 1000000]"},
    {"10248,11,,12,0", ":2: column unit_price: '' is not a decimal number"},
    {"10248,11,14,12,1.5", ":2: column discount: 1.5 is out of range [0, 1]"},
    {"10248,11,14,12,-1e400", ":2: column discount: -1e400 is out of range [0, 1]"},
  };
  for (auto& c : cases) {
    auto dir = corrupted_input("order_details.csv", 2, c.row);
    EXPECT_EQ(sequential_error(dir), dir + "/order_details.csv" + c.error);
    std::filesystem::remove_all(dir);
  }
}

// The input with every line ending in `eol` (the shipped files end theirs
// in CRLF).
std::string input_with_line_ends(const std::string& eol) {
  auto out_dir = fresh_dir("-eol");
  for (auto f : {"products.csv", "order_details.csv", "orders.csv"}) {
    std::ifstream in{input + "/" + f};
    std::ofstream out{out_dir + "/" + f, std::ios::binary};
    std::string line;
    while (std::getline(in, line)) {
      while (!line.empty() && line.back() == '\r')
        line.pop_back();
      out << line << eol;
    }
  }
  return out_dir;
}

TEST(NorthwindInput, LfCrlfAndDoubledCrLineEndsGiveTheSameResult) {
  auto expected = northwind::sequential_result(input);
  for (std::string eol : {"\n", "\r\n", "\r\r\n"}) {
    auto dir = input_with_line_ends(eol);
    try {
      EXPECT_EQ(northwind::sequential_result(dir), expected) << "line end " << eol.size();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "line end of " << eol.size() << " bytes: " << e.what();
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(NorthwindInput, InvalidUtf8IsAnErrorNamingFileLineAndColumn) {
  auto dir = corrupted_input("orders.csv", 400,
                             "10646,HUNGO,1997-08-27,1997-10-08,1997-09-03,3,142.33,Cork,Fr\xe9nce");
  EXPECT_EQ(sequential_error(dir), dir + "/orders.csv:400: column ship_country: not valid UTF-8");
  std::filesystem::remove_all(dir);
}

TEST_F(NorthwindPipeline, ARerunAfterAnAbortedLoadLoadsTheInputAndEndsEqual) {
  // A load aborted half-way (a malformed row; SIGKILL has the same effect:
  // the next init_transactions aborts it) leaves only aborted records.
  auto bad = corrupted_input("orders.csv", 101, "10347,FAMIA,not-a-date");
  {
    start_node();
    northwind::create_topics(sys, n->broker());
    EXPECT_THROW(northwind::load_orders(sys, n->broker(), bad), std::runtime_error);
    n->stop();
    n.reset();
  }
  auto report = northwind::run_job(sys, options(2, 1, 0));
  EXPECT_EQ(report.orders_loaded, 830);
  EXPECT_TRUE(report.equal());
  std::filesystem::remove_all(bad);
}

TEST_F(NorthwindPipeline, ARerunWithAnotherInputOnALoadedDirectoryIsAnError) {
  auto first = northwind::run_job(sys, options(1, 0, 0));
  ASSERT_TRUE(first.equal());
  auto other = corrupted_input("orders.csv", 2, "10248,VINEX,1996-07-04,1996-08-01,1996-07-16,3,32.38,Reims,France");
  auto opts = options(1, 0, 0);
  opts.input_dir = other;
  try {
    northwind::run_job(sys, opts);
    FAIL() << "a different input was accepted as already loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "the data directory holds a load of 830 orders that differs from the 830 orders of "
                                       + other + "; use another --data-dir");
  }
  std::filesystem::remove_all(other);
}

TEST_F(NorthwindPipeline, MalformedOrdersCsvAbortsTheLoadNamingFileAndLine) {
  auto bad = fresh_dir("-input");
  for (auto f : {"products.csv", "order_details.csv"})
    std::filesystem::copy_file(input + "/" + f, bad + "/" + f);
  {
    std::ifstream in{input + "/orders.csv"};
    std::ofstream out{bad + "/orders.csv"};
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      out << (n == 101 ? "10347,FAMIA,not-a-date" : line) << "\n"; // too few columns
  }
  start_node();
  northwind::create_topics(sys, n->broker());
  try {
    northwind::load_orders(sys, n->broker(), bad);
    FAIL() << "load_orders accepted a malformed file";
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("orders.csv"), std::string::npos) << what;
    EXPECT_NE(what.find("101"), std::string::npos) << what;
    std::cout << "load_orders said: " << what << std::endl;
  }
  // Rows before it may have been sent (whole batches of batch.size bytes,
  // once the session had added the partition), then the transaction was
  // aborted: read_committed sees none of them, read_uncommitted at most the
  // rows before line 101 (the header is line 1).
  auto count = [&](const char* isolation) {
    consumer c{sys, n->broker(), properties{{"isolation.level", isolation},
                                            {"auto.offset.reset", "earliest"}}};
    c.assign({{"orders", 0}});
    size_t seen = 0;
    auto end = c.end_offset({"orders", 0});
    while (c.position({"orders", 0}) < end)
      seen += c.poll(std::chrono::milliseconds(100)).size();
    return seen;
  };
  EXPECT_EQ(count("read_committed"), 0u);
  EXPECT_LT(count("read_uncommitted"), 100u);
  std::filesystem::remove_all(bad);
}

} // namespace
} // namespace caftx::testing
