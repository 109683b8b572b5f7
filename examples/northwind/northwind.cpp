#include "northwind.hpp"

#define CSV_IO_NO_THREAD
#include <limits> // csv.h uses std::numeric_limits without including it
#include <libfccp/csv.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <stdexcept>

namespace northwind {

namespace {

// '\r' too: the reader drops one '\r' before each '\n' (CRLF files), and
// files converted to CRLF twice end their lines in "\r\r\n".
using csv_reader_policy = io::trim_chars<' ', '\t', '\r'>;
using csv_quote_policy = io::double_quote_escape<',', '"'>;
template <unsigned N>
using csv_reader = io::CSVReader<N, csv_reader_policy, csv_quote_policy, io::throw_on_overflow>;

// fccp's exceptions name the problem, the column, the line and the file
// ("Too few columns in line 101 in file \"orders.csv\"."); rethrow them as
// std::runtime_error.
template <class F>
auto with_location(const std::string& path, F&& f) {
  try {
    return f();
  } catch (const io::error::base& e) {
    throw std::runtime_error(std::string("malformed input: ") + e.what());
  } catch (const std::runtime_error&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

void require(bool ok, const std::string& path, unsigned line, const std::string& what) {
  if (!ok)
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + what);
}

std::string format_bound(double x) {
  auto s = std::to_string(x); // "1000000.000000"
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.')
    s.pop_back();
  return s;
}

// A whole number in [min, max]; an empty field is an error, not 0.
int32_t parse_int(const std::string& field, const char* column, int64_t min, int64_t max,
                  const std::string& path, unsigned line) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  require(!field.empty() && ec == std::errc{} && end == field.data() + field.size(), path, line,
          std::string("column ") + column + ": '" + field + "' is not a whole number");
  require(v >= min && v <= max, path, line,
          std::string("column ") + column + ": " + field + " is out of range [" + std::to_string(min)
            + ", " + std::to_string(max) + "]");
  return static_cast<int32_t>(v);
}

// A finite decimal number in [min, max]: an empty field, "nan", "inf" and
// numbers beyond the range (1e999 would become infinity, which JSON cannot
// carry) are errors naming the file, line and column.
double parse_decimal(const std::string& field, const char* column, double min, double max,
                     const std::string& path, unsigned line) {
  double v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  bool number = !field.empty() && end == field.data() + field.size()
                && (ec == std::errc{} || ec == std::errc::result_out_of_range);
  require(number && field.find_first_of("nN") == std::string::npos, path, line,
          std::string("column ") + column + ": '" + field + "' is not a decimal number");
  require(ec == std::errc{} && std::isfinite(v) && v >= min && v <= max, path, line,
          std::string("column ") + column + ": " + field + " is out of range [" + format_bound(min)
            + ", " + format_bound(max) + "]");
  return v;
}

// A text column that goes into a record as JSON must be valid UTF-8 (the
// JSON library's own check decides).
void require_utf8(const std::string& field, const char* column, const std::string& path,
                  unsigned line) {
  try {
    (void) nlohmann::json(field).dump();
  } catch (const nlohmann::json::type_error&) {
    require(false, path, line, std::string("column ") + column + ": not valid UTF-8");
  }
}

constexpr int64_t max_id = std::numeric_limits<int32_t>::max();
// At most a million units per product or order line, so that sums of
// quantities stay far from overflow.
constexpr int64_t max_units = 1000000;
// A unit price of at most a million; a discount is a fraction.
constexpr double max_unit_price = 1000000;
constexpr double max_discount = 1;

} // namespace

stock_map read_products(const std::string& path) {
  return with_location(path, [&] {
    csv_reader<10> in(path);
    in.read_header(io::ignore_extra_column, "product_id", "product_name", "supplier_id",
                   "category_id", "quantity_per_unit", "unit_price", "units_in_stock",
                   "units_on_order", "reorder_level", "discontinued");
    stock_map stock;
    std::string id, units, supplier, category, name, qpu, price, on_order, reorder, discontinued;
    while (in.read_row(id, name, supplier, category, qpu, price, units, on_order, reorder,
                       discontinued)) {
      auto line = in.get_file_line();
      auto product = parse_int(id, "product_id", 0, max_id, path, line);
      auto in_stock = parse_int(units, "units_in_stock", 0, max_units, path, line);
      require(stock.emplace(product, in_stock).second, path, line, "duplicate product_id " + id);
    }
    return stock;
  });
}

std::map<int32_t, std::vector<order_line>> read_order_lines(const std::string& path) {
  return with_location(path, [&] {
    csv_reader<5> in(path);
    in.read_header(io::ignore_no_column, "order_id", "product_id", "unit_price", "quantity",
                   "discount");
    std::map<int32_t, std::vector<order_line>> lines;
    std::string order_id, product_id, unit_price, quantity, discount;
    order_line l;
    while (in.read_row(order_id, product_id, unit_price, quantity, discount)) {
      auto line = in.get_file_line();
      auto id = parse_int(order_id, "order_id", 0, max_id, path, line);
      l.product_id = parse_int(product_id, "product_id", 0, max_id, path, line);
      l.unit_price = parse_decimal(unit_price, "unit_price", 0, max_unit_price, path, line);
      l.quantity = parse_int(quantity, "quantity", 1, max_units, path, line);
      l.discount = parse_decimal(discount, "discount", 0, max_discount, path, line);
      lines[id].push_back(l);
    }
    return lines;
  });
}

void for_each_order(const std::string& path,
                    const std::map<int32_t, std::vector<order_line>>& lines,
                    const std::function<void(const order&)>& fn) {
  with_location(path, [&] {
    csv_reader<9> in(path);
    in.read_header(io::ignore_no_column, "order_id", "customer_id", "order_date", "required_date",
                   "shipped_date", "ship_via", "freight", "ship_city", "ship_country");
    order o;
    std::string id, required, shipped, via, freight, city;
    std::set<int32_t> seen;
    while (in.read_row(id, o.customer_id, o.order_date, required, shipped, via, freight, city,
                       o.ship_country)) {
      auto line = in.get_file_line();
      o.order_id = parse_int(id, "order_id", 0, max_id, path, line);
      require(seen.insert(o.order_id).second, path, line, "duplicate order_id " + id);
      require(!o.customer_id.empty(), path, line, "empty customer_id");
      require_utf8(o.customer_id, "customer_id", path, line);
      require_utf8(o.order_date, "order_date", path, line);
      require_utf8(o.ship_country, "ship_country", path, line);
      auto i = lines.find(o.order_id);
      o.lines = i == lines.end() ? std::vector<order_line>{} : i->second;
      fn(o);
    }
    return 0;
  });
}

bool apply_order(stock_map& stock, const order& o) {
  std::map<int32_t, int64_t> wanted; // sums of many lines never overflow
  for (auto& l : o.lines)
    wanted[l.product_id] += l.quantity;
  for (auto& [product, qty] : wanted) {
    auto i = stock.find(product);
    if (i == stock.end() || qty > i->second)
      return false;
  }
  for (auto& [product, qty] : wanted)
    stock[product] -= static_cast<int32_t>(qty);
  return true;
}

std::string encode_order(const order& o) {
  nlohmann::json j;
  j["order_id"] = o.order_id;
  j["customer_id"] = o.customer_id;
  j["order_date"] = o.order_date;
  j["ship_country"] = o.ship_country;
  j["lines"] = nlohmann::json::array();
  for (auto& l : o.lines)
    j["lines"].push_back({{"product_id", l.product_id},
                          {"unit_price", l.unit_price},
                          {"quantity", l.quantity},
                          {"discount", l.discount}});
  return j.dump();
}

order decode_order(const std::string& json) {
  auto j = nlohmann::json::parse(json);
  order o;
  o.order_id = j.at("order_id").get<int32_t>();
  o.customer_id = j.at("customer_id").get<std::string>();
  o.order_date = j.at("order_date").get<std::string>();
  o.ship_country = j.at("ship_country").get<std::string>();
  for (auto& l : j.at("lines"))
    o.lines.push_back({l.at("product_id").get<int32_t>(), l.at("unit_price").get<double>(),
                       l.at("quantity").get<int32_t>(), l.at("discount").get<double>()});
  return o;
}

std::string encode_stock_reduced(int32_t product_id, int32_t order_id, int32_t quantity,
                                 int32_t new_stock) {
  return nlohmann::json{{"product_id", product_id},
                        {"order_id", order_id},
                        {"quantity", quantity},
                        {"new_stock", new_stock}}
    .dump();
}

stock_reduced decode_stock_reduced(const std::string& json) {
  auto j = nlohmann::json::parse(json);
  return {j.at("product_id").get<int32_t>(), j.at("order_id").get<int32_t>(),
          j.at("quantity").get<int32_t>(), j.at("new_stock").get<int32_t>()};
}

result sequential_result(const std::string& dir) {
  auto stock = read_products(dir + "/products.csv");
  auto lines = read_order_lines(dir + "/order_details.csv");
  result r;
  for_each_order(dir + "/orders.csv", lines, [&](const order& o) {
    if (apply_order(stock, o)) {
      r.confirmed.push_back(o.order_id);
      r.lines_written += static_cast<int64_t>(o.lines.size());
    } else {
      r.rejected.push_back(o.order_id);
    }
  });
  std::sort(r.confirmed.begin(), r.confirmed.end());
  std::sort(r.rejected.begin(), r.rejected.end());
  r.final_stock = stock;
  return r;
}

} // namespace northwind
