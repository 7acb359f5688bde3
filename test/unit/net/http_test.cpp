// net/http: the strict HTTP/1.1 request-head parser (complete heads only, a head arriving a byte
// at a time parsed in linear time) and query parameters of a request target.
#include "net/http.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

namespace http = vscaler::net::http;

TEST_CASE("http: request heads are parsed strictly and only once complete") {
  http::RequestHead head;
  std::size_t scanned = 0;  // a new head each call: the search starts at its beginning
  CHECK(http::parse_head("POST /a HTTP/1.1\r\nHost: x\r\n", head, scanned).status ==
        http::HeadStatus::kIncomplete);
  std::string text =
      "\r\nPOST /mutate?timeout=2s HTTP/1.1\r\nHost:  x \r\nContent-Length: 2\r\n\r\n{}";
  scanned = 0;
  auto parsed = http::parse_head(text, head, scanned);
  REQUIRE(parsed.status == http::HeadStatus::kComplete);
  CHECK(parsed.consumed == text.size() - 2);
  CHECK(head.method == "POST");
  CHECK(head.path == "/mutate");
  CHECK(head.target == "/mutate?timeout=2s");
  CHECK(head.header("host") == "x");
  CHECK(head.count("CONTENT-LENGTH") == 1);
  scanned = 0;
  CHECK(http::parse_head("GET / HTTP/1.0\r\n\r\n", head, scanned).status ==
        http::HeadStatus::kComplete);
  CHECK(head.minor_version == 0);

  for (const char* bad :
       {"POST /a HTTP/2.0\r\n\r\n", "POST  HTTP/1.1\r\n\r\n",
        "POST /a HTTP/1.1\r\nBad Name: x\r\n\r\n", "POST /a HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
        "POST /a HTTP/1.1\r\nX: a\x01\r\n\r\n", "P\"ST /a HTTP/1.1\r\n\r\n"}) {
    scanned = 0;
    auto result = http::parse_head(bad, head, scanned);
    CHECK_MESSAGE(result.status == http::HeadStatus::kMalformed, bad);
    CHECK_FALSE(result.error.empty());
  }
  CHECK(http::parse_length("123") == 123u);
  CHECK_FALSE(http::parse_length("-1"));
  CHECK_FALSE(http::parse_length("1 2"));
  CHECK_FALSE(http::parse_length("1234567890123456789"));
  CHECK(http::has_token("keep-alive, Close", "close"));
  CHECK_FALSE(http::has_token("closed", "close"));
  CHECK(http::serialize({404, http::kText, "no\n", {{"Allow", "POST"}}, false, nullptr}, false) ==
        "HTTP/1.1 404 Not Found\r\nAllow: POST\r\nConnection: close\r\nContent-Type: "
        "text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\nno\n");
}

TEST_CASE("http: a head arriving a byte at a time costs its length, not its length squared") {
  // A client may send the head one byte per TLS record; every read asks parse_head again. With
  // the search resumed where it stopped, 64 KiB of '\r' bytes (each a near match of the blank
  // line) take microseconds; searched from the start each time, seconds of the loop thread.
  std::string buffer = "POST /mutate-deployments HTTP/1.1\r\nX: ";
  http::RequestHead head;
  std::size_t scanned = 0;
  // One assertion for all the reads: 65,536 of them took most of the time bound under TSan.
  bool all_incomplete = true;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 64 * 1024; ++i) {
    buffer += '\r';
    all_incomplete = all_incomplete && http::parse_head(buffer, head, scanned).status ==
                                           http::HeadStatus::kIncomplete;
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
  CHECK(all_incomplete);
  CHECK(scanned == buffer.size() - 3);
  // The blank line is found across the boundary of two reads.
  buffer = "GET / HTTP/1.1\r\nHost: x\r\n\r";
  scanned = 0;
  CHECK(http::parse_head(buffer, head, scanned).status == http::HeadStatus::kIncomplete);
  buffer += "\n";
  auto parsed = http::parse_head(buffer, head, scanned);
  CHECK(parsed.status == http::HeadStatus::kComplete);
  CHECK(parsed.consumed == buffer.size());
  // A few empty lines before the request are skipped; a stream of them is refused.
  std::string padded;
  for (std::size_t i = 0; i < http::kMaxLeadingEmptyLines; ++i) padded += "\r\n";
  scanned = 0;
  CHECK(http::parse_head(padded + "GET / HTTP/1.1\r\n\r\n", head, scanned).status ==
        http::HeadStatus::kComplete);
  scanned = 0;
  CHECK(http::parse_head(padded + "\r\nGET / HTTP/1.1\r\n\r\n", head, scanned).status ==
        http::HeadStatus::kMalformed);
}

TEST_CASE("http: query parameters of a request target (the API server's ?timeout=)") {
  using vscaler::net::http::query_parameter;
  CHECK(query_parameter("/mutate-deployments?timeout=2s", "timeout") == "2s");
  CHECK(query_parameter("/p?a=1&timeout=10s&b", "timeout") == "10s");
  CHECK(query_parameter("/p?a=1&b", "b") == "");
  CHECK_FALSE(query_parameter("/p?timeoutx=2s", "timeout").has_value());
  CHECK_FALSE(query_parameter("/p", "timeout").has_value());
  CHECK_FALSE(query_parameter("/p?", "timeout").has_value());
}
