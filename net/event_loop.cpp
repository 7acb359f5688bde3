#include "net/event_loop.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace vscaler::net {
namespace {

constexpr std::uint64_t kListenId = 0;
constexpr std::uint64_t kWakeId = 1;
// Accepts per wake-up, so that a flood of new connections cannot starve the ones open.
constexpr int kAcceptBatch = 64;
// After EMFILE and friends: stop accepting this long (the listening socket stays readable, so
// accepting again at once would spin).
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

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

}  // namespace

EventLoop::EventLoop(LoopShared& shared) : shared_(shared) {
  env_.limits = shared_.options.limits;
  env_.refused = shared_.refused;
  env_.rejected = shared_.rejected;
  env_.handshake_errors = shared_.handshake_errors;
  env_.handshake_seconds = shared_.handshake_seconds;
  env_.buffered =
      shared_.options.buffered != nullptr ? shared_.options.buffered : &shared_.buffered;
  env_.buffer_budget = shared_.options.max_buffered_body_bytes;
  // A port without a budget (a test's) counts nothing; vscaler's health, metrics and dashboard
  // ports have one of their own for what their connections hold (HealthServer::limit_held_bytes).
  if (env_.buffer_budget > 0) env_.held = &shared_.held;
  env_.dispatch = [this](std::uint64_t id, Request request) {
    return dispatch(id, std::move(request));
  };
  if (shared_.quick) env_.serve_here = [this](Request& request) { return serve_here(request); };
  env_.make_room = [this](std::uint64_t except, std::size_t held_at_most) {
    return make_room(except, held_at_most);
  };
}

EventLoop::~EventLoop() {
  join();
  for (int fd : {epoll_fd_, wake_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

base::Result<base::Unit> EventLoop::open() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return base::fail(std::string("epoll_create1: ") + std::strerror(errno));
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return base::fail(std::string("eventfd: ") + std::strerror(errno));
  if (!watch(wake_fd_, kWakeId, EPOLLIN) ||
      !watch(shared_.listen_fd, kListenId, EPOLLIN | EPOLLEXCLUSIVE)) {
    return base::fail(std::string("epoll_ctl: ") + std::strerror(errno));
  }
  return base::Unit{};
}

void EventLoop::start() {
  thread_ = std::thread([this] { run(); });
}

void EventLoop::join() {
  if (thread_.joinable()) thread_.join();
}

bool EventLoop::watch(int fd, std::uint64_t id, std::uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = id;
  return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) == 0;
}

void EventLoop::wake() {
  std::uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) < 0 && errno != EAGAIN) {
    shared_.errors->with({"eventfd"}).inc();
  }
}

// On the loop thread. The job owns the request, and so its body and its share of the budget
// (Request::reservation), until it ends or is dropped unrun. (Held through a shared_ptr: a pool
// job must be copyable, a Reservation is not.)
bool EventLoop::dispatch(std::uint64_t id, Request request) {
  auto held = std::make_shared<Request>(std::move(request));
  return shared_.pool->submit([this, id, held] { work(id, std::move(*held)); });
}

// On the loop thread: HTTP/2 streams always go to the workers (their session is not
// re-entered from here).
std::optional<http::Response> EventLoop::serve_here(Request& request) {
  if (request.stream != 0 || !shared_.quick(request)) return std::nullopt;
  return respond(request);
}

// On a worker thread.
void EventLoop::work(std::uint64_t id, Request request) {
  // Its deadline passed while it waited in the queue: its connection (or HTTP/2 stream) is cut
  // at that deadline, so nobody waits for the answer. Not served, so that an overloaded server
  // does not spend its workers on requests already given up.
  if (Clock::now() >= request.start + env_.limits.request_timeout) {
    shared_.rejected->with({"expired_in_queue"}).inc();
    return;
  }
  http::Response response = respond(request);
  if (request.reservation.bytes() > 0) {
    // The parse the handler leaves to free after the write (free_after_write) is part of what
    // the body's share pays for: the share goes with it, given back once it is freed.
    struct Held {
      Reservation reservation;
      std::shared_ptr<void> payload;  // freed before the share is given back
    };
    response.free_after_write = std::make_shared<Held>(
        Held{std::move(request.reservation), std::move(response.free_after_write)});
  }
  {
    std::lock_guard lock(done_mutex_);
    done_.emplace_back(id, request.stream, std::move(response));
  }
  wake();
}

