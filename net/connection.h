// One client connection of the front end, as a non-blocking state machine: TLS handshake (none
// on a plain server), request head and body read within byte budgets and deadlines, the request
// handed to a worker (or, when quick, served on the loop thread), the response written, then
// keep-alive, close, or a lingering close for a refused request. The event loop calls it when its
// socket is ready or its deadline passes and applies what it asks for (the events to wait for, the
// next deadline, or closing). It never blocks, so an idle or slow connection costs a file
// descriptor and a little memory, never a thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "metrics/registry.h"
#include "net/http.h"
#include "net/tls.h"

namespace vscaler::net {

/// The steady clock every deadline of the front end uses.
using Clock = std::chrono::steady_clock;

/// Budgets and deadlines of one connection (see FrontEndOptions for what each is for).
struct ConnectionLimits {
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds keep_alive_timeout{30000};
  /// How long a keep-alive connection waits for its next request before it frees its TLS
  /// buffers and request buffers (about 80 KiB after a 20 KB review); a busy connection keeps
  /// them from one request to the next instead of allocating them again for each.
  std::chrono::milliseconds idle_buffer_release{500};
  std::chrono::milliseconds linger_timeout{2000};
  std::size_t max_header_bytes = 64 * 1024;
  std::size_t max_body_bytes = 7 * 1024 * 1024;
  std::size_t linger_bytes = 16 * 1024 * 1024;
  std::size_t keep_alive_max_requests = 10000;
  /// Spare capacity reserved after each HTTP/1.1 body, so that a parser that reads past the end
  /// (simdjson: webhook::kParsePadding) parses it in place instead of copying it.
  std::size_t body_padding = 0;
  /// What serving a body costs in memory, as a multiple of its size, charged to the shared
  /// budget (ConnectionEnv::buffered) from its first byte until the response: the webhook holds
  /// a body, parses it (simdjson's structural index alone is 4 bytes per byte of input, its tape
  /// and strings more) and the handler builds from it, about 6 times its size, and 100
  /// concurrent 7 MiB POSTs must stay within the budget rather than within the budget times 6.
  std::size_t body_memory_factor = 1;
};

/// A share of the shared request-memory budget (ConnectionEnv::buffered), given back when it is
/// destroyed or reset. It moves with the bytes it pays for — from the connection reading a body
/// into the worker job that holds it, then into the response that holds its parse — so that a
/// client closing its connection, a deadline, or a reset stream cannot free the budget while a
/// queued job still holds the body. Move-only; usable from any thread.
class Reservation {
 public:
  /// Holds nothing.
  Reservation() = default;
  /// Gives the share back.
  ~Reservation() { reset(); }
  /// Takes over `other`'s share (`other` holds nothing afterwards).
  Reservation(Reservation&& other) noexcept;
  /// Gives back this share, then takes over `other`'s.
  Reservation& operator=(Reservation&& other) noexcept;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;

  /// Adds `bytes` to `counter` when the total stays within `budget`; false (nothing taken) when
  /// it would not. A null counter means no budget: always true, nothing counted. Every call on
  /// one reservation must name the same counter.
  bool grow(std::atomic<std::size_t>* counter, std::size_t budget, std::size_t bytes);
  /// Gives the share back now.
  void reset();
  /// The bytes held.
  std::size_t bytes() const { return bytes_; }

 private:
  std::atomic<std::size_t>* counter_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A complete request as a worker gets it.
struct Request {
  http::RequestHead head;
  std::string body;
  /// When its first byte arrived (latency metrics measure from here).
  Clock::time_point start;
  /// The HTTP/2 stream it came on; 0 for HTTP/1.1.
  std::int32_t stream = 0;
  /// What its head and body are charged to the shared budget: given back when the request is
  /// destroyed (or its response, when the worker moves it there), not when its connection goes.
  Reservation reservation;
};

/// What connections share: limits, metrics and the ways out to the loop. Owned by the loop.
struct ConnectionEnv {
  ConnectionLimits limits;
  /// Hands a complete request to the workers; false when they cannot take it (the connection
  /// then answers 503 and closes).
  std::function<bool(std::uint64_t id, Request request)> dispatch;
  /// Serves a complete HTTP/1.1 request at once on the loop thread when it is quick (see
  /// FrontEnd::Quick), saving the two thread hand-offs of `dispatch`; nullopt (the request
  /// untouched) sends it to `dispatch`. Unset: every request goes to `dispatch`.
  std::function<std::optional<http::Response>(Request& request)> serve_here;
  /// Called for every request refused before a handler saw it (for the webhook metrics).
  std::function<void(const http::RequestHead& head, int status, Clock::time_point start)> refused;
  /// vscaler_webhook_rejected_total{reason}.
  metrics::CounterFamily* rejected = nullptr;
  /// vscaler_<name>_tls_handshake_errors_total; null on a plain server.
  metrics::Counter* handshake_errors = nullptr;
  /// vscaler_<name>_tls_handshake_seconds: from accept to the handshake's end; null on a plain
  /// server.
  metrics::Histogram* handshake_seconds = nullptr;
  /// Request body bytes (and HTTP/2's decoded headers) held by all connections and by the
  /// worker jobs they handed requests to (read, queued or being served: see Reservation), and
  /// the most they may hold: a body that would pass it is refused with 503 before it is read, so
  /// many connections each sending a large body cannot exhaust memory.
  std::atomic<std::size_t>* buffered = nullptr;
  std::size_t buffer_budget = 512 * 1024 * 1024;
  /// What connections hold before any body, counted apart from `buffered` but within the same
  /// budget (bodies and this together stay within buffer_budget): the TLS buffers of every
  /// connection not idle (tls::Stream::kBufferBytes) and HTTP/1.1 heads beyond their first 4 KiB.
  /// Thousands of connections in their handshake or first bytes otherwise hold ~50 KiB each
  /// outside every budget. Connections never answered may fill only half of the budget (see
  /// held_budget), so that they cannot take the room the API server's bodies need. Null:
  /// nothing counted.
  std::atomic<std::size_t>* held = nullptr;

