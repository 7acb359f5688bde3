#include "webhook/front_end.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kube/log.h"
#include "webhook/connection_limiter.h"
#include "webhook/worker_pool.h"

namespace vscaler::webhook {
namespace {

constexpr std::string_view kLogger = "webhook.server";
constexpr std::uint64_t kListenId = 0;
constexpr std::uint64_t kWakeId = 1;
// Accepts per wake-up, so that a flood of new connections cannot starve the ones open.
constexpr int kAcceptBatch = 64;
// After EMFILE and friends: stop accepting this long (the listen socket stays readable, so
// accepting again at once would spin).
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// Descriptors kept free of connections for everything else the process opens.
constexpr rlim_t kReservedFds = 256;

// The peer's address as a key for the per-address cap: 4 bytes for IPv4 (also IPv4-mapped
// IPv6, what a dual-stack socket reports), 16 for IPv6.
std::string address_key(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    return std::string(reinterpret_cast<const char*>(&v4.sin_addr), 4);
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {
      return std::string(reinterpret_cast<const char*>(&v6.sin6_addr.s6_addr[12]), 4);
    }
    return std::string(reinterpret_cast<const char*>(&v6.sin6_addr), 16);
  }
  return {};
}

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

kube::Result<int> listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int error = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); error != 0) {
    return kube::fail("cannot listen on " + host + ":" + service + ": " + gai_strerror(error));
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
  return kube::fail("cannot listen on " + host + ":" + service + ": " + failure);
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

class FrontEnd::Loop {
 public:
  Loop(SSL_CTX* ctx, FrontEndOptions options, Serve serve, Refused refused)
      : ctx_(ctx),
        options_(std::move(options)),
        serve_(std::move(serve)),
        open_(options_.registry
                  ->gauge("vscaler_webhook_open_connections",
                          "TLS connections open on the admission server.")
                  .get()),
        errors_(options_.registry->counter(
            "vscaler_webhook_internal_errors_total",
            "Exceptions and failed system calls in the admission server, by where.", {"where"})),
        limiter_(1, 1) {
    env_.limits = options_.limits;
    env_.refused = std::move(refused);
    env_.rejected = &options_.registry->counter(
        "vscaler_webhook_rejected_total",
        "Requests and connections refused before a handler ran, by reason.", {"reason"});
    env_.handshake_errors = &options_.registry
                                 ->counter("vscaler_webhook_tls_handshake_errors_total",
                                           "TLS handshakes that failed (plain HTTP, old TLS "
                                           "versions, no certificate, timeouts).")
                                 .get();
    env_.dispatch = [this](std::uint64_t id, Request request) {
      return dispatch(id, std::move(request));
    };
  }

  ~Loop() { stop(std::chrono::milliseconds(0)); }

  kube::Result<int> start() {
    // OpenSSL writes to sockets with write(2): a peer that went away would kill the process
    // with SIGPIPE instead of failing the write. Servers ignore it (cpp-httplib did too).
    std::signal(SIGPIPE, SIG_IGN);
    std::size_t budget = descriptor_budget();
    std::size_t total = std::min(options_.max_connections, budget);
    limiter_ = ConnectionLimiter(total, options_.max_connections_per_address);
    std::string host = options_.host.empty() ? "::" : options_.host;
    auto listening = listen_on(host, options_.port);
    if (!listening && options_.host.empty()) listening = listen_on("0.0.0.0", options_.port);
    if (!listening) return kube::fail(listening.error());
    listen_fd_ = *listening;
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0 || !watch(listen_fd_, kListenId, EPOLLIN) ||
        !watch(wake_fd_, kWakeId, EPOLLIN)) {
      std::string error = std::strerror(errno);
      close_fds();
      return kube::fail("cannot set up the event loop: " + error);
    }
    int port = bound_port(listen_fd_);
    // One request per connection at a time: the queue never holds more than the connections.
    pool_ = std::make_unique<WorkerPool>(options_.workers, total);
    thread_ = std::thread([this] { run(); });
    log::info(
        kLogger, "admission front end started",
        {{"max_connections", std::to_string(total)},
         {"max_connections_per_address", std::to_string(options_.max_connections_per_address)},
         {"workers", std::to_string(options_.workers)}});
    return port;
  }

  void stop(std::chrono::milliseconds grace) {
    if (!thread_.joinable()) return;
    grace_ms_.store(grace.count());
    stop_requested_.store(true);
    wake();
    thread_.join();
    pool_->stop();
    close_fds();
  }

 private:
  struct Entry {
    std::unique_ptr<Connection> connection;
    std::string address;
    std::uint32_t events = 0;
    Clock::time_point deadline{};
  };

  bool watch(int fd, std::uint64_t id, std::uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = id;
    return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) == 0;
  }

  void wake() {
    std::uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof one) < 0 && errno != EAGAIN) {
      errors_.with({"eventfd"}).inc();  // the counter is at its maximum: a wake-up is pending
    }
  }

  void close_fds() {
    for (int* fd : {&listen_fd_, &epoll_fd_, &wake_fd_}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  }

  // On the loop thread.
  bool dispatch(std::uint64_t id, Request request) {
    return pool_->submit(
        [this, id, request = std::move(request)]() mutable { work(id, std::move(request)); });
  }

  // On a worker thread.
  void work(std::uint64_t id, Request request) {
    http::Response response;
    try {
      response = serve_(request);
    } catch (const std::exception& error) {
      response = internal_error(request, error.what());
    } catch (...) {
      response = internal_error(request, "unknown exception");
    }
    {
      std::lock_guard lock(done_mutex_);
      done_.emplace_back(id, std::move(response));
    }
    wake();
  }

  http::Response internal_error(const Request& request, std::string_view what) {
    // Never the body: reviews carry env values and other secrets.
    log::error(kLogger, "request handler failed",
               {{"path", http::printable(request.head.path)}, {"error", http::printable(what)}});
    errors_.with({"handler"}).inc();
    return http::Response{500, http::kText, "internal error\n", {}, false};
  }

  void apply(std::uint64_t id, Entry& entry, const Wait& wait) {
    if (wait.close) {
      destroy(id);
      return;
    }
    if (wait.events != entry.events) {
      epoll_event event{};
      event.events = wait.events;
      event.data.u64 = id;
      if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, entry.connection->fd(), &event) != 0) {
        errors_.with({"epoll_ctl"}).inc();
        log::error(kLogger, "epoll_ctl failed; connection closed",
                   {{"error", std::strerror(errno)}});
        destroy(id);
        return;
      }
      entry.events = wait.events;
    }
    if (wait.deadline != entry.deadline) {
      timers_.erase({entry.deadline, id});
      entry.deadline = wait.deadline;
      timers_.insert({entry.deadline, id});
    }
  }

  void destroy(std::uint64_t id) {
    auto found = connections_.find(id);
    if (found == connections_.end()) return;
    timers_.erase({found->second.deadline, id});
    limiter_.release(found->second.address);
    open_.dec();
    connections_.erase(found);  // closes the socket, which also leaves the epoll set
  }

  void accept_all(Clock::time_point now) {
    for (int i = 0; i < kAcceptBatch; ++i) {
      sockaddr_storage address{};
      socklen_t length = sizeof address;
      int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
        // EMFILE, ENFILE, ENOBUFS, ENOMEM: out of resources. Pause instead of spinning.
        errors_.with({"accept"}).inc();
        log::warn(kLogger, "accept failed; not accepting for 100 ms",
                  {{"error", std::strerror(errno)}});
        pause_accepting(now);
        return;
      }
      std::string key = address_key(address);
      Admit admit = limiter_.acquire(key);
      if (admit != Admit::kOk) {
        env_.rejected
            ->with({admit == Admit::kTotal ? "too_many_connections"
                                           : "too_many_connections_per_address"})
            .inc();
        ::close(fd);
        continue;
      }
      int yes = 1;
      // Nagle + delayed ACK would add ~40-90 ms to every small response.
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      std::uint64_t id = next_id_++;
      auto connection = std::make_unique<Connection>(id, fd, ctx_, env_, now);
      Wait first = connection->start();
      if (!connection->ok() || !watch(fd, id, first.events)) {
        errors_.with({connection->ok() ? "epoll_ctl" : "ssl_new"}).inc();
        limiter_.release(key);
        continue;  // the connection's destructor closes the socket
      }
      open_.inc();
      Entry& entry = connections_[id];
      entry.connection = std::move(connection);
      entry.address = std::move(key);
      entry.events = first.events;
      entry.deadline = first.deadline;
      timers_.insert({entry.deadline, id});
    }
  }

  void pause_accepting(Clock::time_point now) {
    epoll_event event{};
    event.data.u64 = kListenId;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &event);
    accept_resume_ = now + kAcceptPause;
  }

  void resume_accepting() {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = kListenId;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &event);
    accept_resume_.reset();
  }

  void complete(Clock::time_point now) {
    std::uint64_t count = 0;
    (void)::read(wake_fd_, &count, sizeof count);  // resets the eventfd; EAGAIN when already 0
    std::vector<std::pair<std::uint64_t, http::Response>> done;
    {
      std::lock_guard lock(done_mutex_);
      done.swap(done_);
    }
    for (auto& [id, response] : done) {
      auto found = connections_.find(id);
      // Gone: cut at its deadline, or the server stops. The answer has nowhere to go.
      if (found == connections_.end()) continue;
      auto& connection = *found->second.connection;
      if (connection.phase() != Connection::Phase::kServing) continue;
      apply(id, found->second, connection.on_response(std::move(response), now));
    }
  }

  void expire(Clock::time_point now) {
    while (!timers_.empty() && timers_.begin()->first <= now) {
      auto [deadline, id] = *timers_.begin();
      timers_.erase(timers_.begin());
      auto found = connections_.find(id);
      if (found == connections_.end()) continue;
      found->second.deadline = {};
      apply(id, found->second, found->second.connection->on_deadline(now));
    }
  }

  void begin_stop(Clock::time_point now) {
    stopping_ = true;
    env_.stopping = true;
    stop_deadline_ = now + std::chrono::milliseconds(grace_ms_.load());
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    ::close(listen_fd_);  // the port is free at once
    listen_fd_ = -1;
    accept_resume_.reset();
    std::vector<std::uint64_t> idle;
    for (const auto& [id, entry] : connections_) {
      if (entry.connection->idle()) idle.push_back(id);
    }
    for (auto id : idle) destroy(id);
  }

  int timeout_ms(Clock::time_point now) const {
    std::optional<Clock::time_point> next;
    auto consider = [&next](Clock::time_point at) { next = next ? std::min(*next, at) : at; };
    if (!timers_.empty()) consider(timers_.begin()->first);
    if (accept_resume_) consider(*accept_resume_);
    if (stopping_) consider(stop_deadline_);
    if (!next) return -1;
    if (*next <= now) return 0;
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
    return static_cast<int>(std::min<std::int64_t>(wait, 60'000));
  }

  void run() {
    std::vector<epoll_event> events(256);
    while (true) {
      auto now = Clock::now();
      if (stop_requested_.load() && !stopping_) begin_stop(now);
      if (stopping_ && (connections_.empty() || now >= stop_deadline_)) break;
      if (accept_resume_ && now >= *accept_resume_) resume_accepting();
      int n =
          ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms(now));
      if (n < 0) {
        if (errno == EINTR) continue;
        errors_.with({"epoll_wait"}).inc();
        log::error(kLogger, "epoll_wait failed; the admission server stops serving",
                   {{"error", std::strerror(errno)}});
        break;
      }
      now = Clock::now();
      for (int i = 0; i < n; ++i) {
        std::uint64_t id = events[static_cast<std::size_t>(i)].data.u64;
        std::uint32_t ready = events[static_cast<std::size_t>(i)].events;
        if (id == kListenId) {
          if (listen_fd_ >= 0 && !accept_resume_) accept_all(now);
        } else if (id == kWakeId) {
          complete(now);
        } else if (auto found = connections_.find(id); found != connections_.end()) {
          apply(id, found->second, found->second.connection->on_ready(ready, now));
        }
      }
      expire(now);
    }
    std::vector<std::uint64_t> all;
    for (const auto& entry : connections_) all.push_back(entry.first);
    for (auto id : all) destroy(id);
  }

  SSL_CTX* const ctx_;
  const FrontEndOptions options_;
  const Serve serve_;
  metrics::Gauge& open_;
  metrics::CounterFamily& errors_;
  ConnectionEnv env_;
  ConnectionLimiter limiter_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::unique_ptr<WorkerPool> pool_;
  std::thread thread_;

  // Loop thread only.
  std::unordered_map<std::uint64_t, Entry> connections_;
  std::set<std::pair<Clock::time_point, std::uint64_t>> timers_;
  std::uint64_t next_id_ = 2;
  std::optional<Clock::time_point> accept_resume_;
  bool stopping_ = false;
  Clock::time_point stop_deadline_{};

  // Shared with the workers and stop().
  std::mutex done_mutex_;
  std::vector<std::pair<std::uint64_t, http::Response>> done_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<std::int64_t> grace_ms_{0};
};

FrontEnd::FrontEnd(SSL_CTX* ctx, FrontEndOptions options, Serve serve, Refused refused)
    : loop_(std::make_unique<Loop>(ctx, std::move(options), std::move(serve), std::move(refused))) {
}

FrontEnd::~FrontEnd() = default;

kube::Result<int> FrontEnd::start() {
  return loop_->start();
}

void FrontEnd::stop(std::chrono::milliseconds grace) {
  loop_->stop(grace);
}

}  // namespace vscaler::webhook