http::Response EventLoop::respond(Request& request) {
  try {
    return shared_.serve(request);
  } catch (const std::exception& error) {
    return internal_error(request, error.what());
  } catch (...) {
    return internal_error(request, "unknown exception");
  }
}

http::Response EventLoop::internal_error(const Request& request, std::string_view what) {
  // Never the body: reviews carry env values and other secrets.
  log::error(shared_.logger, "request handler failed",
             {{"path", http::printable(request.head.path)}, {"error", http::printable(what)}});
  shared_.errors->with({"handler"}).inc();
  return http::Response{500, http::kText, "internal error\n", {}, false, nullptr};
}

void EventLoop::apply(std::uint64_t id, Entry& entry, const Wait& wait) {
  if (wait.close) {
    destroy(id);
    return;
  }
  if (wait.again) again_.push_back(id);
  if (wait.events != entry.events) {
    epoll_event event{};
    event.events = wait.events;
    event.data.u64 = id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, entry.connection->fd(), &event) != 0) {
      shared_.errors->with({"epoll_ctl"}).inc();
      log::error(shared_.logger, "epoll_ctl failed; connection closed",
                 {{"error", std::strerror(errno)}});
      destroy(id);
      return;
    }
    entry.events = wait.events;
  }
  if (wait.deadline != entry.deadline) {
    // The timer's node is moved, not freed and allocated again: every request moves it.
    auto node = timers_.extract({entry.deadline, id});
    entry.deadline = wait.deadline;
    if (node.empty()) {
      timers_.insert({entry.deadline, id});
    } else {
      node.value() = {entry.deadline, id};
      timers_.insert(std::move(node));
    }
  }
  note_charge(id, *entry.connection);
}

void EventLoop::destroy(std::uint64_t id) {
  auto found = connections_.find(id);
  if (found == connections_.end()) return;
  timers_.erase({found->second.deadline, id});
  charged_.erase(id);
  {
    std::lock_guard lock(shared_.limiter_mutex);
    shared_.limiter.release(found->second.address);
  }
  shared_.open->dec();
  connections_.erase(found);  // closes the socket, which also leaves the epoll set
}

// At the total cap, the connection due to be cut first (the earliest deadline) among those of
// this loop that were never served (Connection::evictable: still in their handshake or first
// request, or holding a connection without ever asking) is closed for the newcomer. Refusing
// newcomers instead let a few pods holding idle or byte-a-second connections shut out everyone
// after them, the kubelet's probes and the API server's calls included. A client that was
// answered is never closed for another's slot; one at its per-address cap is refused, not let
// in.
bool EventLoop::evict_for_newcomer() {
  constexpr int kLooked = 256;
  int looked = 0;
  for (auto it = timers_.begin(); it != timers_.end() && looked < kLooked; ++it, ++looked) {
    auto found = connections_.find(it->second);
    if (found == connections_.end() || !found->second.connection->evictable()) continue;
    shared_.rejected->with({"evicted_at_capacity"}).inc();
    destroy(it->second);
    return true;
  }
  return false;
}

// Among the connections holding a share of ConnectionEnv::held (charged_, a few hundred at
// most: the budget over a connection's buffers), the one due first that can give it up: never
// served and not reading a body (likely the API server's first request on a new connection,
// whose body holds no share to give), or stalled (answered, holding its share for a request that
// does not come). Looking only at the first timers, as evict_for_newcomer does, would let a client
// hide stalled connections behind a few hundred idle ones due earlier. None is closed when
// closing all of them would not bring `held` down to `held_at_most`: the asker is refused
// anyway, and the API server's handshakes under way would have gone for nothing.
bool EventLoop::make_room(std::uint64_t except, std::size_t held_at_most) {
  const Clock::time_point now = Clock::now();
  std::optional<std::pair<Clock::time_point, std::uint64_t>> first;
  std::size_t can_give = 0;
  for (std::uint64_t id : charged_) {
    auto found = connections_.find(id);
    if (found == connections_.end() || id == except) continue;
    const Connection& connection = *found->second.connection;
    bool gives_up = (connection.evictable() && connection.phase() != Connection::Phase::kBody) ||
                    connection.stalled(now);
    if (!gives_up) continue;
    can_give += connection.charged_bytes();
    std::pair<Clock::time_point, std::uint64_t> due{found->second.deadline, id};
    if (!first || due < *first) first = due;
  }
  const std::size_t held = env_.held != nullptr ? env_.held->load(std::memory_order_relaxed) : 0;
  if (!first || held > held_at_most + can_give) return false;
  shared_.rejected->with({"evicted_at_capacity"}).inc();
  destroy(first->second);
  return true;
}

