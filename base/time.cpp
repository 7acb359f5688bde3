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

}  // namespace vscaler::base
