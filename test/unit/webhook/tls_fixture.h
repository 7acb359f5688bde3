// Test support for the webhook server tests and bench/webhook_bench.cpp (header only): a
// throw-away CA issuing ECDSA serving certificates for 127.0.0.1/localhost, a temporary
// directory (support/temp_dir.h), and a raw OpenSSL client for what httplib's client cannot do
// (pick TLS versions, send bytes slowly, read the peer certificate).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "test/unit/support/temp_dir.h"

namespace vscaler::testing {

/// A PEM certificate and key.
struct PemPair {
  std::string cert;
  std::string key;
};

/// A CA that signs serving certificates; fatal (throws) on any OpenSSL failure.
class TestCa {
 public:
  TestCa() : key_(generate_key()) {
    cert_ = build(key_.get(), nullptr, nullptr, "vscaler test CA", 1, true, 1);
  }
  ~TestCa() { X509_free(cert_); }
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  /// The CA certificate, PEM.
  std::string cert_pem() const { return pem(cert_); }

  /// A serving certificate for 127.0.0.1 and localhost with this serial, signed by this CA.
  PemPair issue(long serial, int days = 1) const {
    auto key = generate_key();
    X509* cert = build(key.get(), cert_, key_.get(), "vscaler-webhook", serial, false, days);
    PemPair out{pem(cert), key_pem(key.get())};
    X509_free(cert);
    return out;
  }

 private:
  struct KeyDeleter {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  };
  using Key = std::unique_ptr<EVP_PKEY, KeyDeleter>;

  static void check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("test CA: ") + what);
  }

  static Key generate_key() {
    Key key(EVP_EC_gen("P-256"));
    check(key != nullptr, "EVP_EC_gen");
    return key;
  }

  static X509* build(EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, const char* name,
                     long serial, bool ca, int days) {
    X509* cert = X509_new();
    check(cert != nullptr, "X509_new");
    check(X509_set_version(cert, 2) == 1, "version");
    check(ASN1_INTEGER_set(X509_get_serialNumber(cert), serial) == 1, "serial");
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), static_cast<long>(days) * 86400);
    check(X509_set_pubkey(cert, key) == 1, "pubkey");
    X509_NAME* subject = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(name), -1, -1, 0);
    check(X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : subject) == 1,
          "issuer");
    X509V3_CTX context;
    X509V3_set_ctx(&context, issuer ? issuer : cert, cert, nullptr, nullptr, 0);
    auto add = [&](int nid, const char* value) {
      X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
      check(extension != nullptr, "extension");
      X509_add_ext(cert, extension, -1);
      X509_EXTENSION_free(extension);
    };
    if (ca) {
      add(NID_basic_constraints, "critical,CA:TRUE");
      add(NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
      add(NID_basic_constraints, "critical,CA:FALSE");
      add(NID_ext_key_usage, "serverAuth");
      add(NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    }
    check(X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256()) > 0, "sign");
    return cert;
  }

  static std::string drain(BIO* bio) {
    char* data = nullptr;
    long size = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(size));
    BIO_free(bio);
    return out;
  }
  static std::string pem(X509* cert) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, cert);
    return drain(bio);
  }
  static std::string key_pem(EVP_PKEY* key) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    return drain(bio);
  }

  Key key_;
  X509* cert_ = nullptr;
};

/// Writes `text` to `path` (truncating), in place.
inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

/// Writes `text` next to `path` and renames it over `path` (an atomic replacement).
inline void replace_file(const std::string& path, const std::string& text) {
  write_file(path + ".tmp", text);
  std::filesystem::rename(path + ".tmp", path);
}

/// A TCP connection to 127.0.0.1:port; -1 on failure.
inline int connect_local(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  return fd;
}

/// True when the peer closes `fd` (EOF or reset) within `timeout`, reading and discarding
/// whatever arrives meanwhile.
inline bool closed_by_peer_within(int fd, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd entry{fd, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (::poll(&entry, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) continue;
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return true;
  }
  return false;
}

/// A raw TLS client connection (blocking), for tests that need control over every byte.
class RawTlsClient {
 public:
  /// Connects and handshakes with TLS versions in [min_version, max_version]; `ca_pem` empty
  /// skips verification; `alpn` names the one protocol offered ("h2"), empty none. Check ok() /
  /// error() afterwards.
  RawTlsClient(int port, int min_version, int max_version, const std::string& ca_pem = {},
               std::string_view alpn = {}) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    // Security level 0 lets this client offer TLS 1.0/1.1, so a refusal is the server's doing.
    SSL_CTX_set_security_level(ctx_, 0);
    SSL_CTX_set_min_proto_version(ctx_, min_version);
    SSL_CTX_set_max_proto_version(ctx_, max_version);
    if (min_version < TLS1_2_VERSION) SSL_CTX_set_cipher_list(ctx_, "ALL:@SECLEVEL=0");
    if (!ca_pem.empty()) {
      BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
      X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
      X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), ca);
      X509_free(ca);
      BIO_free(bio);
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    }
    fd_ = connect_local(port);
    if (fd_ < 0) {
      error_ = "connect failed";
      return;
    }
    timeval timeout{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set1_host(ssl_, "127.0.0.1");
    if (!alpn.empty()) {
      std::string protocols = std::string(1, static_cast<char>(alpn.size())) + std::string(alpn);
      SSL_set_alpn_protos(ssl_, reinterpret_cast<const unsigned char*>(protocols.data()),
                          static_cast<unsigned>(protocols.size()));
    }
    if (SSL_connect(ssl_) != 1) {
      char buffer[256];
      ERR_error_string_n(ERR_get_error(), buffer, sizeof buffer);
      error_ = buffer;
      ERR_clear_error();
    } else {
      ok_ = true;
    }
  }
  ~RawTlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
    SSL_CTX_free(ctx_);
  }
  RawTlsClient(const RawTlsClient&) = delete;
  RawTlsClient& operator=(const RawTlsClient&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  int fd() const { return fd_; }
  SSL* ssl() const { return ssl_; }

  /// Sends all of `data`; false once the connection is broken.
  bool send(std::string_view data) {
    while (!data.empty()) {
      int n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// Reads one HTTP response (headers, then Content-Length bytes); empty on EOF, error or
  /// timeout before a complete response.
  std::string read_response() {
    std::string data;
    char buffer[4096];
    while (true) {
      auto end = data.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::size_t length = 0;
        auto at = data.find("Content-Length: ");
        if (at != std::string::npos && at < end) length = std::stoul(data.substr(at + 16));
        if (data.size() >= end + 4 + length) return data.substr(0, end + 4 + length);
      }
      int n = SSL_read(ssl_, buffer, sizeof buffer);
      if (n <= 0) return {};
      data.append(buffer, static_cast<std::size_t>(n));
    }
  }

  /// The SHA-256 fingerprint (lowercase hex) of the certificate the server presented.
  std::string peer_fingerprint() const {
    X509* peer = SSL_get1_peer_certificate(ssl_);
    if (peer == nullptr) return {};
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    X509_digest(peer, EVP_sha256(), digest, &length);
    X509_free(peer);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
      out += kHex[digest[i] >> 4];
      out += kHex[digest[i] & 15];
    }
    return out;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool ok_ = false;
  std::string error_;
};

/// The SHA-256 fingerprint of a PEM certificate's DER form.
inline std::string fingerprint_of(const std::string& cert_pem) {
  BIO* bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  X509_digest(cert, EVP_sha256(), digest, &length);
  X509_free(cert);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

}  // namespace vscaler::testing
