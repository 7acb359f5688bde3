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

// `nanos` in units of `unit_nanos`, rounded away from zero (Go's Quantity.ScaledValue).
kube::Int128 scaled_away_from_zero(kube::Int128 nanos, kube::Int128 unit_nanos) {
  kube::Int128 units = nanos / unit_nanos;
  if (nanos % unit_nanos != 0) units += nanos > 0 ? 1 : -1;
  return units;
}

}  // namespace

double whole_millicores(const kube::Quantity& q) {
  return static_cast<double>(scaled_away_from_zero(q.nanos(), 1'000'000)) / 1000.0;
}

double whole_bytes(const kube::Quantity& q) {
  return static_cast<double>(scaled_away_from_zero(q.nanos(), 1'000'000'000));
}

kube::Quantity cpu_quantity(double cores, std::int64_t step_millicores) {
  return kube::Quantity::from_nanos(ceil_units(cores * 1000.0, step_millicores) * 1'000'000);
}

kube::Quantity memory_quantity(double bytes, std::int64_t step_bytes) {
  const auto format =
      step_bytes % 1024 == 0 ? kube::QuantityFormat::kBinarySI : kube::QuantityFormat::kDecimalSI;
  return kube::Quantity::from_nanos(ceil_units(bytes, step_bytes) * 1'000'000'000, format);
}

}  // namespace vscaler::recommender
