// Tests for per-path logging severities (`--verbosity LEVEL path:LEVEL ...`): parsing the
// arguments, the path a source file has, the most specific rule winning, and the Logger using them.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/severity_rules.h"

namespace parity {
namespace {

std::string error_of(std::string_view argument) {
  try {
    parse_path_severity(argument);
  } catch (const InvalidInputError& error) {
    return error.what();
  }
  return "";
}

TEST(LoggerPathRules, ParsesALevelAloneAsTheDefault) {
  PathSeverity rule = parse_path_severity("INFO");
  EXPECT_EQ(rule.path, "");
  EXPECT_EQ(rule.severity, Severity::kInfo);
  EXPECT_EQ(parse_path_severity("extra_verbose").severity, Severity::kExtraVerbose);
}

TEST(LoggerPathRules, ParsesPathAndLevelNormalisingThePath) {
  PathSeverity rule = parse_path_severity("runtime/backends/onnxrt:VERBOSE");
  EXPECT_EQ(rule.path, "runtime/backends/onnxrt");
  EXPECT_EQ(rule.severity, Severity::kVerbose);
  EXPECT_EQ(parse_path_severity("src/runtime/:warning").path, "runtime");
  EXPECT_EQ(parse_path_severity("include/parity/core/logger.h:info").path, "core/logger.h");
  EXPECT_EQ(parse_path_severity("./compare//simple.cpp:info").path, "compare/simple.cpp");
  EXPECT_EQ(parse_path_severity("tools/parity/commands:verbose").path, "tools/parity/commands");
}

TEST(LoggerPathRules, BadArgumentsAreRefusedNamingThem) {
  std::string unknown = error_of("runtime:LOUD");
  EXPECT_NE(unknown.find("'runtime:LOUD'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown verbosity 'LOUD'"), std::string::npos) << unknown;
  std::string empty_path = error_of(":VERBOSE");
  EXPECT_NE(empty_path.find("':VERBOSE'"), std::string::npos) << empty_path;
  EXPECT_NE(empty_path.find("empty path"), std::string::npos) << empty_path;
  std::string whole_tree = error_of("src:VERBOSE");
  EXPECT_NE(whole_tree.find("'src:VERBOSE'"), std::string::npos) << whole_tree;
  EXPECT_NE(error_of("runtime:").find("unknown verbosity ''"), std::string::npos) << error_of("runtime:");
  EXPECT_NE(error_of("chatty").find("unknown verbosity 'chatty'"), std::string::npos);
}

TEST(LoggerPathRules, SourceFilesArePathsInTheTreeWithoutSrc) {
  EXPECT_EQ(source_rule_path("/work/parity/src/runtime/runner.cpp"), "runtime/runner.cpp");
  EXPECT_EQ(source_rule_path("../../src/compare/simple.cpp"), "compare/simple.cpp");
  EXPECT_EQ(source_rule_path("src/core/logger.cpp"), "core/logger.cpp");
  EXPECT_EQ(source_rule_path("/work/parity/include/parity/core/logger.h"), "core/logger.h");
  EXPECT_EQ(source_rule_path("/work/parity/tools/parity/commands/run.cpp"), "tools/parity/commands/run.cpp");
  EXPECT_EQ(source_rule_path("/work/parity/python/src/bind_logger.cpp"), "python/src/bind_logger.cpp");
  EXPECT_EQ(source_rule_path("/work/parity/tests/unit/test_logger.cpp"), "tests/unit/test_logger.cpp");
  // The last of the tree's folders counts: a checkout below other folders of those names.
  EXPECT_EQ(source_rule_path("/home/me/src/tests/parity/src/core/npy.cpp"), "core/npy.cpp");
  EXPECT_EQ(source_rule_path("/home/me/src/parity/tools/parity/main.cpp"), "tools/parity/main.cpp");
  // Whole folder names only: `mysrc/` is no `src/`.
  EXPECT_EQ(source_rule_path("/opt/mysrc/core/x.cpp"), "opt/mysrc/core/x.cpp");
}

TEST(LoggerPathRules, MostSpecificRuleWins) {
  SeverityRules rules({{"runtime", Severity::kWarning},
                       {"runtime/backends/onnxrt", Severity::kVerbose},
                       {"runtime/backends/onnxrt/ort_library.cpp", Severity::kUltraVerbose}});
  EXPECT_EQ(rules.match("runtime/runner.cpp"), Severity::kWarning);
  EXPECT_EQ(rules.match("runtime/backends/reference/runner.cpp"), Severity::kWarning);
  EXPECT_EQ(rules.match("runtime/backends/onnxrt/ort_runner.cpp"), Severity::kVerbose);
  EXPECT_EQ(rules.match("runtime/backends/onnxrt/ort_library.cpp"), Severity::kUltraVerbose);
  EXPECT_EQ(rules.match("compare/simple.cpp"), std::nullopt);
  // The order the rules are given in does not matter.
  SeverityRules reversed({{"runtime/backends/onnxrt", Severity::kVerbose}, {"runtime", Severity::kWarning}});
  EXPECT_EQ(reversed.match("runtime/backends/onnxrt/ort_runner.cpp"), Severity::kVerbose);
  EXPECT_EQ(reversed.match("runtime/runner.cpp"), Severity::kWarning);
}

TEST(LoggerPathRules, AFolderRuleCoversItsFilesAndAFileRuleOnlyItself) {
  SeverityRules rules({{"runtime/runner.cpp", Severity::kVerbose}, {"compare", Severity::kExtraVerbose}});
  EXPECT_EQ(rules.match("runtime/runner.cpp"), Severity::kVerbose);
  EXPECT_EQ(rules.match("runtime/runner_registry.cpp"), std::nullopt);
  EXPECT_EQ(rules.match("runtime/runner.cpp.in"), std::nullopt);
  EXPECT_EQ(rules.match("compare/simple.cpp"), Severity::kExtraVerbose);
  EXPECT_EQ(rules.match("compare"), Severity::kExtraVerbose);
  EXPECT_EQ(rules.match("comparer/x.cpp"), std::nullopt);
  // A folder between a rule and the file needs no rule of its own: the nearest covering rule counts.
  SeverityRules nested({{"runtime", Severity::kVerbose}, {"runtime/backends/onnxrt", Severity::kError}});
  EXPECT_EQ(nested.match("runtime/backends/openvino/ov_runner.cpp"), Severity::kVerbose);
}

TEST(LoggerPathRules, TheLastRuleForAPathWinsAndPathsAreNormalised) {
  SeverityRules rules({{"src/runtime/", Severity::kVerbose}, {"runtime", Severity::kError}});
  ASSERT_EQ(rules.rules().size(), 1u);
  EXPECT_EQ(rules.rules()[0].path, "runtime");
  EXPECT_EQ(rules.match("runtime/runner.cpp"), Severity::kError);
  EXPECT_THROW(SeverityRules({{"", Severity::kVerbose}}), InvalidInputError);
}

// Restores the global logger's default severity and removes its rules after each test.
class LoggerPathRulesTest : public ::testing::Test {
 protected:
  void SetUp() override { previous_severity_ = Logger::global().severity(); }
  void TearDown() override {
    Logger::global().set_path_severities({});
    Logger::global().set_sink(nullptr);
    Logger::global().set_severity(previous_severity_);
  }

