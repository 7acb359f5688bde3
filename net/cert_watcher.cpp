#include "net/cert_watcher.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <utility>

#include "base/log.h"
#include "base/time.h"

namespace vscaler::net {
namespace {

using base::fail;

constexpr std::string_view kCertsLogger = "webhook.certs";
// Certificate files are a few KB; anything far larger is not what we expect to read.
constexpr off_t kMaxFileBytes = 1024 * 1024;

// The OpenSSL errors queued on this thread, joined, then cleared. OpenSSL's messages name the
// failing routine and reason, never key material.
std::string openssl_errors() {
  std::string out;
  while (unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof buffer);
    if (!out.empty()) out += "; ";
    out += buffer;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

// A file's identity through any symlinks: a new inode (rename, Kubernetes' ..data swap), a new
// size or new times (in-place write) all change it; a missing file gives its errno.
std::string identity(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return "error:" + std::to_string(errno);
  std::ostringstream out;
  out << info.st_dev << ':' << info.st_ino << ':' << info.st_size << ':' << info.st_mtim.tv_sec
      << '.' << info.st_mtim.tv_nsec << ':' << info.st_ctim.tv_sec << '.' << info.st_ctim.tv_nsec;
  return out.str();
}

base::Result<std::string> read_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return fail("cannot read " + path + ": " + std::strerror(errno));
  }
  if (info.st_size > kMaxFileBytes) return fail(path + " is larger than 1 MiB");
  std::ifstream file(path, std::ios::binary);
  if (!file) return fail("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return fail("cannot read " + path);
  return text.str();
}

std::int64_t asn1_seconds(const ASN1_TIME* time) {
  std::tm parts{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &parts) != 1) return 0;
  return static_cast<std::int64_t>(timegm(&parts));
}

// Refuses to prompt for a passphrase (OpenSSL's default would read the terminal): an encrypted
// key simply fails to load.
int no_passphrase(char*, int, int, void*) {
  return 0;
}

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

BioPtr memory_bio(std::string_view text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

metrics::CounterFamily& reload_counter(metrics::Registry& registry) {
  return registry.counter("vscaler_serving_cert_reloads_total",
                          "Serving certificate loads by result; a failure means a new pair was "
                          "refused and the previous one kept serving.",
                          {"result"});
}

}  // namespace

CertificatePair::~CertificatePair() {
  X509_free(leaf_);
  sk_X509_pop_free(chain_, X509_free);
  EVP_PKEY_free(key_);
}

base::Result<std::shared_ptr<const CertificatePair>> CertificatePair::from_pem(
    std::string_view cert_pem, std::string_view key_pem) {
  ERR_clear_error();
  if (cert_pem.size() > static_cast<std::size_t>(INT_MAX) ||
      key_pem.size() > static_cast<std::size_t>(INT_MAX)) {
    return fail("certificate or key too large");
  }
  std::shared_ptr<CertificatePair> pair(new CertificatePair());
  auto cert_bio = memory_bio(cert_pem);
  if (!cert_bio) return fail("out of memory: " + openssl_errors());
  pair->leaf_ = PEM_read_bio_X509(cert_bio.get(), nullptr, no_passphrase, nullptr);
  if (pair->leaf_ == nullptr) {
    return fail("the certificate file holds no PEM certificate (" + openssl_errors() + ")");
  }
  pair->chain_ = sk_X509_new_null();
  if (pair->chain_ == nullptr) return fail("out of memory: " + openssl_errors());
  while (X509* next = PEM_read_bio_X509(cert_bio.get(), nullptr, no_passphrase, nullptr)) {
    if (sk_X509_push(pair->chain_, next) == 0) {
      X509_free(next);
      return fail("out of memory: " + openssl_errors());
    }
  }
  ERR_clear_error();  // the end of the PEM data is reported as an error; it is the normal end

  auto key_bio = memory_bio(key_pem);
  if (!key_bio) return fail("out of memory: " + openssl_errors());
  pair->key_ = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr);
  if (pair->key_ == nullptr) {
    return fail("the key file holds no unencrypted PEM private key (" + openssl_errors() + ")");
  }
  if (X509_check_private_key(pair->leaf_, pair->key_) != 1) {
    return fail("the private key does not match the certificate (" + openssl_errors() + ")");
  }

  pair->not_after_ = asn1_seconds(X509_get0_notAfter(pair->leaf_));
  pair->not_before_ = asn1_seconds(X509_get0_notBefore(pair->leaf_));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (X509_digest(pair->leaf_, EVP_sha256(), digest, &length) == 1) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < length; ++i) {
      pair->fingerprint_ += kHex[digest[i] >> 4];
      pair->fingerprint_ += kHex[digest[i] & 15];
    }
  }
  BioPtr subject(BIO_new(BIO_s_mem()));
  if (subject && X509_NAME_print_ex(subject.get(), X509_get_subject_name(pair->leaf_), 0,
                                    XN_FLAG_RFC2253) >= 0) {
    char* data = nullptr;
    long size = BIO_get_mem_data(subject.get(), &data);
    if (size > 0) pair->subject_.assign(data, static_cast<std::size_t>(size));
  }
  ERR_clear_error();
  return std::shared_ptr<const CertificatePair>(std::move(pair));
}

