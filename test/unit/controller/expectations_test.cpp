// Expectations: the hinted-write bookkeeping (DESIGN.md event flow item 3) on a clock the test
// moves, so deadlines and re-check delays are exact.
#include "controller/expectations.h"

#include <doctest/doctest.h>

#include <chrono>

#include "controller/work_queue.h"

using namespace std::chrono_literals;
using vscaler::controller::Expectation;
using vscaler::controller::Expectations;
using vscaler::controller::ExpectationsOptions;
using vscaler::controller::Observed;

namespace {

struct Fixture {
  Expectations::Clock::time_point now = Expectations::Clock::time_point(1h);
  Expectations store{[this] {
    ExpectationsOptions options;
    options.now = [this] { return now; };
    return options;
  }()};
};

Expectation generation(int64_t g) {
  Expectation e;
  e.min_generation_exclusive = g;
  return e;
}

Expectation created() {
  Expectation e;
  e.must_exist = true;
  return e;
}

Expectation gone(const char* uid) {
  Expectation e;
  e.gone_uid = uid;
  return e;
}

Observed at(int64_t g, const char* uid = "u1") {
  return Observed{true, false, uid, g};
}

const Observed kMissing{};

}  // namespace

TEST_CASE("nothing expected is satisfied at once and keeps no entry") {
  Fixture f;
  CHECK_FALSE(f.store.check("shop/web", at(1)));
  f.store.expect("shop/web", Expectation{});
  CHECK(f.store.size() == 0);
}

TEST_CASE("a generation expectation waits until the stored generation passes it") {
  Fixture f;
  f.store.expect("shop/web", generation(5));
  // The look that found it not stored was a round trip itself: the first re-check is at once.
  CHECK(f.store.check("shop/web", at(5)) == 0ms);
  CHECK(f.store.check("shop/web", at(5)) == 1ms);
  CHECK(f.store.check("shop/web", at(5)) == 2ms);
  CHECK(f.store.check("shop/web", at(5)) == 4ms);
  CHECK_FALSE(f.store.check("shop/web", at(6)));
  CHECK_FALSE(f.store.pending("shop/web"));
}

TEST_CASE("hints for one key merge: the larger generation wins") {
  Fixture f;
  f.store.expect("shop/web", generation(7));
  f.store.expect("shop/web", generation(5));
  CHECK(f.store.pending("shop/web")->min_generation_exclusive == 7);
  CHECK(f.store.check("shop/web", at(6)).has_value());
  CHECK_FALSE(f.store.check("shop/web", at(8)));
}

TEST_CASE("merging keeps must_exist and the newest gone uid") {
  Expectation e = created();
  e.merge(gone("a"));
  e.merge(gone("b"));
  e.merge(generation(3));
  CHECK(e.must_exist);
  CHECK(e.gone_uid == "b");
  CHECK(e.min_generation_exclusive == 3);
}

TEST_CASE("a deletion is visible once the uid is gone, replaced, or deleting") {
  Fixture f;
  f.store.expect("shop/web", gone("u1"));
  CHECK(f.store.check("shop/web", at(3, "u1")).has_value());
  CHECK_FALSE(f.store.check("shop/web", at(1, "u2")));
  f.store.expect("shop/web", gone("u1"));
  CHECK_FALSE(f.store.check("shop/web", kMissing));
  f.store.expect("shop/web", gone("u1"));
  CHECK_FALSE(f.store.check("shop/web", Observed{true, true, "u1", 3}));
}

TEST_CASE("a hinted CREATE waits for the workload to exist; an UPDATE of a vanished one does not") {
  Fixture f;
  f.store.expect("shop/web", created());
  CHECK(f.store.check("shop/web", kMissing).has_value());
  CHECK_FALSE(f.store.check("shop/web", at(1)));
  f.store.expect("shop/web", generation(4));
  CHECK_FALSE(f.store.check("shop/web", kMissing));
}

