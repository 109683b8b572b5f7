#include "actors/controller/producer_id_block.hpp"

#include <limits>

namespace caftx::controller {

status_or<producer_id_claim> claim_producer_id_block(const std::optional<versioned_data>& current,
                                                     node_id self) {
  producer_id_claim c;
  c.block.owner = self;
  if (!current) {
    c.block.block_start = 0;
    c.block.block_end = producer_id_block_size - 1;
    c.op = store_op{op_kind::create, producer_id_block_path, encode_producer_id_block(c.block), -1};
    return c;
  }
  auto old = decode_producer_id_block(current->data);
  if (!old.ok())
    return old.error();
  if (old->block_end > std::numeric_limits<int64_t>::max() - producer_id_block_size)
    return status{error_code::unknown_server_error, "Have exhausted all producerIds."};
  c.block.block_start = old->block_end + 1;
  c.block.block_end = old->block_end + producer_id_block_size;
  c.op = store_op{op_kind::set, producer_id_block_path, encode_producer_id_block(c.block),
                  current->version};
  return c;
}

bool claim_succeeded(const producer_id_claim& claim, std::string_view data_now) {
  auto now = decode_producer_id_block(data_now);
  return now.ok() && *now == claim.block;
}

} // namespace caftx::controller
