// HTTP/2 for the admission front end, on top of Connection's TLS stream: the API server speaks
// HTTP/2 to a webhook whose URL is a loopback address (and to any that offers h2 in ALPN, for
// other clients), multiplexing every concurrent admission on one connection instead of opening
// one TLS connection per request — under a burst, new handshakes on a busy API server are what
// made calls pass their timeout. libnghttp2 (Debian's libnghttp2-dev) does the framing, HPACK
// and flow control; this class maps its streams onto the same Request/Response hand-off to the
// workers as HTTP/1.1, with the same budgets: header and body bytes, the shared body-memory
// budget, a deadline per request, and a bounded number of concurrent streams. A stream answered
// before its request is complete is reset (nghttp2 would keep it half-closed for as long as the
// client stays quiet), every stream has a fixed deadline (reading, then writing its answer), and
// the decoded headers of all the streams of one connection have a budget of their own.
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
  /// Decoded header bytes (RFC 7541 sizes) all the streams of one connection may hold at once
  /// (at least ConnectionLimits::max_header_bytes): HPACK lets 74 KB on the wire decode to 64
  /// MB in 1,000 streams. The API server's admission calls carry well under 1 KiB each, so
  /// 1,000 concurrent ones fit; a header past it resets its stream.
  static constexpr std::size_t kMaxConnectionHeaderBytes = 1 << 20;
  /// How long a stream answered before its request was complete waits for the client to end
  /// it before it is reset (RST_STREAM NO_ERROR, RFC 9113 8.1). Not at once: a client still
  /// sending its body when the reset arrives may report a stream error instead of the answer
  /// (curl 7.88 does); a second is plenty to read a refusal.
  static constexpr std::chrono::seconds kEarlyAnswerGrace{1};

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
  bool flush(std::string& out, Clock::time_point now);
  /// Resets the streams whose deadline passed (see deadline()), and sends GOAWAY after the idle
  /// timeout. False when the connection must be closed: a stream reset a write timeout ago is
  /// still not gone, or a GOAWAY without streams still not written (the client does not read).
  bool expire(Clock::time_point now);
  /// Sends GOAWAY once (the server stops, or the connection idled): streams under way finish,
  /// no new ones start.
  void stop(Clock::time_point now);

  /// The next deadline, fixed from when each stream started, never moved by traffic: a request
  /// must be complete and answered within request_timeout of its first frame, an answer written
  /// within write_timeout of being submitted, a reset sent within write_timeout; without streams,
  /// the idle keep-alive deadline (or, after GOAWAY, write_timeout to send it).
  Clock::time_point deadline() const;
  /// True when neither side wants the connection any more (GOAWAY exchanged, streams done).
  bool finished() const;
  /// True when no request is being read or served (the server may close it at once).
  bool idle() const { return streams_.empty(); }
  /// True when the client has opened a stream on this connection (it is a client that sends
  /// requests, not one that only holds a connection).
  bool ever_used() const { return streams_started_ > 0; }
  /// True while some stream's request is at a worker or its answer is being sent.
  bool serving() const;
  /// When a request last went to a worker ({} before the first).
  Clock::time_point last_dispatch() const { return last_dispatch_; }

 private:
  struct Stream {
    http::RequestHead head;
    std::string body;
    Clock::time_point start;
    std::size_t header_bytes = 0;  // decoded; also counted in header_bytes_ until closed
    // The head's and body's share of ConnectionEnv::buffered; moves into the Request.
    Reservation reservation;
    bool over_budget = false;       // headers not kept (shared budget full): refused with 503
    bool request_complete = false;  // the client ended the stream (END_STREAM)
    bool dispatched = false;        // a worker has the request
    bool answered = false;          // a response was submitted (or the stream reset)
    bool reset = false;             // RST_STREAM submitted: gone once it is sent
    Clock::time_point answered_at;  // when `answered` became true
    Clock::time_point reset_at;     // when `reset` became true
    // The whole answer went out before the request was complete (a refusal): reset with
    // NO_ERROR kEarlyAnswerGrace later unless the client ends the stream first.
    bool answered_early = false;
    Clock::time_point sent_at;  // when the answer's END_STREAM was sent
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
  static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* self);
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
  // Submits RST_STREAM `code` for `stream_id` and frees what the stream holds; it is erased
  // once nghttp2 sends the reset (on_stream_close).
  void reset(std::int32_t stream_id, Stream& stream, std::uint32_t code);
  // Frees a refused or reset stream's head and body (their share of the budget with them),
  // keeping only the method (a HEAD's answer has no body).
  static void drop_request(Stream& stream);
  Clock::time_point deadline_of(const Stream& stream) const;
  std::size_t header_budget() const;
  std::chrono::milliseconds idle_timeout() const;

  const std::uint64_t connection_id_;
  ConnectionEnv& env_;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, Stream> streams_;
  std::size_t streams_started_ = 0;
  Clock::time_point last_dispatch_{};
  std::size_t header_bytes_ = 0;  // decoded header bytes of the streams in streams_
  Clock::time_point now_;         // the time of the latest call from the connection
  Clock::time_point last_activity_;
  bool goaway_sent_ = false;
  Clock::time_point goaway_at_;
};

}  // namespace vscaler::net