TEST_CASE("an expectation never made visible is given up after the deadline of its newest hint") {
  Fixture f;
  f.store.expect("shop/web", generation(5));
  f.now += 20s;
  f.store.expect("shop/web", generation(6));  // restarts the deadline
  f.now += 20s;
  CHECK(f.store.check("shop/web", at(5)).has_value());
  f.now += 10s;
  CHECK_FALSE(f.store.check("shop/web", at(5)));
  CHECK(f.store.size() == 0);
}

TEST_CASE("re-checks never repeat at once, whatever the options say") {
  Expectations::Clock::time_point now = Expectations::Clock::time_point(1h);
  ExpectationsOptions options;
  options.now = [&now] { return now; };
  options.recheck_initial = 0ms;
  Expectations store(options);
  store.expect("shop/web", generation(5));
  CHECK(store.check("shop/web", at(5)) == 0ms);
  CHECK(store.check("shop/web", at(5)) == 1ms);
  CHECK(store.check("shop/web", at(5)) == 2ms);
}

TEST_CASE("re-check delays are capped") {
  Fixture f;
  f.store.expect("shop/web", generation(5));
  std::chrono::milliseconds last{};
  for (int i = 0; i < 20; ++i) last = *f.store.check("shop/web", at(5));
  CHECK(last == 1000ms);
}

TEST_CASE("a satisfied or forgotten key passes nothing on to the next expectation of any key") {
  // The queue once recycled entries without clearing must_exist, so a CREATE's hint leaked to
  // another key. Entries here are per key and erased whole.
  Fixture f;
  f.store.expect("shop/a", created());
  CHECK_FALSE(f.store.check("shop/a", at(1)));
  f.store.expect("shop/b", generation(2));
  CHECK_FALSE(f.store.pending("shop/b")->must_exist);
  CHECK_FALSE(f.store.check("shop/b", kMissing));  // an UPDATE of a vanished workload: settled
  f.store.expect("shop/a", created());
  f.store.forget("shop/a");
  CHECK_FALSE(f.store.pending("shop/a"));
  CHECK_FALSE(f.store.check("shop/a", kMissing));
}

TEST_CASE("the queueing hint sink records the expectation before the key is handed out") {
  Fixture f;
  vscaler::controller::WorkQueue queue;
  vscaler::controller::QueueingHintSink sink(f.store, queue);
  sink.hint("shop/web", generation(3));
  auto item = queue.get_for(5s);
  REQUIRE(item.has_value());
  CHECK(item->key == "shop/web");
  CHECK(item->priority == vscaler::controller::Priority::kHigh);
  CHECK(f.store.pending("shop/web")->min_generation_exclusive == 3);
  queue.done(item->key);
}

TEST_CASE("a hint expecting a generation over 1,000 above the verified one is dropped, counted") {
  Fixture f;
  vscaler::controller::WorkQueue queue;
  vscaler::controller::VerifiedState verified;
  vscaler::metrics::Counter dropped;
  vscaler::controller::QueueingHintSink sink(f.store, queue, nullptr, &verified, &dropped);
  // Never verified: nothing to judge by, the hint stands until the reconcile's look, which
  // takes it for what any write brings, the next generation: merged with a real hint (5), it
  // no longer hides that write, nor keeps re-checks alive once it lands.
  sink.hint("shop/new", generation(5));
  sink.hint("shop/new", generation(int64_t{1} << 62));
  CHECK(f.store.pending("shop/new")->min_generation_exclusive == int64_t{1} << 62);
  CHECK(f.store.check("shop/new", at(5)) == 0ms);
  CHECK(f.store.pending("shop/new")->min_generation_exclusive == 5);
  CHECK_FALSE(f.store.check("shop/new", at(6)));  // the real write landed
  CHECK_FALSE(f.store.pending("shop/new").has_value());
  f.store.expect("shop/new", generation(6 + 1000));  // within the lead: waited for as it is
  CHECK(f.store.check("shop/new", at(6)) == 0ms);
  CHECK(f.store.pending("shop/new")->min_generation_exclusive == 1006);
  f.store.forget("shop/new");
  verified.set("shop/web", {true, "uid-1", 7});
  sink.hint("shop/web", generation(7 + 1000));  // the most a hint may lead by
  CHECK(f.store.pending("shop/web").has_value());
  CHECK(dropped.value() == 0);
  verified.set("shop/forged", {true, "uid-2", 7});
  sink.hint("shop/forged", generation(int64_t{1} << 62));  // a forged oldObject.generation
  CHECK_FALSE(f.store.pending("shop/forged").has_value());
  CHECK(dropped.value() == 1);
}

