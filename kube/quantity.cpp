#include "kube/quantity.h"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace vscaler::kube {
namespace {

constexpr Int128 kMax = std::numeric_limits<Int128>::max();
constexpr Int128 kNanosPerUnit = 1'000'000'000;
// Fraction digits kept exactly; further non-zero digits only force rounding up. 30 digits keep
// even "Ei" exact to the nano (2^60 < 10^19, 30 - 19 > 9).
constexpr int kMaxFractionDigits = 30;

struct DecimalSuffix {
  std::string_view text;
  int exponent;
};
constexpr std::array<DecimalSuffix, 10> kDecimalSuffixes{{{"n", -9},
                                                          {"u", -6},
                                                          {"m", -3},
                                                          {"", 0},
                                                          {"k", 3},
                                                          {"M", 6},
                                                          {"G", 9},
                                                          {"T", 12},
                                                          {"P", 15},
                                                          {"E", 18}}};
constexpr std::array<std::string_view, 7> kBinarySuffixes{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

std::optional<Int128> checked_mul(Int128 a, Int128 b) {
  if (a == 0 || b == 0) return Int128{0};
  if (a > kMax / b) return std::nullopt;
  return a * b;
}

std::optional<Int128> pow_int(Int128 base, int exponent) {
  Int128 result = 1;
  for (int i = 0; i < exponent; ++i) {
    auto next = checked_mul(result, base);
    if (!next) return std::nullopt;
    result = *next;
  }
  return result;
}

/// Divides rounding away from zero (the magnitude up), as the API server rounds sub-nano values.
Int128 divide_round_up(Int128 value, Int128 divisor, bool sticky) {
  Int128 quotient = value / divisor;
  if (value % divisor != 0 || sticky) ++quotient;
  return quotient;
}

// Quantities print on every admission review and status: the digits are worked out in 64-bit
// arithmetic, where dividing by 10 is a multiplication, and 128-bit division (a call to
// __divti3, ~20x slower) is left for the part of a value above 2^64 nanos (~18.4 G units:
// memory above ~17 GiB).
__extension__ typedef unsigned __int128 Uint128;
constexpr Uint128 kUint64Max = std::numeric_limits<std::uint64_t>::max();

Uint128 magnitude_of(Int128 value) {
  return value < 0 ? -static_cast<Uint128>(value) : static_cast<Uint128>(value);
}

/// magnitude / divisor and magnitude % divisor, in 64-bit arithmetic when the magnitude fits.
struct DivMod {
  Uint128 quotient;
  std::uint64_t remainder;
};
DivMod divmod(Uint128 magnitude, std::uint64_t divisor) {
  if (magnitude <= kUint64Max) {
    auto small = static_cast<std::uint64_t>(magnitude);
    return {small / divisor, small % divisor};
  }
  return {magnitude / divisor, static_cast<std::uint64_t>(magnitude % divisor)};
}

std::string int128_to_string(Int128 value) {
  Uint128 magnitude = magnitude_of(value);
  std::array<char, 48> buffer{};  // 39 digits and a sign at most
  char* const end = buffer.data() + buffer.size();
  char* begin = end;
  constexpr std::uint64_t kChunk = 10'000'000'000'000'000'000ULL;  // 19 digits per chunk
  while (magnitude > kUint64Max) {
    auto low = static_cast<std::uint64_t>(magnitude % kChunk);
    magnitude /= kChunk;
    for (int i = 0; i < 19; ++i, low /= 10) *--begin = static_cast<char>('0' + low % 10);
  }
  auto high = static_cast<std::uint64_t>(magnitude);
  do {
    *--begin = static_cast<char>('0' + high % 10);
    high /= 10;
  } while (high != 0);
  if (value < 0) *--begin = '-';
  return std::string(begin, end);
}

/// Divides `value` (not 0) by 10 while it is a multiple of 10; returns how many times.
int strip_trailing_zeros(Int128& value) {
  Uint128 magnitude = magnitude_of(value);
  int zeros = 0;
  while (magnitude > kUint64Max && magnitude % 10 == 0) {
    magnitude /= 10;
    ++zeros;
  }
  if (magnitude <= kUint64Max) {
    auto small = static_cast<std::uint64_t>(magnitude);
    while (small % 10 == 0) {
      small /= 10;
      ++zeros;
    }
    magnitude = small;
  }
  value = value < 0 ? -static_cast<Int128>(magnitude) : static_cast<Int128>(magnitude);
  return zeros;
}

Failure<std::string> invalid(std::string_view text, std::string_view why) {
  return fail("invalid quantity \"" + std::string(text) + "\": " + std::string(why));
}

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
  if (text.empty()) return invalid(text, "empty");
  std::size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') negative = text[pos++] == '-';

  // Mantissa: digits with at most one '.', kept as an integer plus a count of fraction digits.
  Int128 mantissa = 0;
  int fraction_digits = 0;
  bool seen_digit = false, seen_point = false, sticky = false;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '.') {
      if (seen_point) return invalid(text, "more than one decimal point");
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    seen_digit = true;
    int digit = c - '0';
    if (seen_point && fraction_digits >= kMaxFractionDigits) {
      sticky = sticky || digit != 0;
      continue;
    }
    auto next = checked_mul(mantissa, 10);
    if (!next || *next > kMax - digit) return invalid(text, "out of range");
    mantissa = *next + digit;
    if (seen_point) ++fraction_digits;
  }
  if (!seen_digit) return invalid(text, "no digits before the suffix");

