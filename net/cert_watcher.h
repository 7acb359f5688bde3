// The serving certificate: loaded from --cert-dir (tls.crt, tls.key), re-read when the files
// change — including the symlink swap Kubernetes does on Secret volumes (tls.crt -> ..data/tls.crt,
// ..data -> ..2026_11_29_18_00_00.123456789) — and handed to every TLS handshake through
// SSL_CTX_set_cert_cb, so a rotation needs no restart and drops no request: connections already
// open keep the certificate they negotiated, new handshakes get the new one.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/result.h"
#include "metrics/registry.h"

namespace vscaler::net {

/// A certificate chain and its private key, checked to belong together. Immutable once loaded;
/// shared by the handshakes that use it (OpenSSL takes its own references per connection).
class CertificatePair {
 public:
  /// Parses PEM text: the certificate file holds the leaf first, then any intermediates. The
  /// error says what is wrong (no certificate, no key, key does not match) and never quotes key
  /// material.
  static base::Result<std::shared_ptr<const CertificatePair>> from_pem(std::string_view cert_pem,
                                                                       std::string_view key_pem);

  ~CertificatePair();
  CertificatePair(const CertificatePair&) = delete;
  CertificatePair& operator=(const CertificatePair&) = delete;

  X509* leaf() const { return leaf_; }
  /// The intermediates after the leaf (possibly empty, never null).
  STACK_OF(X509) * chain() const { return chain_; }
  EVP_PKEY* key() const { return key_; }
  /// notAfter / notBefore of the leaf, in seconds since the epoch.
  std::int64_t not_after() const { return not_after_; }
  std::int64_t not_before() const { return not_before_; }
  /// SHA-256 of the leaf's DER encoding, lowercase hex: identifies a certificate in logs.
  const std::string& fingerprint() const { return fingerprint_; }
  /// The leaf's subject, one line (RFC 2253).
  const std::string& subject() const { return subject_; }

 private:
  CertificatePair() = default;
  X509* leaf_ = nullptr;
  STACK_OF(X509) * chain_ = nullptr;
  EVP_PKEY* key_ = nullptr;
  std::int64_t not_after_ = 0;
  std::int64_t not_before_ = 0;
  std::string fingerprint_;
  std::string subject_;
};

/// Where and how often to look.
struct CertWatcherOptions {
  /// --cert-dir.
  std::string cert_dir = "/tmp/k8s-webhook-server/serving-certs";
  std::string cert_file = "tls.crt";
  std::string key_file = "tls.key";
  /// How often the files' identity (device, inode, size, mtime, ctime — through symlinks) is
  /// compared with the last one seen. Polling rather than inotify: it sees every way a file can
  /// change (symlink swaps, renames, in-place writes, a remounted volume) with one code path.
  std::chrono::milliseconds poll_interval{1000};
  /// How long after a failed load of a changed pair the same files are tried again before the
  /// failure is reported. A tool that writes the key and then the certificate (certs/rotate.sh
  /// renames them one at a time) leaves a mismatched pair for a moment; caught there, the load
  /// succeeds on this retry and nothing is logged or counted.
  std::chrono::milliseconds settle_interval{100};
  /// Where vscaler_serving_cert_expiry_timestamp_seconds and the reload counter live.
  metrics::Registry* registry = &metrics::default_registry();
};

/// Keeps the newest valid certificate pair of a directory available to TLS handshakes.
///
/// A new pair that cannot be used (unreadable, not PEM, key and certificate not matching, or a
/// half-written file caught mid-rotation) never replaces a working one: the old pair keeps
/// serving and the load is retried on every poll until it succeeds. While a pair is serving, a
/// failure is reported (logged, counted) only when it outlasts one settle interval — the same
/// file state failing twice — and then once per distinct file state and reason.
class CertWatcher {
 public:
  explicit CertWatcher(CertWatcherOptions options);
  /// Stops the polling thread.
  ~CertWatcher();
  CertWatcher(const CertWatcher&) = delete;
  CertWatcher& operator=(const CertWatcher&) = delete;

  /// Reads the files now (on the caller's thread). An error says why nothing new was installed;
  /// a previously loaded pair stays in place either way.
  base::Result<base::Unit> reload();

  /// Loads once, then polls on a thread of its own. Missing files are not an error here: the
  /// Secret volume may appear later, and readiness (loaded()) reports the state.
  void start();
  /// Stops polling (idempotent). The current pair stays available.
  void stop();

  /// The pair new handshakes get; null until one has loaded.
  std::shared_ptr<const CertificatePair> current() const {
    std::lock_guard lock(current_mutex_);
    return current_;
  }
  /// For readiness: true once a certificate is being served.
  bool loaded() const { return current() != nullptr; }
  /// Successful loads so far (tests wait on it).
  std::uint64_t generation() const { return generation_.load(); }

  /// Makes `ctx` ask this watcher for its certificate on every handshake (SSL_CTX_set_cert_cb).
  /// The watcher must outlive `ctx`. A handshake while no pair is loaded fails.
  void install(SSL_CTX* ctx);

 private:
  // One load attempt of the files in `state` (their identity when the attempt began); the
  // caller holds load_mutex_.
  base::Result<base::Unit> load_locked(const std::string& state);
  static int handshake_callback(SSL* ssl, void* arg);
  void run();

  CertWatcherOptions options_;
  std::string cert_path_;
  std::string key_path_;
  // A mutex rather than std::atomic<std::shared_ptr>: held for one reference-count increment per
  // handshake, uncontended in practice, and understood by ThreadSanitizer (GCC 12's atomic
  // shared_ptr uses an internal spin bit it cannot see).
  mutable std::mutex current_mutex_;
  std::shared_ptr<const CertificatePair> current_;
  std::atomic<std::uint64_t> generation_{0};
  metrics::Gauge& expiry_;
  metrics::Counter& reloads_ok_;
  metrics::Counter& reloads_failed_;

  // Polling state, used by reload() and the thread: guarded by load_mutex_.
  std::mutex load_mutex_;
  std::string seen_state_;
  std::string last_logged_failure_;
  bool last_failed_ = false;
  // The file state whose first failed load was not reported yet; the poll retries it after the
  // settle interval rather than the poll interval.
  std::string unreported_failure_state_;
  bool settling_ = false;

  std::mutex thread_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vscaler::net
