// ApiError: every way a call to the API server can fail, as a value the caller branches on
// (NotFound, Conflict, Expired, ...), built from the API's Status object when there is one.
#pragma once

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vscaler::kube {

/// The kinds of failure callers branch on; mirrors apimachinery's StatusReason plus the failures
/// that never reach the server (transport, TLS, cancellation, an undecodable answer).
enum class ErrorKind {
  kNotFound,               ///< 404: the object (or its namespace, or the resource) does not exist
  kAlreadyExists,          ///< 409 with reason AlreadyExists: create of an existing name
  kConflict,               ///< 409: stale resourceVersion precondition, server-side apply conflict
  kExpired,                ///< 410 Gone / reason Expired: a watch or continue token is too old;
                           ///< relist
  kUnauthorized,           ///< 401: no or bad credentials
  kForbidden,              ///< 403: authenticated, but RBAC (or an admission policy) says no
  kInvalid,                ///< 422: the object failed validation; see causes
  kBadRequest,             ///< 400: malformed request
  kMethodNotAllowed,       ///< 405
  kNotAcceptable,          ///< 406: the Accept type cannot be served (protobuf for a CRD, ...)
  kUnsupportedMediaType,   ///< 415: e.g. strategic merge patch on a custom resource
  kRequestEntityTooLarge,  ///< 413
  kTooManyRequests,        ///< 429: throttled (priority and fairness, PDB-blocked eviction);
                           ///< see retry_after
  kTimeout,                ///< 504 or reason Timeout/ServerTimeout, or no answer within the
                           ///< client's read timeout
  kServerError,            ///< any other 5xx
  kUnexpectedStatus,       ///< any other non-2xx status code
  kTransport,              ///< no HTTP answer: connection refused/reset, DNS, broken stream
  kTls,                    ///< TLS handshake or certificate verification failed
  kCanceled,               ///< the caller cancelled (Watch::cancel, Informer::stop)
  kDecode,                 ///< a 2xx answer whose body is not the JSON expected, or any answer
                           ///< longer than ClientConfig::max_response_bytes
};

/// The kind's name as written in messages: "NotFound", "TooManyRequests", "Transport", ...
std::string_view to_string(ErrorKind kind);

/// One entry of Status.details.causes: which field was wrong and why (for Invalid, mostly).
struct StatusCause {
  std::string type;     ///< "FieldValueInvalid", "FieldValueRequired", ...
  std::string message;  ///< human-readable
  std::string field;    ///< JSON path of the field, e.g. "metadata.name"
};

/// A failed API call. `code`, `reason`, `message` and `details` come from the server's Status
/// object when it sent one; transport and TLS failures have code 0.
struct ApiError {
  ErrorKind kind = ErrorKind::kUnexpectedStatus;
  int code = 0;          ///< HTTP status code; 0 when no HTTP answer was received
  std::string reason;    ///< Status.reason ("NotFound", "Conflict", ...); may be empty
  std::string message;   ///< what went wrong, for people
  std::string name;      ///< Status.details.name: the object concerned
  std::string group;     ///< Status.details.group
  std::string resource;  ///< Status.details.kind (a resource such as "configmaps" or a Kind)
  std::vector<StatusCause> causes;  ///< Status.details.causes
  /// When the server asked the client to wait before retrying (Retry-After header or
  /// Status.details.retryAfterSeconds), at most a minute (a longer wait is not believed).
  std::optional<std::chrono::seconds> retry_after;

  /// One line: "NotFound (404): configmaps \"x\" not found".
  std::string to_string() const;
};

/// Builds the error for a non-2xx answer: parses `body` as a metav1.Status when it is one (the
/// API server sends one for almost every error), else keeps a short prefix of the body as the
/// message. `retry_after_header` is the raw Retry-After header value, "" when absent.
ApiError error_from_response(int http_code, std::string_view body,
                             std::string_view retry_after_header = {});

/// Builds the error from a metav1.Status object (as found in a watch ERROR event).
ApiError error_from_status(const nlohmann::json& status);

/// The kind for an HTTP status code and a Status reason (the reason wins when it is specific).
ErrorKind classify(int http_code, std::string_view reason);

/// An error for a failure the client detected itself (no Status object).
ApiError make_error(ErrorKind kind, std::string message);

/// Predicates for the kinds callers branch on most (same as comparing e.kind).
inline bool is_not_found(const ApiError& e) {
  return e.kind == ErrorKind::kNotFound;
}
inline bool is_already_exists(const ApiError& e) {
  return e.kind == ErrorKind::kAlreadyExists;
}
inline bool is_conflict(const ApiError& e) {
  return e.kind == ErrorKind::kConflict;
}
/// True for 410 Gone / Expired: the resourceVersion or continue token is too old; relist.
inline bool is_expired(const ApiError& e) {
  return e.kind == ErrorKind::kExpired;
}
inline bool is_unauthorized(const ApiError& e) {
  return e.kind == ErrorKind::kUnauthorized;
}
inline bool is_forbidden(const ApiError& e) {
  return e.kind == ErrorKind::kForbidden;
}
inline bool is_invalid(const ApiError& e) {
  return e.kind == ErrorKind::kInvalid;
}
inline bool is_too_many_requests(const ApiError& e) {
  return e.kind == ErrorKind::kTooManyRequests;
}
inline bool is_timeout(const ApiError& e) {
  return e.kind == ErrorKind::kTimeout;
}
inline bool is_server_error(const ApiError& e) {
  return e.kind == ErrorKind::kServerError;
}
inline bool is_transport(const ApiError& e) {
  return e.kind == ErrorKind::kTransport;
}
inline bool is_tls(const ApiError& e) {
  return e.kind == ErrorKind::kTls;
}
inline bool is_canceled(const ApiError& e) {
  return e.kind == ErrorKind::kCanceled;
}

/// True when trying the same request again later may succeed without changing it: transport
/// failures, timeouts, 429 and 5xx. Conflicts are not included: they need a re-read first.
bool is_retryable(const ApiError& e);

}  // namespace vscaler::kube
