// Transport: HTTPS to the API server with verified TLS, bearer-token or client-certificate
// authentication, a pool of keep-alive connections for concurrent callers, and long-lived
// streaming responses (watches) on their own connections that another thread can cancel.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "kube/config.h"
#include "kube/errors.h"

namespace vscaler::kube {

/// One HTTP request to the API server.
struct HttpRequest {
  /// "GET", "POST", "PUT", "PATCH" or "DELETE".
  std::string method = "GET";
  /// Path and query, already percent-encoded, without the server's path prefix:
  /// "/api/v1/namespaces/a/configmaps?limit=500".
  std::string target;
  /// The request body (JSON for every API write); empty for none.
  std::string body;
  /// Content-Type of `body` (e.g. "application/merge-patch+json"); unused when body is empty.
  std::string content_type = "application/json";
  /// What representation to ask for (PartialObjectMetadata lists use a parameterised type).
  std::string accept = "application/json";
  /// The longest this request may take, waiting for a pooled connection included; zero (or
  /// more than config().request_timeout) means request_timeout. For callers with a deadline of
  /// their own (an admission review the API server stops waiting for).
  std::chrono::milliseconds timeout{0};
};

/// The answer to an HttpRequest, whatever its status code.
struct HttpResponse {
  int status = 0;            ///< HTTP status code
  std::string body;          ///< the whole body, decompressed
  std::string content_type;  ///< Content-Type header
  /// The Retry-After header ("" when absent), for 429 and 503 answers.
  std::string retry_after;
  /// Warning headers (deprecated API use, unknown fields with fieldValidation=Warn, ...).
  std::vector<std::string> warnings;
};

/// Counters of one Transport, for tests and metrics.
struct TransportStats {
  std::uint64_t requests = 0;            ///< ordinary requests sent (retries included)
  std::uint64_t connections_opened = 0;  ///< TCP connections made (pool and streams)
  std::uint64_t token_reloads = 0;       ///< token file read again, plugin run again
  std::uint64_t streams = 0;             ///< streaming requests started
};

/// A long-lived streaming GET (a watch) on its own connection. Run it on one thread; cancel it
/// from any other.
class Stream {
 public:
  virtual ~Stream() = default;
  /// Sends the request and hands the body to `on_data` piece by piece as it arrives (pieces
  /// have arbitrary boundaries). Returns when the server ends the response (ok), `on_data`
  /// returns false (ok), the read timeout passes with no data (Timeout), the connection fails,
  /// cancel() is called (Canceled), or the status is not 2xx (the error built from the body).
  virtual Result<Unit, ApiError> run(const std::function<bool(std::string_view)>& on_data) = 0;
  /// Makes run() return Canceled promptly, whether it has connected yet or not. Thread-safe;
  /// later calls do nothing.
  virtual void cancel() = 0;
};

/// A connection manager for one API server and identity. Thread-safe: any number of threads
/// may call send() at once; each request gets a pooled keep-alive connection to itself.
class Transport {
 public:
  /// Checks the configuration (URL, PEM data) and prepares the TLS material; connects lazily.
  static Result<std::shared_ptr<Transport>> create(const ClientConfig& config);
  virtual ~Transport() = default;

  /// Sends one request and waits for the whole answer, up to config().request_timeout. Only
  /// failures without an HTTP answer are errors here (Transport, Timeout, TLS); non-2xx
  /// answers are returned as responses for the caller to interpret. A 401 while the token
  /// file has changed since it was last read is retried once with the new token.
  virtual Result<HttpResponse, ApiError> send(const HttpRequest& request) = 0;

  /// Prepares a streaming request on a new connection whose read timeout is `read_timeout`
  /// (keep it above the watch's timeoutSeconds, or quiet watches are cut). Call run() on it.
  virtual std::unique_ptr<Stream> open_stream(HttpRequest request,
                                              std::chrono::milliseconds read_timeout) = 0;

  /// The configuration this transport was created from.
  virtual const ClientConfig& config() const = 0;
  /// Counters since creation.
  virtual TransportStats stats() const = 0;
};

}  // namespace vscaler::kube
