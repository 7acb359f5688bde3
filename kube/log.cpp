#include "kube/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

namespace vscaler::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::mutex g_write_mutex;

const char* level_name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

std::string timestamp() {
  auto now = std::chrono::system_clock::now();
  auto seconds = std::chrono::system_clock::to_time_t(now);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis));
  return buffer;
}

}  // namespace

bool set_level(std::string_view level) {
  for (Level candidate : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError}) {
    if (level == level_name(candidate)) {
      g_level.store(static_cast<int>(candidate));
      return true;
    }
  }
  return false;
}

bool enabled(Level level) {
  return static_cast<int>(level) >= g_level.load();
}

void write(Level level, std::string_view logger, std::string_view message,
           std::initializer_list<Field> fields) {
  nlohmann::ordered_json line;
  line["ts"] = timestamp();
  line["level"] = level_name(level);
  line["logger"] = logger;
  line["msg"] = message;
  for (const auto& [key, value] : fields) line[std::string(key)] = value;
  // Invalid UTF-8 in a field (a name from the network) is replaced, never thrown.
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\n');
  std::lock_guard lock(g_write_mutex);
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace vscaler::log
