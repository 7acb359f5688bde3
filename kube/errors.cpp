#include "kube/errors.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>

namespace vscaler::kube {
namespace {

using nlohmann::json;

std::string string_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

// Bodies that are not a Status (a proxy's HTML page, say) are cut: a message is one line for
// people, and an error body may echo request content that has no place in logs.
constexpr size_t kMaxRawMessage = 256;

// The longest wait a Retry-After is believed for. A proxy in front of the API server, or a
// third-party admission webhook whose denial the API server passes on, may ask for hours: obeyed,
// that would stop an informer's watch or freeze a scaler's key that long. After the cap the
// request is tried again (and, if the server still means it, told to wait again).
constexpr std::chrono::seconds kMaxRetryAfter{60};

std::chrono::seconds capped_retry_after(long long seconds) {
  return std::chrono::seconds(std::min<long long>(seconds, kMaxRetryAfter.count()));
}

std::optional<std::chrono::seconds> parse_retry_after(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  long long seconds = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  // More seconds than a long long holds: the longest wait believed, as for any large number.
  if (!text.empty() && ec == std::errc::result_out_of_range && text.front() != '-' &&
      end == text.data() + text.size()) {
    return kMaxRetryAfter;
  }
  // The HTTP-date form is legal but the API server never sends it; it is ignored.
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || seconds < 0) {
    return std::nullopt;
  }
  return capped_retry_after(seconds);
}

void fill_from_status(ApiError& error, const json& status) {
  error.reason = string_field(status, "reason");
  error.message = string_field(status, "message");
  auto details = status.find("details");
  if (details == status.end() || !details->is_object()) return;
  error.name = string_field(*details, "name");
  error.group = string_field(*details, "group");
  error.resource = string_field(*details, "kind");
  auto causes = details->find("causes");
  if (causes != details->end() && causes->is_array()) {
    for (const auto& cause : *causes) {
      if (!cause.is_object()) continue;
      error.causes.push_back({string_field(cause, "reason"), string_field(cause, "message"),
                              string_field(cause, "field")});
    }
  }
  auto retry = details->find("retryAfterSeconds");
  if (retry != details->end() && retry->is_number_unsigned() && retry->get<std::uint64_t>() > 0) {
    // Unsigned: beyond a long long too (2^63 and up would wrap negative there).
    error.retry_after = capped_retry_after(static_cast<long long>(
        std::min<std::uint64_t>(retry->get<std::uint64_t>(), kMaxRetryAfter.count())));
  } else if (retry != details->end() && retry->is_number_integer() && retry->get<long long>() > 0) {
    error.retry_after = capped_retry_after(retry->get<long long>());
  }
}

}  // namespace

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return "NotFound";
    case ErrorKind::kAlreadyExists:
      return "AlreadyExists";
    case ErrorKind::kConflict:
      return "Conflict";
    case ErrorKind::kExpired:
      return "Expired";
    case ErrorKind::kUnauthorized:
      return "Unauthorized";
    case ErrorKind::kForbidden:
      return "Forbidden";
    case ErrorKind::kInvalid:
      return "Invalid";
    case ErrorKind::kBadRequest:
      return "BadRequest";
    case ErrorKind::kMethodNotAllowed:
      return "MethodNotAllowed";
    case ErrorKind::kNotAcceptable:
      return "NotAcceptable";
    case ErrorKind::kUnsupportedMediaType:
      return "UnsupportedMediaType";
    case ErrorKind::kRequestEntityTooLarge:
      return "RequestEntityTooLarge";
    case ErrorKind::kTooManyRequests:
      return "TooManyRequests";
    case ErrorKind::kTimeout:
      return "Timeout";
    case ErrorKind::kServerError:
      return "ServerError";
    case ErrorKind::kUnexpectedStatus:
      return "UnexpectedStatus";
    case ErrorKind::kTransport:
      return "Transport";
    case ErrorKind::kTls:
      return "TLS";
    case ErrorKind::kCanceled:
      return "Canceled";
    case ErrorKind::kDecode:
      return "Decode";
  }
  return "Unknown";
}

