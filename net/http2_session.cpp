#include "net/http2_session.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace vscaler::net {
namespace {

// Per-stream and per-connection receive windows: a 7 MiB review must not stall on 64 KiB
// windows, and 16 MiB is the most one connection can have in flight unread.
constexpr std::int32_t kStreamWindow = 1 << 20;
constexpr std::int32_t kConnectionWindow = 16 << 20;

Http2Session& session_of(void* self) {
  return *static_cast<Http2Session*>(self);
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

nghttp2_nv header(const std::string& name, const std::string& value) {
  return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

Http2Session::Http2Session(std::uint64_t connection_id, ConnectionEnv& env, Clock::time_point now)
    : connection_id_(connection_id), env_(env), now_(now), last_activity_(now) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return;
  nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) == 0) {
    // A peer must not make us queue unbounded SETTINGS/PING acknowledgements.
    nghttp2_option_set_max_outbound_ack(option, 1000);
    nghttp2_option_set_max_settings(option, 32);
  }
  if (nghttp2_session_server_new2(&session_, callbacks, this, option) != 0) session_ = nullptr;
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (session_ == nullptr) return;
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kMaxConcurrentStreams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(kStreamWindow)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<std::uint32_t>(env_.limits.max_header_bytes)},
  };
  if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings)) != 0 ||
      nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow) !=
          0) {
    nghttp2_session_del(session_);
    session_ = nullptr;
  }
}

Http2Session::~Http2Session() {
  // The streams' reservations are given back as streams_ is destroyed; those of requests a
  // worker holds, when the worker is done with them.
  if (session_ != nullptr) nghttp2_session_del(session_);
}

bool Http2Session::receive(std::string_view bytes, Clock::time_point now) {
  now_ = now;
  last_activity_ = now;
  ssize_t used = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(bytes.data()),
                                          bytes.size());
  if (used < 0) {
    env_.rejected->with({"http2_protocol"}).inc();
    nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
    return false;
  }
  return true;
}

bool Http2Session::flush(std::string& out, Clock::time_point now) {
  now_ = now;
  while (true) {
    const std::uint8_t* data = nullptr;
    ssize_t length = nghttp2_session_mem_send(session_, &data);
    if (length < 0) return false;
    if (length == 0) return true;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(length));
  }
}

void Http2Session::respond(std::int32_t stream_id, http::Response response, Clock::time_point now) {
  now_ = now;
  last_activity_ = now;
  Stream* stream = find(stream_id);
  if (stream == nullptr || stream->answered) return;  // reset or timed out meanwhile
  submit(stream_id, *stream, response);
}

void Http2Session::submit(std::int32_t stream_id, Stream& stream, const http::Response& response) {
  stream.answered = true;
  stream.answered_at = now_;
  stream.response_body = response.body;
  stream.response_offset = 0;
  bool head_only = stream.head.method == "HEAD";
  // nghttp2 copies names and values at submit: these need only outlive the call.
  std::vector<std::pair<std::string, std::string>> fields = {
      {":status", std::to_string(response.status)},
      {"content-type", response.content_type},
      {"content-length", std::to_string(response.body.size())},
  };
  for (const auto& [name, value] : response.headers) fields.emplace_back(lowercase(name), value);
  std::vector<nghttp2_nv> nva;
  nva.reserve(fields.size());
  for (const auto& [name, value] : fields) nva.push_back(header(name, value));
  nghttp2_data_provider body{};
  body.read_callback = read_body;
  int rc = nghttp2_submit_response(session_, stream_id, nva.data(), nva.size(),
                                   head_only || response.body.empty() ? nullptr : &body);
  if (rc != 0)
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_INTERNAL_ERROR);
}

bool Http2Session::expire(Clock::time_point now) {
  now_ = now;
  for (auto& [id, stream] : streams_) {
    if (now < deadline_of(stream)) continue;
    // Its RST_STREAM is not even sent: the client reads nothing, the connection goes.
    if (stream.reset) return false;
    if (stream.answered_early && !stream.request_complete) {
      reset(id, stream, NGHTTP2_NO_ERROR);  // the answer is out; the rest of the body is not read
      continue;
    }
    env_.rejected->with({stream.answered ? "write_timeout" : "request_timeout"}).inc();
    reset(id, stream, NGHTTP2_CANCEL);  // a late worker answer is dropped
  }
  if (streams_.empty()) {
    if (goaway_sent_ && now >= goaway_at_ + env_.limits.write_timeout) return false;
    if (now >= last_activity_ + idle_timeout()) stop(now);
  }
  return true;
}

void Http2Session::stop(Clock::time_point now) {
  if (goaway_sent_) return;
  goaway_sent_ = true;
  goaway_at_ = now;
  nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
}

