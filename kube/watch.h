// Watch streams: framing of the newline-delimited event stream, event parsing, and Watch, one
// open watch request that reports "expired, relist" (HTTP 410 or an in-stream ERROR with code
// 410) as ErrorKind::kExpired.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"
#include "kube/client.h"
#include "kube/errors.h"
#include "kube/json_projection.h"
#include "kube/transport.h"

namespace vscaler::kube {

/// Splits a byte stream into lines whatever the chunk boundaries: a line may arrive in many
/// pieces and a piece may hold many lines. Lines longer than the bound are refused, so a broken
/// or hostile server cannot make the client buffer without limit.
class LineFramer {
 public:
  /// What feed() ended with.
  enum class Status {
    kOk,       ///< every complete line was delivered
    kStopped,  ///< on_line returned false
    kTooLong,  ///< a line exceeded max_line_bytes (the stream must be dropped)
  };

  /// The largest watch event the API server can send is a little above etcd's 1.5 MiB object
  /// limit once JSON-encoded; the default leaves ample room.
  explicit LineFramer(size_t max_line_bytes = 16 * 1024 * 1024) : max_line_(max_line_bytes) {}

  /// Appends `chunk` and calls `on_line` for each completed line, without its "\n" (a "\r"
  /// before it is removed too; empty lines are skipped).
  Status feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line);

  /// Bytes of an incomplete last line held back.
  size_t buffered() const { return buffer_.size(); }
  /// Forgets any partial line (after a reconnect).
  void reset() { buffer_.clear(); }

 private:
  size_t max_line_;
  std::string buffer_;
};

/// The type of a watch event.
enum class EventType { kAdded, kModified, kDeleted, kBookmark, kError };

/// The event type as the API writes it: "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR".
std::string_view to_string(EventType type);

/// One event: for kBookmark only object.metadata.resourceVersion is meaningful; for kError the
/// object is a metav1.Status.
struct WatchEvent {
  EventType type = EventType::kAdded;
  nlohmann::json object;
};

/// Parses one line of a watch stream ({"type":..,"object":{..}}) with `parser` (simdjson, about
/// twice as fast as nlohmann's own parse; a watch passes one parser for all its events), or one
/// of its own when null. Decode errors name what is wrong without echoing the line (it may hold
/// secret data).
Result<WatchEvent, ApiError> parse_watch_event(std::string_view line,
                                               ProjectingParser* parser = nullptr);

/// Options of a watch request.
struct WatchOptions {
  std::string label_selector;  ///< only objects with matching labels, e.g. "app=web"
  std::string field_selector;  ///< only objects with matching fields, e.g. "metadata.name=x"
  /// Start after this version (from a list or the last event); "" starts "now" with synthetic
  /// ADDED events for existing objects on most servers; prefer a list's resourceVersion.
  std::string resource_version;
  /// Ask for BOOKMARK events, so the resume point advances even when nothing changes.
  bool allow_bookmarks = true;
  /// The server ends the watch after this long (timeoutSeconds); the client's read timeout is
  /// set above it.
  std::chrono::seconds timeout{300};
  /// Largest event accepted (see LineFramer).
  size_t max_event_bytes = 16 * 1024 * 1024;
};

/// One watch request. run() blocks on the calling thread; cancel() may come from any thread.
class Watch {
 public:
  /// A watch of the collection at `target` (path and query, see Client::watch, which is the
  /// usual way to make one). No request is sent until run().
  Watch(std::shared_ptr<Transport> transport, std::string target, WatchOptions options);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  /// Streams events to `on_event` until the server ends the watch (timeoutSeconds; returns ok),
  /// `on_event` returns false (ok), or an error: kExpired for an HTTP 410 or an ERROR event whose
  /// Status has code 410 (the caller must relist), kCanceled after cancel(), the Status of any
  /// other ERROR event, or a transport/decode failure. ERROR events are not passed to on_event.
  Result<Unit, ApiError> run(const std::function<bool(const WatchEvent&)>& on_event);

  /// Stops run() promptly (it returns kCanceled). Thread-safe; may be called before run().
  void cancel();

  /// The resourceVersion of the last event or bookmark seen: where to resume. Read it from the
  /// thread that called run(), after run() returned.
  const std::string& resource_version() const { return resource_version_; }

  /// Events (bookmarks included) delivered so far.
  size_t events() const { return events_; }

 private:
  std::shared_ptr<Transport> transport_;
  std::string target_;
  WatchOptions options_;
  std::unique_ptr<Stream> stream_;
  std::string resource_version_;
  size_t events_ = 0;
};

}  // namespace vscaler::kube
