#include "net/tls.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace vscaler::net::tls {
namespace {

// OpenSSL's read buffer with read-ahead: two full records and their overhead, so a 20 KB review
// usually arrives in one read(2). Freed while idle (SSL_MODE_RELEASE_BUFFERS).
constexpr std::size_t kReadBufferBytes = 2 * (16384 + 512);
static_assert(Stream::kBufferBytes >= kReadBufferBytes);

// Prefers h2 when the context offers it (`arg` non-null) and the client does, else http/1.1.
int alpn_callback(SSL*, const unsigned char** out, unsigned char* out_length,
                  const unsigned char* in, unsigned int in_length, void* arg) {
  static const unsigned char kBoth[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  bool offer_h2 = arg != nullptr;
  unsigned char* selected = nullptr;
  // SSL_select_next_proto walks the server's list in order: the first the client also offers.
  if (SSL_select_next_proto(&selected, out_length, offer_h2 ? kBoth : kHttp11,
                            offer_h2 ? sizeof kBoth : sizeof kHttp11, in,
                            in_length) == OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;  // no common protocol: carry on without ALPN (HTTP/1.1)
}

std::string openssl_error(const std::string& call) {
  char buffer[256];
  unsigned long code = ERR_get_error();
  ERR_error_string_n(code, buffer, sizeof buffer);
  ERR_clear_error();
  return call + " failed: " + (code != 0 ? buffer : "no OpenSSL error");
}

}  // namespace

base::Result<Context> make_server_context(CertWatcher& certs, bool offer_http2,
                                          const std::string& client_ca_file) {
  Context ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) return base::fail(openssl_error("SSL_CTX_new"));
  if (SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION) != 1) {
    return base::fail(openssl_error("SSL_CTX_set_min_proto_version"));
  }
  SSL_CTX_set_options(
      ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // TLS 1.2: forward-secret AEAD suites only (what Go's TLS client prefers anyway). Both
  // versions choose AES-128-GCM first, as Go's crypto/tls (the API server's client and every
  // Kubernetes server) does on CPUs with AES instructions. OpenSSL's default order put AES-256
  // first: 14 rounds against 10, 12 % slower on each ~20 KB review the server decrypts (`openssl
  // speed -evp`, 16 KB blocks: 5.1 against 5.7 GB/s). AES-256 and ChaCha20 stay offered for
  // clients that ask only for them.
  if (SSL_CTX_set_cipher_list(ctx.get(),
                              "ECDHE+AESGCM+AES128:ECDHE+AESGCM+AES256:ECDHE+CHACHA20") != 1) {
    return base::fail(openssl_error("SSL_CTX_set_cipher_list"));
  }
  if (SSL_CTX_set_ciphersuites(ctx.get(),
                               "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                               "TLS_CHACHA20_POLY1305_SHA256") != 1) {
    return base::fail(openssl_error("SSL_CTX_set_ciphersuites"));
  }
  // Partial writes suit the non-blocking loop. No SSL_MODE_RELEASE_BUFFERS: it frees the read
  // and write buffers (about 50 KiB) after every record, and allocating them again for each
  // request (glibc consolidating its free lists for each such large block) was 5 % of the
  // server's CPU under bench/sections/webhook.sh. Connections release them once idle instead
  // (Stream::release_buffers, ConnectionLimits::idle_buffer_release), which keeps idle
  // keep-alive connections, most of them, as small as before.
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Read-ahead: one read(2) takes what the kernel holds, up to the buffer's length, instead of
  // a record header and then its body (a 22 KB review took 5 reads; now 2). The records already
  // read wait in OpenSSL's buffer: every caller reads until it would block, or reads again before
  // it waits (after a response), so none is left unseen.
  SSL_CTX_set_read_ahead(ctx.get(), 1);
  SSL_CTX_set_default_read_buffer_len(ctx.get(), kReadBufferBytes);
  // Any non-null argument means "offer h2".
  static int offer = 1;
  SSL_CTX_set_alpn_select_cb(ctx.get(), alpn_callback, offer_http2 ? &offer : nullptr);
  if (!client_ca_file.empty()) {
    // Only clients with a certificate from this CA (the API server's, from its
    // AdmissionConfiguration kubeConfigFile) complete the handshake; the others fail it, before
    // any request is read.
    if (SSL_CTX_load_verify_locations(ctx.get(), client_ca_file.c_str(), nullptr) != 1) {
      return base::fail(openssl_error("reading the client CA " + client_ca_file));
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(client_ca_file.c_str());
    if (names == nullptr) return base::fail(openssl_error("no certificate in " + client_ca_file));
    SSL_CTX_set_client_CA_list(ctx.get(), names);  // takes ownership
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    // Resumed sessions keep the verified client: they need a context to be resumed in.
    static const unsigned char kSessionContext[] = "vscaler-webhook";
    SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext - 1);
  }
  certs.install(ctx.get());
  return ctx;
}

Stream::Stream(SSL_CTX* ctx, int fd) : fd_(fd), plain_(ctx == nullptr) {
  if (plain_) return;
  ssl_ = SSL_new(ctx);
  if (ssl_ == nullptr) {
    ERR_clear_error();
    return;
  }
  if (SSL_set_fd(ssl_, fd) != 1) {
    ERR_clear_error();
    SSL_free(ssl_);
    ssl_ = nullptr;
    return;
  }
  SSL_set_accept_state(ssl_);
}

Stream::~Stream() {
  if (ssl_ != nullptr) SSL_free(ssl_);
}

Io Stream::classify(int result) {
  int error = SSL_get_error(ssl_, result);
  ERR_clear_error();  // the queue is per thread: leave nothing for the next connection
  switch (error) {
    case SSL_ERROR_WANT_READ:
      return Io::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Io::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return Io::kClosed;
    case SSL_ERROR_SYSCALL:
      // EOF without close_notify (OpenSSL 3 reports it as SSL_R_UNEXPECTED_EOF_WHILE_READING
      // under SSL_ERROR_SSL unless SSL_OP_IGNORE_UNEXPECTED_EOF; either way the peer is gone).
      return Io::kClosed;
    default:
      return Io::kError;
  }
}

Io Stream::handshake() {
  if (plain_) return Io::kDone;
  int result = SSL_do_handshake(ssl_);
  if (result == 1) return Io::kDone;
  return classify(result);
}

Io Stream::read(std::string& out, std::size_t max) {
  if (max == 0) return Io::kDone;
  const std::size_t before = out.size();
  const std::size_t chunk = std::min<std::size_t>(max, kReadChunk);
  // Into `out` directly when it already has the room (a body reserved at its Content-Length);
  // else into a buffer of the thread's, `out` growing by what arrived. Growing `out` by a whole
  // chunk before the read made every connection that sent one byte hold 16-32 KiB, outside
  // every budget: thousands of them from a few pods exhausted the pod's memory.
  static thread_local char spare[kReadChunk];
  const bool direct = out.capacity() - before >= chunk;
  if (direct) out.resize(before + chunk);
  char* into = direct ? out.data() + before : spare;
  std::size_t got = 0;
  Io io = Io::kDone;
  if (plain_) {
    const ssize_t received = ::recv(fd_, into, chunk, 0);
    if (received > 0) {
      got = static_cast<std::size_t>(received);
    } else if (received == 0) {
      io = Io::kClosed;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      io = Io::kWantRead;
    } else {
      io = errno == ECONNRESET ? Io::kClosed : Io::kError;
    }
  } else if (SSL_read_ex(ssl_, into, chunk, &got) != 1) {
    got = 0;
    io = classify(0);
  }
  if (direct) {
    out.resize(before + got);
  } else {
    out.append(spare, got);
  }
  return io;
}

Io Stream::write(const std::string& data, std::size_t& offset) {
  while (offset < data.size()) {
    if (plain_) {
      ssize_t sent = ::send(fd_, data.data() + offset, data.size() - offset, MSG_NOSIGNAL);
      if (sent < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kWantWrite;
        return Io::kError;
      }
      offset += static_cast<std::size_t>(sent);
      continue;
    }
    std::size_t written = 0;
    int result = SSL_write_ex(ssl_, data.data() + offset, data.size() - offset, &written);
    if (result != 1) {
      Io io = classify(0);
      return io == Io::kClosed ? Io::kError : io;  // the peer cannot get the response
    }
    offset += written;
  }
  return Io::kDone;
}

void Stream::shutdown() {
  // One close_notify; the peer's answer is not awaited (the socket is closed or drained raw).
  if (plain_) return;
  if (SSL_is_init_finished(ssl_)) (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

bool Stream::buffers_freeable() {
  // Freeing a connection's buffers could leave OpenSSL reading freed memory (CVE-2024-4741)
  // before 3.0.14, 3.1.6, 3.2.2 and 3.3.1: under those the buffers are kept, and stay charged
  // to the budget. (A distribution that backported the fix to an older version is not told
  // apart.) OpenSSL 3's version number is 0xMNN00PP0.
  static const bool freeable = [] {
    const unsigned long version = OpenSSL_version_num();
    const unsigned long major = version >> 28;
    const unsigned long minor = (version >> 20) & 0xff;
    const unsigned long patch = (version >> 4) & 0xff;
    if (major != 3) return major > 3;
    static constexpr unsigned long kFixedPatch[] = {14, 6, 2, 1};  // 3.0 .. 3.3
    return minor >= 4 || patch >= kFixedPatch[minor];
  }();
  return freeable;
}

bool Stream::release_buffers() {
  if (plain_) return true;
  return buffers_freeable() && SSL_free_buffers(ssl_) == 1;
}

void Stream::release_buffers_after_each_record() {
  if (plain_ || !buffers_freeable()) return;
  SSL_set_mode(ssl_, SSL_MODE_RELEASE_BUFFERS);
}

bool Stream::http2() const {
  if (plain_) return false;
  const unsigned char* protocol = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl_, &protocol, &length);
  return length == 2 && protocol[0] == 'h' && protocol[1] == '2';
}

std::string Stream::version() const {
  if (plain_) return "plain";
  return SSL_get_version(ssl_);
}

}  // namespace vscaler::net::tls
