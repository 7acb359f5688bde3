// Serving certificates: PEM pairs checked to belong together, chains, the expiry metric, and the
// watcher keeping the previous pair when a new one is broken.
#include "net/cert_watcher.h"

#include <doctest/doctest.h>
#include <openssl/pem.h>

#include <chrono>
#include <thread>

#include "test/unit/support/eventually.h"
#include "test/unit/webhook/tls_fixture.h"

using namespace std::chrono_literals;
using vscaler::metrics::Registry;
using vscaler::net::CertificatePair;
using vscaler::net::CertWatcher;
using vscaler::net::CertWatcherOptions;
using vscaler::testing::eventually;
using vscaler::testing::TempDir;
using vscaler::testing::TestCa;
using vscaler::testing::write_file;

TEST_CASE("certs: a matching pair loads, with its expiry, fingerprint and chain") {
  TestCa ca;
  auto pair = ca.issue(7, 30);
  auto loaded = CertificatePair::from_pem(pair.cert + ca.cert_pem(), pair.key);
  REQUIRE_MESSAGE(loaded.ok(), (loaded.ok() ? "" : loaded.error()));
  const auto& certificate = **loaded;
  auto now = static_cast<std::int64_t>(std::time(nullptr));
  CHECK(certificate.not_after() > now + 29 * 86400);
  CHECK(certificate.not_after() <= now + 30 * 86400 + 60);
  CHECK(certificate.not_before() < now);
  CHECK(certificate.fingerprint() == vscaler::testing::fingerprint_of(pair.cert));
  CHECK(certificate.subject() == "CN=vscaler-webhook");
  CHECK(sk_X509_num(certificate.chain()) == 1);
}

