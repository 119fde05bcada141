// The places the ONNX Runtime library search looks that take more than a path: a folder holding a
// libonnxruntime.so*, the `onnxruntime` package of a Python interpreter (answered from the
// LibraryCache when still valid, else without a process for a virtual environment, else by asking
// the interpreter once), in the order of parity/core/python_interpreter.h. Private to the onnxrt
// backend; the order itself is Library::load's (documented in onnxrt_runner.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace parity::runtime::onnxrt {

// `libonnxruntime.so.<version>` (the longest, highest name first), else `libonnxruntime.so`, in
// `folder`; provider libraries (libonnxruntime_providers_*) are skipped.
std::optional<std::filesystem::path> library_in_folder(const std::filesystem::path& folder);

struct PythonPackageLibrary {
  std::optional<std::filesystem::path> library;
  std::string outcome;      // why there is none: "no python3 on PATH", "that Python has no onnxruntime package"...
  std::string interpreter;  // the absolute path `python` resolved to; empty when it did not
  bool from_cache = false;  // answered by the LibraryCache, no Python started
};

// The library inside the onnxruntime package of `python` (a path, or a name looked up on PATH). A
// valid LibraryCache record answers first; else a virtual environment's interpreter (pyvenv.cfg
// beside its bin/, no PYTHONPATH/PYTHONHOME) is answered from its site-packages without starting
// it; else the interpreter runs once to locate the package (importlib's find_spec, no import). The
// answer, found or not, is stored in the cache and kept for the process.
PythonPackageLibrary library_in_python_package(const std::string& python);

// One Python looked at for an onnxruntime package: how it was chosen ("the onnxruntime Python
// package of python3") and what it gave. `found.interpreter` is empty when none could be named
// (no setup record: `found.outcome` says why).
struct PythonSearchStep {
  std::string where;
  std::string python;  // the interpreter as named (a path, or a name looked up on PATH); empty when none
  PythonPackageLibrary found;
};

// The Pythons looked at, in order, up to the first whose onnxruntime package has the library:
// $PARITY_PYTHON when set (and then only it), else python3 on PATH, then the interpreter that
// scripts/setup.sh recorded. Answered from the LibraryCache when still valid (no process started).
std::vector<PythonSearchStep> search_onnxruntime_python();

}  // namespace parity::runtime::onnxrt
