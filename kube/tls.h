// TLS material for the API client: PEM parsing into OpenSSL objects (the credentials never touch
// disk) and the server-certificate check that trusts exactly the configured CAs.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vscaler::kube {

/// Parsed certificates and key of a ClientConfig, shared (read-only) by every connection.
class TlsMaterial {
 public:
  /// Parses the PEM texts; `what_*` name their origin for error messages ("certificate-authority-
  /// data of cluster x in /path"). Empty texts are allowed (no CA: system store; no client cert).
  /// Fails when a given PEM holds no certificate, the key does not parse, only one of cert/key
  /// is given, or the key does not belong to the certificate.
  static Result<std::shared_ptr<const TlsMaterial>> parse(std::string_view ca_pem,
                                                          std::string_view cert_pem,
                                                          std::string_view key_pem,
                                                          std::string_view what_ca = "CA",
                                                          std::string_view what_cert = "cert",
                                                          std::string_view what_key = "key");
  ~TlsMaterial();
  TlsMaterial(const TlsMaterial&) = delete;
  TlsMaterial& operator=(const TlsMaterial&) = delete;

  /// Trusted CAs (null when the system store is to be used).
  STACK_OF(X509) * ca_certs() const { return cas_; }
  /// Client certificate, its intermediates and key (null when none).
  X509* client_cert() const { return cert_; }
  STACK_OF(X509) * client_chain() const { return chain_; }
  EVP_PKEY* client_key() const { return key_; }

 private:
  TlsMaterial() = default;
  STACK_OF(X509) * cas_ = nullptr;
  X509* cert_ = nullptr;
  STACK_OF(X509) * chain_ = nullptr;
  EVP_PKEY* key_ = nullptr;
};

/// Per-connection verification state: the expected name and what went wrong last.
struct TlsVerifyState {
  std::shared_ptr<const TlsMaterial> material;
  std::string expected_host;  ///< DNS name or IP literal the certificate must match
  /// Sent as the ClientHello's server name (SNI) in place of the URL's host when not empty (a
  /// kubeconfig's tls-server-name, as kubectl sends it).
  std::string server_name;
  std::atomic<long> last_error{0};  ///< X509_V_* of the last failed verification, 0 if none
  std::atomic<bool> failed{false};  ///< the last handshake failed certificate verification
};

/// Configures `ctx` (owned by one HTTP client) to require TLS >= 1.2 and to verify the server's
/// certificate chain against `state->material`'s CAs only (or the system store when it has none)
/// and its name against `state->expected_host` (IP SANs for IP literals), recording failures in
/// `state`, which must outlive the context. With `verify` false nothing is checked. Either way a
/// `state->server_name` is what the handshake names (SNI).
void configure_client_context(SSL_CTX* ctx, TlsVerifyState* state, bool verify);

}  // namespace vscaler::kube
