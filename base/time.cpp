#include "base/time.h"

#include <cstdio>
#include <ctime>

namespace vscaler::base {

std::string rfc3339(std::chrono::system_clock::time_point time, TimePrecision precision) {
  using std::chrono::floor;
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  auto whole = floor<seconds>(time);
  auto millis = floor<milliseconds>(time - whole).count();
  std::time_t value = static_cast<std::time_t>(whole.time_since_epoch().count());
  std::tm utc{};
  gmtime_r(&value, &utc);
  char buffer[40];
  int written =
      std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d", utc.tm_year + 1900,
                    utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
  if (precision == TimePrecision::kMilliseconds) {
    written += std::snprintf(buffer + written, sizeof buffer - static_cast<size_t>(written),
                             ".%03d", static_cast<int>(millis));
  }
  std::snprintf(buffer + written, sizeof buffer - static_cast<size_t>(written), "Z");
  return buffer;
}

std::string rfc3339_seconds(std::int64_t seconds) {
  return rfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(seconds)));
}

std::string rfc3339_now() {
  return rfc3339(std::chrono::system_clock::now());
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  auto bad = [&](const char* why) {
    return fail("invalid duration \"" + std::string(text) + "\": " + why +
                " (e.g. 60s, 500ms, 1m30s)");
  };
  if (text.empty()) return bad("empty");
  if (text == "0") return std::chrono::milliseconds(0);
  double total_ms = 0;
  std::size_t pos = 0;
  auto digit = [&](std::size_t at) { return text[at] >= '0' && text[at] <= '9'; };
  while (pos < text.size()) {
    std::size_t start = pos;
    double value = 0;
    while (pos < text.size() && digit(pos)) value = value * 10 + (text[pos++] - '0');
    if (pos < text.size() && text[pos] == '.') {
      ++pos;
      double scale = 0.1;
      for (; pos < text.size() && digit(pos); ++pos, scale /= 10)
        value += (text[pos] - '0') * scale;
    }
    if (pos == start || text.substr(start, pos - start) == ".") {
      return bad("want a number before each unit");
    }
    std::size_t unit_start = pos;
    while (pos < text.size() && !digit(pos) && text[pos] != '.') ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    double factor = 0;
    if (unit == "h") {
      factor = 3'600'000;
    } else if (unit == "m") {
      factor = 60'000;
    } else if (unit == "s") {
      factor = 1000;
    } else if (unit == "ms") {
      factor = 1;
    } else if (unit == "us" || unit == "\xc2\xb5s") {
      factor = 1e-3;
    } else if (unit == "ns") {
      factor = 1e-6;
    } else {
      return bad("each number needs a unit: h, m, s, ms, us or ns");
    }
    total_ms += value * factor;
    if (total_ms > 1e12) return bad("too long");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(total_ms));
}

}  // namespace vscaler::base
