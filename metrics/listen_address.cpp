#include "metrics/listen_address.h"

namespace vscaler::metrics {

base::Result<ListenAddress> parse_listen_address(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return base::fail("listen address \"" + std::string(text) + "\": " + why);
  };
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("expected host:port, e.g. :8080");
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.starts_with('[')) {
    if (!host.ends_with(']') || host.size() < 3) return bad("unbalanced [ ] around an IPv6 host");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 host must be written in brackets, e.g. [::1]:8080");
  }
  if (port.empty() || port.size() > 5) return bad("the port must be a number from 0 to 65535");
  int value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad("the port must be a number from 0 to 65535");
    value = value * 10 + (c - '0');
  }
  if (value > 65535) return bad("the port must be a number from 0 to 65535");
  return ListenAddress{std::string(host), value};
}

}  // namespace vscaler::metrics
