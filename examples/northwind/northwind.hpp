// The Northwind orders workload: the CSV model, the order rule, and its
// sequential reference result. Pure code (no caftx calls): the pipeline
// in pipeline.hpp runs the same rule on caftx, exactly once.
//
// The rule: the opening stock of a product is its units_in_stock; orders
// are handled in input order; an order is confirmed if, for every product
// in it, the summed quantity is at most the current stock (then the stock
// of each of its products drops by that quantity); otherwise it is
// rejected whole and the stock is unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace northwind {

struct order_line {
  int32_t product_id = 0;
  double unit_price = 0;
  int32_t quantity = 0;
  double discount = 0;
};

struct order {
  int32_t order_id = 0;
  std::string customer_id;
  std::string order_date;
  std::string ship_country;
  std::vector<order_line> lines;
};

/// Stock per product id.
using stock_map = std::map<int32_t, int32_t>;

/// Reads products.csv: product_id -> units_in_stock. Throws
/// std::runtime_error naming the file and line of a malformed row.
stock_map read_products(const std::string& path);

/// Reads order_details.csv grouped by order id (lines in file order).
/// Throws std::runtime_error naming the file, line and column of a
/// malformed row: ids and quantity must be whole numbers, unit_price a
/// finite decimal in [0, 1000000] and discount one in [0, 1]. Lines may end
/// in LF or CRLF (in every CSV reader here).
std::map<int32_t, std::vector<order_line>> read_order_lines(const std::string& path);

/// Calls `fn(order)` for each row of orders.csv in file order, with its
/// lines attached. Throws std::runtime_error naming the file and line of a
/// malformed row, after the rows before it were passed to `fn`.
void for_each_order(const std::string& path,
                    const std::map<int32_t, std::vector<order_line>>& lines,
                    const std::function<void(const order&)>& fn);

/// The rule applied to one order: returns true (confirmed, `stock` reduced)
/// or false (rejected, `stock` unchanged). A product missing from `stock`
/// has stock 0.
bool apply_order(stock_map& stock, const order& o);

/// Record encodings (JSON).
std::string encode_order(const order& o);
order decode_order(const std::string& json);
/// A stock-reduced record: product, order, quantity taken, new stock.
std::string encode_stock_reduced(int32_t product_id, int32_t order_id, int32_t quantity,
                                 int32_t new_stock);
struct stock_reduced {
  int32_t product_id = 0;
  int32_t order_id = 0;
  int32_t quantity = 0;
  int32_t new_stock = 0;
};
stock_reduced decode_stock_reduced(const std::string& json);

/// The outcome of the whole workload.
struct result {
  std::vector<int32_t> confirmed; // order ids, ascending
  std::vector<int32_t> rejected;  // order ids, ascending
  int64_t lines_written = 0;      // stock-reduced records
  stock_map final_stock;
  friend bool operator==(const result& a, const result& b) {
    return a.confirmed == b.confirmed && a.rejected == b.rejected
           && a.lines_written == b.lines_written && a.final_stock == b.final_stock;
  }
};

/// The same rule computed sequentially from the CSVs in `dir`, without
/// caftx: the reference the pipeline must equal.
result sequential_result(const std::string& dir);

} // namespace northwind
