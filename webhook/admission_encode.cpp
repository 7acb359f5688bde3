// The response half of the AdmissionReview codec (see admission.h): the review the API server
// reads back, with the patch base64-encoded by OpenSSL's EVP encoder.
#include <openssl/evp.h>

#include <algorithm>

#include "webhook/admission.h"

namespace vscaler::webhook {
namespace {

constexpr std::string_view kApiVersion = "admission.k8s.io/v1";
constexpr std::string_view kKind = "AdmissionReview";

// EVP_EncodeBlock and EVP_DecodeBlock take an int length: longer input goes in pieces of this
// many bytes (a multiple of 3 to encode and of 4 to decode, so pieces join without padding).
constexpr std::size_t kPiece = 3 * 4 * (1 << 20);

}  // namespace

std::string encode_review(std::string_view uid, const AdmissionResponse& response) {
  nlohmann::ordered_json body;
  body["uid"] = uid;
  body["allowed"] = response.allowed;
  if (response.status_code != 0 || !response.status_message.empty()) {
    nlohmann::ordered_json status;
    if (response.status_code != 0) status["code"] = response.status_code;
    if (!response.status_message.empty()) status["message"] = response.status_message;
    if (!response.status_reason.empty()) status["reason"] = response.status_reason;
    body["status"] = std::move(status);
  }
  if (!response.warnings.empty()) body["warnings"] = response.warnings;
  if (!response.patch.is_null()) {
    body["patchType"] = "JSONPatch";
    body["patch"] = base64_encode(
        response.patch.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  nlohmann::ordered_json review;
  review["apiVersion"] = kApiVersion;
  review["kind"] = kKind;
  review["response"] = std::move(body);
  return review.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string base64_encode(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  for (std::size_t at = 0; at < data.size() || (at == 0 && data.empty()); at += kPiece) {
    std::size_t length = std::min(kPiece, data.size() - at);
    std::size_t before = out.size();
    out.resize(before + (length + 2) / 3 * 4 + 1);  // EVP_EncodeBlock adds a NUL
    int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + before),
                                  reinterpret_cast<const unsigned char*>(data.data() + at),
                                  static_cast<int>(length));
    out.resize(before + static_cast<std::size_t>(written));
    if (data.empty()) break;
  }
  return out;
}

kube::Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return kube::fail("base64 text of " + std::to_string(text.size()) +
                      " characters is not a multiple of 4 long");
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t at = 0; at < text.size(); at += kPiece) {
    std::size_t length = std::min(kPiece, text.size() - at);
    std::size_t before = out.size();
    out.resize(before + length / 4 * 3);
    int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data() + before),
                                  reinterpret_cast<const unsigned char*>(text.data() + at),
                                  static_cast<int>(length));
    if (written < 0) return kube::fail(std::string("invalid base64 text"));
    // EVP_DecodeBlock counts the bytes that padding stands for: drop them (padding may only
    // end the text).
    std::size_t padding = 0;
    if (auto pad = text.find('=', at); pad != std::string_view::npos && pad < at + length) {
      padding = text.size() - pad;
      if (padding > 2 || text.find_first_not_of('=', pad) != std::string_view::npos) {
        return kube::fail(std::string("base64 padding before the end of the text"));
      }
    }
    out.resize(before + static_cast<std::size_t>(written) - padding);
  }
  return out;
}

}  // namespace vscaler::webhook
