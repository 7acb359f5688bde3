// admission_load: a TLS load generator for admission webhooks, the one bench/sections/webhook.sh
// drives vscaler and its peers with and test/e2e/rotation_test.sh drives the operator with.
//
// N client threads, one TLS connection each (verified against a CA), each POSTing the same
// AdmissionReview body with a fresh request.uid per request, over HTTP/1.1 keep-alive:
//  - closed loop (default): each connection sends its next request as soon as the previous answer
//    is read; reports reviews/s and client-side p50/p99/max latency after a warm-up;
//  - paced (--rate R): R requests/s over all connections, on a fixed schedule, open loop: each
//    latency counts from when the request was due (a late request is sent at once and its wait
//    counted), so a stall shows in p99/p999 instead of pausing the schedule; with
//    --reconnect-every N each connection is closed and reopened every N requests (a full
//    handshake, so a new serving certificate is seen) and, with --ca-dir, every reconnect trusts
//    the CA files present in DIR at that moment (ca.crt, ca-next.crt, ca-old.crt: what a client
//    holding the published caBundle trusts during a rotation).
// A request fails when connecting, the TLS handshake or its verification, writing, or reading the
// response fails, when the status is not 200, or (--check-uid) when the response does not carry
// the request's uid. Requests are written with one write of pre-built bytes and answers parsed
// in place, so the generator spends little of the CPU it shares with the server.
//
// Runs --seconds after --warmup (0: until SIGTERM/SIGINT), then prints one line on stdout:
//   admission_load connections=N sent=N ok=N failed=N seconds=S reviews_per_second=R p50_ms=X
//   p99_ms=X p999_ms=X max_ms=X handshakes=N certificates=N tls=VERSION:CIPHER answered=N
// (answered: every answer of the whole run, warm-up included, whatever its status: what a
// server's CPU time over the run divides by)
// and on stderr the distinct errors and the serving certificates seen (with when first seen).
// --timeline FILE also writes every measured request as "SECONDS LATENCY_MS" (when it was due,
// from the start; its latency), in time order: to see whether slow answers cluster (a stall).
// Exit status: 0 when no request failed, 1 when one did, 2 on bad usage.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string path = "/mutate-deployments";
  std::string body_file;
  std::string ca_file;
  std::string ca_dir;
  int connections = 1;
  double seconds = 5;
  double warmup = 0.5;
  double rate = 0;
  long reconnect_every = 0;
  bool check_uid = false;
  std::string timeline_file;
};

constexpr const char* kUsage =
    "usage: admission_load --port PORT --body FILE (--ca FILE | --ca-dir DIR) [--host 127.0.0.1]\n"
    "         [--path /mutate-deployments] [--connections 1] [--seconds 5 (0: until signalled)]\n"
    "         [--warmup 0.5] [--rate R (requests/s; default: closed loop)]\n"
    "         [--reconnect-every N] [--check-uid] [--timeline FILE]\n";

// Paced mode: how far behind its schedule a connection may fall before it skips ahead.
constexpr auto kMaxBacklog = std::chrono::seconds(1);

std::atomic<bool> g_signalled{false};
void on_signal(int /*signal*/) {
  g_signalled.store(true);
}

std::string openssl_error() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no OpenSSL error";
  char buffer[256];
  ERR_error_string_n(code, buffer, sizeof buffer);
  return buffer;
}

