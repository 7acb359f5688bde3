// pack_status_text / unpack_status_text: round trips, the size gain on a usual status, and bytes
// it did not produce read as "".
#include "api/packed_text.h"

#include <doctest/doctest.h>

#include <string>

using vscaler::api::pack_status_text;
using vscaler::api::unpack_status_text;

TEST_CASE("a status round-trips and packs far smaller than its text") {
  std::string status =
      R"({"conditions":[{"lastTransitionTime":"2026-12-01T18:22:55Z","message":"Deployment )"
      R"(web exists","observedGeneration":4,"reason":"Found","status":"True","type":)"
      R"("TargetFound"},{"lastTransitionTime":"2026-12-01T18:22:55Z","message":"Deployment web )"
      R"(carries the declared resources","observedGeneration":4,"reason":"Applied","status":)"
      R"("True","type":"Scaled"}],"observedGeneration":4,"target":{"apiVersion":"apps/v1",)"
      R"("found":true,"kind":"Deployment","name":"web","ref":"Deployment/web","uid":)"
      R"("36dc3414-7f8f-4b51-85d9-d2fab10105db"}})";
  std::string packed = pack_status_text(status);
  CHECK(packed.size() * 3 < status.size());
  CHECK(unpack_status_text(packed) == status);
}

TEST_CASE("empty, tiny, large and unusual texts round-trip") {
  CHECK(pack_status_text("").empty());
  CHECK(unpack_status_text("").empty());
  for (std::string text : {std::string("{}"), std::string("null"), std::string(20000, 'x'),
                           std::string("\x00\x01\xff", 3)}) {
    CHECK(unpack_status_text(pack_status_text(text)) == text);
  }
  std::string varied;
  for (int i = 0; i < 3000; ++i) varied += std::to_string(i * 7919 % 10007) + ",";
  CHECK(unpack_status_text(pack_status_text(varied)) == varied);
}

TEST_CASE("bytes pack_status_text did not produce read as empty") {
  CHECK(unpack_status_text("{\"a\":1}").empty());
  std::string packed = pack_status_text(std::string(500, 'a') + "b");
  REQUIRE(packed.size() > 6);
  CHECK(unpack_status_text(packed.substr(0, packed.size() - 2)).empty());
  packed[1] = static_cast<char>(packed[1] + 1);  // a wrong length
  CHECK(unpack_status_text(packed).empty());
}
