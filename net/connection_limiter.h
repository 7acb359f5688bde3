// Admission control for connections: a cap on all open connections and one per client
// address, so that no single client that reaches the webhook port (anyone in the cluster can)
// takes every file descriptor the API server's connections need.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

namespace vscaler::net {

/// Why a connection was refused, if it was.
enum class Admit { kOk, kTotal, kPerAddress };

/// Counts open connections in total and per address. Not thread-safe (the event loop owns it).
class ConnectionLimiter {
 public:
  /// At most `total` connections, and `per_address` from any one address (both at least 1).
  ConnectionLimiter(std::size_t total, std::size_t per_address);

  /// Takes a slot for a new connection from `address` (any byte string naming the peer's
  /// address); kOk means it must be given back with release().
  Admit acquire(std::string_view address);
  /// Gives back a slot taken by acquire(address).
  void release(std::string_view address);

  /// Open connections.
  std::size_t open() const { return open_; }
  /// Open connections from `address`.
  std::size_t open_from(std::string_view address) const;
  /// The total cap.
  std::size_t total() const { return total_; }
  /// The cap per address.
  std::size_t per_address() const { return per_address_; }

 private:
  std::size_t total_;
  std::size_t per_address_;
  std::size_t open_ = 0;
  std::unordered_map<std::string, std::size_t> by_address_;
};

}  // namespace vscaler::net
