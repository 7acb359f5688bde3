// Fuzzes Quantity::parse. Properties: never crashes; an accepted input prints canonically, and
// the canonical text parses back to the same value and prints the same again.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kube/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = vscaler::kube::Quantity::parse(text);
  if (!parsed.ok()) {
    if (parsed.error().empty()) std::abort();  // every rejection must say why
    return 0;
  }
  std::string canonical = parsed->to_string();
  auto again = vscaler::kube::Quantity::parse(canonical);
  if (!again.ok() || !(*again == *parsed) || again->to_string() != canonical) std::abort();
  return 0;
}
