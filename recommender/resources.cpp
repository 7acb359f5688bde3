// Rounding of recommended values to quantities.
#include "recommender/resources.h"

#include <cmath>

namespace vscaler::recommender {
namespace {

// Rounds up, ignoring floating-point noise far below one unit (345.0000000001 -> 345).
kube::Int128 ceil_units(double value) {
  if (!(value > 0)) return 0;
  return static_cast<kube::Int128>(std::ceil(value - 1e-6));
}

}  // namespace

kube::Quantity cpu_quantity(double cores) {
  return kube::Quantity::from_nanos(ceil_units(cores * 1000.0) * 1'000'000);
}

kube::Quantity memory_quantity(double bytes) {
  return kube::Quantity::from_nanos(ceil_units(bytes) * 1'000'000'000);
}

kube::Quantity resource_quantity(const std::string& resource, double value) {
  return resource == kCpu ? cpu_quantity(value) : memory_quantity(value);
}

}  // namespace vscaler::recommender
