// HTML escaping and amounts of CPU and memory for the dashboard.
#include "dashboard/format.h"

#include <cmath>
#include <cstdio>

namespace vscaler::dashboard {
namespace {

// `value` with up to `decimals` digits after the point, trailing zeros dropped.
std::string trimmed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  std::string text = buffer;
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

kube::Int128 magnitude(kube::Int128 value) {
  return value < 0 ? -value : value;
}

std::string with_sign(kube::Int128 nanos, std::string text) {
  if (nanos > 0) return "+" + text;
  return text;  // a negative amount already carries its "-"
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  append_escaped(out, text);
  return out;
}

void append_escaped(std::string& out, std::string_view text) {
  if (text.find_first_of("&<>\"'") == std::string_view::npos) {
    out.append(text);
    return;
  }
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

std::string format_cpu(kube::Int128 nanos) {
  // Millicores, rounded away from zero as the API server rounds.
  kube::Int128 millis = (magnitude(nanos) + 999'999) / 1'000'000;
  if (nanos < 0) millis = -millis;
  if (millis == 0) return "0";
  if (magnitude(millis) < 1000) return std::to_string(static_cast<long long>(millis)) + "m";
  return trimmed(static_cast<double>(millis) / 1000.0, 2);
}

std::string format_memory(kube::Int128 nanos) {
  double bytes = static_cast<double>(nanos) / 1e9;
  double size = std::fabs(bytes);
  constexpr double kKi = 1024.0, kMi = kKi * 1024.0, kGi = kMi * 1024.0, kTi = kGi * 1024.0;
  if (size >= kTi) return trimmed(bytes / kTi, 2) + "Ti";
  if (size >= kGi) return trimmed(bytes / kGi, 2) + "Gi";
  if (size >= kMi) return trimmed(bytes / kMi, 1) + "Mi";
  if (size >= kKi) return trimmed(bytes / kKi, 1) + "Ki";
  return trimmed(std::ceil(size) * (bytes < 0 ? -1 : 1), 0);
}

std::string format_signed_cpu(kube::Int128 nanos) {
  return with_sign(nanos, format_cpu(nanos));
}

std::string format_signed_memory(kube::Int128 nanos) {
  return with_sign(nanos, format_memory(nanos));
}

std::string format_quantity(const std::optional<kube::Quantity>& quantity) {
  return quantity ? quantity->to_string() : std::string();
}

}  // namespace vscaler::dashboard