  /// The most `buffered` may reach now: the budget less what connections hold.
  std::size_t body_budget() const { return buffer_budget - std::min(load(held), buffer_budget); }
  /// Charges `bytes` of a request body to `buffered` within body_budget(). When they do not
  /// fit and `making_room_for` names a connection answered before (an HTTP/2 session once it
  /// carried a stream, this one included), connections that can give up
  /// their share of `held` are closed for it (make_room) while that can help.
  bool reserve_body(Reservation& reservation, std::size_t bytes,
                    std::optional<std::uint64_t> making_room_for);
  /// The most `held` may reach now for a connection answered before (the API server's kept-alive
  /// ones) or not: half the budget or all of it, less what bodies hold.
  std::size_t held_budget(bool answered) const {
    return std::min(answered ? buffer_budget : buffer_budget / 2,
                    buffer_budget - std::min(load(buffered), buffer_budget));
  }
  /// Closes a connection of the loop, other than the one named, that holds a share of `held`
  /// it can give up (Connection::evictable but not reading a body, or Connection::stalled),
  /// when closing all such could
  /// bring `held` to at most the second argument; false when it could not, or none is left.
  /// Unset: nothing is closed to make room.
  std::function<bool(std::uint64_t except, std::size_t held_at_most)> make_room;
  /// True once the server is stopping: responses close their connections.
  bool stopping = false;

 private:
  static std::size_t load(const std::atomic<std::size_t>* counter) {
    return counter != nullptr ? counter->load(std::memory_order_relaxed) : 0;
  }
};

/// The events a connection waits for (a subset of EPOLLIN | EPOLLOUT), its deadline, or that it
/// is finished and must be closed.
struct Wait {
  std::uint32_t events = 0;
  Clock::time_point deadline{};
  bool close = false;
  /// It served a request on the loop thread and the next one is already read: call on_ready
  /// again on the loop's next turn, after the other ready connections (a client pipelining quick
  /// requests gets one per turn, never the whole loop).
  bool again = false;
};

/// One connection; used by the event loop thread only.
class Http2Session;

class Connection {
 public:
  /// Where the connection is in its life.
  enum class Phase { kHandshake, kIdle, kHead, kBody, kServing, kWriting, kLinger, kHttp2 };

  /// A connection on the accepted non-blocking socket `fd` (owned: closed by the destructor).
  Connection(std::uint64_t id, int fd, SSL_CTX* ctx, ConnectionEnv& env, Clock::time_point now);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// False when no TLS state could be created (close it at once).
  bool ok() const { return stream_.ok(); }
  /// Charges the TLS buffers a connection holds while it is not idle (tls::Stream::kBufferBytes)
  /// to ConnectionEnv::held, unless charged already. When its budget cannot take them
  /// (charge_ceiling), connections that can give up their share are closed for it
  /// (ConnectionEnv::make_room) until it fits; false when none is left (the event loop then
  /// refuses a newcomer; a request gets 503). Plain connections hold none: always true.
  bool charge_buffers();
  /// What it holds charged to ConnectionEnv::held now (its TLS buffers and head).
  std::size_t charged_bytes() const;
  /// The socket.
  int fd() const { return fd_; }
  /// The loop's handle for it (never reused).
  std::uint64_t id() const { return id_; }
  /// The current phase.
  Phase phase() const { return phase_; }