// The trust store and settings of one or more connections.
struct ContextDeleter {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
using Context = std::unique_ptr<SSL_CTX, ContextDeleter>;

// A client context trusting `files` (those that exist and parse; at least one must).
Context make_context(const std::vector<std::string>& files, std::string& error) {
  Context ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) {
    error = "SSL_CTX_new: " + openssl_error();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  int loaded = 0;
  for (const auto& file : files) {
    if (SSL_CTX_load_verify_file(ctx.get(), file.c_str()) == 1) {
      ++loaded;
    } else {
      ERR_clear_error();  // absent, or being replaced: the others still count
    }
  }
  if (loaded == 0) {
    error = "no CA certificate could be loaded";
    return nullptr;
  }
  return ctx;
}

std::vector<std::string> ca_files(const Options& options) {
  if (!options.ca_file.empty()) return {options.ca_file};
  std::vector<std::string> files;
  // ca-next.crt before ca.crt: certs/rotate.sh promotes the next CA by renaming ca-next.crt onto
  // ca.crt, and a reader of ca.crt first could see the old ca.crt, then no ca-next.crt, and trust
  // only the old CA while the new one's certificate is served (CI, 1 of 17,847 handshakes).
  // Read in this order, the next CA is seen under one name or the other.
  for (const char* name : {"ca-next.crt", "ca.crt", "ca-old.crt"}) {
    files.push_back(options.ca_dir + "/" + name);
  }
  return files;
}

std::string fingerprint(X509* cert) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  X509_digest(cert, EVP_sha256(), digest, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

// One HTTP response, parsed from the connection's buffer.
struct Response {
  int status = 0;
  bool close = false;
  std::string_view body;
};

// One TLS connection, blocking, with 10 s socket timeouts.
class Connection {
 public:
  Connection() = default;
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool is_open() const { return ssl_ != nullptr; }

  // Connects and handshakes, verifying the server's certificate for `host`.
  bool open(SSL_CTX* ctx, const Options& options, std::string& error) {
    close();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    std::string port = std::to_string(options.port);
    if (int rc = ::getaddrinfo(options.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      error = std::string("resolve: ") + ::gai_strerror(rc);
      return false;
    }
    fd_ = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
    if (fd_ >= 0 && ::connect(fd_, found->ai_addr, found->ai_addrlen) != 0) {
      error = std::string("connect: ") + std::strerror(errno);
      ::freeaddrinfo(found);
      close();
      return false;
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) {
      error = std::string("socket: ") + std::strerror(errno);
      return false;
    }
    int yes = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    timeval timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    ssl_ = SSL_new(ctx);
    SSL_set_fd(ssl_, fd_);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
    in6_addr ignored{};
    bool is_ip = ::inet_pton(AF_INET, options.host.c_str(), &ignored) == 1 ||
                 ::inet_pton(AF_INET6, options.host.c_str(), &ignored) == 1;
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(param, options.host.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, options.host.c_str(), 0);
      // SNI; SSL_set_tlsext_host_name is a macro with an old-style cast.
      SSL_ctrl(ssl_, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(options.host.c_str()));
    }
    if (SSL_connect(ssl_) != 1) {
      long verify = SSL_get_verify_result(ssl_);
      error = "TLS handshake: " + (verify != X509_V_OK
                                       ? std::string(X509_verify_cert_error_string(verify))
                                       : openssl_error());
      close();
      return false;
    }
    in_.clear();
    return true;
  }

  void close() {
    if (ssl_ != nullptr) {
      SSL_free(ssl_);
      ssl_ = nullptr;
    }
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  SSL* ssl() const { return ssl_; }

  // Sends `request` and reads one response into `response` (its body points into this
  // connection's buffer until the next call).
  bool exchange(std::string_view request, Response& response, std::string& error) {
    ERR_clear_error();
    if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) <= 0) {
      error = "write: " + io_error(-1);
      return false;
    }
    in_.erase(0, consumed_);
    consumed_ = 0;
    while (true) {
      Parse state = parse(response);
      if (state == Parse::kDone) return true;
      if (state == Parse::kBad) {
        error = "malformed HTTP response";
        return false;
      }
      char buffer[16384];
      int n = SSL_read(ssl_, buffer, sizeof buffer);
      if (n <= 0) {
        error = "read: " + io_error(n);
        return false;
      }
      in_.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  enum class Parse { kDone, kMore, kBad };

  std::string io_error(int rc) {
    int code = SSL_get_error(ssl_, rc);
    if (code == SSL_ERROR_ZERO_RETURN) return "connection closed by the server";
    if (code == SSL_ERROR_SYSCALL) {
      if (errno == 0) return "connection closed by the server (EOF)";
      if (errno == EAGAIN || errno == EWOULDBLOCK) return "timed out (10 s)";
      return std::strerror(errno);
    }
    return openssl_error();
  }

  static bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) ==
                    std::tolower(static_cast<unsigned char>(y));
           });
  }

  // Parses a complete response at the start of in_, if there is one.
  Parse parse(Response& response) {
    std::string_view data(in_);
    auto end = data.find("\r\n\r\n");
    if (end == std::string_view::npos) return data.size() > 65536 ? Parse::kBad : Parse::kMore;
    if (data.size() < 12 || data.substr(0, 5) != "HTTP/") return Parse::kBad;
    response.status = std::atoi(std::string(data.substr(9, 3)).c_str());
    response.close = false;
    long length = -1;
    bool chunked = false;
    std::size_t at = data.find("\r\n") + 2;
    while (at < end) {
      std::size_t line_end = data.find("\r\n", at);
      std::string_view line = data.substr(at, line_end - at);
      at = line_end + 2;
      auto colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = line.substr(0, colon);
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (iequals(name, "content-length")) {
        length = std::atol(std::string(value).c_str());
      } else if (iequals(name, "transfer-encoding")) {
        chunked = value.find("chunked") != std::string_view::npos;
      } else if (iequals(name, "connection")) {
        response.close = iequals(value, "close");
      }
    }
    std::size_t body = end + 4;
    if (chunked) {
      // Complete once the last (zero-size) chunk and the trailer's empty line are here; the
      // chunks are then copied into decoded_.
      decoded_.clear();
      std::size_t at_chunk = body;
      while (true) {
        auto line_end = data.find("\r\n", at_chunk);
        if (line_end == std::string_view::npos) return Parse::kMore;
        char* parsed_end = nullptr;
        long size = std::strtol(in_.c_str() + at_chunk, &parsed_end, 16);
        if (size < 0 || parsed_end == in_.c_str() + at_chunk) return Parse::kBad;
        if (size == 0) {
          auto trailer_end = data.find("\r\n\r\n", line_end);
          if (trailer_end == std::string_view::npos) return Parse::kMore;
          response.body = decoded_;
          consumed_ = trailer_end + 4;
          return Parse::kDone;
        }
        std::size_t from = line_end + 2;
        if (data.size() < from + static_cast<std::size_t>(size) + 2) return Parse::kMore;
        decoded_.append(data.substr(from, static_cast<std::size_t>(size)));
        at_chunk = from + static_cast<std::size_t>(size) + 2;
      }
    }
    if (length < 0) {
      // Neither a length nor chunks: the body ends when the server closes. Webhook servers
      // never answer that way; treat it as malformed rather than wait.
      return Parse::kBad;
    }
    if (data.size() < body + static_cast<std::size_t>(length)) return Parse::kMore;
    response.body = data.substr(body, static_cast<std::size_t>(length));
    consumed_ = body + static_cast<std::size_t>(length);
    return Parse::kDone;
  }

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string in_;
  std::size_t consumed_ = 0;
  std::string decoded_;  // a chunked response's body
};