TEST_CASE("certs: broken pairs are refused with a reason that quotes no key material") {
  TestCa ca;
  auto pair = ca.issue(1);
  auto other = ca.issue(2);
  auto error = [](const std::string& cert, const std::string& key) {
    auto loaded = CertificatePair::from_pem(cert, key);
    REQUIRE_FALSE(loaded.ok());
    return loaded.error();
  };
  CHECK(error("", pair.key).starts_with("the certificate file holds no PEM certificate"));
  CHECK(error("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", pair.key)
            .starts_with("the certificate file holds no PEM certificate"));
  CHECK(error(pair.cert, "").starts_with("the key file holds no unencrypted PEM private key"));
  CHECK(error(pair.cert, pair.cert).starts_with("the key file holds no unencrypted PEM"));
  auto mismatch = error(pair.cert, other.key);
  CHECK(mismatch.starts_with("the private key does not match the certificate"));
  CHECK(mismatch.find("PRIVATE KEY") == std::string::npos);

  // An encrypted key fails instead of prompting on the terminal.
  BIO* in = BIO_new_mem_buf(pair.key.data(), static_cast<int>(pair.key.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(in, nullptr, nullptr, nullptr);
  BIO_free(in);
  BIO* out = BIO_new(BIO_s_mem());
  const char* password = "secret";
  PEM_write_bio_PKCS8PrivateKey(out, key, EVP_aes_256_cbc(), password, 6, nullptr, nullptr);
  char* data = nullptr;
  long size = BIO_get_mem_data(out, &data);
  std::string encrypted(data, static_cast<std::size_t>(size));
  BIO_free(out);
  EVP_PKEY_free(key);
  CHECK(error(pair.cert, encrypted).starts_with("the key file holds no unencrypted PEM"));
}

TEST_CASE("certs: the watcher loads, exposes the expiry, keeps the old pair on a broken one") {
  TestCa ca;
  TempDir dir;
  Registry registry;
  auto first = ca.issue(1, 10);
  write_file(dir.file("tls.crt"), first.cert);
  write_file(dir.file("tls.key"), first.key);
  CertWatcherOptions options;
  options.cert_dir = dir.path();
  options.poll_interval = 50ms;
  options.registry = &registry;
  CertWatcher watcher(options);
  CHECK_FALSE(watcher.loaded());
  REQUIRE(watcher.reload().ok());
  CHECK(watcher.loaded());
  CHECK(watcher.generation() == 1);
  auto expiry = watcher.current()->not_after();
  CHECK(registry.render().find("vscaler_serving_cert_expiry_timestamp_seconds " +
                               std::to_string(expiry) + "\n") != std::string::npos);

  auto other = ca.issue(2, 20);
  write_file(dir.file("tls.key"), other.key);  // the certificate is still first's
  auto refused = watcher.reload();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().starts_with("the private key does not match"));
  CHECK(watcher.current()->not_after() == expiry);

  // The polling thread picks up the fix (and the new expiry) on its own.
  watcher.start();
  write_file(dir.file("tls.crt"), other.cert);
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (watcher.generation() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(watcher.generation() == 2);
  CHECK(watcher.current()->not_after() > expiry);
  // Counted once per refused file state, not per retry (a poll may also catch the file while
  // it is being written, hence at least one).
  auto text = registry.render();
  auto at = text.find("vscaler_serving_cert_reloads_total{result=\"failure\"} ");
  REQUIRE(at != std::string::npos);
  auto failures = std::stoi(text.substr(at + 53));
  CHECK(failures >= 1);
  CHECK(failures <= 3);
  watcher.stop();
  watcher.stop();
}

namespace {

// The failure count the watcher's registry shows (0 before the first failure).
int reload_failures(Registry& registry) {
  auto text = registry.render();
  const std::string name = "vscaler_serving_cert_reloads_total{result=\"failure\"} ";
  auto at = text.find(name);
  return at == std::string::npos ? 0 : std::stoi(text.substr(at + name.size()));
}

// A watcher polling every 10 ms, started on a directory holding a valid 10-day pair.
struct StartedWatcher {
  explicit StartedWatcher(std::chrono::milliseconds settle) : watcher(options(settle)) {
    watcher.start();
  }
  CertWatcherOptions options(std::chrono::milliseconds settle) {
    auto first = ca.issue(1, 10);
    write_file(dir.file("tls.crt"), first.cert);
    write_file(dir.file("tls.key"), first.key);
    CertWatcherOptions result;
    result.cert_dir = dir.path();
    result.poll_interval = 10ms;
    result.settle_interval = settle;
    result.registry = &registry;
    return result;
  }
  TestCa ca;
  TempDir dir;
  Registry registry;
  CertWatcher watcher;
};

}  // namespace

TEST_CASE("certs: a rotation caught between its key and its certificate is not a failure") {
  // certs/rotate.sh renames the new key into place, then the new certificate: a poll between the
  // two sees a mismatched pair. The watcher retries that state after the settle interval and,
  // the certificate having arrived meanwhile, loads the new pair without reporting anything.
  StartedWatcher started(400ms);
  auto& [ca, dir, registry, watcher] = started;
  REQUIRE(watcher.generation() == 1);
  auto first_expiry = watcher.current()->not_after();

  auto next = ca.issue(2, 20);
  write_file(dir.file("tls.key"), next.key);
  std::this_thread::sleep_for(100ms);  // ten polls: the mismatch has been seen, not reported
  write_file(dir.file("tls.crt"), next.cert);
  CHECK(eventually([&] { return watcher.generation() == 2; }));
  CHECK(watcher.current()->not_after() > first_expiry);  // the 20-day certificate
  CHECK(reload_failures(registry) == 0);
}

TEST_CASE("certs: a mismatch that outlasts the settle interval is reported once") {
  StartedWatcher started(20ms);
  auto& [ca, dir, registry, watcher] = started;
  write_file(dir.file("tls.key"), ca.issue(2, 20).key);
  CHECK(eventually([&] { return reload_failures(registry) == 1; }));
  std::this_thread::sleep_for(100ms);  // many more polls of the same broken state
  CHECK(reload_failures(registry) == 1);
  CHECK(watcher.generation() == 1);  // the first pair keeps serving
}

TEST_CASE("certs: a missing directory is not fatal; loading starts when the files appear") {
  TempDir dir;
  Registry registry;
  CertWatcherOptions options;
  options.cert_dir = dir.file("not-yet");
  options.poll_interval = 50ms;
  options.registry = &registry;
  CertWatcher watcher(options);
  watcher.start();
  CHECK_FALSE(watcher.loaded());
  auto reason = watcher.reload();
  REQUIRE_FALSE(reason.ok());
  CHECK(reason.error().starts_with("cannot read " + dir.file("not-yet") + "/tls.crt"));
  TestCa ca;
  auto pair = ca.issue(1);
  std::filesystem::create_directory(dir.file("not-yet"));
  write_file(dir.file("not-yet/tls.key"), pair.key);
  write_file(dir.file("not-yet/tls.crt"), pair.cert);
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!watcher.loaded() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(watcher.loaded());
}