  /// What to wait for first (the ClientHello, within the handshake deadline).
  Wait start() const;
  /// The socket is ready for `events` (EPOLLIN, EPOLLOUT, EPOLLHUP, EPOLLERR bits).
  Wait on_ready(std::uint32_t events, Clock::time_point now);
  /// The deadline of the last Wait passed.
  Wait on_deadline(Clock::time_point now);
  /// The worker's response to the request dispatched last.
  Wait on_response(http::Response response, Clock::time_point now);
  /// The worker's response to the request of HTTP/2 stream `stream` (phase kHttp2).
  Wait on_stream_response(std::int32_t stream, http::Response response, Clock::time_point now);
  /// The server stops: true when this connection can be closed at once (no request under way).
  bool idle() const;
  /// It never had a request answered and none is at a worker or being written: in its
  /// handshake, idle after it, receiving its first request, or lingering after a refusal. Such a
  /// connection may be closed to make room for a new one when the connection cap is reached; a
  /// client that was served (the API server's keep-alive connections) never is (for memory,
  /// only when stalled).
  bool evictable() const;
  /// It was answered before and has held a share of ConnectionEnv::held, waiting for a request
  /// that does not come whole, for twice idle_buffer_release: idle past a release that could
  /// not free its buffers (a TLS record begun and never finished) or charged again without a
  /// request for a release, in a head, or an HTTP/2 session with no stream at a worker or being
  /// answered (PINGs or half a HEADERS do not count). Bytes that finish no request do not count.
  /// The API server sends each request whole, so its connections never are (but for an HTTP/2
  /// upload of over a second with nothing else at a worker). A connection reading a body never
  /// is: it is cut at request_timeout. Such a connection may be closed to make room, as one
  /// never answered may: a client answered once (a 404 will do) would otherwise hold its share
  /// for the keep-alive (30 s; an HTTP/2 session 300 s, or for good), and a thousand such
  /// connections the whole budget.
  bool stalled(Clock::time_point now) const;

 private:
  Wait advance(Clock::time_point now);
  // HTTP/2 (phase kHttp2): writes what is queued, then reads and feeds the session, until the
  // socket would block.
  Wait http2_step(Clock::time_point now);
  Wait read_request(Clock::time_point now);
  // Checks the framing of a parsed head: a refusal, or nullopt to read the body.
  std::optional<Wait> start_request(Clock::time_point now);
  Wait refuse(int status, std::string_view reason, std::string message, Clock::time_point now);
  Wait write_out(Clock::time_point now);
  Wait after_write(Clock::time_point now);
  Wait linger(Clock::time_point now);
  Wait wait_for(tls::Io io, Clock::time_point deadline);
  // Phase kIdle, nothing to read: wait for the next request until the keep-alive deadline,
  // waking at idle_buffer_release first to free the buffers.
  Wait wait_idle(Clock::time_point now);
  Wait close(std::string_view reason = {});
  bool reserve(std::size_t bytes);
  // Charges an unfinished head's read buffer beyond a few KiB to ConnectionEnv::held
  // (head_charge_, given back once the request leaves the buffer); false when its budget cannot
  // take it (charge_ceiling).
  bool charge_head();
  // How full ConnectionEnv::held may be with this connection's buffers and head: half of the
  // budget until the connection was answered once, all of it after.
  std::size_t charge_ceiling() const;

  // What to do once `out_` is written.
  enum class Then { kBody, kKeepAlive, kClose, kLinger };

  const std::uint64_t id_;
  const int fd_;
  ConnectionEnv& env_;
  tls::Stream stream_;
  Phase phase_ = Phase::kHandshake;
  Clock::time_point deadline_;
  const Clock::time_point accepted_;
  Clock::time_point request_start_{};

  std::string in_;    // plaintext read and not yet consumed: heads, and what is pipelined after
  std::string body_;  // kBody: the request's body so far, read straight into it (start_request)
  // The storage of the last body served on the loop thread, handed to the next request: a
  // 20 KB body no longer costs an allocation (and glibc's consolidation of its free lists).
  std::string spare_body_;
  // What the response asked to be freed once written (http::Response::free_after_write).
  std::shared_ptr<void> free_after_write_;
  bool buffers_held_ = false;       // kIdle: buffers not yet freed (wait_idle set a wake-up)
  Clock::time_point release_at_{};  // kIdle: when the buffers are freed (wait_idle)
  // Since when it waits for a request holding a charge: kIdle, from its last answer; HTTP/2,
  // from the handshake or the charge taken again after a release (see stalled()).
  Clock::time_point waiting_since_{};
  bool kept_through_release_ = false;  // kIdle: a release could not free its buffers
  Clock::time_point recharged_at_{};   // kIdle: first charged again after a release, this spell
  http::RequestHead head_;
  std::size_t head_bytes_ = 0;
  std::size_t head_scanned_ = 0;  ///< http::parse_head's resume point in `in_` for this head
  std::uint64_t body_bytes_ = 0;
  bool close_after_ = false;  // the current request's response closes the connection
  std::size_t requests_ = 0;
  bool served_here_ = false;  // a request was served on the loop thread in this turn

  std::string out_;
  std::size_t out_offset_ = 0;
  Then then_ = Then::kKeepAlive;
  std::size_t drained_ = 0;              // bytes discarded during a lingering close
  Reservation reservation_;              // the body being read; moves into the Request
  Reservation buffers_charge_;           // OpenSSL's buffers while held (charge_buffers)
  Reservation head_charge_;              // the head being read (charge_head)
  std::unique_ptr<Http2Session> http2_;  // set once ALPN chose h2
};

}  // namespace vscaler::net
