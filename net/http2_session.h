// HTTP/2 for the admission front end, on top of Connection's TLS stream: the API server speaks
// HTTP/2 to a webhook whose URL is a loopback address (and to any that offers h2 in ALPN, for
// other clients), multiplexing every concurrent admission on one connection instead of opening
// one TLS connection per request — under a burst, new handshakes on a busy API server are what
// made calls pass their timeout. libnghttp2 (Debian's libnghttp2-dev) does the framing, HPACK
// and flow control; this class maps its streams onto the same Request/Response hand-off to the
// workers as HTTP/1.1, with the same budgets: header and body bytes, the shared body-memory
// budget, a deadline per request, and a bounded number of concurrent streams.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "net/connection.h"

namespace vscaler::net {

/// The server side of one HTTP/2 connection, as bytes in and bytes out (no I/O of its own).
/// Used by its Connection on the event loop thread only.
class Http2Session {
 public:
  /// Streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). Go's
  /// client opens a new connection (a TLS handshake on a busy API server) for every request
  /// over the limit, so it is as large as a burst of writes; memory stays bounded by the body
  /// budget and the per-request deadline.
  static constexpr std::uint32_t kMaxConcurrentStreams = 1000;
  /// How long a connection without streams is kept. Longer than HTTP/1.1's keep-alive: the API
  /// server keeps one HTTP/2 connection per webhook and pings it after 30 s without frames;
  /// closing it sooner makes the next burst start with a handshake per concurrent request.
  static constexpr std::chrono::seconds kIdleTimeout{300};

  /// A session for connection `connection_id`; ok() is false when nghttp2 could not make one.
  Http2Session(std::uint64_t connection_id, ConnectionEnv& env, Clock::time_point now);
  ~Http2Session();
  Http2Session(const Http2Session&) = delete;
  Http2Session& operator=(const Http2Session&) = delete;

  /// False when the session could not be created.
  bool ok() const { return session_ != nullptr; }

  /// Feeds bytes read from the peer. False on a connection-level protocol error: the caller
  /// flushes what is queued (a GOAWAY) and closes.
  bool receive(std::string_view bytes, Clock::time_point now);
  /// The worker's response for `stream` (dropped when the stream is gone: reset or timed out).
  void respond(std::int32_t stream, http::Response response, Clock::time_point now);
  /// Appends the frames ready to send to `out`. False on a fatal nghttp2 error.
  bool flush(std::string& out);
  /// Resets the streams whose request deadline passed.
  void expire(Clock::time_point now);
  /// Sends GOAWAY once (the server stops): streams under way finish, no new ones start.
  void stop();

  /// The next deadline: the oldest unanswered request's, else the idle keep-alive one.
  Clock::time_point deadline() const;
  /// True when neither side wants the connection any more (GOAWAY exchanged, streams done).
  bool finished() const;
  /// True when no request is being read or served (the server may close it at once).
  bool idle() const { return streams_.empty(); }

 private:
  struct Stream {
    http::RequestHead head;
    std::string body;
    Clock::time_point start;
    std::size_t header_bytes = 0;
    std::size_t reserved = 0;   // this stream's share of ConnectionEnv::buffered
    bool dispatched = false;    // a worker has the request
    bool answered = false;      // a response was submitted
    std::string response_body;  // what the data source sends
    std::size_t response_offset = 0;
  };

  // nghttp2 callbacks (user_data is the session).
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                       std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                       std::uint8_t flags, void* self);
  static int on_data_chunk(nghttp2_session*, std::uint8_t flags, std::int32_t stream_id,
                           const std::uint8_t* data, std::size_t length, void* self);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code,
                             void* self);
  static ssize_t read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buffer,
                           std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                           void* self);

  Stream* find(std::int32_t stream_id);
  // The whole request of `stream_id` arrived: checks it and hands it to a worker.
  void complete(std::int32_t stream_id, Stream& stream);
  // Answers `stream_id` without a worker (a refused request), counting why.
  void refuse(std::int32_t stream_id, Stream& stream, int status, std::string_view reason,
              std::string message);
  void submit(std::int32_t stream_id, Stream& stream, const http::Response& response);
  void release(Stream& stream);
  std::chrono::milliseconds idle_timeout() const;

  const std::uint64_t connection_id_;
  ConnectionEnv& env_;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, Stream> streams_;
  Clock::time_point now_;
  Clock::time_point last_activity_;
  bool goaway_sent_ = false;
};

}  // namespace vscaler::net
