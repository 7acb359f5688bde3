// net/tls: a Stream's reads, on a plain socket pair (the TLS path shares the buffer handling).
#include "net/tls.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

using vscaler::net::tls::Io;
using vscaler::net::tls::Stream;

namespace {

// A connected pair: [0] non-blocking, read through a Stream; [1] the peer.
struct SocketPair {
  int fds[2] = {-1, -1};
  SocketPair() {
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    REQUIRE(::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK) == 0);
  }
  ~SocketPair() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  void send(const std::string& bytes) const {
    REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  }
};

}  // namespace

TEST_CASE("a read grows the buffer by what arrived, not by what could have") {
  // A connection that sent one byte holds a few bytes, not a 16 KiB chunk: thousands of such
  // connections from a few pods must not hold the pod's memory.
  SocketPair pair;
  Stream stream(nullptr, pair.fds[0]);
  REQUIRE(stream.ok());
  std::string head;
  CHECK(stream.read(head, 65536) == Io::kWantRead);
  CHECK(head.empty());
  pair.send("G");
  CHECK(stream.read(head, 65536) == Io::kDone);
  CHECK(head == "G");
  CHECK(head.capacity() < 1024);
  pair.send("ET / HTTP/1.1\r\n");
  CHECK(stream.read(head, 65536) == Io::kDone);
  CHECK(head == "GET / HTTP/1.1\r\n");
  CHECK(head.capacity() < 1024);
}

TEST_CASE("a read into a reserved body lands in place, a chunk at most, the bytes intact") {
  SocketPair pair;
  Stream stream(nullptr, pair.fds[0]);
  std::string sent;
  for (int i = 0; i < 20000; ++i) sent += static_cast<char>('a' + i % 26);
  pair.send(sent);
  std::string body = "x";
  body.reserve(1 + sent.size());
  const char* storage = body.data();
  CHECK(stream.read(body, sent.size()) == Io::kDone);
  CHECK(body.size() == 1 + Stream::kReadChunk);
  CHECK(body.data() == storage);  // no reallocation: read in place
  CHECK(stream.read(body, sent.size() - Stream::kReadChunk) == Io::kDone);
  CHECK(body == "x" + sent);
  ::close(pair.fds[1]);
  pair.fds[1] = -1;
  CHECK(stream.read(body, 100) == Io::kClosed);
  CHECK(body == "x" + sent);
}