  // Suffix: a decimal SI one, a binary SI one, or an exponent e<int> / E<int>.
  std::string_view suffix = text.substr(pos);
  QuantityFormat format = QuantityFormat::kDecimalSI;
  int decimal_exponent = 0;
  int binary_power = 0;  // multiples of 2^10
  bool known = false;
  for (const auto& s : kDecimalSuffixes) {
    if (suffix == s.text) {
      decimal_exponent = s.exponent;
      known = true;
    }
  }
  for (std::size_t i = 1; !known && i < kBinarySuffixes.size(); ++i) {
    if (suffix == kBinarySuffixes[i]) {
      binary_power = static_cast<int>(i);
      format = QuantityFormat::kBinarySI;
      known = true;
    }
  }
  if (!known && suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::size_t i = 1;
    bool exponent_negative = false;
    if (suffix[i] == '+' || suffix[i] == '-') exponent_negative = suffix[i++] == '-';
    if (i < suffix.size()) {
      int exponent = 0;
      for (; i < suffix.size() && suffix[i] >= '0' && suffix[i] <= '9'; ++i) {
        // Clamp: beyond +-1000 the result is out of range or rounds to 1n either way.
        exponent = exponent > 1000 ? exponent : exponent * 10 + (suffix[i] - '0');
      }
      if (i == suffix.size()) {
        decimal_exponent = exponent_negative ? -exponent : exponent;
        format = QuantityFormat::kDecimalExponent;
        known = true;
      }
    }
  }
  if (!known) return invalid(text, "unknown suffix \"" + std::string(suffix) + "\"");

  // nanos = mantissa * 2^(10*binary_power) * 10^(9 + decimal_exponent - fraction_digits).
  auto scaled = checked_mul(mantissa, Int128{1} << (10 * binary_power));
  if (!scaled) return invalid(text, "out of range");
  int ten_power = 9 + decimal_exponent - fraction_digits;
  Int128 nanos = 0;
  if (*scaled == 0 && !sticky) {
    nanos = 0;
  } else if (ten_power >= 0) {
    auto factor = pow_int(10, ten_power);
    auto product = factor ? checked_mul(*scaled, *factor) : std::nullopt;
    if (!product) return invalid(text, "out of range");
    nanos = *product + (sticky ? 1 : 0);
  } else if (-ten_power > 38) {
    nanos = 1;  // a positive value below 1n rounds up to 1n
  } else {
    nanos = divide_round_up(*scaled, *pow_int(10, -ten_power), sticky);
  }
  Quantity q;
  q.nanos_ = negative ? -nanos : nanos;
  q.format_ = format;
  return q;
}

std::string Quantity::to_string() const {
  if (nanos_ == 0) return "0";
  QuantityFormat format = format_;
  if (format == QuantityFormat::kBinarySI) {
    const Uint128 magnitude = magnitude_of(nanos_);
    const auto [whole_units, fraction] =
        divmod(magnitude, static_cast<std::uint64_t>(kNanosPerUnit));
    // Like the API server: small values and fractions print as decimal to avoid rounding.
    if (magnitude < static_cast<Uint128>(1024 * kNanosPerUnit) || fraction != 0) {
      format = QuantityFormat::kDecimalSI;
    } else {
      Int128 units =
          nanos_ < 0 ? -static_cast<Int128>(whole_units) : static_cast<Int128>(whole_units);
      std::size_t power = 0;
      while (power + 1 < kBinarySuffixes.size() && units % 1024 == 0) {
        units /= 1024;
        ++power;
      }
      if (power > 0) return int128_to_string(units) + std::string(kBinarySuffixes[power]);
      // Not a whole number of Ki ("62.5Ki"): a bare number, which the API server reads back, and
      // so returns, as decimal ("64000" -> "64k"). Print what it returns (found by quantity_fuzz).
      format = QuantityFormat::kDecimalSI;
    }
  }
  // Decimal: strip factors of ten, then bring the exponent to a multiple of three.
  Int128 mantissa = nanos_;
  int exponent = -9 + strip_trailing_zeros(mantissa);
  int remainder = ((exponent % 3) + 3) % 3;
  for (int i = 0; i < remainder; ++i) mantissa *= 10;
  exponent -= remainder;

  std::string suffix;
  bool found = false;
  if (format == QuantityFormat::kDecimalSI) {
    for (const auto& s : kDecimalSuffixes) {
      if (s.exponent == exponent) {
        suffix = std::string(s.text);
        found = true;
      }
    }
  }
  if (!found && exponent != 0) suffix = "e" + std::to_string(exponent);
  return int128_to_string(mantissa) + suffix;
}

}  // namespace vscaler::kube
