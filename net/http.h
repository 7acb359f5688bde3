// HTTP/1.1 helpers for the admission front end: a strict, bounded parser for a request head
// (request line and headers, nothing recursive, no allocation beyond the head's own text) and
// the response serialiser. Untrusted bytes in; every failure is a value with a short message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vscaler::net::http {

/// A parsed request line and header block.
struct RequestHead {
  /// "POST", "GET", ... as sent (a token, case-sensitive as HTTP says).
  std::string method;
  /// The request target as sent ("/mutate-deployments?timeout=2s").
  std::string target;
  /// The target without its query string: what routes match on.
  std::string path;
  /// 0 for HTTP/1.0, 1 for HTTP/1.1.
  int minor_version = 1;
  /// Header fields in order, names as sent, values without surrounding whitespace.
  std::vector<std::pair<std::string, std::string>> headers;

  /// The first value of header `name` (case-insensitive), if present.
  std::optional<std::string_view> header(std::string_view name) const;
  /// How many fields named `name` (case-insensitive) the head carries.
  std::size_t count(std::string_view name) const;
};

/// What parse_head found in a buffer.
enum class HeadStatus {
  kIncomplete,  // no blank line yet: read more (within the caller's byte budget)
  kComplete,    // `head` is filled; `consumed` bytes (blank line included) belong to it
  kMalformed,   // not HTTP/1.x: `error` says why
};

/// Result of parse_head.
struct HeadResult {
  HeadStatus status = HeadStatus::kIncomplete;
  std::size_t consumed = 0;
  std::string error;
};

/// Parses the head at the start of `buffer` (up to kMaxLeadingEmptyLines leading empty lines are
/// skipped, as RFC 9112 allows; more are malformed). Lines end with CRLF; obsolete line folding,
/// control characters and header names that are not tokens are malformed. Never reads past the
/// first blank line.
///
/// `scanned` makes a head that arrives in many reads cost its length once, not once per read
/// (a client sending it a byte per TLS record would otherwise make the loop thread search the
/// whole buffer again each time): where the search for the blank line resumes, 0 for a new
/// head, kept by the caller between calls on the same growing buffer and updated here.
HeadResult parse_head(std::string_view buffer, RequestHead& head, std::size_t& scanned);

/// Empty lines accepted before a request line (RFC 9112 2.2 asks for at least one).
inline constexpr std::size_t kMaxLeadingEmptyLines = 8;

/// Strict Content-Length: digits only (no sign, no spaces, no list), at most 18 of them.
std::optional<std::uint64_t> parse_length(std::string_view text);

/// The media type of a Content-Type value, without parameters or surrounding spaces.
std::string_view media_type(std::string_view content_type);

/// The raw value of query parameter `name` in a request target ("/p?timeout=2s" -> "2s"), as
/// sent (not percent-decoded: the values read here are plain tokens); nullopt when absent.
std::optional<std::string_view> query_parameter(std::string_view target, std::string_view name);

/// Every query parameter of a request target, percent-decoded ('+' is a space, as HTML forms
/// send it), in order; a name without '=' has an empty value; an invalid escape stays as sent.
std::vector<std::pair<std::string, std::string>> query_parameters(std::string_view target);

/// ASCII case-insensitive equality.
bool iequals(std::string_view a, std::string_view b);

/// True when the comma-separated header value `list` holds `token` (case-insensitive).
bool has_token(std::string_view list, std::string_view token);

/// Text from the network made safe for a log line or a message: printable ASCII, at most 128
/// characters.
std::string printable(std::string_view text);

/// The reason phrase of a status code ("Payload Too Large"); "Error" for codes not used here.
const char* reason_phrase(int status);

/// "text/plain; charset=utf-8", the type of every error message the server writes.
inline constexpr const char* kText = "text/plain; charset=utf-8";

/// A response as handlers and the front end build it.
struct Response {
  int status = 200;
  std::string content_type = kText;
  std::string body;
  /// Extra header fields ("Allow: POST"); Content-Length, Content-Type and Connection are
  /// written by serialize().
  std::vector<std::pair<std::string, std::string>> headers;
  /// Close the connection after this response (a refused request whose body stays unread).
  bool close = false;
  /// What the handler built and leaves to be destroyed once the response is on the wire (a
  /// parsed review's trees): freeing it then overlaps the client's reading of the answer instead
  /// of delaying it. Null for most responses. (On HTTP/2, where every request is served by a
  /// worker, it is freed when the loop hands the response to the session.)
  std::shared_ptr<void> free_after_write;
};

/// The response on the wire. `keep_alive` false adds "Connection: close"; `head_only` (a HEAD
/// request) keeps Content-Length but leaves the body out.
std::string serialize(const Response& response, bool keep_alive, bool head_only = false);

}  // namespace vscaler::net::http
