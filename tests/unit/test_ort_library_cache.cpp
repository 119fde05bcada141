// The ONNX Runtime library search's memory of Python interpreters (src/runtime/backends/onnxrt/
// ort_library_cache.*) and the Python-package step that uses it (ort_library_search.*): records
// round-trip, go stale when the interpreter, a watched folder, $PYTHONPATH or the library changes,
// a corrupt file is ignored and replaced, and a remembered interpreter is not started again.
// The interpreters here are shell scripts that count their runs; no ONNX Runtime is needed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "../../src/runtime/backends/onnxrt/ort_library_cache.h"
#include "../../src/runtime/backends/onnxrt/ort_library_search.h"
#include "parity/core/file_io.h"
#include "parity/core/python_interpreter.h"

namespace parity::runtime::onnxrt {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// Sets an environment variable for the scope, restoring the previous value (or its absence).
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedVariable() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class OrtLibraryCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("parity-ort-cache-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    cache_home_ = std::make_unique<ScopedVariable>("XDG_CACHE_HOME", (root_ / "cache").string());
  }
  void TearDown() override {
    cache_home_.reset();
    fs::remove_all(root_);
  }

  // A fake interpreter: each run appends a line to `runs`, then prints `package` (the onnxruntime
  // package folder, empty for none) and the sys.path folders, as the real probe does.
  fs::path fake_python(const std::string& name, const fs::path& package, const fs::path& site) {
    fs::path script = root_ / "bin" / name;
    write_text(script, "#!/bin/sh\necho run >> '" + (root_ / "runs").string() + "'\nprintf '%s\\n%s\\n' '" +
                           package.string() + "' '" + site.string() + "'\n");
    fs::permissions(script, fs::perms::owner_all);
    return script;
  }
  int runs() const {
    std::error_code error;
    if (!fs::exists(root_ / "runs", error)) return 0;
    std::string text = read_file(root_ / "runs");
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  fs::path cache_file() const { return root_ / "cache" / "parity" / "onnxruntime-library.cache"; }

  fs::path root_;
  std::unique_ptr<ScopedVariable> cache_home_;
};

TEST_F(OrtLibraryCacheTest, DefaultFileFollowsXdgCacheHome) {
  auto cache = LibraryCache::default_cache();
  ASSERT_TRUE(cache.has_value());
  EXPECT_EQ(cache->file(), cache_file());
  ScopedVariable relative("XDG_CACHE_HOME", "relative/cache");  // ignored, as the XDG spec says
  ScopedVariable home("HOME", (root_ / "home").string());
  EXPECT_EQ(LibraryCache::default_cache()->file(), root_ / "home" / ".cache" / "parity" / "onnxruntime-library.cache");
}

TEST_F(OrtLibraryCacheTest, RecordRoundTripsAndStaysValidWhileNothingChanges) {
  write_text(root_ / "python", "interpreter");
  write_text(root_ / "lib" / "libonnxruntime.so.1.2.3", "library");
  fs::create_directories(root_ / "site");
  LibraryCache cache(cache_file());
  auto record = record_now((root_ / "python").string(), (root_ / "lib" / "libonnxruntime.so.1.2.3").string(), "",
                           {(root_ / "site").string(), (root_ / "not-yet").string()});
  ASSERT_TRUE(cache.store(record));
  auto found = cache.find_valid((root_ / "python").string());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, record);
  EXPECT_EQ(found->watched_folders.at(1).second, "missing");
  EXPECT_FALSE(cache.find_valid((root_ / "other-python").string()).has_value());
  EXPECT_EQ(read_file(cache_file()).rfind("parity onnxruntime-library cache 1\n", 0), 0u);
}

