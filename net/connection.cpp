#include "net/connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "net/http2_session.h"

namespace vscaler::net {
namespace {

constexpr std::size_t kKeptBufferBytes = 64 * 1024;
// Head bytes a connection holds free of the shared budget: the API server's heads are well
// under 1 KiB. Beyond them the head's buffer is charged, as a body is: thousands of connections
// each sending 64 KiB of headers (max_header_bytes) would otherwise hold gigabytes.
constexpr std::size_t kFreeHeadBytes = 4 * 1024;

// Frees a buffer's memory once it is empty and grew large: thousands of idle connections must
// not each pin the largest request they ever carried.
void release_if_large(std::string& buffer) {
  if (buffer.empty() && buffer.capacity() > kKeptBufferBytes) std::string().swap(buffer);
}

}  // namespace

Reservation::Reservation(Reservation&& other) noexcept
    : counter_(other.counter_), bytes_(other.bytes_) {
  other.counter_ = nullptr;
  other.bytes_ = 0;
}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    reset();
    counter_ = other.counter_;
    bytes_ = other.bytes_;
    other.counter_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

bool Reservation::grow(std::atomic<std::size_t>* counter, std::size_t budget, std::size_t bytes) {
  if (counter == nullptr || bytes == 0) return true;
  // Compare and swap, not add then take back: a charge that does not fit never shows in the
  // counter, so it cannot make another loop's charge fail at the same moment.
  std::size_t before = counter->load(std::memory_order_relaxed);
  do {
    if (bytes > budget || before > budget - bytes) return false;
  } while (!counter->compare_exchange_weak(before, before + bytes, std::memory_order_relaxed));
  counter_ = counter;
  bytes_ += bytes;
  return true;
}

void Reservation::reset() {
  if (bytes_ == 0) return;
  counter_->fetch_sub(bytes_, std::memory_order_relaxed);
  bytes_ = 0;
}

bool ConnectionEnv::reserve_body(Reservation& reservation, std::size_t bytes,
                                 std::optional<std::uint64_t> making_room_for) {
  while (!reservation.grow(buffered, body_budget(), bytes)) {
    // The body budget is what connections leave: for a client answered before (the API
    // server's kept-alive connections), those holding room they do not use give it up; not
    // when other bodies alone leave too little, which no closing changes.
    const std::size_t bodies = std::min(load(buffered), buffer_budget);
    if (!making_room_for || !make_room || bytes > buffer_budget - bodies ||
        !make_room(*making_room_for, buffer_budget - bodies - bytes)) {
      return false;
    }
  }
  return true;
}

Connection::Connection(std::uint64_t id, int fd, SSL_CTX* ctx, ConnectionEnv& env,
                       Clock::time_point now)
    : id_(id),
      fd_(fd),
      env_(env),
      stream_(ctx, fd),
      deadline_(now + env.limits.handshake_timeout),
      accepted_(now) {}

Connection::~Connection() {
  ::close(fd_);
}

Wait Connection::start() const {
  return Wait{EPOLLIN, deadline_, false};
}

bool Connection::idle() const {
  if (phase_ == Phase::kHttp2) return http2_->idle();
  return phase_ == Phase::kHandshake || phase_ == Phase::kLinger ||
         (phase_ == Phase::kIdle && in_.empty());
}

bool Connection::evictable() const {
  if (phase_ == Phase::kHttp2) return !http2_->ever_used();
  if (requests_ > 0) return false;
  return phase_ == Phase::kHandshake || phase_ == Phase::kIdle || phase_ == Phase::kHead ||
         phase_ == Phase::kBody || phase_ == Phase::kLinger;
}

bool Connection::stalled(Clock::time_point now) const {
  if (charged_bytes() == 0) return false;
  // Twice the release: a kept-alive connection frees its buffers after one, and a request of
  // the API server's arrives whole within milliseconds of its first byte. Bytes that finish
  // no request do not count: a client sending one every so often stalls all the same.
  const auto patience = 2 * env_.limits.idle_buffer_release;
  switch (phase_) {
    case Phase::kIdle:
      // Idle since its last answer, and charged through a release that could not free its
      // buffers (a record begun), or charged again in that spell at least a release ago: a
      // client sending a whole record with no request in it (an empty one, a KeyUpdate) before
      // each release holds its share as surely. Neither a connection whose release is only late
      // (a busy loop) nor one whose request is arriving (it does within milliseconds) is.
      return requests_ > 0 && now - waiting_since_ >= patience &&
             (kept_through_release_ || (recharged_at_ != Clock::time_point{} &&
                                        now - recharged_at_ >= env_.limits.idle_buffer_release));
    case Phase::kHead:
      return requests_ > 0 && now - request_start_ >= patience;
    case Phase::kHttp2:
      // No stream at a worker or being answered: waiting since its charge was taken or its
      // last request went to a worker, whatever records it sends (PINGs, half a HEADERS).
      return http2_->ever_used() && !http2_->serving() &&
             now - std::max(waiting_since_, http2_->last_dispatch()) >= patience;
    default:
      return false;
  }
}

Wait Connection::on_ready(std::uint32_t events, Clock::time_point now) {
  served_here_ = false;  // a new turn of the loop
  if (events & EPOLLERR) return close();
  // Both directions are shut: no response can reach the peer any more. Reading phases go on,
  // to consume what was buffered before, and end at the EOF.
  if ((events & EPOLLHUP) && (phase_ == Phase::kServing || phase_ == Phase::kWriting)) {
    return close();
  }
  return advance(now);
}

Wait Connection::advance(Clock::time_point now) {
  switch (phase_) {
    case Phase::kHandshake: {
      tls::Io io = stream_.handshake();
      if (io == tls::Io::kDone) {
        std::chrono::duration<double> took = now - accepted_;
        if (env_.handshake_seconds != nullptr) env_.handshake_seconds->observe(took.count());
        if (stream_.http2()) {
          // HTTP/2 sessions idle on their own (no kIdle phase): OpenSSL frees their buffers
          // after each record.
          stream_.release_buffers_after_each_record();
          http2_ = std::make_unique<Http2Session>(id_, env_, now);
          if (!http2_->ok()) return close("http2_session");
          phase_ = Phase::kHttp2;
          waiting_since_ = now;  // charged since accept (see stalled())
          return http2_step(now);
        }
        phase_ = Phase::kIdle;
        deadline_ = now + env_.limits.keep_alive_timeout;
        return read_request(now);
      }
      if (io == tls::Io::kWantRead || io == tls::Io::kWantWrite) return wait_for(io, deadline_);
      // plain HTTP, TLS < 1.2, no certificate yet, ... (a plain server has no handshake to fail)
      if (env_.handshake_errors != nullptr) env_.handshake_errors->inc();
      return close();
    }
    case Phase::kIdle:
    case Phase::kHead:
    case Phase::kBody:
      return read_request(now);
    case Phase::kServing:
      return Wait{0, deadline_, false};
    case Phase::kWriting:
      return write_out(now);
    case Phase::kLinger:
      return linger(now);
    case Phase::kHttp2:
      return http2_step(now);
  }
  return close();
}

Wait Connection::http2_step(Clock::time_point now) {
  if (env_.stopping) http2_->stop(now);
  while (true) {
    if (out_offset_ < out_.size()) {
      tls::Io io = stream_.write(out_, out_offset_);
      if (io == tls::Io::kWantRead || io == tls::Io::kWantWrite) {
        return wait_for(io, http2_->deadline());
      }
      if (io != tls::Io::kDone) return close();
      out_.clear();
      out_offset_ = 0;
      release_if_large(out_);
    }
    if (!http2_->flush(out_, now)) return close("http2_protocol");
    if (!out_.empty()) continue;
    if (http2_->finished()) {
      stream_.shutdown();
      return close();
    }
    // The read may allocate OpenSSL's buffers: charged first (given back below once freed).
    const bool fresh_charge = buffers_charge_.bytes() == 0;
    if (!charge_buffers()) return close("memory_budget");
    if (fresh_charge) waiting_since_ = now;  // see stalled()
    tls::Io io = stream_.read(in_, 64 * 1024);
    if (io == tls::Io::kDone) {
      bool fine = http2_->receive(in_, now);
      in_.clear();
      if (!fine) {
        // Best effort: the GOAWAY nghttp2 queued, then close.
        http2_->flush(out_, now);
        std::size_t offset = 0;
        stream_.write(out_, offset);
        return close();
      }
      continue;
    }
    if (io == tls::Io::kWantRead || io == tls::Io::kWantWrite) {
      // OpenSSL frees an h2 connection's buffers after each record (SSL_MODE_RELEASE_BUFFERS):
      // free means uncharged; a record left half-sent keeps them, and the charge.
      // Kept while streams are open (a body under way must not lose its room to another
      // loop) and until the session carried one (a new connection keeps the room it made).
      if (io == tls::Io::kWantRead && http2_->ever_used() && http2_->idle() &&
          stream_.release_buffers()) {
        buffers_charge_.reset();
      }
      return wait_for(io, http2_->deadline());
    }
    return close();  // the peer closed or broke the connection
  }
}

Wait Connection::on_stream_response(std::int32_t stream, http::Response response,
                                    Clock::time_point now) {
  http2_->respond(stream, std::move(response), now);
  return http2_step(now);
}

Wait Connection::read_request(Clock::time_point now) {
  const auto& limits = env_.limits;
  while (true) {
    if (phase_ == Phase::kIdle && !in_.empty()) {
      // The first byte of a request starts its deadline: a client sending a byte a second is
      // cut when it passes, whatever its pace.
      phase_ = Phase::kHead;
      head_scanned_ = 0;
      request_start_ = now;
      deadline_ = now + limits.request_timeout;
    }
    if (phase_ == Phase::kHead) {
      auto parsed = http::parse_head(in_, head_, head_scanned_);
      if (parsed.status == http::HeadStatus::kMalformed) {
        return refuse(400, "bad_request", "bad request: " + parsed.error + "\n", now);
      }
      if (parsed.status == http::HeadStatus::kIncomplete && in_.size() > limits.max_header_bytes) {
        return close("headers_too_large");
      }
      // A head not finished holds only its own bytes (a body follows a finished head: the API
      // server's, sent with its head, is the body's to pay for, in start_request). Heads are read
      // 4 KiB at a time: one whose record holds more is read on first, so a head that arrived
      // whole is never charged.
      if (parsed.status == http::HeadStatus::kIncomplete && !stream_.readable_now() &&
          (!charge_buffers() || !charge_head())) {
        return refuse(503, "memory_budget",
                      "this server holds too many connections and request heads at once; retry\n",
                      now);
      }
      if (parsed.status == http::HeadStatus::kComplete) {
        head_bytes_ = parsed.consumed;
        if (head_bytes_ > limits.max_header_bytes) return close("headers_too_large");
        if (auto refused = start_request(now)) return *refused;
      }
    }
    if (phase_ == Phase::kBody && body_.size() >= body_bytes_) {
      // One request served here per turn: the next waits for the loop's next turn.
      if (served_here_) return Wait{EPOLLIN, deadline_, false, true};
      // The body's share of the budget goes with it: to the worker that serves it, however
      // soon this connection is closed.
      Request request{std::move(head_), std::move(body_), request_start_, 0,
                      std::move(reservation_)};
      body_ = std::string();
      head_ = http::RequestHead{request.head.method, {}, {}, 1, {}};  // HEAD-ness for the answer
      // A large head's read buffer is not kept for the next request (it would outlive the
      // budget's charge); what was pipelined after it, if anything, moves to a small one.
      if (head_charge_.bytes() > 0 || in_.capacity() > kKeptBufferBytes) in_.shrink_to_fit();
      head_charge_.reset();  // the head is done with (its buffer was charged while unfinished)
      phase_ = Phase::kServing;
      if (env_.serve_here) {
        if (auto response = env_.serve_here(request)) {
          served_here_ = true;
          spare_body_ = std::move(request.body);
          spare_body_.clear();
          release_if_large(spare_body_);
          request.reservation.reset();  // the body is consumed (a large buffer freed above)
          return on_response(std::move(*response), now);
        }
      }
      if (!env_.dispatch(id_, std::move(request))) {
        env_.rejected->with({"overloaded"}).inc();
        http::Response busy{503, http::kText, "the webhook is overloaded, retry\n",
                            {},  true,        nullptr};
        return on_response(std::move(busy), now);
      }
      return Wait{0, deadline_, false};
    }
    // Read no more than the phase may hold: the head's budget (one byte over proves it too
    // long), or exactly the rest of the body, into its own storage; pipelined bytes wait in
    // OpenSSL and the kernel. A head is read 4 KiB at a time (OpenSSL keeps the rest of the
    // record for the next read, which costs no system call), so of a body that shares the head's
    // record only what came in the head's last read passes through `in_`; the rest is copied
    // once, into its storage.
    const bool body = phase_ == Phase::kBody;
    const std::size_t limit = limits.max_header_bytes + 1;
    if (!body && in_.size() >= limit) return close("headers_too_large");  // not reached: above
    // An idle connection's read allocates OpenSSL's buffers again (the start of a record is
    // enough, and a record never finished keeps them): charged before it, not after.
    if (phase_ == Phase::kIdle && buffers_charge_.bytes() == 0) {
      if (!charge_buffers()) {
        // Answered, not closed: a client sees why (the API server does not resend a POST).
        return refuse(503, "memory_budget",
                      "this server holds too many connections at once; retry\n", now);
      }
      if (recharged_at_ == Clock::time_point{}) recharged_at_ = now;  // see stalled()
    }
    tls::Io io = body ? stream_.read(body_, body_bytes_ - body_.size())
                      : stream_.read(in_, std::min(limit - in_.size(), kFreeHeadBytes));
    if (io == tls::Io::kDone) continue;
    if (io == tls::Io::kWantRead && phase_ == Phase::kIdle) return wait_idle(now);
    if (io == tls::Io::kWantRead || io == tls::Io::kWantWrite) return wait_for(io, deadline_);
    return close();  // the peer closed or broke the connection
  }
}

std::optional<Wait> Connection::start_request(Clock::time_point now) {
  auto connection = head_.header("Connection");
  close_after_ = head_.minor_version == 0
                     ? !(connection && http::has_token(*connection, "keep-alive"))
                     : (connection && http::has_token(*connection, "close"));
  // CVE-2025-46728 and friends: a chunked or length-less body is refused before any of it is
  // read, and so is one over the limit.
  if (head_.count("Transfer-Encoding") > 0) {
    return refuse(411, "chunked",
                  "transfer-encoded (chunked) request bodies are not accepted; send "
                  "Content-Length\n",
                  now);
  }
  std::optional<std::uint64_t> length;
  if (auto count = head_.count("Content-Length"); count > 1) {
    return refuse(400, "bad_content_length", "more than one Content-Length header\n", now);
  } else if (count == 1) {
    length = http::parse_length(*head_.header("Content-Length"));
    if (!length) return refuse(400, "bad_content_length", "invalid Content-Length\n", now);
    if (*length > env_.limits.max_body_bytes) {
      return refuse(413, "body_too_large",
                    "the request body of " + std::to_string(*length) +
                        " bytes exceeds the limit of " +
                        std::to_string(env_.limits.max_body_bytes) + " bytes\n",
                    now);
    }
  }
  const auto& method = head_.method;
  bool body_method = method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
  if (body_method && method != "DELETE" && !length) {
    return refuse(411, "no_content_length", "a request body needs Content-Length\n", now);
  }
  if (!body_method && length && *length > 0) {
    return refuse(400, "unexpected_body",
                  "a " + http::printable(method) + " request cannot carry a body\n", now);
  }
  body_bytes_ = length.value_or(0);
  if (!reserve(body_bytes_)) {
    return refuse(503, "memory_budget",
                  "the webhook holds too many request bodies at once; retry\n", now);
  }
  // The budget holds the body now: it is read straight into storage of its own (the last body
  // served here's when there is one), sized once with room for the JSON parser's padding so that
  // it parses in place, with no growing. The head leaves `in_`, and what of the body came in the
  // head's last read moves to that storage; what follows the body stays, the next request's.
  body_ = std::move(spare_body_);
  spare_body_ = std::string();
  body_.clear();
  body_.reserve(body_bytes_ + env_.limits.body_padding);
  const std::size_t early = std::min<std::size_t>(in_.size() - head_bytes_, body_bytes_);
  body_.assign(in_, head_bytes_, early);
  in_.erase(0, head_bytes_ + early);
  phase_ = Phase::kBody;
  auto expect = head_.header("Expect");
  if (expect && http::iequals(*expect, "100-continue") && body_.size() < body_bytes_) {
    out_ = "HTTP/1.1 100 Continue\r\n\r\n";
    out_offset_ = 0;
    then_ = Then::kBody;
    phase_ = Phase::kWriting;
    return write_out(now);
  }
  return std::nullopt;
}

Wait Connection::refuse(int status, std::string_view reason, std::string message,
                        Clock::time_point now) {
  env_.rejected->with({reason}).inc();  // counted before the client can see the answer
  env_.refused(head_, status, request_start_);
  http::Response response{status, http::kText, std::move(message), {}, true, nullptr};
  out_ = http::serialize(response, /*keep_alive=*/false, head_.method == "HEAD");
  out_offset_ = 0;
  then_ = Then::kLinger;
  phase_ = Phase::kWriting;
  deadline_ = now + env_.limits.write_timeout;
  return write_out(now);
}

Wait Connection::on_response(http::Response response, Clock::time_point now) {
  reservation_.reset();  // a refused or answered request holds no body any more
  head_charge_.reset();
  bool keep_alive = !close_after_ && !response.close && !env_.stopping &&
                    requests_ + 1 < env_.limits.keep_alive_max_requests;
  out_ = http::serialize(response, keep_alive, head_.method == "HEAD");
  free_after_write_ = std::move(response.free_after_write);
  out_offset_ = 0;
  then_ = keep_alive ? Then::kKeepAlive : Then::kClose;
  phase_ = Phase::kWriting;
  deadline_ = now + env_.limits.write_timeout;
  return write_out(now);
}

Wait Connection::write_out(Clock::time_point now) {
  tls::Io io = stream_.write(out_, out_offset_);
  if (io == tls::Io::kDone) return after_write(now);
  if (io == tls::Io::kWantRead || io == tls::Io::kWantWrite) return wait_for(io, deadline_);
  return close();
}

Wait Connection::after_write(Clock::time_point now) {
  free_after_write_.reset();
  out_.clear();
  release_if_large(out_);
  switch (then_) {
    case Then::kBody:
      phase_ = Phase::kBody;
      return read_request(now);
    case Then::kKeepAlive:
      ++requests_;
      phase_ = Phase::kIdle;
      deadline_ = now + env_.limits.keep_alive_timeout;
      waiting_since_ = now;  // for its next request, holding its buffers (stalled())
      kept_through_release_ = false;
      recharged_at_ = {};
      buffers_held_ = false;  // a new idle spell: wait_idle sets its release
      release_if_large(in_);
      // Nothing read ahead (the usual case: the client waited for this answer): wait for the
      // socket instead of a read(2) that finds it empty.
      if (in_.empty() && !stream_.pending()) return wait_idle(now);
      return read_request(now);  // a pipelined request, or bytes OpenSSL already holds
    case Then::kClose:
      stream_.shutdown();
      return close();
    case Then::kLinger:
      // The refused body stays unread: send close_notify and FIN, then discard what the client
      // still sends for a bounded time, so that a client busy writing its body reads the answer
      // instead of a connection reset (what Go's and nginx's servers do).
      stream_.shutdown();
      ::shutdown(fd_, SHUT_WR);
      in_.clear();
      release_if_large(in_);
      std::string().swap(body_);
      phase_ = Phase::kLinger;
      deadline_ = now + env_.limits.linger_timeout;
      drained_ = 0;
      return linger(now);
  }
  return close();
}

Wait Connection::linger(Clock::time_point) {
  char buffer[16384];
  while (drained_ < env_.limits.linger_bytes) {
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n > 0) {
      drained_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Wait{EPOLLIN, deadline_, false};
    if (n < 0 && errno == EINTR) continue;
    break;  // EOF or an error: the client is done
  }
  return close();
}

Wait Connection::on_deadline(Clock::time_point now) {
  switch (phase_) {
    case Phase::kHttp2:
      // A stream's answer or reset, or a GOAWAY, not written within write_timeout: the client
      // does not read.
      if (!http2_->expire(now)) return close("write_timeout");
      return http2_step(now);
    case Phase::kHandshake:
      // TLS: a stalled handshake; plain: a connection that sent nothing.
      if (env_.handshake_errors != nullptr) env_.handshake_errors->inc();
      return close(stream_.plain() ? "silent_timeout" : "handshake_timeout");
    case Phase::kHead:
    case Phase::kBody:
    case Phase::kServing:
      return close("request_timeout");
    case Phase::kWriting:
      return close("write_timeout");
    case Phase::kIdle:
      if (buffers_held_ && now < deadline_) {
        // Idle for idle_buffer_release: most keep-alive connections stay so for long; they hold
        // no buffer while they do (in kIdle nothing is read ahead: in_ is empty).
        buffers_held_ = false;
        const bool released = stream_.release_buffers();
        if (released) buffers_charge_.reset();  // charged again on a new request
        // A record begun keeps them (stalled()); not an OpenSSL that may not free them at all.
        kept_through_release_ =
            !released && tls::Stream::buffers_freeable() && buffers_charge_.bytes() > 0;
        if (in_.empty()) std::string().swap(in_);
        std::string().swap(spare_body_);
        return Wait{EPOLLIN, deadline_, false};
      }
      return close();
    case Phase::kLinger:
      return close();
  }
  return close();
}

std::size_t Connection::charge_ceiling() const {
  // A connection never answered holds its buffers and head out of the budget's first half only:
  // a client holding thousands of them cannot take the room the API server's bodies need. One
  // answered before (kept alive, as the API server's are) may use all of it.
  const bool answered = requests_ > 0 || (http2_ && http2_->ever_used());
  return env_.held_budget(answered);
}

std::size_t Connection::charged_bytes() const {
  return buffers_charge_.bytes() + head_charge_.bytes();
}

bool Connection::charge_buffers() {
  if (stream_.plain() || buffers_charge_.bytes() > 0) return true;
  while (!buffers_charge_.grow(env_.held, charge_ceiling(), tls::Stream::kBufferBytes)) {
    // Full: connections holding room they do not use give it up, as at the connection cap;
    // each closed frees at least a connection's buffers, and none is closed twice. Closing
    // lowers what connections hold, not what bodies do: when bodies alone leave too little,
    // none is closed in vain.
    const std::size_t ceiling = charge_ceiling();
    if (ceiling < tls::Stream::kBufferBytes || !env_.make_room ||
        !env_.make_room(id_, ceiling - tls::Stream::kBufferBytes)) {
      return false;
    }
  }
  return true;
}

bool Connection::charge_head() {
  // Called while the head is unfinished and its record read to the end only (a head sent whole,
  // as the API server's, is never charged): what the buffer holds beyond 4 KiB, until the request
  // is handed over; the spare body storage is not kept for a request this slow.
  std::string().swap(spare_body_);
  const std::size_t held = in_.capacity() > kFreeHeadBytes ? in_.capacity() - kFreeHeadBytes : 0;
  if (held <= head_charge_.bytes()) return true;
  return head_charge_.grow(env_.held, charge_ceiling(), held - head_charge_.bytes());
}

bool Connection::reserve(std::size_t body_bytes) {
  reservation_.reset();  // nothing is left of a previous request's share
  return env_.reserve_body(reservation_, body_bytes * env_.limits.body_memory_factor,
                           requests_ > 0 ? std::optional<std::uint64_t>(id_) : std::nullopt);
}

Wait Connection::wait_for(tls::Io io, Clock::time_point deadline) {
  return Wait{io == tls::Io::kWantWrite ? static_cast<std::uint32_t>(EPOLLOUT)
                                        : static_cast<std::uint32_t>(EPOLLIN),
              deadline, false};
}

Wait Connection::wait_idle(Clock::time_point now) {
  // The wake-up is set once: bytes of a record that do not finish it (a byte every few ms) do
  // not put the release off.
  if (!buffers_held_) release_at_ = now + env_.limits.idle_buffer_release;
  buffers_held_ = true;
  return Wait{EPOLLIN, std::min(deadline_, release_at_), false};
}

Wait Connection::close(std::string_view reason) {
  if (!reason.empty()) env_.rejected->with({reason}).inc();
  return Wait{0, {}, true};
}

}  // namespace vscaler::net
