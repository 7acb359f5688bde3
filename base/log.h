// Structured logging: one JSON object per line on stderr ({"ts","level","logger","msg",...}).
// Used by every folder; thread-safe. Never pass request bodies or secrets as fields.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace vscaler::log {

/// Severity, lowest first; messages below the configured level are dropped cheaply.
enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

/// A key and its value, already rendered as text (numbers are written as JSON strings).
using Field = std::pair<std::string_view, std::string>;

/// Sets the minimum level written; parses "debug", "info", "warn", "error". Returns false (and
/// changes nothing) for any other text.
bool set_level(std::string_view level);
/// True when messages at `level` are written (check before building expensive fields).
bool enabled(Level level);

/// A short identifier from untrusted input (a request body, a patch), made safe to print in a
/// message and a log line: quoted, printable ASCII only (others become '?'), at most 64
/// characters and then "...".
std::string quote_untrusted(std::string_view text);

/// Text from the network (an HTTP path, another server's error message) made safe for a message,
/// a log line or a status written to the API server: printable ASCII only (others become '?'),
/// unquoted, at most `max_chars` characters.
std::string printable_untrusted(std::string_view text, std::size_t max_chars = 128);

/// Writes one line: {"ts":...,"level":...,"logger":logger,"msg":message, fields...}.
void write(Level level, std::string_view logger, std::string_view message,
           std::initializer_list<Field> fields = {});

inline void debug(std::string_view logger, std::string_view message,
                  std::initializer_list<Field> fields = {}) {
  if (enabled(Level::kDebug)) write(Level::kDebug, logger, message, fields);
}
inline void info(std::string_view logger, std::string_view message,
                 std::initializer_list<Field> fields = {}) {
  if (enabled(Level::kInfo)) write(Level::kInfo, logger, message, fields);
}
inline void warn(std::string_view logger, std::string_view message,
                 std::initializer_list<Field> fields = {}) {
  if (enabled(Level::kWarn)) write(Level::kWarn, logger, message, fields);
}
inline void error(std::string_view logger, std::string_view message,
                  std::initializer_list<Field> fields = {}) {
  if (enabled(Level::kError)) write(Level::kError, logger, message, fields);
}

}  // namespace vscaler::log