TEST_F(OrtLibraryCacheTest, RecordGoesStaleWhenAnythingItDependsOnChanges) {
  write_text(root_ / "python", "interpreter");
  write_text(root_ / "libonnxruntime.so.1", "library");
  fs::create_directories(root_ / "site");
  LibraryCache cache(cache_file());
  std::string python = (root_ / "python").string();
  auto store = [&] {
    ASSERT_TRUE(cache.store(record_now(python, (root_ / "libonnxruntime.so.1").string(), "",
                                       {(root_ / "site").string(), (root_ / "new").string()})));
    ASSERT_TRUE(cache.find_valid(python).has_value());
  };
  auto later = [](const fs::path& path) {
    fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
  };

  store();
  fs::remove(root_ / "libonnxruntime.so.1");  // the library is gone
  EXPECT_FALSE(cache.find_valid(python).has_value());
  write_text(root_ / "libonnxruntime.so.1", "library");

  store();
  later(root_ / "libonnxruntime.so.1");  // the library was replaced
  EXPECT_FALSE(cache.find_valid(python).has_value());

  store();
  write_text(python, "a newer interpreter");  // the interpreter changed
  EXPECT_FALSE(cache.find_valid(python).has_value());

  store();
  later(root_ / "site");  // a package was installed or removed on sys.path
  EXPECT_FALSE(cache.find_valid(python).has_value());

  store();
  fs::create_directories(root_ / "new");  // a sys.path folder appeared (a first user install)
  EXPECT_FALSE(cache.find_valid(python).has_value());

  store();
  {
    ScopedVariable python_path("PYTHONPATH", (root_ / "elsewhere").string());
    EXPECT_FALSE(cache.find_valid(python).has_value());
  }
  EXPECT_TRUE(cache.find_valid(python).has_value());
}

TEST_F(OrtLibraryCacheTest, CorruptFileIsIgnoredAndReplaced) {
  write_text(root_ / "python", "interpreter");
  std::string python = (root_ / "python").string();
  LibraryCache cache(cache_file());
  for (const std::string& garbage :
       {std::string("\x00\xff garbage", 10), std::string("parity onnxruntime-library cache 1\nnot\ta\trecord\n"),
        std::string("parity onnxruntime-library cache 1\n") + python + "\tmissing\t\t\t\t\t\n",  // no outcome
        std::string("parity onnxruntime-library cache 99\n")}) {
    write_text(cache_file(), garbage);
    EXPECT_TRUE(cache.read_all().empty()) << garbage;
    EXPECT_FALSE(cache.find_valid(python).has_value()) << garbage;
    ASSERT_TRUE(cache.store(record_now(python, "", "that Python has no onnxruntime package", {})));
    auto records = cache.read_all();
    ASSERT_EQ(records.size(), 1u) << read_file(cache_file());
    EXPECT_EQ(records.front().outcome, "that Python has no onnxruntime package");
    EXPECT_TRUE(cache.find_valid(python).has_value());
  }
}

TEST_F(OrtLibraryCacheTest, KeepsOtherInterpretersAndDropsTheOldestBeyondTheLimit) {
  LibraryCache cache(cache_file());
  for (std::size_t i = 0; i < LibraryCache::kMaxRecords + 3; ++i)
    ASSERT_TRUE(cache.store(record_now((root_ / ("python" + std::to_string(i))).string(), "", "none", {})));
  ASSERT_TRUE(cache.store(record_now((root_ / "python10").string(), "", "replaced", {})));
  auto records = cache.read_all();
  ASSERT_EQ(records.size(), LibraryCache::kMaxRecords);
  EXPECT_EQ(records.front().interpreter, (root_ / "python3").string());  // 0..2 dropped, 10 moved to the end
  EXPECT_EQ(records.back().interpreter, (root_ / "python10").string());
  EXPECT_EQ(records.back().outcome, "replaced");
}

