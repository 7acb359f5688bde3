#include "net/http.h"

#include <algorithm>

#include "base/log.h"

namespace vscaler::net::http {
namespace {

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

// RFC 9110 tchar.
bool is_token_char(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!is_token_char(c)) return false;
  }
  return true;
}

// Field values: visible ASCII, spaces, tabs and obs-text; no other control characters.
bool is_field_value(std::string_view text) {
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 && c != '\t') return false;
    if (byte == 0x7f) return false;
  }
  return true;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

HeadResult malformed(std::string message) {
  HeadResult result;
  result.status = HeadStatus::kMalformed;
  result.error = std::move(message);
  return result;
}

bool parse_request_line(std::string_view line, RequestHead& head) {
  auto first = line.find(' ');
  if (first == std::string_view::npos) return false;
  auto second = line.find(' ', first + 1);
  if (second == std::string_view::npos) return false;
  auto method = line.substr(0, first);
  auto target = line.substr(first + 1, second - first - 1);
  auto version = line.substr(second + 1);
  if (!is_token(method) || target.empty()) return false;
  for (char c : target) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f) return false;
  }
  if (version == "HTTP/1.1") {
    head.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    head.minor_version = 0;
  } else {
    return false;
  }
  head.method = std::string(method);
  head.target = std::string(target);
  head.path = std::string(target.substr(0, target.find('?')));
  return true;
}

}  // namespace

std::optional<std::string_view> RequestHead::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::size_t RequestHead::count(std::string_view name) const {
  std::size_t n = 0;
  for (const auto& field : headers) {
    if (iequals(field.first, name)) ++n;
  }
  return n;
}

HeadResult parse_head(std::string_view buffer, RequestHead& head, std::size_t& scanned) {
  std::size_t start = 0;
  while (buffer.substr(start, 2) == "\r\n") {
    start += 2;
    if (start > 2 * kMaxLeadingEmptyLines)
      return malformed("too many empty lines before the request");
  }
  // The blank line may begin up to 3 bytes before where the last search stopped.
  auto end = buffer.find("\r\n\r\n", std::max(start, scanned));
  if (end == std::string_view::npos) {
    scanned = std::max(start, buffer.size() >= 3 ? buffer.size() - 3 : 0);
    return {};
  }
  std::string_view block = buffer.substr(start, end + 2 - start);  // each line ends with CRLF
  head = RequestHead{};
  // One allocation for the fields instead of one per doubling (a line per field, after the
  // request line).
  head.headers.reserve(static_cast<std::size_t>(std::count(block.begin(), block.end(), '\n')));
  auto line_end = block.find("\r\n");
  if (!parse_request_line(block.substr(0, line_end), head)) {
    return malformed("malformed request line");
  }
  std::size_t at = line_end + 2;
  while (at < block.size()) {
    line_end = block.find("\r\n", at);
    std::string_view line = block.substr(at, line_end - at);
    at = line_end + 2;
    if (line.front() == ' ' || line.front() == '\t') {
      return malformed("obsolete header line folding is not accepted");
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return malformed("malformed header field");
    }
    auto value = trim(line.substr(colon + 1));
    if (!is_field_value(value)) return malformed("control character in a header value");
    head.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  HeadResult result;
  result.status = HeadStatus::kComplete;
  result.consumed = end + 4;
  return result;
}

std::optional<std::uint64_t> parse_length(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

std::string_view media_type(std::string_view content_type) {
  return trim(content_type.substr(0, content_type.find(';')));
}

std::optional<std::string_view> query_parameter(std::string_view target, std::string_view name) {
  std::size_t question = target.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    std::size_t equals = pair.find('=');
    if (pair.substr(0, equals) == name) {
      return equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 &&
               hex_digit(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> query_parameters(std::string_view target) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t question = target.find('?');
  if (question == std::string_view::npos) return out;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    std::size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      std::size_t equals = pair.find('=');
      std::string_view value =
          equals == std::string_view::npos ? std::string_view() : pair.substr(equals + 1);
      out.emplace_back(percent_decode(pair.substr(0, equals)), percent_decode(value));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    auto comma = list.find(',');
    if (iequals(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string printable(std::string_view text) {
  return log::printable_untrusted(text, 128);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

std::string serialize(const Response& response, bool keep_alive, bool head_only) {
  std::string out;
  out.reserve(160 + response.body.size());
  out += "HTTP/1.1 ";
  out += std::to_string(response.status);
  out += ' ';
  out += reason_phrase(response.status);
  out += "\r\n";
  for (const auto& [name, value] : response.headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (!keep_alive) out += "Connection: close\r\n";
  if (!response.content_type.empty()) {
    out += "Content-Type: ";
    out += response.content_type;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(response.body.size());
  out += "\r\n\r\n";
  if (!head_only) out += response.body;
  return out;
}

}  // namespace vscaler::net::http
