#include "base/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>

#include "base/time.h"

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

}  // namespace

std::string quote_untrusted(std::string_view text) {
  constexpr std::size_t kMaxShown = 64;
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    char c = text[i];
    out += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? c : '?';
  }
  if (text.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

std::string printable_untrusted(std::string_view text, std::size_t max_chars) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_chars; ++i) {
    char c = text[i];
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

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
  line["ts"] = base::rfc3339(std::chrono::system_clock::now(), base::TimePrecision::kMilliseconds);
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
