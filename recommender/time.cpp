// RFC 3339 and Go duration parsing for the recommender's inputs and checkpoints.
#include "recommender/time.h"

#include <cstdio>

namespace vscaler::recommender {
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

kube::Failure<std::string> bad_time(std::string_view text, const char* why) {
  return kube::fail("invalid RFC 3339 time \"" + std::string(text) + "\": " + why);
}

}  // namespace

kube::Result<TimePoint> parse_rfc3339(std::string_view text) {
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
  TimePoint t = std::chrono::time_point_cast<Duration>(days) + std::chrono::hours(hour) +
                std::chrono::minutes(minute - offset_minutes) + std::chrono::seconds(second) +
                Duration(millis);
  return t;
}

std::string format_rfc3339(TimePoint t) {
  auto days = std::chrono::floor<std::chrono::days>(t);
  std::chrono::year_month_day date{days};
  auto in_day = t - days;
  auto h = std::chrono::duration_cast<std::chrono::hours>(in_day);
  auto m = std::chrono::duration_cast<std::chrono::minutes>(in_day - h);
  auto s = std::chrono::duration_cast<std::chrono::seconds>(in_day - h - m);
  auto ms = (in_day - h - m - s).count();
  char buffer[40];
  int n = std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02lld", int(date.year()),
                        unsigned(date.month()), unsigned(date.day()), int(h.count()),
                        int(m.count()), static_cast<long long>(s.count()));
  if (ms != 0) {
    n +=
        std::snprintf(buffer + n, sizeof buffer - size_t(n), ".%03lld", static_cast<long long>(ms));
  }
  std::snprintf(buffer + n, sizeof buffer - size_t(n), "Z");
  return buffer;
}

}  // namespace vscaler::recommender
