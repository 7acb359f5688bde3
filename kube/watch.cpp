#include "kube/watch.h"

#include <optional>

namespace vscaler::kube {
namespace {

using nlohmann::json;

// The server ends a watch at timeoutSeconds; the client waits this much longer before it calls
// the connection dead (bookmarks come about once a minute, so a healthy stream is never quiet
// this long relative to its own timeout).
constexpr std::chrono::seconds kReadTimeoutMargin{30};

}  // namespace

LineFramer::Status LineFramer::feed(std::string_view chunk,
                                    const std::function<bool(std::string_view)>& on_line) {
  size_t start = 0;
  while (start <= chunk.size()) {
    size_t newline = chunk.find('\n', start);
    if (newline == std::string_view::npos) {
      std::string_view rest = chunk.substr(start);
      if (buffer_.size() + rest.size() > max_line_) {
        buffer_.clear();
        return Status::kTooLong;
      }
      buffer_.append(rest);
      return Status::kOk;
    }
    std::string_view piece = chunk.substr(start, newline - start);
    start = newline + 1;
    if (buffer_.size() + piece.size() > max_line_) {
      buffer_.clear();
      return Status::kTooLong;
    }
    // A line wholly inside this chunk is handed over without a copy.
    std::string_view line = piece;
    if (!buffer_.empty()) {
      buffer_.append(piece);
      line = buffer_;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    bool go_on = line.empty() || on_line(line);
    buffer_.clear();
    if (!go_on) {
      buffer_.assign(chunk.substr(start));
      return Status::kStopped;
    }
  }
  return Status::kOk;
}

std::string_view to_string(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
    case EventType::kBookmark:
      return "BOOKMARK";
    case EventType::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

Result<WatchEvent, ApiError> parse_watch_event(std::string_view line, ProjectingParser* parser) {
  std::optional<ProjectingParser> own;
  if (parser == nullptr) parser = &own.emplace();
  // The line is a view into the stream's buffer, with no padding promised: simdjson copies it.
  auto read = parser->parse(line, 0, keep_everything());
  if (!read) {
    return fail(make_error(ErrorKind::kDecode, "watch event is not valid JSON (" +
                                                   std::to_string(line.size()) +
                                                   " bytes): " + read.error()));
  }
  if (!read->is_object()) {
    return fail(make_error(ErrorKind::kDecode, "watch event is not a JSON object (" +
                                                   std::to_string(line.size()) + " bytes)"));
  }
  json parsed = std::move(read).value();
  auto type = parsed.find("type");
  auto object = parsed.find("object");
  if (type == parsed.end() || !type->is_string()) {
    return fail(make_error(ErrorKind::kDecode, "watch event has no type"));
  }
  if (object == parsed.end() || !object->is_object()) {
    return fail(make_error(ErrorKind::kDecode, "watch event has no object"));
  }
  WatchEvent event;
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ADDED") {
    event.type = EventType::kAdded;
  } else if (name == "MODIFIED") {
    event.type = EventType::kModified;
  } else if (name == "DELETED") {
    event.type = EventType::kDeleted;
  } else if (name == "BOOKMARK") {
    event.type = EventType::kBookmark;
  } else if (name == "ERROR") {
    event.type = EventType::kError;
  } else {
    return fail(make_error(ErrorKind::kDecode,
                           "watch event has unknown type \"" + name.substr(0, 32) + "\""));
  }
  event.object = std::move(*object);
  return event;
}

Watch::Watch(std::shared_ptr<Transport> transport, std::string target, WatchOptions options)
    : transport_(std::move(transport)), target_(std::move(target)), options_(std::move(options)) {
  resource_version_ = options_.resource_version;
  HttpRequest request;
  request.target = target_;
  auto read_timeout = options_.timeout.count() > 0
                          ? std::chrono::milliseconds(options_.timeout + kReadTimeoutMargin)
                          : std::chrono::milliseconds(std::chrono::hours(24));
  // Created here, not in run(), so that cancel() before run() is remembered.
  stream_ = transport_->open_stream(std::move(request), read_timeout);
}

Watch::~Watch() = default;

void Watch::cancel() {
  stream_->cancel();
}

Result<Unit, ApiError> Watch::run(const std::function<bool(const WatchEvent&)>& on_event) {
  LineFramer framer(options_.max_event_bytes);
  std::optional<ApiError> stream_error;
  ProjectingParser parser;  // its buffers grow to the largest event, for this request only
  auto on_line = [&](std::string_view line) {
    auto event = parse_watch_event(line, &parser);
    if (!event) {
      stream_error = std::move(event).error();
      return false;
    }
    if (event->type == EventType::kError) {
      // 410 here means the requested version was compacted away: kExpired, relist.
      stream_error = error_from_status(event->object);
      return false;
    }
    auto metadata = event->object.find("metadata");
    if (metadata != event->object.end() && metadata->is_object()) {
      auto version = metadata->find("resourceVersion");
      if (version != metadata->end() && version->is_string() &&
          !version->get_ref<const std::string&>().empty()) {
        resource_version_ = version->get<std::string>();
      }
    }
    ++events_;
    return on_event(*event);
  };
  bool stopped = false;
  auto result = stream_->run([&](std::string_view data) {
    auto status = framer.feed(data, on_line);
    if (status == LineFramer::Status::kTooLong) {
      stream_error =
          make_error(ErrorKind::kDecode, "watch event larger than " +
                                             std::to_string(options_.max_event_bytes) + " bytes");
    }
    if (status == LineFramer::Status::kStopped && !stream_error) stopped = true;
    return status == LineFramer::Status::kOk;
  });
  if (stream_error) return fail(std::move(*stream_error));
  if (!result) return fail(std::move(result).error());
  if (!stopped && framer.buffered() > 0) {
    return fail(make_error(ErrorKind::kTransport, "watch stream ended in the middle of an event"));
  }
  return Unit{};
}

}  // namespace vscaler::kube
