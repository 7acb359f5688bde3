// Fuzzes the watch-stream framing and decoding. The first 8 bytes of the input seed how the rest,
// the body of a watch response, is cut into pieces (as a TLS connection may deliver it: pieces
// of any size, empty ones included).
// Properties: nothing crashes; LineFramer yields the same lines and the same end (ok, too long)
// whether the body comes whole, in random pieces or byte by byte, and buffers at most its bound;
// Watch::run over a stream delivering those pieces reports the same events, the same
// resourceVersion and the same outcome for every cutting.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/watch.h"

namespace {

using namespace vscaler::kube;

constexpr size_t kMaxLine = 1024;  // small, so that the too-long path is reachable

[[noreturn]] void failed(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "watch_fuzz: property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

// Cuts `body` into pieces: whole (seed 0 and mode 0), byte by byte (mode 1), or random sizes
// 0..96 drawn from a xorshift generator seeded by `seed`.
std::vector<std::string_view> cut(std::string_view body, uint64_t seed, int mode) {
  std::vector<std::string_view> pieces;
  if (mode == 0) {
    pieces.push_back(body);
    return pieces;
  }
  uint64_t state = seed | 1;
  size_t at = 0;
  while (at < body.size()) {
    size_t size = 1;
    if (mode == 2) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      size = state % 97;
    }
    size = std::min(size, body.size() - at);
    pieces.push_back(body.substr(at, size));
    at += size;
  }
  return pieces;
}

struct Framed {
  std::vector<std::string> lines;
  LineFramer::Status status = LineFramer::Status::kOk;
  bool operator==(const Framed&) const = default;
};

Framed frame(const std::vector<std::string_view>& pieces) {
  LineFramer framer(kMaxLine);
  Framed out;
  for (std::string_view piece : pieces) {
    out.status = framer.feed(piece, [&](std::string_view line) {
      if (line.size() > kMaxLine) failed("a line longer than the bound was delivered");
      out.lines.emplace_back(line);
      return true;
    });
    if (framer.buffered() > kMaxLine) failed("the framer buffered more than its bound");
    if (out.status != LineFramer::Status::kOk) break;
  }
  return out;
}

// A transport whose one stream plays fixed pieces, then ends (as the server closing the watch).
class Replay final : public Transport {
 public:
  explicit Replay(std::vector<std::string_view> pieces) : pieces_(std::move(pieces)) {
    config_.server = "https://replay";
  }
  Result<HttpResponse, ApiError> send(const HttpRequest&) override {
    return fail(make_error(ErrorKind::kTransport, "replay serves streams only"));
  }
  std::unique_ptr<Stream> open_stream(HttpRequest, std::chrono::milliseconds) override {
    return std::make_unique<Player>(pieces_);
  }
  const ClientConfig& config() const override { return config_; }
  TransportStats stats() const override { return {}; }

 private:
  class Player final : public Stream {
   public:
    explicit Player(const std::vector<std::string_view>& pieces) : pieces_(pieces) {}
    Result<Unit, ApiError> run(const std::function<bool(std::string_view)>& on_data) override {
      for (std::string_view piece : pieces_) {
        if (!on_data(piece)) break;
      }
      return Unit{};
    }
    void cancel() override {}

   private:
    const std::vector<std::string_view>& pieces_;
  };
  std::vector<std::string_view> pieces_;
  ClientConfig config_;
};

struct Watched {
  std::vector<std::string> events;
  std::string outcome;
  std::string resource_version;
  bool operator==(const Watched&) const = default;
};

Watched watch(const std::vector<std::string_view>& pieces) {
  WatchOptions options;
  options.resource_version = "1";
  options.max_event_bytes = kMaxLine;
  Watch stream(std::make_shared<Replay>(pieces), "/api/v1/configmaps?watch=1", options);
  Watched out;
  auto result = stream.run([&](const WatchEvent& event) {
    out.events.push_back(
        std::string(to_string(event.type)) + " " +
        event.object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return true;
  });
  out.outcome = result.ok() ? "ok" : result.error().to_string();
  out.resource_version = stream.resource_version();
  if (out.events.size() != stream.events()) failed("events() disagrees with what was delivered");
  return out;
}

void run(const uint8_t* data, size_t size) {
  uint64_t seed = 0;
  size_t skip = std::min<size_t>(size, 8);
  for (size_t i = 0; i < skip; ++i) seed = seed << 8 | data[i];
  std::string_view body(reinterpret_cast<const char*>(data) + skip, size - skip);

  auto whole = cut(body, seed, 0);
  auto random = cut(body, seed, 2);
  Framed reference = frame(whole);
  if (!(frame(random) == reference)) failed("random pieces framed differently");
  Watched expected = watch(whole);
  if (!(watch(random) == expected)) failed("random pieces watched differently");
  if (body.size() <= 4096) {  // byte by byte costs a call per byte
    auto bytes = cut(body, seed, 1);
    if (!(frame(bytes) == reference)) failed("single bytes framed differently");
    if (!(watch(bytes) == expected)) failed("single bytes watched differently");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(data, size);
  } catch (const std::exception& e) {
    failed("an exception escaped:", e.what());
  }
  return 0;
}