bool Http2Session::serving() const {
  return std::any_of(streams_.begin(), streams_.end(),
                     [](const auto& entry) { return entry.second.dispatched; });
}

Clock::time_point Http2Session::deadline() const {
  Clock::time_point earliest = Clock::time_point::max();
  for (const auto& [id, stream] : streams_) earliest = std::min(earliest, deadline_of(stream));
  if (streams_.empty()) {
    earliest =
        goaway_sent_ ? goaway_at_ + env_.limits.write_timeout : last_activity_ + idle_timeout();
  }
  return earliest;
}

Clock::time_point Http2Session::deadline_of(const Stream& stream) const {
  if (stream.reset) return stream.reset_at + env_.limits.write_timeout;
  if (stream.answered_early && !stream.request_complete) {
    return stream.sent_at + std::min<Clock::duration>(kEarlyAnswerGrace, env_.limits.write_timeout);
  }
  if (stream.answered) return stream.answered_at + env_.limits.write_timeout;
  return stream.start + env_.limits.request_timeout;
}

std::size_t Http2Session::header_budget() const {
  return std::max(kMaxConnectionHeaderBytes, env_.limits.max_header_bytes);
}

std::chrono::milliseconds Http2Session::idle_timeout() const {
  return std::max<std::chrono::milliseconds>(env_.limits.keep_alive_timeout, kIdleTimeout);
}

bool Http2Session::finished() const {
  return nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
}

Http2Session::Stream* Http2Session::find(std::int32_t stream_id) {
  auto found = streams_.find(stream_id);
  return found == streams_.end() ? nullptr : &found->second;
}

int Http2Session::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& session = session_of(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  Stream stream;
  stream.start = session.now_;
  stream.head.minor_version = 1;
  session.streams_.emplace(frame->hd.stream_id, std::move(stream));
  ++session.streams_started_;
  return 0;
}

int Http2Session::on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                            std::size_t name_length, const std::uint8_t* value,
                            std::size_t value_length, std::uint8_t, void* self) {
  auto& session = session_of(self);
  Stream* stream = session.find(frame->hd.stream_id);
  if (stream == nullptr || stream->answered) return 0;
  std::size_t bytes = name_length + value_length + 32;  // RFC 7541's entry size
  const char* refused = nullptr;
  if (stream->header_bytes + bytes > session.env_.limits.max_header_bytes) {
    refused = "headers_too_large";
  } else if (session.header_bytes_ + bytes > session.header_budget()) {
    refused = "http2_header_budget";
  }
  if (refused != nullptr) {
    session.env_.rejected->with({refused}).inc();
    // nghttp2 resets this stream only (RST_STREAM INTERNAL_ERROR) and skips the rest of its
    // header block; it is erased once the reset is sent.
    stream->answered = stream->reset = true;
    stream->answered_at = stream->reset_at = session.now_;
    drop_request(*stream);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  // Counted even when not kept (below), so the limits above still bound the decoding.
  stream->header_bytes += bytes;
  session.header_bytes_ += bytes;
  if (stream->over_budget) return 0;
  // Decoded headers are request bytes held like a body: charged to the shared budget (a full
  // budget is answered 503 once the header block ends), room made as for a body.
  if (!session.env_.reserve_body(stream->reservation, bytes, session.connection_id_)) {
    stream->over_budget = true;
    return 0;
  }
  std::string_view key(reinterpret_cast<const char*>(name), name_length);
  std::string text(reinterpret_cast<const char*>(value), value_length);
  if (key == ":method") {
    stream->head.method = std::move(text);
  } else if (key == ":path") {
    stream->head.path = text.substr(0, text.find('?'));
    stream->head.target = std::move(text);
  } else if (!key.empty() && key.front() != ':') {
    stream->head.headers.emplace_back(std::string(key), std::move(text));
  }
  return 0;
}

int Http2Session::on_data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                                const std::uint8_t* data, std::size_t length, void* self) {
  auto& session = session_of(self);
  Stream* stream = session.find(stream_id);
  if (stream == nullptr || stream->answered) return 0;  // refused already: discard the rest
  const auto& limits = session.env_.limits;
  if (stream->body.size() + length > limits.max_body_bytes) {
    session.refuse(stream_id, *stream, 413, "body_too_large",
                   "the request body exceeds the limit of " +
                       std::to_string(limits.max_body_bytes) + " bytes\n");
    return 0;
  }
  // A session that carried a stream counts as answered (Connection::stalled): room is made.
  if (!session.env_.reserve_body(stream->reservation, length * limits.body_memory_factor,
                                 session.connection_id_)) {
    session.refuse(stream_id, *stream, 503, "memory_budget",
                   "the webhook holds too many request bodies at once; retry\n");
    return 0;
  }
  stream->body.append(reinterpret_cast<const char*>(data), length);
  return 0;
}

