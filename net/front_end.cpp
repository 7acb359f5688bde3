#include "net/front_end.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <utility>

#include "base/cpus.h"
#include "base/log.h"
#include "net/event_loop.h"

namespace vscaler::net {
namespace {

// Descriptors kept free of connections for everything else the process opens.
constexpr rlim_t kReservedFds = 256;

// Raises the soft RLIMIT_NOFILE to the hard limit (idle connections now cost descriptors, not
// threads) and returns how many descriptors connections may use.
std::size_t descriptor_budget() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024 - kReservedFds;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return limit.rlim_cur > 2 * kReservedFds ? static_cast<std::size_t>(limit.rlim_cur - kReservedFds)
                                           : static_cast<std::size_t>(limit.rlim_cur / 2);
}

base::Result<int> listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int error = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); error != 0) {
    return base::fail("cannot listen on " + host + ":" + service + ": " + gai_strerror(error));
  }
  std::string failure = "no address";
  for (addrinfo* at = found; at != nullptr; at = at->ai_next) {
    int fd = ::socket(at->ai_family, at->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      failure = std::strerror(errno);
      continue;
    }
    int yes = 1;
    int no = 0;
    // Not SO_REUSEPORT: a second process on the same port must fail to bind, not silently
    // receive half the API server's calls.
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (at->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
    if (::bind(fd, at->ai_addr, at->ai_addrlen) == 0 && ::listen(fd, 4096) == 0) {
      ::freeaddrinfo(found);
      return fd;
    }
    failure = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return base::fail("cannot listen on " + host + ":" + service + ": " + failure);
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
}

}  // namespace

FrontEnd::FrontEnd(SSL_CTX* ctx, FrontEndOptions options, Serve serve, Refused refused, Quick quick)
    : shared_(std::make_unique<LoopShared>()) {
  auto& shared = *shared_;
  shared.ctx = ctx;
  shared.options = std::move(options);
  shared.serve = std::move(serve);
  shared.refused = std::move(refused);
  shared.quick = std::move(quick);
  auto& registry = *shared.options.registry;
  const std::string prefix = "vscaler_" + shared.options.name + "_";
  shared.logger = shared.options.name + ".server";
  bool tls = ctx != nullptr;
  shared.open = &registry
                     .gauge(prefix + "open_connections",
                            tls ? "TLS connections open on the " + shared.options.name + " server."
                                : "Connections open on the " + shared.options.name + " server.")
                     .get();
  shared.errors = &registry.counter(
      prefix + "internal_errors_total",
      "Exceptions and failed system calls in the " + shared.options.name + " server, by where.",
      {"where"});
  shared.rejected = &registry.counter(
      prefix + "rejected_total",
      "Requests and connections refused before a handler ran, and idle ones closed to make room "
      "at the connection cap (evicted_at_capacity), by reason.",
      {"reason"});
  if (tls) {
    shared.handshake_errors = &registry
                                   .counter(prefix + "tls_handshake_errors_total",
                                            "TLS handshakes that failed (plain HTTP, old TLS "
                                            "versions, no certificate, timeouts).")
                                   .get();
    shared.handshake_seconds =
        &registry
             .histogram(prefix + "tls_handshake_seconds",
                        "Time from accepting a connection to the end of its TLS handshake.", {})
             .get();
  }
}

FrontEnd::~FrontEnd() {
  stop(std::chrono::milliseconds(0));
}

base::Result<int> FrontEnd::start() {
  auto& shared = *shared_;
  if (shared.listen_fd >= 0) return base::fail("the front end was already started");
  // OpenSSL writes to sockets with write(2): a peer that went away would kill the process with
  // SIGPIPE instead of failing the write. Servers ignore it (cpp-httplib did too).
  std::signal(SIGPIPE, SIG_IGN);
  const auto& options = shared.options;
  std::size_t total = std::min(options.max_connections, descriptor_budget());
  shared.limiter = ConnectionLimiter(total, options.max_connections_per_address);
  std::string host = options.host.empty() ? "::" : options.host;
  auto listening = listen_on(host, options.port);
  if (!listening && options.host.empty()) listening = listen_on("0.0.0.0", options.port);
  if (!listening) return base::fail(listening.error());
  shared.listen_fd = *listening;
  int port = bound_port(shared.listen_fd);
  std::size_t loops = options.event_loops;
  // The CPUs the pod may use, not the node's: 64 loops under a 1-CPU limit only get throttled.
  if (loops == 0) loops = std::max<std::size_t>(4, base::usable_cpus());
  for (std::size_t i = 0; i < loops; ++i) {
    auto loop = std::make_unique<EventLoop>(shared);
    if (auto opened = loop->open(); !opened) {
      loops_.clear();
      ::close(shared.listen_fd);
      shared.listen_fd = -1;
      return base::fail("cannot set up the event loop: " + opened.error());
    }
    loops_.push_back(std::move(loop));
  }
  // As many waiting jobs as connections (HTTP/2 connections may queue more than one each): what
  // they hold stays within the shared budget, since each job carries its body's reservation.
  shared.pool = std::make_unique<base::WorkerPool>(options.workers, total);
  for (auto& loop : loops_) loop->start();
  log::info(shared.logger, "serving",
            {{"port", std::to_string(port)},
             {"tls", shared.ctx != nullptr ? "true" : "false"},
             {"max_connections", std::to_string(total)},
             {"max_connections_per_address", std::to_string(options.max_connections_per_address)},
             {"event_loops", std::to_string(loops)},
             {"workers", std::to_string(options.workers)}});
  return port;
}

void FrontEnd::stop(std::chrono::milliseconds grace) {
  auto& shared = *shared_;
  if (loops_.empty()) return;
  shared.grace_ms.store(grace.count());
  shared.stop_requested.store(true);
  for (auto& loop : loops_) loop->wake();
  {
    // Every loop lets go of the listening socket first; closing it then frees the port while
    // requests under way finish.
    std::unique_lock lock(shared.stop_mutex);
    shared.released_listener.wait(lock, [&] { return shared.released == loops_.size(); });
  }
  ::close(shared.listen_fd);
  for (auto& loop : loops_) loop->join();
  // The workers first: a handler still running past the grace period hands its response to
  // its loop (EventLoop::work), which must still exist (TSan: a use after free the other way).
  shared.pool->stop();
  loops_.clear();
}

}  // namespace vscaler::net
