// EventRecorder with a recording EventWriter: repeats within the window bump one Event's count,
// anything else posts a new one; record() never writes on the caller's thread; a full queue and
// refused writes are counted, never thrown or waited on.
#include "controller/event_recorder.h"

#include <doctest/doctest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using nlohmann::json;
using vscaler::controller::EventRecord;
using vscaler::controller::EventRecorder;
using vscaler::controller::EventRecorderOptions;
using vscaler::controller::EventWriter;
namespace base = vscaler::base;
namespace kube = vscaler::kube;

namespace {

class RecordingWriter : public EventWriter {
 public:
  base::Result<base::Unit, kube::ApiError> create(const json& event) override {
    std::lock_guard lock(mutex);
    if (refuse) return base::fail(kube::make_error(kube::ErrorKind::kForbidden, "quota"));
    created.push_back(event);
    threads.push_back(std::this_thread::get_id());
    return base::Unit{};
  }
  base::Result<base::Unit, kube::ApiError> bump(const std::string&, const std::string& name,
                                                int64_t count, const std::string&) override {
    std::lock_guard lock(mutex);
    bumps.emplace_back(name, count);
    return base::Unit{};
  }
  std::mutex mutex;
  bool refuse = false;
  std::vector<json> created;
  std::vector<std::pair<std::string, int64_t>> bumps;
  std::vector<std::thread::id> threads;
};

EventRecord conflict(const char* message = "VerticalScaler old already manages it") {
  return EventRecord{"shop", "web", "u-1", "7", true, "Conflict", message};
}

}  // namespace

TEST_CASE("a repeat within the window bumps the count; another message posts a new Event") {
  RecordingWriter writer;
  EventRecorderOptions options;
  options.bump_interval = 0ms;  // every repeat written at once
  EventRecorder recorder(writer, options);
  recorder.record(conflict());
  recorder.record(conflict());
  recorder.record(conflict());
  recorder.record(conflict("something else"));
  CHECK(writer.created.empty());  // nothing written by record()
  CHECK(recorder.flush() == 4);
  REQUIRE(writer.created.size() == 2);
  CHECK(writer.created[0]["message"] == "VerticalScaler old already manages it");
  CHECK(writer.created[1]["message"] == "something else");
  REQUIRE(writer.bumps.size() == 2);
  CHECK(writer.bumps[0].first == writer.created[0]["metadata"]["name"]);
  CHECK(writer.bumps[1].second == 3);
  auto stats = recorder.stats();
  CHECK(stats.created == 2);
  CHECK(stats.bumped == 2);
}

TEST_CASE("repeats within bump_interval fold into one count write") {
  RecordingWriter writer;
  EventRecorder recorder(writer);  // bump_interval 10 s
  for (int i = 0; i < 5; ++i) recorder.record(conflict());
  CHECK(recorder.flush() == 5);
  REQUIRE(writer.created.size() == 1);
  REQUIRE(writer.bumps.size() == 1);  // flush() writes the folded repeats too
  CHECK(writer.bumps[0].first == writer.created[0]["metadata"]["name"]);
  CHECK(writer.bumps[0].second == 5);
  auto stats = recorder.stats();
  CHECK(stats.bumped == 4);
  CHECK(stats.bump_writes == 1);
  recorder.flush();
  CHECK(writer.bumps.size() == 1);  // nothing folded since: nothing to write
}

TEST_CASE("the recorder's thread writes a folded repeat once the interval has passed") {
  RecordingWriter writer;
  EventRecorderOptions options;
  options.bump_interval = 1s;  // long enough for the three records to arrive within it
  EventRecorder recorder(writer, options);
  recorder.start();
  recorder.record(conflict());
  recorder.record(conflict());
  recorder.record(conflict());
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (recorder.stats().bump_writes < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  recorder.stop();
  REQUIRE(writer.created.size() == 1);
  REQUIRE(writer.bumps.size() == 1);
  CHECK(writer.bumps[0].second == 3);
}

TEST_CASE("after the window a repeat is a new Event") {
  RecordingWriter writer;
  EventRecorderOptions options;
  options.window = 0ms;
  EventRecorder recorder(writer, options);
  recorder.record(conflict());
  recorder.record(conflict());
  recorder.flush();
  CHECK(writer.created.size() == 2);
  CHECK(writer.bumps.empty());
}

TEST_CASE("the recorder's thread writes; a full queue drops and counts") {
  RecordingWriter writer;
  EventRecorderOptions options;
  options.max_pending = 2;
  EventRecorder recorder(writer, options);
  for (int i = 0; i < 5; ++i) recorder.record(conflict(std::to_string(i).c_str()));
  CHECK(recorder.stats().dropped == 3);
  recorder.start();
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (recorder.stats().created < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  recorder.stop();
  REQUIRE(writer.created.size() == 2);
  CHECK(writer.threads[0] != std::this_thread::get_id());
}

TEST_CASE("a refused Event is counted, and nothing is thrown") {
  RecordingWriter writer;
  writer.refuse = true;
  EventRecorder recorder(writer);
  recorder.record(conflict());
  CHECK(recorder.flush() == 1);
  CHECK(recorder.stats().failed == 1);
  writer.refuse = false;
  recorder.record(conflict());
  recorder.flush();
  CHECK(writer.created.size() == 1);  // not remembered as posted: a new Event, no bump
}