TEST_F(OrtLibraryCacheTest, RememberedInterpreterIsNotStartedAgain) {
  fs::path package = root_ / "site" / "onnxruntime";
  write_text(package / "capi" / "libonnxruntime.so.1.21.0", "library");
  write_text(package / "capi" / "libonnxruntime_providers_shared.so", "provider");
  fs::path python = fake_python("python3", package, root_ / "site");
  ScopedVariable path("PATH", (root_ / "bin").string());

  auto first = library_in_python_package("python3");
  EXPECT_EQ(runs(), 1);
  ASSERT_TRUE(first.library.has_value()) << first.outcome;
  EXPECT_EQ(*first.library, package / "capi" / "libonnxruntime.so.1.21.0");
  EXPECT_EQ(first.interpreter, python.string());
  EXPECT_FALSE(first.from_cache);

  auto second = library_in_python_package("python3");
  EXPECT_EQ(runs(), 1) << "the remembered answer must not start the interpreter";
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.library, first.library);
  EXPECT_EQ(library_in_python_package(python.string()).library, first.library);  // the same key by path
  EXPECT_EQ(runs(), 1);

  // The library was deleted: the interpreter is asked again, and its answer replaces the record.
  fs::remove(package / "capi" / "libonnxruntime.so.1.21.0");
  auto third = library_in_python_package("python3");
  EXPECT_EQ(runs(), 2);
  EXPECT_FALSE(third.library.has_value());
  EXPECT_NE(third.outcome.find("has no libonnxruntime.so* in capi/"), std::string::npos) << third.outcome;
  // ...and that negative answer is remembered too, until the capi/ folder changes.
  EXPECT_TRUE(library_in_python_package("python3").from_cache);
  EXPECT_EQ(runs(), 2);
  write_text(package / "capi" / "libonnxruntime.so.1.22.0", "library");
  fs::last_write_time(package / "capi", fs::last_write_time(package / "capi") + std::chrono::seconds(5));
  auto fourth = library_in_python_package("python3");
  EXPECT_EQ(runs(), 3);
  EXPECT_EQ(fourth.library, package / "capi" / "libonnxruntime.so.1.22.0");
}

TEST_F(OrtLibraryCacheTest, InterpreterWithoutThePackageOrMissingFromPath) {
  fs::create_directories(root_ / "site");
  fake_python("python3", "", root_ / "site");
  ScopedVariable path("PATH", (root_ / "bin").string());
  auto none = library_in_python_package("python3");
  EXPECT_FALSE(none.library.has_value());
  EXPECT_EQ(none.outcome, "that Python has no onnxruntime package");
  EXPECT_TRUE(library_in_python_package("python3").from_cache);
  EXPECT_EQ(runs(), 1);

  auto absent = library_in_python_package("python3-not-installed");
  EXPECT_EQ(absent.outcome, "no python3-not-installed on PATH");
  EXPECT_TRUE(absent.interpreter.empty());
  EXPECT_EQ(library_in_python_package((root_ / "bin" / "nothing").string()).outcome, "no such file");
}

TEST_F(OrtLibraryCacheTest, VirtualEnvironmentIsAnsweredWithoutStartingIt) {
  // bin/python, pyvenv.cfg beside bin/, lib/python3.X/site-packages/onnxruntime/capi/.
  fs::path venv = root_ / "venv";
  write_text(venv / "pyvenv.cfg", "home = /usr/bin\n");
  write_text(venv / "lib" / "python3.99" / "site-packages" / "onnxruntime" / "capi" / "libonnxruntime.so.1.21.0", "x");
  fs::path python = venv / "bin" / "python";
  write_text(python, "#!/bin/sh\necho run >> '" + (root_ / "runs").string() + "'\nexit 1\n");
  fs::permissions(python, fs::perms::owner_all);
  auto found = library_in_python_package(python.string());
  ASSERT_TRUE(found.library.has_value()) << found.outcome;
  EXPECT_EQ(found.library->filename(), "libonnxruntime.so.1.21.0");
  EXPECT_EQ(runs(), 0);
}

TEST_F(OrtLibraryCacheTest, SetupPythonRecord) {
  std::string outcome;
  EXPECT_EQ(setup_python_record(), root_ / "cache" / "parity" / "setup-python");
  EXPECT_FALSE(recorded_setup_python(outcome).has_value());
  EXPECT_NE(outcome.find("no such file"), std::string::npos) << outcome;

  write_text(root_ / "cache" / "parity" / "setup-python", "relative/python\n");
  EXPECT_FALSE(recorded_setup_python(outcome).has_value());
  EXPECT_NE(outcome.find("not an absolute path"), std::string::npos) << outcome;

  write_text(root_ / "cache" / "parity" / "setup-python", (root_ / "gone" / "python").string() + "\n");
  EXPECT_FALSE(recorded_setup_python(outcome).has_value());
  EXPECT_NE(outcome.find("not an executable file"), std::string::npos) << outcome;

  fs::path python = fake_python("python", "", root_);
  write_text(root_ / "cache" / "parity" / "setup-python", python.string() + "\n");
  EXPECT_EQ(recorded_setup_python(outcome), python.string());
}

}  // namespace
}  // namespace parity::runtime::onnxrt