// What one client thread saw.
struct ThreadResult {
  long answered = 0;  // every exchange that got an answer, warm-up and the window's end included
  long ok = 0;
  long failed = 0;
  long handshakes = 0;
  std::vector<double> latencies_ms;
  std::vector<double> sent_at_s;  // --timeline: when each measured request was due (or sent)
  std::map<std::string, long> errors;
  std::map<std::string, double> certificates;  // fingerprint -> first seen, seconds from start
  std::string tls;
};

// The request bytes with request.uid at a known place, rewritten for every request.
struct RequestTemplate {
  std::string bytes;
  std::size_t uid_at = std::string::npos;
  std::size_t uid_length = 0;
};

RequestTemplate build_request(const Options& options, const std::string& body) {
  RequestTemplate out;
  std::string uid;
  try {
    auto review = nlohmann::json::parse(body);
    uid = review.at("request").at("uid").get<std::string>();
  } catch (const std::exception& e) {
    std::cerr << "admission_load: " << options.body_file
              << " is not an AdmissionReview with a request.uid: " << e.what() << "\n";
    std::exit(2);
  }
  std::ostringstream head;
  head << "POST " << options.path << " HTTP/1.1\r\nHost: " << options.host << ":" << options.port
       << "\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: "
       << body.size() << "\r\n\r\n";
  out.bytes = head.str();
  std::size_t body_at = out.bytes.size();
  out.bytes += body;
  auto at = body.find("\"" + uid + "\"");
  if (!uid.empty() && at != std::string::npos) {
    out.uid_at = body_at + at + 1;
    out.uid_length = uid.size();
  }
  return out;
}

// Writes a request uid unique to (thread, sequence) over the template's, keeping its length and
// its dashes (a UUID stays UUID-shaped).
void stamp_uid(std::string& bytes, const RequestTemplate& request, int thread, long sequence) {
  if (request.uid_at == std::string::npos) return;
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(thread + 1),
                static_cast<unsigned long long>(sequence));
  std::size_t digit = 0;
  for (std::size_t i = request.uid_length; i-- > 0;) {  // the counter's end lands at the uid's end
    char& c = bytes[request.uid_at + i];
    if (c == '-') continue;
    c = hex[31 - (digit++ % 32)];
  }
}

