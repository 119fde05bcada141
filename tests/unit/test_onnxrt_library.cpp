// OnnxrtRunner's search for the ONNX Runtime library (dlopen-ed at activation) and its message
// when nothing is found.
//
// The library is found through PARITY_PYTHON's onnxruntime package (ctest sets it; by hand use
// PARITY_PYTHON=/work/main/.venv/bin/python).
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "test_onnxrt_runner_helpers.h"
#include "parity/core/error.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"
#include "parity/runtime/ref/ref_runner.h"

namespace parity::runtime {
namespace {

using namespace onnxrt_testing;

// --- the library --------------------------------------------------------------------------------

TEST(OnnxrtLibrary, FoundThroughThePythonPackage) {
  ASSERT_NE(std::getenv("PARITY_PYTHON"), nullptr)
      << "set PARITY_PYTHON=/work/main/.venv/bin/python";
  OnnxrtLibraryInfo info = load_onnxrt_library();
  EXPECT_NE(info.path.find("onnxruntime/capi/libonnxruntime.so"), std::string::npos) << info.path;
  EXPECT_EQ(info.version.rfind("1.", 0), 0u) << info.version;
  EXPECT_NE(info.found_by.find("onnxruntime Python package"), std::string::npos) << info.found_by;
  EXPECT_GE(info.api_version, 21u);
  EXPECT_NE(std::find(info.available_providers.begin(), info.available_providers.end(),
                      "CPUExecutionProvider"),
            info.available_providers.end());
  // The same library by explicit path (a file, then its folder) is the one already loaded.
  EXPECT_EQ(load_onnxrt_library(info.path).path, info.path);
  EXPECT_EQ(load_onnxrt_library(fs::path(info.path).parent_path().string()).path, info.path);
}

TEST(OnnxrtLibrary, MissingFlagPathGivesOneClearMessage) {
  std::string missing = "/nonexistent/parity-test/libonnxruntime.so.1.30.0";
  try {
    load_onnxrt_library(missing);
    FAIL() << "expected FileError";
  } catch (const FileError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("ONNX Runtime library not found"), std::string::npos) << message;
    EXPECT_NE(message.find("--ort-library " + missing + " (no such file)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("PARITY_ORT_LIBRARY"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST(OnnxrtLibrary, MissingEnvironmentPathIsTheOnlyPlaceLooked) {
  ::setenv("PARITY_ORT_LIBRARY", "/nonexistent/ort-folder", 1);
  try {
    load_onnxrt_library();
    ::unsetenv("PARITY_ORT_LIBRARY");
    FAIL() << "expected FileError";
  } catch (const FileError& error) {
    ::unsetenv("PARITY_ORT_LIBRARY");
    std::string message = error.what();
    EXPECT_NE(message.find("PARITY_ORT_LIBRARY /nonexistent/ort-folder (no such file)"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("Python package of"), std::string::npos)
        << "an explicit choice is the only place looked";
  }
}

TEST(OnnxrtLibrary, NotAnOnnxRuntimeLibrary) {
  // A real shared library without OrtGetApiBase.
  EXPECT_THROW(
      {
        try {
          load_onnxrt_library("/lib/x86_64-linux-gnu/libz.so.1");
        } catch (const FileError& error) {
          EXPECT_NE(std::string(error.what()).find("not an ONNX Runtime library"),
                    std::string::npos)
              << error.what();
          throw;
        }
      },
      FileError);
}

TEST(OnnxrtRunner, MissingLibraryFailsAtActivationNotConstruction) {
  OnnxrtOptions options;
  options.library_path = "/nonexistent/libonnxruntime.so";
  OnnxrtRunner runner(chain_model().loader(), options);  // constructing is cheap and loads nothing
  EXPECT_FALSE(runner.is_active());
  try {
    runner.activate();
    FAIL() << "expected FileError";
  } catch (const FileError& error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind(runner.name() + ": ", 0), 0u) << "runner context first: " << message;
    EXPECT_NE(message.find("/nonexistent/libonnxruntime.so (no such file)"), std::string::npos)
        << message;
  }
  EXPECT_FALSE(runner.is_active());
  // The reference runner does not care.
  RefRunner ref(chain_model().loader());
  ActiveRunner active(ref);
  EXPECT_EQ(active->infer({{"x", float_tensor({2, 4})}}).size(), 1u);
}

}  // namespace
}  // namespace parity::runtime
