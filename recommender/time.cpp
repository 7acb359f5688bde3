// RFC 3339 for the recommender's inputs and checkpoints: the parser is base's, the printer
// writes milliseconds only when there are some.
#include "recommender/time.h"

#include <cstdio>

#include "base/time.h"

namespace vscaler::recommender {

kube::Result<TimePoint> parse_rfc3339(std::string_view text) {
  return base::parse_rfc3339(text);
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
