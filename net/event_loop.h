// One event loop thread of the admission front end (see front_end.h): its own epoll set with
// the shared listening socket (EPOLLEXCLUSIVE: the kernel wakes one loop per new connection),
// the connections it accepted, their deadlines, and the responses its workers finished. Quick
// requests (FrontEnd::Quick) it serves itself, one per connection and turn.
// Several loops share the TLS handshakes of a burst of new connections, which dominate its
// cost (about 0.3-1 ms of CPU each here).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/worker_pool.h"
#include "net/connection.h"
#include "net/connection_limiter.h"
#include "net/front_end.h"

namespace vscaler::net {

/// What the loops of one front end share. Fields are set before the loops start, except those
/// under a mutex or atomic.
struct LoopShared {
  SSL_CTX* ctx = nullptr;  ///< null: plain HTTP
  FrontEndOptions options;
  std::string logger;  ///< "<name>.server"
  FrontEnd::Serve serve;
  FrontEnd::Refused refused;
  FrontEnd::Quick quick;
  int listen_fd = -1;
  std::unique_ptr<base::WorkerPool> pool;

  metrics::Gauge* open = nullptr;
  metrics::CounterFamily* errors = nullptr;
  metrics::CounterFamily* rejected = nullptr;
  metrics::Counter* handshake_errors = nullptr;
  metrics::Histogram* handshake_seconds = nullptr;

  /// Request body bytes held by every connection of every loop (ConnectionEnv::buffered), when
  /// FrontEndOptions::buffered does not name a counter shared with other front ends.
  std::atomic<std::size_t> buffered{0};
  /// What the connections of every loop hold before any body (ConnectionEnv::held).
  std::atomic<std::size_t> held{0};

  /// The caps, taken at accept and given back at close, by any loop.
  std::mutex limiter_mutex;
  ConnectionLimiter limiter{1, 1};

  /// stop(): the request, its grace period, and how many loops have let go of the listening
  /// socket (it is closed, freeing the port, once all have).
  std::atomic<bool> stop_requested{false};
  std::atomic<std::int64_t> grace_ms{0};
  std::mutex stop_mutex;
  std::condition_variable released_listener;
  std::size_t released = 0;
};

/// One loop; created, started and joined by FrontEnd.
class EventLoop {
 public:
  explicit EventLoop(LoopShared& shared);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// Sets up the epoll set; the error says which call failed.
  base::Result<base::Unit> open();
  /// Runs the loop on a thread of its own.
  void start();
  /// Wakes the loop (for a stop request or finished responses).
  void wake();
  /// Waits for the loop's thread to end.
  void join();

 private:
  struct Entry {
    std::unique_ptr<Connection> connection;
    std::string address;
    std::uint32_t events = 0;
    Clock::time_point deadline{};
  };

  bool watch(int fd, std::uint64_t id, std::uint32_t events);
  bool dispatch(std::uint64_t id, Request request);
  std::optional<http::Response> serve_here(Request& request);
  void work(std::uint64_t id, Request request);
  http::Response respond(Request& request);
  http::Response internal_error(const Request& request, std::string_view what);
  void apply(std::uint64_t id, Entry& entry, const Wait& wait);
  void destroy(std::uint64_t id);
  // Closes the never-served connection due first (among the first 256 timers), to make room
  // for a newcomer at the connection cap. False when none was found.
  bool evict_for_newcomer();
  // ConnectionEnv::make_room: closes the connection due first among those holding a share of
  // ConnectionEnv::held that can give it up (never served and not reading a body, or stalled:
  // Connection::stalled),
  // never `except` (the one asking for room), when closing all of them could bring `held` to
  // `held_at_most`. False when none was closed.
  bool make_room(std::uint64_t except, std::size_t held_at_most);
  // Keeps charged_ current after a call on the connection (its charge may have changed).
  void note_charge(std::uint64_t id, const Connection& connection);
  void accept_all(Clock::time_point now);
  void set_accepting(bool on);
  void release_listener();
  void complete(Clock::time_point now);
  void expire(Clock::time_point now);
  void begin_stop(Clock::time_point now);
  int timeout_ms(Clock::time_point now) const;
  void run();

  LoopShared& shared_;
  ConnectionEnv env_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;

  // Loop thread only.
  std::unordered_map<std::uint64_t, Entry> connections_;
  std::set<std::pair<Clock::time_point, std::uint64_t>> timers_;
  // The connections holding a share of ConnectionEnv::held (see make_room).
  std::unordered_set<std::uint64_t> charged_;
  std::vector<std::uint64_t> again_;  // connections to call again next turn (Wait::again)
  std::uint64_t next_id_ = 2;
  std::optional<Clock::time_point> accept_resume_;
  bool listening_ = true;
  bool stopping_ = false;
  Clock::time_point stop_deadline_{};

  // Shared with the workers.
  std::mutex done_mutex_;
  // (connection, HTTP/2 stream or 0, response)
  std::vector<std::tuple<std::uint64_t, std::int32_t, http::Response>> done_;
};

}  // namespace vscaler::net
