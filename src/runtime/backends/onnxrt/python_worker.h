// A Python process kept for the life of a command, serving requests one after another, so work that
// needs Python several times (ONNX Runtime's symbolic shape inference in every constant-folding
// pass) pays one interpreter start instead of one per call. Private to the onnxrt backend.
//
// The script it runs (`python -c script`) reads requests on its standard input and answers on its
// standard output (a socket shared by both), each message "<decimal byte count>\n<bytes>"; a
// request is a fixed number of messages, an answer one. At the end of the input (the worker is
// destroyed, or parity ends however it ends) the script returns. Its standard error goes to a file in
// a private temporary folder, read back only to explain a process that ended early.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parity/core/temporary_folder.h"

namespace parity::runtime::onnxrt {

class PythonWorker {
 public:
  // Starts `interpreter -c script`; nullptr with `outcome` saying why when it cannot start.
  static std::unique_ptr<PythonWorker> start(const std::filesystem::path& interpreter, const std::string& script,
                                             std::string& outcome);
  ~PythonWorker();
  PythonWorker(const PythonWorker&) = delete;
  PythonWorker& operator=(const PythonWorker&) = delete;

  // Sends `fields` (one message each) and returns the answer; nullopt with `outcome` when the
  // process has ended (its exit status and the end of what it wrote to its standard error). A
  // worker that failed once stays failed.
  std::optional<std::string> call(const std::vector<std::string>& fields, std::string& outcome);
  bool alive() const { return socket_ >= 0; }

 private:
  PythonWorker(pid_t pid, int socket, std::unique_ptr<TemporaryFolder> folder)
      : pid_(pid), socket_(socket), folder_(std::move(folder)) {}
  std::string ended(const std::string& what);  // closes, reaps, and explains

  pid_t pid_ = -1;
  int socket_ = -1;
  std::unique_ptr<TemporaryFolder> folder_;  // holds stderr.txt; removed with the worker
};

}  // namespace parity::runtime::onnxrt
