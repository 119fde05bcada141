// The debug replay's journal (include/parity/debug/replay.h): n recorded steps write O(n) bytes
// (each step used to rewrite the whole replay: O(n^2)), a run that never finishes leaves every
// step it recorded in the replay and its journal, and loading reads both.
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>

#include "parity/core/file_io.h"
#include "parity/core/temporary_folder.h"
#include "parity/debug/replay.h"

namespace parity {
namespace {

namespace fs = std::filesystem;

// Bytes this process has passed to write(2) and its kin so far (/proc/self/io "wchar").
int64_t bytes_written() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value)
    if (key == "wchar:") return value;
  ADD_FAILURE() << "/proc/self/io has no wchar line";
  return 0;
}

nlohmann::json step(int i) {
  return {{"key", "iteration:" + std::to_string(i)}, {"failed", i % 3 == 0}, {"exit_code", i % 3 == 0 ? 1 : 0},
          {"label", "a label of some length, as debug reduce's node lists are, " + std::to_string(i)}};
}

TEST(DebugReplayJournal, RecordingWritesBytesLinearInTheSteps) {
  TemporaryFolder folder("parity-test-replay", "the replay journal test");
  const fs::path path = folder.path() / "replay.json";
  constexpr int kSteps = 1000;
  const int64_t before = bytes_written();
  {
    debug::DebugReplay replay({}, path, {{"tool", "debug repeat"}}, {"tool"});
    for (int i = 0; i < kSteps; ++i) replay.record(step(i));
  }
  const int64_t written = bytes_written() - before;
  const auto final_size = static_cast<int64_t>(fs::file_size(path));
  // Doubling compactions write at most 2x the final file, the journal about 1x, the last
  // compaction 1x more: ~4x. Rewriting the whole file per step wrote ~kSteps / 2 times it.
  EXPECT_LT(written, 6 * final_size) << "wrote " << written << " bytes for a " << final_size << "-byte replay";
  EXPECT_FALSE(fs::exists(debug::replay_journal_path(path))) << "the journal outlived a finished run";
  debug::DebugReplay loaded(path, {}, {}, {"tool"});
  for (int i : {0, 1, kSteps / 2, kSteps - 1}) {
    auto found = loaded.find("iteration:" + std::to_string(i));
    ASSERT_TRUE(found) << i;
    EXPECT_EQ(*found, step(i));
  }
}

TEST(DebugReplayJournal, AnUnfinishedRunResumesFromEveryStepItRecorded) {
  TemporaryFolder folder("parity-test-replay", "the replay journal test");
  const fs::path path = folder.path() / "replay.json";
  // Never destroyed: as if the process were killed after its 11th step (the replay file was last
  // written whole at 8 steps, the journal holds 3).
  auto* unfinished = new debug::DebugReplay({}, path, {{"tool", "debug repeat"}}, {"tool"});
  for (int i = 0; i < 11; ++i) unfinished->record(step(i));
  ASSERT_TRUE(fs::exists(debug::replay_journal_path(path)));
  // A 12th step cut short by the kill: no line break, ignored.
  {
    std::ofstream journal(debug::replay_journal_path(path), std::ios::app);
    journal << R"({"key": "iteration:11", "fai)";
  }
  debug::DebugReplay loaded(path, {}, {}, {"tool"});
  for (int i = 0; i < 11; ++i) {
    auto found = loaded.find("iteration:" + std::to_string(i));
    ASSERT_TRUE(found) << i;
    EXPECT_EQ(*found, step(i));
  }
  EXPECT_FALSE(loaded.find("iteration:11"));
  EXPECT_EQ(loaded.loaded_field("steps").size(), 11u);
  // Resumed into the same file: the finished run writes it whole and removes the journal.
  {
    debug::DebugReplay resumed(path, path, {{"tool", "debug repeat"}}, {"tool"});
    for (int i = 0; i < 13; ++i) resumed.record(step(i));
  }
  EXPECT_FALSE(fs::exists(debug::replay_journal_path(path)));
  auto whole = nlohmann::json::parse(read_file(path));
  EXPECT_EQ(whole["steps"].size(), 13u);
  EXPECT_EQ(whole["tool"], "debug repeat");
  delete unfinished;  // for LeakSanitizer: it writes its 11 steps over the file, which nothing reads any more
}

}  // namespace
}  // namespace parity
