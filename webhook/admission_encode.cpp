// The response half of the AdmissionReview codec (see admission.h): the review the API server
// reads back, with the patch base64-encoded (kube/base64.h); and the strict base64 decoder.
#include <openssl/evp.h>

#include <algorithm>

#include "kube/json_text.h"
#include "webhook/admission.h"

namespace vscaler::webhook {
namespace {

// EVP_DecodeBlock takes an int length: longer input goes in pieces of this many bytes (a multiple
// of 4, so pieces join without padding).
constexpr std::size_t kPiece = 3 * 4 * (1 << 20);

}  // namespace

std::string encode_review(std::string_view uid, const AdmissionResponse& response) {
  // Written out directly, in the order nlohmann::ordered_json would dump it: building the
  // review as JSON values and dumping them took half of this function's time (the base64 patch
  // escaped a character at a time).
  std::string patch;
  if (!response.patch.is_null()) patch = base64_encode(kube::compact_json(response.patch));
  std::string out;
  out.reserve(128 + uid.size() + patch.size() + response.status_message.size());
  out += R"({"apiVersion":")";
  out += kAdmissionApiVersion;
  out += R"(","kind":")";
  out += kAdmissionKind;
  out += R"(","response":{"uid":)";
  kube::append_json_string(out, uid);
  out += response.allowed ? R"(,"allowed":true)" : R"(,"allowed":false)";
  if (response.status_code != 0 || !response.status_message.empty()) {
    out += R"(,"status":{)";
    bool first = true;
    auto member = [&out, &first](std::string_view name) {
      if (!first) out += ',';
      first = false;
      out += '"';
      out += name;
      out += "\":";
    };
    if (response.status_code != 0) {
      member("code");
      out += std::to_string(response.status_code);
    }
    if (!response.status_message.empty()) {
      member("message");
      kube::append_json_string(out, response.status_message);
    }
    if (!response.status_reason.empty()) {
      member("reason");
      kube::append_json_string(out, response.status_reason);
    }
    out += '}';
  }
  if (!response.warnings.empty()) {
    out += R"(,"warnings":[)";
    for (std::size_t i = 0; i < response.warnings.size(); ++i) {
      if (i > 0) out += ',';
      kube::append_json_string(out, response.warnings[i]);
    }
    out += ']';
  }
  if (!response.patch.is_null()) {
    out += R"(,"patchType":"JSONPatch","patch":")";
    out += patch;  // base64: nothing to escape
    out += '"';
  }
  out += "}}";
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