std::string ApiError::to_string() const {
  std::string text(kube::to_string(kind));
  if (code != 0) text += " (" + std::to_string(code) + ")";
  if (!message.empty()) text += ": " + message;
  if (retry_after) text += " (retry after " + std::to_string(retry_after->count()) + "s)";
  return text;
}

ErrorKind classify(int http_code, std::string_view reason) {
  // The reason is more precise than the code (409 is AlreadyExists or Conflict; 500 may be a
  // ServerTimeout), so it is consulted first, as apimachinery's ReasonForError does.
  if (reason == "NotFound") return ErrorKind::kNotFound;
  if (reason == "AlreadyExists") return ErrorKind::kAlreadyExists;
  if (reason == "Conflict") return ErrorKind::kConflict;
  if (reason == "Gone" || reason == "Expired") return ErrorKind::kExpired;
  if (reason == "Unauthorized") return ErrorKind::kUnauthorized;
  if (reason == "Forbidden") return ErrorKind::kForbidden;
  if (reason == "Invalid") return ErrorKind::kInvalid;
  if (reason == "TooManyRequests") return ErrorKind::kTooManyRequests;
  if (reason == "Timeout" || reason == "ServerTimeout") return ErrorKind::kTimeout;
  if (reason == "MethodNotAllowed") return ErrorKind::kMethodNotAllowed;
  if (reason == "NotAcceptable") return ErrorKind::kNotAcceptable;
  if (reason == "UnsupportedMediaType") return ErrorKind::kUnsupportedMediaType;
  if (reason == "RequestEntityTooLarge") return ErrorKind::kRequestEntityTooLarge;
  switch (http_code) {
    case 400:
      return ErrorKind::kBadRequest;
    case 401:
      return ErrorKind::kUnauthorized;
    case 403:
      return ErrorKind::kForbidden;
    case 404:
      return ErrorKind::kNotFound;
    case 405:
      return ErrorKind::kMethodNotAllowed;
    case 406:
      return ErrorKind::kNotAcceptable;
    case 409:
      return ErrorKind::kConflict;
    case 410:
      return ErrorKind::kExpired;
    case 413:
      return ErrorKind::kRequestEntityTooLarge;
    case 415:
      return ErrorKind::kUnsupportedMediaType;
    case 422:
      return ErrorKind::kInvalid;
    case 429:
      return ErrorKind::kTooManyRequests;
    case 504:
      return ErrorKind::kTimeout;
    default:
      break;
  }
  if (reason == "BadRequest") return ErrorKind::kBadRequest;
  if (http_code >= 500 && http_code <= 599) return ErrorKind::kServerError;
  return ErrorKind::kUnexpectedStatus;
}

ApiError error_from_status(const json& status) {
  ApiError error;
  if (status.is_object()) {
    auto code = status.find("code");
    if (code != status.end() && code->is_number_integer()) error.code = code->get<int>();
    fill_from_status(error, status);
  }
  error.kind = classify(error.code, error.reason);
  if (error.message.empty()) error.message = "the server reported a failure without a message";
  return error;
}

ApiError error_from_response(int http_code, std::string_view body,
                             std::string_view retry_after_header) {
  ApiError error;
  error.code = http_code;
  json status = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && string_field(status, "kind") == "Status") {
    fill_from_status(error, status);
  } else {
    std::string_view raw = body.substr(0, kMaxRawMessage);
    while (!raw.empty() && (raw.back() == '\n' || raw.back() == '\r')) raw.remove_suffix(1);
    error.message = raw.empty() ? "HTTP " + std::to_string(http_code) : std::string(raw);
  }
  // The header is what the server's rate limiting actually sets; it wins over the details.
  if (auto header = parse_retry_after(retry_after_header)) error.retry_after = header;
  error.kind = classify(http_code, error.reason);
  return error;
}

ApiError make_error(ErrorKind kind, std::string message) {
  ApiError error;
  error.kind = kind;
  error.reason = std::string(to_string(kind));
  error.message = std::move(message);
  return error;
}

bool is_retryable(const ApiError& e) {
  switch (e.kind) {
    case ErrorKind::kTransport:
    case ErrorKind::kTimeout:
    case ErrorKind::kTooManyRequests:
    case ErrorKind::kServerError:
      return true;
    default:
      return false;
  }
}

}  // namespace vscaler::kube