CertWatcher::CertWatcher(CertWatcherOptions options)
    : options_(std::move(options)),
      cert_path_(options_.cert_dir + "/" + options_.cert_file),
      key_path_(options_.cert_dir + "/" + options_.key_file),
      expiry_(options_.registry
                  ->gauge("vscaler_serving_cert_expiry_timestamp_seconds",
                          "Expiry (notAfter) of the serving certificate being served, in seconds "
                          "since the epoch.")
                  .get()),
      reloads_ok_(reload_counter(*options_.registry).with({"success"})),
      reloads_failed_(reload_counter(*options_.registry).with({"failure"})) {}

CertWatcher::~CertWatcher() {
  stop();
}

base::Result<base::Unit> CertWatcher::reload() {
  std::lock_guard lock(load_mutex_);
  auto state = identity(cert_path_) + "|" + identity(key_path_);
  return load_locked(state);
}

base::Result<base::Unit> CertWatcher::load_locked(const std::string& state) {
  seen_state_ = state;
  settling_ = false;
  auto attempt = [&]() -> base::Result<std::shared_ptr<const CertificatePair>> {
    auto cert = read_file(cert_path_);
    if (!cert) return fail(std::move(cert).error());
    auto key = read_file(key_path_);
    if (!key) return fail(std::move(key).error());
    // A rotation in progress (one file renamed, the other not yet) can pair an old file with a
    // new one; the identities before and after the read tell, and the next poll retries.
    if (identity(cert_path_) + "|" + identity(key_path_) != state) {
      return fail("the files changed while being read");
    }
    return CertificatePair::from_pem(*cert, *key);
  };
  auto loaded = attempt();
  if (!loaded) {
    last_failed_ = true;
    bool had_pair = current() != nullptr;
    // A serving pair covers for a rotation caught half-way: the first failure of a file state
    // waits for one retry after the settle interval. Without a pair there is nothing to cover,
    // so the reason is reported at once.
    if (had_pair && unreported_failure_state_ != state) {
      unreported_failure_state_ = state;
      settling_ = true;
      return fail(std::move(loaded).error());
    }
    // Retried on every poll; logged and counted once per file state and reason.
    std::string key = state + "|" + loaded.error();
    if (key != last_logged_failure_) {
      last_logged_failure_ = key;
      reloads_failed_.inc();
      if (had_pair) {
        log::warn(kCertsLogger, "new serving certificate refused; the previous one keeps serving",
                  {{"cert_dir", options_.cert_dir}, {"reason", loaded.error()}});
      } else {
        log::error(kCertsLogger, "no serving certificate loaded; TLS handshakes fail until one is",
                   {{"cert_dir", options_.cert_dir}, {"reason", loaded.error()}});
      }
    }
    return fail(std::move(loaded).error());
  }
  auto pair = std::move(loaded).value();
  last_failed_ = false;
  last_logged_failure_.clear();
  unreported_failure_state_.clear();
  expiry_.set(static_cast<double>(pair->not_after()));
  reloads_ok_.inc();
  std::shared_ptr<const CertificatePair> previous;
  {
    std::lock_guard lock(current_mutex_);
    previous = std::exchange(current_, pair);
  }
  generation_.fetch_add(1);
  std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  log::info(kCertsLogger, previous ? "serving certificate reloaded" : "serving certificate loaded",
            {{"cert_dir", options_.cert_dir},
             {"subject", pair->subject()},
             {"sha256", pair->fingerprint()},
             {"not_before", base::rfc3339_seconds(pair->not_before())},
             {"not_after", base::rfc3339_seconds(pair->not_after())}});
  if (pair->not_after() <= now || pair->not_before() > now) {
    log::warn(kCertsLogger, "the serving certificate is not valid now; clients will refuse it",
              {{"not_before", base::rfc3339_seconds(pair->not_before())},
               {"not_after", base::rfc3339_seconds(pair->not_after())}});
  }
  return base::Unit{};
}

void CertWatcher::start() {
  {
    std::lock_guard lock(thread_mutex_);
    if (thread_.joinable()) return;
    stopping_ = false;
  }
  (void)reload();  // failures are logged; readiness reports them
  std::lock_guard lock(thread_mutex_);
  thread_ = std::thread([this] { run(); });
}

void CertWatcher::stop() {
  std::thread thread;
  {
    std::lock_guard lock(thread_mutex_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  wake_.notify_all();
  if (thread.joinable()) thread.join();
}

void CertWatcher::run() {
  std::unique_lock lock(thread_mutex_);
  auto wait = options_.poll_interval;
  while (!wake_.wait_for(lock, wait, [this] { return stopping_; })) {
    lock.unlock();
    {
      std::lock_guard load_lock(load_mutex_);
      auto state = identity(cert_path_) + "|" + identity(key_path_);
      if (state != seen_state_ || last_failed_) (void)load_locked(state);
      // A failure not reported yet is looked at again soon: by then either the rotation has
      // finished or the failure is real and gets reported.
      wait = settling_ ? options_.settle_interval : options_.poll_interval;
    }
    lock.lock();
  }
}

void CertWatcher::install(SSL_CTX* ctx) {
  SSL_CTX_set_cert_cb(ctx, &handshake_callback, this);
}

int CertWatcher::handshake_callback(SSL* ssl, void* arg) {
  auto* self = static_cast<CertWatcher*>(arg);
  auto pair = self->current();
  if (!pair) return 0;
  // SSL_use_cert_and_key takes its own references: the pair may be swapped out (and freed)
  // while this connection still uses it.
  return SSL_use_cert_and_key(ssl, pair->leaf(), pair->key(), pair->chain(), 1) == 1 ? 1 : 0;
}

}  // namespace vscaler::net
