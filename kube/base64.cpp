// base64_encode: see the header.
#include "kube/base64.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstddef>

namespace vscaler::kube {
namespace {

// EVP_EncodeBlock takes an int length: longer input goes in pieces of this many bytes (a
// multiple of 3, so pieces join without padding).
constexpr std::size_t kPiece = 3 * 4 * (1 << 20);

}  // namespace

std::string base64_encode(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  for (std::size_t at = 0; at < data.size(); at += kPiece) {
    std::size_t length = std::min(kPiece, data.size() - at);
    std::size_t before = out.size();
    out.resize(before + (length + 2) / 3 * 4 + 1);  // EVP_EncodeBlock adds a NUL
    int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + before),
                                  reinterpret_cast<const unsigned char*>(data.data() + at),
                                  static_cast<int>(length));
    out.resize(before + static_cast<std::size_t>(written));
  }
  return out;
}

}  // namespace vscaler::kube
