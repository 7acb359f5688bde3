// Tests for base/log.h's quote_untrusted: what a message may show of untrusted input.
#include "base/log.h"

#include <doctest/doctest.h>

#include <string>

namespace vscaler::log {
namespace {

TEST_CASE("quote_untrusted quotes printable ASCII as is") {
  CHECK(quote_untrusted("CREATE") == "\"CREATE\"");
  CHECK(quote_untrusted("") == "\"\"");
}

TEST_CASE("quote_untrusted replaces quotes, backslashes, controls and non-ASCII bytes by '?'") {
  CHECK(quote_untrusted("a\"b\\c\nd\te\x7f") == "\"a?b?c?d?e?\"");
  CHECK(quote_untrusted("caf\xc3\xa9") == "\"caf??\"");
  CHECK(quote_untrusted(std::string("nul\0byte", 8)) == "\"nul?byte\"");
}

TEST_CASE("quote_untrusted shows at most 64 characters, then ...") {
  const std::string exactly(64, 'x');
  CHECK(quote_untrusted(exactly) == "\"" + exactly + "\"");
  CHECK(quote_untrusted(exactly + "y") == "\"" + exactly + "...\"");
  CHECK(quote_untrusted(std::string(1 << 20, 'z')).size() == 64 + 2 + 3);
}

}  // namespace
}  // namespace vscaler::log
