// Quantity: parsing, comparison by value, canonical printing, and errors naming the input.
#include "kube/quantity.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using vscaler::kube::Int128;
using vscaler::kube::Quantity;
using vscaler::kube::QuantityFormat;

namespace {
Quantity q(const char* text) {
  auto parsed = Quantity::parse(text);
  REQUIRE_MESSAGE(parsed.ok(), text);
  return *parsed;
}
Int128 nanos(const char* text) {
  return q(text).nanos();
}
constexpr Int128 kGi = Int128{1} << 30;
}  // namespace

TEST_CASE("quantity parses each suffix family to the exact value") {
  CHECK(nanos("250m") == 250'000'000);
  CHECK(nanos("0.5") == 500'000'000);
  CHECK(nanos(".5") == 500'000'000);
  CHECK(nanos("1") == 1'000'000'000);
  CHECK(nanos("1Gi") == kGi * 1'000'000'000);
  CHECK(nanos("1.5Gi") == kGi * 1'500'000'000);
  CHECK(nanos("100M") == Int128{100'000'000} * 1'000'000'000);
  CHECK(nanos("1e3") == Int128{1000} * 1'000'000'000);
  CHECK(nanos("1E-3") == 1'000'000);
  CHECK(nanos("12Ki") == Int128{12 * 1024} * 1'000'000'000);
  CHECK(nanos("+5n") == 5);
  CHECK(nanos("-2k") == -Int128{2000} * 1'000'000'000);
  CHECK(nanos("3u") == 3000);
  CHECK(nanos("1E") == Int128{1'000'000'000'000'000'000} * 1'000'000'000);
}

TEST_CASE("quantity remembers the format family of its suffix") {
  CHECK(q("1Gi").format() == QuantityFormat::kBinarySI);
  CHECK(q("1G").format() == QuantityFormat::kDecimalSI);
  CHECK(q("1").format() == QuantityFormat::kDecimalSI);
  CHECK(q("1e3").format() == QuantityFormat::kDecimalExponent);
}

TEST_CASE("quantities compare by value, not by spelling") {
  CHECK(q("1000m") == q("1"));
  CHECK(q("1Ki") == q("1024"));
  CHECK(q("0.5") == q("500m"));
  CHECK(q("1e3") == q("1k"));
  CHECK(q("1Gi") > q("1G"));
  CHECK(q("250m") < q("0.3"));
  CHECK(q("-1") < q("0"));
  CHECK(q("0") == Quantity());
}

TEST_CASE("precision below one nano-unit rounds up, away from zero") {
  CHECK(nanos("0.0000000001") == 1);
  CHECK(nanos("1.0000000001") == 1'000'000'001);
  CHECK(nanos("-0.0000000001") == -1);
  CHECK(nanos("1e-20") == 1);
  CHECK(nanos("0.000000000000000000000000000000000000000000001") == 1);
  CHECK(nanos("0.00000000000001Ki") == 1);  // 0.01024n
  CHECK(nanos("0.000000000001Ki") == 2);    // 1.024n
}

TEST_CASE("quantity prints canonically like the API server") {
  auto canonical = [](const char* text) { return q(text).to_string(); };
  CHECK(canonical("1000m") == "1");
  CHECK(canonical("0.5") == "500m");
  CHECK(canonical("250m") == "250m");
  CHECK(canonical("1500m") == "1500m");
  CHECK(canonical("1") == "1");
  CHECK(canonical("1000") == "1k");
  CHECK(canonical("1.5Gi") == "1536Mi");
  CHECK(canonical("1Gi") == "1Gi");
  CHECK(canonical("1024Mi") == "1Gi");
  CHECK(canonical("12Ki") == "12Ki");
  CHECK(canonical("512Mi") == "512Mi");
  CHECK(canonical("1.5Ki") == "1536");
  // Not a whole number of Ki: the API server returns the decimal form (a storage round trip
  // reads its "64000" back as decimal), and so must this, or printing is not a fixpoint.
  CHECK(canonical("62.5Ki") == "64k");
  CHECK(canonical("64k") == "64k");
  CHECK(canonical("1000.5Ki") == "1024512");
  CHECK(canonical("0.5Gi") == "512Mi");
  CHECK(canonical("100M") == "100M");
  CHECK(canonical("1e3") == "1e3");
  CHECK(canonical("1.5e3") == "1500");
  CHECK(canonical("1e-3") == "1e-3");
  CHECK(canonical("0.1Ki") == "102400m");  // below 1024: printed as decimal
  CHECK(canonical("-1.5") == "-1500m");
  CHECK(canonical("0") == "0");
  CHECK(canonical("-0") == "0");
  CHECK(canonical("0Gi") == "0");
  CHECK(canonical("1n") == "1n");
  CHECK(canonical("10u") == "10u");
  CHECK(canonical("1000E") == "1e21");
}

TEST_CASE("malformed quantities are rejected with a message naming the input") {
  for (const char* bad : {"1.2.3", "Gi", "-", "1Zi", "", "1K", "e3", "1e", "1e+", "1..", "abc",
                          "1 Gi", "1Gi ", " 1", "1mi", "0x10", "1.5.Gi"}) {
    auto parsed = Quantity::parse(bad);
    CHECK_MESSAGE(!parsed.ok(), bad);
    if (!parsed.ok()) {
      std::string quoted = std::string(1, '"').append(bad).append(1, '"');
      CHECK(parsed.error().find(quoted) != std::string::npos);
    }
  }
  CHECK(Quantity::parse("1Zi").error() == "invalid quantity \"1Zi\": unknown suffix \"Zi\"");
  CHECK(Quantity::parse("").error() == "invalid quantity \"\": empty");
}

TEST_CASE("quantities too large for nano precision are rejected, not wrapped") {
  CHECK_FALSE(Quantity::parse("1e40").ok());
  CHECK_FALSE(Quantity::parse("999999999999999999999999999999999999999").ok());
  CHECK(Quantity::parse("1e20").ok());
}

TEST_CASE("parse -> print -> parse keeps the value") {
  for (const char* text : {"250m", "0.5", "1.5Gi", "100M", "1e3", "12Ki", "1.0000000001", "-7.25Mi",
                           "3e-7", "123456789012345678"}) {
    Quantity first = q(text);
    auto again = Quantity::parse(first.to_string());
    REQUIRE(again.ok());
    CHECK_MESSAGE(*again == first, text);
    CHECK(again->to_string() == first.to_string());
  }
}

TEST_CASE("digits print alike below and above 2^64 nanos, where 64-bit arithmetic stops") {
  // The reference: the digits by 128-bit division, one at a time.
  auto reference = [](Int128 value) {
    std::string digits;
    Int128 magnitude = value < 0 ? -value : value;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(magnitude % 10)));
      magnitude /= 10;
    } while (magnitude != 0);
    return value < 0 ? "-" + digits : digits;
  };
  const Int128 two_to_64 = Int128{1} << 64;
  std::vector<Int128> values = {1, 7, 999'999'999, two_to_64 - 1, two_to_64 + 1};
  for (Int128 power = 10; power < (Int128{1} << 120); power *= 10) {
    values.push_back(power + 1);  // a 1, zeros, a 1: no trailing zero to strip
    values.push_back(power * 3 + 7);
  }
  for (Int128 value : values) {
    for (Int128 signed_value : {value, -value}) {
      // A last digit that is not 0: printed whole, in nanos.
      CHECK(Quantity::from_nanos(signed_value).to_string() == reference(signed_value) + "n");
      // The same digits times 10^9 are whole units: the zeros go, exponent 0 has no suffix.
      if (signed_value < Int128{1} << 90 && signed_value > -(Int128{1} << 90)) {
        Quantity units = Quantity::from_nanos(signed_value * 1'000'000'000);
        CHECK(units.to_string() == reference(signed_value));
        CHECK(Quantity::parse(units.to_string())->nanos() == units.nanos());
      }
    }
  }
  // Zeros stripped in 128-bit arithmetic only: 2^64 thousand units, 12 zeros after 2^64.
  CHECK(Quantity::from_nanos(two_to_64 * 1'000'000'000'000).to_string() ==
        reference(two_to_64) + "k");
}

TEST_CASE("binary quantities print alike below and above 2^64 nanos") {
  // 2^64 nanos is ~17.2 Gi: the whole units and their remainder are worked out in 64-bit
  // arithmetic below it, in 128-bit above.
  const Int128 gibibyte = Int128{1} << 30;
  for (std::int64_t count : {1, 3, 16, 17, 18, 1000, 1 << 20}) {
    for (Int128 sign : {Int128{1}, Int128{-1}}) {
      CAPTURE(count);
      CAPTURE(static_cast<int>(sign));
      const Int128 nanos = sign * count * gibibyte * 1'000'000'000;
      const std::string text = (sign < 0 ? "-" : "") + std::to_string(count) + "Gi";
      CHECK(Quantity::from_nanos(nanos, QuantityFormat::kBinarySI).to_string() ==
            (count == 1 << 20 ? (sign < 0 ? "-1Pi" : "1Pi") : text));
      // One nano more is no whole number of units: decimal, as the API server prints it.
      const Quantity odd = Quantity::from_nanos(nanos + sign, QuantityFormat::kBinarySI);
      CHECK(odd.to_string() == Quantity::from_nanos(nanos + sign).to_string());
    }
  }
  // A whole number of units, not of Ki: decimal too.
  CHECK(Quantity::from_nanos(Int128{1500} * 1'000'000'000, QuantityFormat::kBinarySI).to_string() ==
        "1500");
}
