// Standard base64 (RFC 4648, with padding) by OpenSSL's EVP encoder: the caBundle-style data the
// API's []byte fields carry (a webhook's patch, a kubeconfig's certificate-authority-data).
// Decoding stays with each reader: Go's encoding/json is lenient, admission reviews are not.
#pragma once

#include <string>
#include <string_view>

namespace vscaler::kube {

/// `data` as standard base64 text with padding; "" for "".
std::string base64_encode(std::string_view data);

}  // namespace vscaler::kube
