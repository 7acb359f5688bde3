// pack_status_text / unpack_status_text: zlib raw deflate with a preset dictionary. Layout: a
// marker byte, then either the text itself (kStored) or its length (4 bytes, little endian) and
// its deflated bytes (kDeflated).
#include "api/packed_text.h"

#include <zlib.h>

#include <cstdint>

namespace vscaler::api {
namespace {

constexpr char kStored = '\x00';
constexpr char kDeflated = '\x01';
/// A 4 KiB window: room for the dictionary and a status of a few KB. Small state (~32 KiB).
constexpr int kWindowBits = 12;
constexpr int kMemLevel = 5;

/// What a status usually says (the strings deflate finds most; the most common last).
constexpr std::string_view kDictionary =
    R"({"lastRecommendationUpdateTime":"2026-01-01T00:00:00Z","lastScaleTime":"2026-01-01T00:00:00Z",)"
    R"("recommendation":{"containerRecommendations":[{"containerName":"app","lowerBound":{"cpu":)"
    R"("100m","memory":"64Mi"},"target":{"cpu":"250m","memory":"128Mi"},"uncappedTarget":{},)"
    R"("upperBound":{}}]},"reason":"AwaitingRecommendation","Pending","Conflict","False",)"
    R"("StatefulSet","DaemonSet","limits":{"cpu":"500m","memory":"256Mi"}},)"
    R"({"conditions":[{"lastTransitionTime":"2026-01-01T00:00:00Z","message":"Deployment d-00000 )"
    R"(exists","observedGeneration":1,"reason":"Found","status":"True","type":"TargetFound"},)"
    R"({"lastTransitionTime":"2026-01-01T00:00:00Z","message":"Deployment d-00000 carries the )"
    R"(declared resources","observedGeneration":1,"reason":"Applied","status":"True",)"
    R"("type":"Scaled"},{"lastTransitionTime":"2026-01-01T00:00:00Z","message":"Deployment )"
    R"(d-00000 carries the declared resources","observedGeneration":1,"reason":"UpToDate",)"
    R"("status":"True","type":"Ready"},{"lastTransitionTime":"2026-01-01T00:00:00Z","message":)"
    R"("Deployment d-00000 exists","observedGeneration":1,"reason":"Found","status":"True",)"
    R"("type":"DeploymentFound"}],"containers":[{"name":"app","requests":{"cpu":"250m","memory":)"
    R"("128Mi"}}],"deployment":{"found":true,"name":"d-00000","uid":)"
    R"("00000000-0000-0000-0000-000000000000"},"observedGeneration":1,"target":{"apiVersion":)"
    R"("apps/v1","found":true,"kind":"Deployment","name":"d-00000","ref":"Deployment/d-00000",)"
    R"("uid":"00000000-0000-0000-0000-000000000000"}})";

const Bytef* bytes(std::string_view text) {
  return reinterpret_cast<const Bytef*>(text.data());
}

std::string stored(std::string_view text) {
  std::string out(1, kStored);
  out += text;
  return out;
}

}  // namespace

std::string pack_status_text(std::string_view text) {
  if (text.empty()) return {};
  if (text.size() > UINT32_MAX) return stored(text);
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, -kWindowBits, kMemLevel,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return stored(text);
  }
  std::string out(5 + deflateBound(&stream, static_cast<uLong>(text.size())), '\0');
  out[0] = kDeflated;
  const auto size = static_cast<uint32_t>(text.size());
  for (int i = 0; i < 4; ++i) out[1 + i] = static_cast<char>((size >> (8 * i)) & 0xff);
  deflateSetDictionary(&stream, bytes(kDictionary), static_cast<uInt>(kDictionary.size()));
  stream.next_in = const_cast<Bytef*>(bytes(text));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data() + 5);
  stream.avail_out = static_cast<uInt>(out.size() - 5);
  const int result = deflate(&stream, Z_FINISH);
  const std::size_t written = out.size() - 5 - stream.avail_out;
  deflateEnd(&stream);
  if (result != Z_STREAM_END || written + 5 >= text.size() + 1) return stored(text);
  out.resize(5 + written);
  out.shrink_to_fit();
  return out;
}

std::string unpack_status_text(std::string_view packed) {
  if (packed.empty()) return {};
  if (packed[0] == kStored) return std::string(packed.substr(1));
  if (packed[0] != kDeflated || packed.size() < 5) return {};
  uint32_t size = 0;
  for (int i = 0; i < 4; ++i)
    size |= uint32_t{static_cast<unsigned char>(packed[1 + i])} << (8 * i);
  z_stream stream{};
  if (inflateInit2(&stream, -kWindowBits) != Z_OK) return {};
  std::string out(size, '\0');
  inflateSetDictionary(&stream, bytes(kDictionary), static_cast<uInt>(kDictionary.size()));
  stream.next_in = const_cast<Bytef*>(bytes(packed.substr(5)));
  stream.avail_in = static_cast<uInt>(packed.size() - 5);
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = size;
  const int result = inflate(&stream, Z_FINISH);
  const bool complete = result == Z_STREAM_END && stream.avail_out == 0;
  inflateEnd(&stream);
  return complete ? out : std::string();
}

}  // namespace vscaler::api
