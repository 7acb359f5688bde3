#include "net/connection_limiter.h"

#include <algorithm>

namespace vscaler::net {

ConnectionLimiter::ConnectionLimiter(std::size_t total, std::size_t per_address)
    : total_(std::max<std::size_t>(1, total)),
      per_address_(std::max<std::size_t>(1, per_address)) {}

Admit ConnectionLimiter::acquire(std::string_view address) {
  if (open_ >= total_) return Admit::kTotal;
  auto [entry, inserted] = by_address_.try_emplace(std::string(address), 0);
  if (entry->second >= per_address_) return Admit::kPerAddress;
  ++entry->second;
  ++open_;
  return Admit::kOk;
}

void ConnectionLimiter::release(std::string_view address) {
  auto entry = by_address_.find(std::string(address));
  if (entry == by_address_.end()) return;
  --open_;
  // Entries of addresses with nothing open are removed: the map stays as small as the set of
  // clients connected now, whatever many addresses have come and gone.
  if (--entry->second == 0) by_address_.erase(entry);
}

std::size_t ConnectionLimiter::open_from(std::string_view address) const {
  auto entry = by_address_.find(std::string(address));
  return entry == by_address_.end() ? 0 : entry->second;
}

}  // namespace vscaler::net