int Http2Session::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& session = session_of(self);
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
  Stream* stream = session.find(frame->hd.stream_id);
  if (stream == nullptr) return 0;
  if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) stream->request_complete = true;
  if (stream->answered) return 0;
  if (frame->hd.type == NGHTTP2_HEADERS) {
    if (stream->over_budget) {
      session.refuse(frame->hd.stream_id, *stream, 503, "memory_budget",
                     "the webhook holds too many requests at once; retry\n");
      return 0;
    }
    // A declared length over the limit is refused before any of the body is read.
    if (auto declared = stream->head.header("content-length")) {
      auto length = http::parse_length(*declared);
      if (!length) {
        session.refuse(frame->hd.stream_id, *stream, 400, "bad_content_length",
                       "invalid Content-Length\n");
        return 0;
      }
      if (*length > session.env_.limits.max_body_bytes) {
        session.refuse(frame->hd.stream_id, *stream, 413, "body_too_large",
                       "the request body of " + std::to_string(*length) +
                           " bytes exceeds the limit of " +
                           std::to_string(session.env_.limits.max_body_bytes) + " bytes\n");
        return 0;
      }
    }
  }
  if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) session.complete(frame->hd.stream_id, *stream);
  return 0;
}

void Http2Session::complete(std::int32_t stream_id, Stream& stream) {
  if (stream.head.method.empty() || stream.head.target.empty()) {
    refuse(stream_id, stream, 400, "bad_request", "bad request: no :method or :path\n");
    return;
  }
  // The head, the body and their share of the budget go to the worker together: the share is
  // given back when the worker's job is done with them, whatever becomes of this stream.
  Request request{std::move(stream.head), std::move(stream.body), stream.start, stream_id,
                  std::move(stream.reservation)};
  stream.head = http::RequestHead{request.head.method, {}, {}, 1, {}};  // HEAD-ness for the answer
  stream.body = std::string();
  stream.dispatched = true;
  last_dispatch_ = now_;
  if (!env_.dispatch(connection_id_, std::move(request))) {
    env_.rejected->with({"overloaded"}).inc();
    submit(
        stream_id, stream,
        http::Response{503, http::kText, "the webhook is overloaded, retry\n", {}, false, nullptr});
  }
}

void Http2Session::refuse(std::int32_t stream_id, Stream& stream, int status,
                          std::string_view reason, std::string message) {
  env_.rejected->with({reason}).inc();  // counted before the client can see the answer
  env_.refused(stream.head, status, stream.start);
  drop_request(stream);
  submit(stream_id, stream,
         http::Response{status, http::kText, std::move(message), {}, false, nullptr});
}

void Http2Session::reset(std::int32_t stream_id, Stream& stream, std::uint32_t code) {
  stream.answered = true;
  stream.reset = true;
  stream.reset_at = now_;
  drop_request(stream);
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, code);
}

void Http2Session::drop_request(Stream& stream) {
  stream.head = http::RequestHead{std::move(stream.head.method), {}, {}, 1, {}};
  stream.body = std::string();
  stream.reservation.reset();
}

int Http2Session::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto& session = session_of(self);
  if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
  if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) return 0;
  Stream* stream = session.find(frame->hd.stream_id);
  if (stream == nullptr || stream->request_complete || stream->reset) return 0;
  // The whole answer is sent before the request is complete (a refusal: 413, 400, 503).
  // nghttp2 1.52 leaves such a stream half-closed for as long as the client stays quiet; RFC
  // 9113 8.1: the server then resets it with NO_ERROR, which tells the client to stop sending
  // its body without discarding the answer (expire(), after kEarlyAnswerGrace).
  stream->answered_early = true;
  stream->sent_at = session.now_;
  return 0;
}

int Http2Session::on_stream_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t,
                                  void* self) {
  auto& session = session_of(self);
  auto found = session.streams_.find(stream_id);
  if (found == session.streams_.end()) return 0;
  session.header_bytes_ -= found->second.header_bytes;
  session.streams_.erase(found);  // gives back what it still holds of the budget
  return 0;
}

ssize_t Http2Session::read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buffer,
                                std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                                void* self) {
  Stream* stream = session_of(self).find(stream_id);
  if (stream == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  std::size_t left = stream->response_body.size() - stream->response_offset;
  std::size_t n = std::min(left, length);
  std::memcpy(buffer, stream->response_body.data() + stream->response_offset, n);
  stream->response_offset += n;
  if (stream->response_offset == stream->response_body.size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    std::string().swap(stream->response_body);
  }
  return static_cast<ssize_t>(n);
}

}  // namespace vscaler::net
