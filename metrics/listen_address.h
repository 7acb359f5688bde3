// Listen addresses as Go writes them (--health-addr, --metrics-addr): parsed here, below every
// server that binds one, so flag parsing needs no server.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace vscaler::metrics {

/// A listen address as Go writes it: ":8080" (every interface), "127.0.0.1:0" (a free port),
/// "[::1]:8081", "localhost:9090".
struct ListenAddress {
  /// Empty for every interface.
  std::string host;
  int port = 0;
};

/// Parses host:port; the error names the text and what is wrong.
base::Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace vscaler::metrics
