// TLS for the admission front end: the server context (our whole policy: TLS >= 1.2, AEAD
// suites, no renegotiation or compression, ALPN h2 (when offered) or http/1.1, the certificate from
// a CertWatcher on every handshake) and a non-blocking OpenSSL stream that reports what it waits
// for instead of blocking, so one event loop can carry thousands of connections.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <string>

#include "base/result.h"
#include "net/cert_watcher.h"

namespace vscaler::net::tls {

/// Frees an SSL_CTX.
struct ContextDeleter {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
/// An owned server context.
using Context = std::unique_ptr<SSL_CTX, ContextDeleter>;

/// A server context with vscaler's TLS policy whose certificate comes from `certs` (which must
/// outlive it) at each handshake; ALPN selects h2 when `offer_http2` and the client offers it.
/// With `client_ca_file` (PEM) a client must present a certificate that CA signed
/// (--webhook-client-ca-file). The error names the OpenSSL call that failed.
base::Result<Context> make_server_context(CertWatcher& certs, bool offer_http2 = true,
                                          const std::string& client_ca_file = {});

/// What a non-blocking TLS operation needs before it can go on.
enum class Io {
  kDone,       // finished (or, for read, delivered bytes)
  kWantRead,   // wait until the socket is readable, then call again
  kWantWrite,  // wait until the socket is writable, then call again
  kClosed,     // the peer closed the connection (close_notify or EOF)
  kError,      // a protocol or socket error: close the connection
};

/// One server-side TLS connection on a non-blocking socket, or a plain one (a null context: the
/// health, metrics and dashboard ports), so that one connection state machine serves both. Not
/// thread-safe: the event loop thread alone uses it. Does not own the socket.
class Stream {
 public:
  /// A stream for the accepted socket `fd` under `ctx` (nullptr: plain, no TLS); ok() is false
  /// if OpenSSL refused.
  Stream(SSL_CTX* ctx, int fd);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// True for a plain (not TLS) stream.
  bool plain() const { return plain_; }
  /// False when the SSL object could not be created.
  bool ok() const { return plain_ || ssl_ != nullptr; }

  /// Drives the handshake; kDone once it completed.
  Io handshake();
  /// Reads up to `max` bytes (at most kReadChunk) onto the end of `out`; kDone when at least one
  /// byte arrived. `out` grows by what arrived, not by what could have.
  Io read(std::string& out, std::size_t max);
  /// The most one read() takes: a TLS record's plaintext.
  static constexpr std::size_t kReadChunk = 16384;
  /// What OpenSSL's buffers of one connection hold while it reads or writes: the read buffer
  /// with read-ahead (two records) and the write buffer (one), each record with its overhead.
  /// Freed by release_buffers(); 3,000 connections that sent one byte each held ~100 MB.
  static constexpr std::size_t kBufferBytes = 3 * (16384 + 512);
  /// Writes from `data` + `offset`, advancing `offset`; kDone once everything is written.
  Io write(const std::string& data, std::size_t& offset);
  /// True when OpenSSL holds bytes read from the socket and not yet returned by read()
  /// (read-ahead): the socket's readiness says nothing about them.
  bool pending() const { return !plain_ && SSL_has_pending(ssl_) == 1; }
  /// True when OpenSSL holds decrypted bytes of a record already read in part, which read()
  /// returns at once without the socket (unlike pending(), not the start of a record still
  /// arriving).
  bool readable_now() const { return !plain_ && SSL_pending(ssl_) > 0; }
  /// Sends close_notify (best effort, never waits for the peer's).
  void shutdown();
  /// Frees OpenSSL's read and write buffers (about 50 KiB) if no record is in them; the next
  /// read or write allocates them again. False when they are in use (nothing was freed).
  /// Buffers are kept between records otherwise: allocating and freeing them for every request
  /// was 5 % of the server's CPU (see make_server_context).
  bool release_buffers();
  /// False when the OpenSSL loaded at run time must not free buffers (CVE-2024-4741): then
  /// release_buffers() never frees them.
  static bool buffers_freeable();
  /// Makes OpenSSL free the buffers after every record again (SSL_MODE_RELEASE_BUFFERS), for a
  /// connection the caller does not release itself (HTTP/2, whose sessions idle on their own).
  void release_buffers_after_each_record();

  /// True when ALPN selected h2 (after the handshake).
  bool http2() const;
  /// "TLSv1.3" and the like, after the handshake; "plain" without TLS.
  std::string version() const;

 private:
  Io classify(int result);

  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool plain_ = false;
};

}  // namespace vscaler::net::tls
