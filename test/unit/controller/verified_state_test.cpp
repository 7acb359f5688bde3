// VerifiedState: what set() records, get() gives back exactly, whatever the uid's shape (a
// canonical UUID is kept packed, anything else as text).
#include "controller/verified_state.h"

#include <doctest/doctest.h>

#include <string>

using vscaler::controller::Verified;
using vscaler::controller::VerifiedState;

TEST_CASE("a canonical UUID, an uppercase one, other text and no uid all round-trip") {
  VerifiedState state;
  const Verified cases[] = {
      {true, "705ab4f5-6393-11e8-b7cc-42010a800002", 7},
      {true, "00000000-0000-0000-0000-000000000000", 1},
      {true, "ffffffff-ffff-ffff-ffff-ffffffffffff", 2},
      {true, "705AB4F5-6393-11E8-B7CC-42010A800002", 3},  // not canonical: kept as text
      {true, "705ab4f5-6393-11e8-b7cc-42010a80000", 4},   // one digit short
      {true, "705ab4f5x6393-11e8-b7cc-42010a800002", 5},  // no hyphen where one belongs
      {true, "705ab4f5-6393-11e8-b7cc-42010a80000g", 6},  // not hex
      {true, "uid-web", 8},
      {true, "", 9},
      {false, "", 0},
  };
  for (const Verified& verified : cases) {
    CAPTURE(verified.uid);
    state.set("shop/web", verified);
    CHECK(state.get("shop/web") == verified);
  }
}

TEST_CASE("entries are per key, replaced by set and dropped by forget") {
  VerifiedState state;
  CHECK_FALSE(state.get("shop/web").has_value());
  state.set("shop/web", Verified{true, "705ab4f5-6393-11e8-b7cc-42010a800002", 2});
  state.set("shop/api", Verified{true, "uid-api", 1});
  state.set("shop/web", Verified{true, "805ab4f5-6393-11e8-b7cc-42010a800002", 3});
  CHECK(state.get("shop/web") == Verified{true, "805ab4f5-6393-11e8-b7cc-42010a800002", 3});
  CHECK(state.get("shop/api") == Verified{true, "uid-api", 1});
  state.forget("shop/web");
  CHECK_FALSE(state.get("shop/web").has_value());
  CHECK(state.get("shop/api").has_value());
  state.forget("shop/none");  // harmless
}
