// Quantity: Kubernetes' resource.Quantity ("250m", "1.5Gi", "1e3"), parsed exactly, compared by
// value ("1000m" == "1") and printed in the canonical form the API server uses.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vscaler::kube {

/// 128-bit signed integer (a GCC/Clang extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef __int128 Int128;

/// How a quantity was written; canonical printing keeps the family (binary stays binary).
enum class QuantityFormat {
  kDecimalSI,        ///< no suffix or one of n u m k M G T P E
  kBinarySI,         ///< Ki Mi Gi Ti Pi Ei
  kDecimalExponent,  ///< e3, E-6, ...
};

/// An exact resource quantity. The value is held as an integer number of nano-units (like the API
/// server, precision below 1n is rounded up, away from zero); the magnitude limit is about 1.7e29.
class Quantity {
 public:
  /// Zero, printed "0".
  Quantity() = default;

  /// Parses Kubernetes quantity syntax: [+-]digits[.digits][suffix]. The error names the input
  /// and what is wrong with it.
  static Result<Quantity> parse(std::string_view text);

  /// A quantity of `nanos` nano-units, printed in `format`'s family.
  static Quantity from_nanos(Int128 nanos, QuantityFormat format = QuantityFormat::kDecimalSI) {
    Quantity q;
    q.nanos_ = nanos;
    q.format_ = format;
    return q;
  }

  /// The canonical text: "1000m" -> "1", "0.5" -> "500m", "1.5Gi" -> "1536Mi", "1e3" -> "1e3".
  std::string to_string() const;

  /// The value in nano-units (cpu "250m" -> 250'000'000; memory "1Ki" -> 1'024'000'000'000).
  Int128 nanos() const { return nanos_; }
  /// The value as a double, for display and metrics only (not exact).
  double to_double() const { return static_cast<double>(nanos_) / 1e9; }
  QuantityFormat format() const { return format_; }
  bool is_negative() const { return nanos_ < 0; }

  /// Quantities compare by value, whatever their format.
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.nanos_ <=> b.nanos_;
  }

 private:
  Int128 nanos_ = 0;
  QuantityFormat format_ = QuantityFormat::kDecimalSI;
};

}  // namespace vscaler::kube
