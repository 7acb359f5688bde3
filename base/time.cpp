#include "base/time.h"

#include <cstdio>
#include <ctime>

namespace vscaler::base {
namespace {

// Reads exactly `n` digits at `pos`; false when they are not all digits.
bool digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

Failure<std::string> bad_time(std::string_view text, const char* why) {
  return fail("invalid RFC 3339 time \"" + std::string(text) + "\": " + why);
}

}  // namespace

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

Result<TimeMillis> parse_rfc3339(std::string_view text) {
  int year, month, day, hour, minute, second;
  if (!digits(text, 0, 4, year) || text.size() < 19 || text[4] != '-' ||
      !digits(text, 5, 2, month) || text[7] != '-' || !digits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't') || !digits(text, 11, 2, hour) || text[13] != ':' ||
      !digits(text, 14, 2, minute) || text[16] != ':' || !digits(text, 17, 2, second)) {
    return bad_time(text, "want YYYY-MM-DDTHH:MM:SS");
  }
  std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(unsigned(month)),
                                   std::chrono::day(unsigned(day))};
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) {
    return bad_time(text, "date or time out of range");
  }
  size_t pos = 19;
  std::int64_t millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    int scale = 100;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      millis += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad_time(text, "empty fraction");
  }
  std::int64_t offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (!digits(text, pos + 1, 2, oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !digits(text, pos + 4, 2, om)) {
      return bad_time(text, "bad zone offset");
    }
    offset_minutes = (oh * 60 + om) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad_time(text, "missing zone (Z or +hh:mm)");
  }
  if (pos != text.size()) return bad_time(text, "trailing characters");
  auto days = std::chrono::sys_days(date);
  TimeMillis t = std::chrono::time_point_cast<std::chrono::milliseconds>(days) +
                 std::chrono::hours(hour) + std::chrono::minutes(minute - offset_minutes) +
                 std::chrono::seconds(second) + std::chrono::milliseconds(millis);
  return t;
}

}  // namespace vscaler::base