double percentile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  auto index = static_cast<std::size_t>(fraction * static_cast<double>(sorted.size()));
  return sorted[std::min(sorted.size() - 1, index)];
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::cerr << "admission_load: cannot read " << path << "\n";
    std::exit(2);
  }
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool parse_options(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--check-uid") {
      options.check_uid = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    std::string value = argv[++i];
    try {
      if (flag == "--host") {
        options.host = value;
      } else if (flag == "--port") {
        options.port = std::stoi(value);
      } else if (flag == "--path") {
        options.path = value;
      } else if (flag == "--body") {
        options.body_file = value;
      } else if (flag == "--ca") {
        options.ca_file = value;
      } else if (flag == "--ca-dir") {
        options.ca_dir = value;
      } else if (flag == "--connections") {
        options.connections = std::stoi(value);
      } else if (flag == "--seconds") {
        options.seconds = std::stod(value);
      } else if (flag == "--warmup") {
        options.warmup = std::stod(value);
      } else if (flag == "--rate") {
        options.rate = std::stod(value);
      } else if (flag == "--reconnect-every") {
        options.reconnect_every = std::stol(value);
      } else if (flag == "--timeline") {
        options.timeline_file = value;
      } else {
        return false;
      }
    } catch (const std::exception&) {
      return false;
    }
  }
  return options.port > 0 && !options.body_file.empty() &&
         (options.ca_file.empty() != options.ca_dir.empty()) && options.connections > 0 &&
         options.seconds >= 0 && options.warmup >= 0 && options.rate >= 0 &&
         options.reconnect_every >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, options)) {
    std::cerr << kUsage;
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  // Paced requests wake up at their due time; the default timer slack (50 us) would add up to
  // that much to every latency, counted against the server (latencies run from the due time).
  if (options.rate > 0) ::prctl(PR_SET_TIMERSLACK, 1000UL);  // 1 us; threads inherit it

  const RequestTemplate request = build_request(options, read_file(options.body_file));
  if (options.check_uid && request.uid_at == std::string::npos) {
    std::cerr << "admission_load: --check-uid needs request.uid quoted in the body\n";
    return 2;
  }
  // One context for every connection with --ca; a new one per connection with --ca-dir, so the
  // CA files are re-read.
  Context shared;
  if (!options.ca_file.empty()) {
    std::string error;
    shared = make_context(ca_files(options), error);
    if (!shared) {
      std::cerr << "admission_load: " << options.ca_file << ": " << error << "\n";
      return 2;
    }
  }

  std::atomic<bool> measuring{options.warmup == 0};
  std::atomic<bool> stop{false};
  const auto started = Clock::now();
  const auto interval = options.rate > 0
                            ? std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(options.connections / options.rate))
                            : Clock::duration::zero();
  std::vector<ThreadResult> results(static_cast<std::size_t>(options.connections));
  std::vector<std::thread> threads;
  for (int t = 0; t < options.connections; ++t) {
    threads.emplace_back([&, t] {
      ThreadResult& mine = results[static_cast<std::size_t>(t)];
      mine.latencies_ms.reserve(options.rate > 0 ? 65536 : 1 << 20);
      std::string bytes = request.bytes;
      Connection connection;
      long used = 0;
      long sequence = 0;
      auto next = started + interval * t / options.connections;
      auto fail = [&](const std::string& error) {
        ++mine.failed;
        ++mine.errors[error];
      };
      while (!stop.load(std::memory_order_relaxed)) {
        // Paced: open loop. Each request is timed from when it was due, not from when it could
        // be sent, so a slow answer delaying the next requests counts against them too (no
        // coordinated omission); late requests go out at once, to catch up.
        Clock::time_point due{};
        if (interval != Clock::duration::zero()) {
          std::this_thread::sleep_until(next);
          due = next;
          next += interval;
          // A backlog over a second (a reconnect that failed, an outage) is dropped rather than
          // burst out.
          auto now = Clock::now();
          if (next < now - kMaxBacklog) next = now;
        }
        if (!connection.is_open() ||
            (options.reconnect_every > 0 && used >= options.reconnect_every)) {
          std::string error;
          Context own;
          SSL_CTX* ctx = shared.get();
          if (ctx == nullptr) {
            own = make_context(ca_files(options), error);
            ctx = own.get();
          }
          if (ctx == nullptr || !connection.open(ctx, options, error)) {
            fail(error);
            if (interval == Clock::duration::zero()) {
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            continue;
          }
          ++mine.handshakes;
          used = 0;
          if (mine.tls.empty()) {
            mine.tls = std::string(SSL_get_version(connection.ssl())) + ":" +
                       SSL_CIPHER_get_name(SSL_get_current_cipher(connection.ssl()));
          }
          if (X509* peer = SSL_get0_peer_certificate(connection.ssl()); peer != nullptr) {
            std::chrono::duration<double> at = Clock::now() - started;
            mine.certificates.emplace(fingerprint(peer), at.count());
          }
        }
        stamp_uid(bytes, request, t, ++sequence);
        Response response;
        std::string error;
        auto start = interval != Clock::duration::zero() ? due : Clock::now();
        bool exchanged = connection.exchange(bytes, response, error);
        std::chrono::duration<double, std::milli> latency = Clock::now() - start;
        ++used;
        if (!exchanged) {
          fail(error);
          connection.close();
          continue;
        }
        ++mine.answered;
        if (response.status != 200) {
          fail("HTTP " + std::to_string(response.status));
        } else if (options.check_uid &&
                   response.body.find(std::string_view(bytes).substr(
                       request.uid_at, request.uid_length)) == std::string_view::npos) {
          fail("the response does not carry the request's uid");
        } else if (measuring.load(std::memory_order_relaxed)) {
          ++mine.ok;
          mine.latencies_ms.push_back(latency.count());
          if (!options.timeline_file.empty()) {
            mine.sent_at_s.push_back(std::chrono::duration<double>(start - started).count());
          }
        }
        if (response.close) connection.close();
      }
    });
  }

  auto wait_until = [&](Clock::time_point deadline) {
    while (!g_signalled.load() && Clock::now() < deadline) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(std::chrono::milliseconds(50), deadline - Clock::now()));
    }
  };
  wait_until(started + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(options.warmup)));
  measuring.store(true);
  auto measure_start = Clock::now();
  wait_until(options.seconds > 0
                 ? measure_start + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(options.seconds))
                 : Clock::time_point::max());
  measuring.store(false);
  std::chrono::duration<double> elapsed = Clock::now() - measure_start;
  stop.store(true);
  for (auto& thread : threads) thread.join();

  if (!options.timeline_file.empty()) {
    // One line per measured request, in the order sent: seconds from start, latency (ms).
    std::FILE* out = std::fopen(options.timeline_file.c_str(), "w");
    if (out == nullptr) {
      std::cerr << "admission_load: cannot write " << options.timeline_file << "\n";
    } else {
      std::vector<std::pair<double, double>> rows;
      for (const auto& result : results) {
        for (std::size_t i = 0; i < result.sent_at_s.size(); ++i) {
          rows.emplace_back(result.sent_at_s[i], result.latencies_ms[i]);
        }
      }
      std::sort(rows.begin(), rows.end());
      for (const auto& [at, ms] : rows) std::fprintf(out, "%.6f %.3f\n", at, ms);
      std::fclose(out);
    }
  }
  ThreadResult total;
  for (auto& result : results) {
    total.answered += result.answered;
    total.ok += result.ok;
    total.failed += result.failed;
    total.handshakes += result.handshakes;
    total.latencies_ms.insert(total.latencies_ms.end(), result.latencies_ms.begin(),
                              result.latencies_ms.end());
    for (const auto& [error, count] : result.errors) total.errors[error] += count;
    for (const auto& [print, at] : result.certificates) {
      auto [it, added] = total.certificates.emplace(print, at);
      if (!added) it->second = std::min(it->second, at);
    }
    if (total.tls.empty()) total.tls = result.tls;
  }
  std::sort(total.latencies_ms.begin(), total.latencies_ms.end());

  for (const auto& [error, count] : total.errors) {
    std::cerr << "admission_load: " << count << " x " << error << "\n";
  }
  std::vector<std::pair<double, std::string>> seen;
  for (const auto& [print, at] : total.certificates) seen.emplace_back(at, print);
  std::sort(seen.begin(), seen.end());
  for (const auto& [at, print] : seen) {
    std::fprintf(stderr, "admission_load: serving certificate %.16s... first seen at %.1f s\n",
                 print.c_str(), at);
  }
  double seconds = elapsed.count();
  std::printf(
      "admission_load connections=%d sent=%ld ok=%ld failed=%ld seconds=%.2f "
      "reviews_per_second=%.1f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f "
      "handshakes=%ld certificates=%zu tls=%s answered=%ld\n",
      options.connections, total.ok + total.failed, total.ok, total.failed, seconds,
      seconds > 0 ? static_cast<double>(total.ok) / seconds : 0.0,
      percentile(total.latencies_ms, 0.5), percentile(total.latencies_ms, 0.99),
      percentile(total.latencies_ms, 0.999),
      total.latencies_ms.empty() ? 0.0 : total.latencies_ms.back(), total.handshakes,
      total.certificates.size(), total.tls.empty() ? "none" : total.tls.c_str(), total.answered);
  return total.failed == 0 ? 0 : 1;
}