void EventLoop::note_charge(std::uint64_t id, const Connection& connection) {
  if (connection.charged_bytes() > 0) {
    charged_.insert(id);
  } else {
    charged_.erase(id);
  }
}

void EventLoop::accept_all(Clock::time_point now) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    int fd = ::accept4(shared_.listen_fd, reinterpret_cast<sockaddr*>(&address), &length,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // another loop took it
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      // EMFILE, ENFILE, ENOBUFS, ENOMEM: out of resources. Pause instead of spinning.
      shared_.errors->with({"accept"}).inc();
      log::warn(shared_.logger, "accept failed; not accepting for 100 ms",
                {{"error", std::strerror(errno)}});
      set_accepting(false);
      accept_resume_ = now + kAcceptPause;
      return;
    }
    std::string key = address_key(address);
    Admit admit;
    {
      std::lock_guard lock(shared_.limiter_mutex);
      admit = shared_.limiter.acquire(key);
    }
    bool under_own_cap = false;
    if (admit == Admit::kTotal) {
      std::lock_guard lock(shared_.limiter_mutex);
      under_own_cap = shared_.limiter.open_from(key) < shared_.limiter.per_address();
      if (!under_own_cap) admit = Admit::kPerAddress;
    }
    if (admit == Admit::kTotal && under_own_cap && evict_for_newcomer()) {
      std::lock_guard lock(shared_.limiter_mutex);
      admit = shared_.limiter.acquire(key);
    }
    if (admit != Admit::kOk) {
      shared_.rejected
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
    auto connection = std::make_unique<Connection>(id, fd, shared_.ctx, env_, now);
    // Its TLS buffers come out of the memory budget, as bodies do: thousands of connections in
    // their handshake or first request otherwise hold ~50 KiB each outside it. A full budget
    // makes room as a full connection cap does (charge_buffers), else the newcomer is refused.
    if (connection->ok() && !connection->charge_buffers()) {
      shared_.rejected->with({"memory_budget"}).inc();
      std::lock_guard lock(shared_.limiter_mutex);
      shared_.limiter.release(key);
      continue;  // the connection's destructor closes the socket
    }
    Wait first = connection->start();
    if (!connection->ok() || !watch(fd, id, first.events)) {
      shared_.errors->with({connection->ok() ? "epoll_ctl" : "ssl_new"}).inc();
      std::lock_guard lock(shared_.limiter_mutex);
      shared_.limiter.release(key);
      continue;  // the connection's destructor closes the socket
    }
    shared_.open->inc();
    Entry& entry = connections_[id];
    entry.connection = std::move(connection);
    entry.address = std::move(key);
    entry.events = first.events;
    entry.deadline = first.deadline;
    timers_.insert({entry.deadline, id});
    note_charge(id, *entry.connection);
  }
}

void EventLoop::set_accepting(bool on) {
  epoll_event event{};
  event.events = on ? static_cast<std::uint32_t>(EPOLLIN | EPOLLEXCLUSIVE) : 0u;
  event.data.u64 = kListenId;
  // EPOLLEXCLUSIVE cannot be modified: delete and add again.
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, shared_.listen_fd, nullptr);
  if (on && ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, shared_.listen_fd, &event) != 0) {
    shared_.errors->with({"epoll_ctl"}).inc();
  }
  if (on) accept_resume_.reset();
}

void EventLoop::release_listener() {
  if (!listening_) return;
  listening_ = false;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, shared_.listen_fd, nullptr);
  {
    std::lock_guard lock(shared_.stop_mutex);
    ++shared_.released;
  }
  shared_.released_listener.notify_all();
}

