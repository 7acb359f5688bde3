// Rounding of recommended values to quantities.
#include "recommender/resources.h"

#include <algorithm>
#include <cmath>

namespace vscaler::recommender {
namespace {

// Rounds value / step up to a whole number of steps, ignoring floating-point noise far below one
// unit (345.0000000001 -> 345); returns the units (steps x step).
kube::Int128 ceil_units(double value, std::int64_t step) {
  if (!(value > 0)) return 0;
  const auto units = static_cast<kube::Int128>(std::ceil(value - 1e-6));
  const kube::Int128 s = std::max<std::int64_t>(step, 1);
  return (units + s - 1) / s * s;
}

}  // namespace

kube::Quantity cpu_quantity(double cores, std::int64_t step_millicores) {
  return kube::Quantity::from_nanos(ceil_units(cores * 1000.0, step_millicores) * 1'000'000);
}

kube::Quantity memory_quantity(double bytes, std::int64_t step_bytes) {
  const auto format =
      step_bytes % 1024 == 0 ? kube::QuantityFormat::kBinarySI : kube::QuantityFormat::kDecimalSI;
  return kube::Quantity::from_nanos(ceil_units(bytes, step_bytes) * 1'000'000'000, format);
}

}  // namespace vscaler::recommender
