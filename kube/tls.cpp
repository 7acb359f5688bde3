#include "kube/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

namespace vscaler::kube {
namespace {

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

BioPtr memory_bio(std::string_view text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// Encrypted keys would otherwise make OpenSSL prompt on the terminal for a passphrase.
int no_passphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) {
  return 0;
}

// Every certificate of a PEM text, in order; an empty stack when it holds none.
STACK_OF(X509) * read_certificates(std::string_view pem) {
  STACK_OF(X509)* certs = sk_X509_new_null();
  BioPtr bio = memory_bio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr)) {
    sk_X509_push(certs, cert);
  }
  ERR_clear_error();  // the loop ends with "no start line", which is not an error
  return certs;
}

bool is_ip_literal(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// Replaces OpenSSL's chain verification for one handshake: only the configured CAs are trusted
// (a publicly trusted certificate must not be able to impersonate the API server), and the name
// is checked here too, with IP SANs for IP literals, so tls-server-name can be honoured.
int verify_server_certificate(X509_STORE_CTX* store_ctx, void* arg) {
  auto* state = static_cast<TlsVerifyState*>(arg);
  if (STACK_OF(X509)* cas = state->material->ca_certs()) {
    X509_STORE_CTX_set0_trusted_stack(store_ctx, cas);
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(store_ctx);
  if (is_ip_literal(state->expected_host)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, state->expected_host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, state->expected_host.c_str(), state->expected_host.size());
  }
  int ok = X509_verify_cert(store_ctx);
  if (ok == 1) {
    state->failed.store(false);
    state->last_error.store(0);
    return 1;
  }
  state->last_error.store(X509_STORE_CTX_get_error(store_ctx));
  state->failed.store(true);
  return 0;
}

}  // namespace

TlsMaterial::~TlsMaterial() {
  if (cas_) sk_X509_pop_free(cas_, X509_free);
  if (chain_) sk_X509_pop_free(chain_, X509_free);
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

Result<std::shared_ptr<const TlsMaterial>> TlsMaterial::parse(
    std::string_view ca_pem, std::string_view cert_pem, std::string_view key_pem,
    std::string_view what_ca, std::string_view what_cert, std::string_view what_key) {
  std::shared_ptr<TlsMaterial> material(new TlsMaterial());
  if (!ca_pem.empty()) {
    material->cas_ = read_certificates(ca_pem);
    if (sk_X509_num(material->cas_) == 0) {
      return fail(std::string(what_ca) + ": no PEM certificate found");
    }
  }
  if (cert_pem.empty() != key_pem.empty()) {
    return fail(cert_pem.empty() ? std::string(what_key) + " is set but no client certificate is"
                                 : std::string(what_cert) + " is set but no client key is");
  }
  if (!cert_pem.empty()) {
    material->chain_ = read_certificates(cert_pem);
    if (sk_X509_num(material->chain_) == 0) {
      return fail(std::string(what_cert) + ": no PEM certificate found");
    }
    material->cert_ = sk_X509_shift(material->chain_);  // the leaf; the rest are intermediates
    BioPtr bio = memory_bio(key_pem);
    material->key_ = PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr);
    ERR_clear_error();
    if (!material->key_) {
      return fail(std::string(what_key) +
                  ": no PEM private key found (or it is encrypted, which is not supported)");
    }
    if (X509_check_private_key(material->cert_, material->key_) != 1) {
      ERR_clear_error();
      return fail(std::string(what_key) + " does not belong to the certificate in " +
                  std::string(what_cert));
    }
  }
  return std::shared_ptr<const TlsMaterial>(std::move(material));
}

namespace {

// The SSL_CTX ex_data slot holding a context's TlsVerifyState for send_server_name.
int server_name_slot() {
  static const int slot = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

// httplib names the URL's host in the SNI when it creates the connection; a configured server
// name replaces it as the handshake starts, before the ClientHello is written.
void send_server_name(const SSL* ssl, int where, int /*ret*/) {
  if ((where & SSL_CB_HANDSHAKE_START) == 0) return;
  const auto* state = static_cast<const TlsVerifyState*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), server_name_slot()));
  if (state != nullptr && !state->server_name.empty()) {
    // SSL_set_tlsext_host_name, without the macro's C cast.
    SSL_ctrl(const_cast<SSL*>(ssl), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(state->server_name.c_str()));
  }
}

}  // namespace

void configure_client_context(SSL_CTX* ctx, TlsVerifyState* state, bool verify) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (!state->server_name.empty()) {
    SSL_CTX_set_ex_data(ctx, server_name_slot(), state);
    SSL_CTX_set_info_callback(ctx, send_server_name);
  }
  const TlsMaterial& material = *state->material;
  if (material.client_cert()) {
    SSL_CTX_use_certificate(ctx, material.client_cert());
    SSL_CTX_use_PrivateKey(ctx, material.client_key());
    for (int i = 0; i < sk_X509_num(material.client_chain()); ++i) {
      SSL_CTX_add1_chain_cert(ctx, sk_X509_value(material.client_chain(), i));
    }
  }
  if (!verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return;
  }
  if (!material.ca_certs()) SSL_CTX_set_default_verify_paths(ctx);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_cert_verify_callback(ctx, verify_server_certificate, state);
}

}  // namespace vscaler::kube