void EventLoop::complete(Clock::time_point now) {
  std::uint64_t count = 0;
  if (::read(wake_fd_, &count, sizeof count) < 0 && errno != EAGAIN) {
    shared_.errors->with({"eventfd"}).inc();
  }
  std::vector<std::tuple<std::uint64_t, std::int32_t, http::Response>> done;
  {
    std::lock_guard lock(done_mutex_);
    done.swap(done_);
  }
  for (auto& [id, stream, response] : done) {
    auto found = connections_.find(id);
    // Gone: cut at its deadline, or the server stops. The answer has nowhere to go.
    if (found == connections_.end()) continue;
    auto& connection = *found->second.connection;
    if (stream != 0 && connection.phase() == Connection::Phase::kHttp2) {
      apply(id, found->second, connection.on_stream_response(stream, std::move(response), now));
      continue;
    }
    if (connection.phase() != Connection::Phase::kServing) continue;
    apply(id, found->second, connection.on_response(std::move(response), now));
  }
}

void EventLoop::expire(Clock::time_point now) {
  while (!timers_.empty() && timers_.begin()->first <= now) {
    auto [deadline, id] = *timers_.begin();
    timers_.erase(timers_.begin());
    auto found = connections_.find(id);
    if (found == connections_.end()) continue;
    found->second.deadline = {};
    apply(id, found->second, found->second.connection->on_deadline(now));
  }
}

void EventLoop::begin_stop(Clock::time_point now) {
  stopping_ = true;
  env_.stopping = true;
  stop_deadline_ = now + std::chrono::milliseconds(shared_.grace_ms.load());
  accept_resume_.reset();
  release_listener();
  std::vector<std::uint64_t> idle;
  for (const auto& [id, entry] : connections_) {
    if (entry.connection->idle()) idle.push_back(id);
  }
  for (auto id : idle) destroy(id);
}

int EventLoop::timeout_ms(Clock::time_point now) const {
  std::optional<Clock::time_point> next;
  auto consider = [&next](Clock::time_point at) { next = next ? std::min(*next, at) : at; };
  if (!timers_.empty()) consider(timers_.begin()->first);
  if (accept_resume_) consider(*accept_resume_);
  if (stopping_) consider(stop_deadline_);
  if (!again_.empty()) return 0;
  if (!next) return -1;
  if (*next <= now) return 0;
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
  return static_cast<int>(std::min<std::int64_t>(wait, 60'000));
}

void EventLoop::run() {
  std::vector<epoll_event> events(256);
  while (true) {
    auto now = Clock::now();
    if (shared_.stop_requested.load() && !stopping_) begin_stop(now);
    if (stopping_ && (connections_.empty() || now >= stop_deadline_)) break;
    if (accept_resume_ && now >= *accept_resume_) set_accepting(true);
    int n =
        ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), timeout_ms(now));
    if (n < 0) {
      if (errno == EINTR) continue;
      shared_.errors->with({"epoll_wait"}).inc();
      log::error(shared_.logger, "epoll_wait failed; this event loop stops serving",
                 {{"error", std::strerror(errno)}});
      break;
    }
    now = Clock::now();
    for (int i = 0; i < n; ++i) {
      std::uint64_t id = events[static_cast<std::size_t>(i)].data.u64;
      std::uint32_t ready = events[static_cast<std::size_t>(i)].events;
      if (id == kListenId) {
        if (listening_ && !accept_resume_) accept_all(now);
      } else if (id == kWakeId) {
        complete(now);
      } else if (auto found = connections_.find(id); found != connections_.end()) {
        apply(id, found->second, found->second.connection->on_ready(ready, now));
      }
    }
    // After every connection that was ready: those with a request read and not yet served.
    std::vector<std::uint64_t> again;
    again.swap(again_);
    for (auto id : again) {
      if (auto found = connections_.find(id); found != connections_.end()) {
        apply(id, found->second, found->second.connection->on_ready(EPOLLIN, now));
      }
    }
    expire(now);
  }
  release_listener();  // also when the loop ends on an error: stop() must not wait for it
  std::vector<std::uint64_t> all;
  for (const auto& entry : connections_) all.push_back(entry.first);
  for (auto id : all) destroy(id);
}

}  // namespace vscaler::net