 private:
  Severity previous_severity_ = Severity::kInfo;
};

TEST_F(LoggerPathRulesTest, RulesOverTheDefaultWhichCoversTheRest) {
  auto& logger = Logger::global();
  logger.set_severity(Severity::kInfo);
  logger.set_path_severities({{"runtime/backends/onnxrt", Severity::kVerbose}, {"compare", Severity::kError}});
  EXPECT_EQ(logger.severity_at("/w/src/runtime/backends/onnxrt/ort_runner.cpp"), Severity::kVerbose);
  EXPECT_EQ(logger.severity_at("/w/src/compare/simple.cpp"), Severity::kError);
  EXPECT_EQ(logger.severity_at("/w/src/runtime/runner.cpp"), Severity::kInfo);
  // The default still applies where no rule does, also after a file's lookup was cached.
  logger.set_severity(Severity::kWarning);
  EXPECT_EQ(logger.severity_at("/w/src/runtime/runner.cpp"), Severity::kWarning);
  EXPECT_EQ(logger.severity_at("/w/src/runtime/backends/onnxrt/ort_runner.cpp"), Severity::kVerbose);
  ASSERT_EQ(logger.path_severities().size(), 2u);
  // New rules replace the old ones (and what was cached for them); none leaves the default alone.
  logger.set_path_severities({{"runtime", Severity::kExtraVerbose}});
  EXPECT_EQ(logger.severity_at("/w/src/compare/simple.cpp"), Severity::kWarning);
  EXPECT_EQ(logger.severity_at("/w/src/runtime/backends/onnxrt/ort_runner.cpp"), Severity::kExtraVerbose);
  logger.set_path_severities({});
  EXPECT_TRUE(logger.path_severities().empty());
  EXPECT_EQ(logger.severity_at("/w/src/runtime/backends/onnxrt/ort_runner.cpp"), Severity::kWarning);
}

// The uncached lookup (Python's callers) agrees with the cached one, for paths held in strings
// built at run time, and follows rule changes.
TEST_F(LoggerPathRulesTest, UncachedLookupForPathsHeldInStrings) {
  auto& logger = Logger::global();
  logger.set_severity(Severity::kInfo);
  logger.set_path_severities({{"compare", Severity::kError}, {"python/parity/logger", Severity::kVerbose}});
  std::string path = std::string("/w/src/") + "compare/simple.cpp";
  EXPECT_EQ(logger.severity_for_path(path), Severity::kError);
  EXPECT_EQ(logger.severity_for_path(path), logger.severity_at("/w/src/compare/simple.cpp"));
  // Python names Parity's own modules python/parity/... (python/parity/logger/__init__.py).
  EXPECT_EQ(logger.severity_for_path("python/parity/logger/__init__.py"), Severity::kVerbose);
  EXPECT_EQ(logger.severity_for_path("/w/src/runtime/runner.cpp"), Severity::kInfo);
  // The same string's contents changed: the answer follows the contents, not the address.
  path.replace(path.find("compare"), 7, "runtime");
  EXPECT_EQ(logger.severity_for_path(path), Severity::kInfo);
  logger.set_path_severities({{"runtime", Severity::kWarning}});
  EXPECT_EQ(logger.severity_for_path(path), Severity::kWarning);
}

class KeepingSink : public LogSink {
 public:
  void write(Severity, std::string_view text) override { text_ += text; }
  std::string text_;
};

// This file's own logging calls, under a rule for this file and one for another folder.
TEST_F(LoggerPathRulesTest, LoggingCallsFollowTheRuleOfTheirFile) {
  auto& logger = Logger::global();
  auto sink = std::make_shared<KeepingSink>();
  logger.set_sink(sink);
  logger.set_severity(Severity::kInfo);
  logger.set_path_severities({{"runtime", Severity::kUltraVerbose}});
  log::verbose("hidden: this file is under the default");
  EXPECT_FALSE(logger.enabled(Severity::kVerbose));
  logger.set_path_severities({{"tests/unit/test_logger_path_rules.cpp", Severity::kVerbose}});
  log::verbose("shown: {}", "this file's rule");
  log::extra_verbose("hidden: below this file's rule");
  EXPECT_TRUE(logger.enabled(Severity::kVerbose));
  // A rule less verbose than the default also wins (Polygraphy's `ULTRA_VERBOSE backend:VERBOSE`).
  logger.set_severity(Severity::kUltraVerbose);
  logger.set_path_severities({{"tests/unit", Severity::kWarning}});
  log::info("hidden: the folder's rule is warning");
  log::warning("shown: a warning");
  EXPECT_EQ(sink->text_, "[V] shown: this file's rule\n[W] shown: a warning\n");
}

}  // namespace
}  // namespace parity