TEST_CASE("a hinted UPDATE is first looked at after the learned delay, which follows the looks") {
  Expectations::Clock::time_point now = Expectations::Clock::time_point(1h);
  ExpectationsOptions options;
  options.now = [&now] { return now; };
  options.first_look_initial = 1000us;
  options.first_look_step = 200us;
  options.first_look_quantile = 0.9;
  Expectations store(options);
  Observed old_object{true, false, "u-1", 4};
  Observed stored{true, false, "u-1", 5};

  CHECK(store.expect_first_look("ns/a", generation(4)) == 1000us);
  now += 1ms;
  REQUIRE(store.check("ns/a", old_object).has_value());  // too early: the delay rises
  CHECK(store.first_look_delay() == 1200us);
  CHECK_FALSE(store.check("ns/a", stored).has_value());  // a re-check teaches nothing
  CHECK(store.first_look_delay() == 1200us);

  CHECK(store.expect_first_look("ns/b", generation(4)) == 1200us);
  now += 2ms;
  CHECK_FALSE(store.check("ns/b", stored).has_value());  // in time: the delay falls a little
  CHECK(store.first_look_delay() == 1177us);             // 200 us * 0.1 / 0.9 less

  // A reconcile already running when the hint came (before the first look is due) teaches
  // nothing; nor do CREATE and DELETE hints, which are looked at once.
  CHECK(store.expect_first_look("ns/c", generation(4)) == 1177us);
  REQUIRE(store.check("ns/c", old_object).has_value());
  CHECK(store.first_look_delay() == 1177us);
  CHECK(store.expect_first_look("ns/d", created()) == 0us);
  CHECK(store.expect_first_look("ns/e", gone("u-1")) == 0us);
}

TEST_CASE("first_look_initial 0 looks at once") {
  ExpectationsOptions options;
  options.first_look_initial = 0us;
  Expectations store(options);
  CHECK(store.expect_first_look("ns/a", generation(4)) == 0us);
}

TEST_CASE("by default the learned first look aims at the median lag and may fall to at once") {
  Expectations::Clock::time_point now = Expectations::Clock::time_point(1h);
  ExpectationsOptions options;
  options.now = [&now] { return now; };
  Expectations store(options);
  Observed old_object{true, false, "u-1", 4};
  Observed stored{true, false, "u-1", 5};
  const auto initial = store.first_look_delay();
  REQUIRE(initial > 0us);

  // One look too early and one in time: up and down by the same step (q = 0.5).
  auto delay = store.expect_first_look("ns/a", generation(4));
  now += delay;
  REQUIRE(store.check("ns/a", old_object).has_value());
  CHECK(store.first_look_delay() > initial);
  CHECK_FALSE(store.check("ns/a", stored).has_value());
  delay = store.expect_first_look("ns/b", generation(4));
  now += delay;
  CHECK_FALSE(store.check("ns/b", stored).has_value());
  CHECK(store.first_look_delay() == initial);

  // Writes that are always stored in time bring the first look to at once, never below.
  for (int i = 0; i < 100; ++i) {
    std::string key = "ns/c" + std::to_string(i);
    now += store.expect_first_look(key, generation(4));
    CHECK_FALSE(store.check(key, stored).has_value());
  }
  CHECK(store.first_look_delay() == 0us);
  CHECK(store.expect_first_look("ns/d", generation(4)) == 0us);
}
