// A Python process kept for as long as its user needs it, serving commands one after another: work
// that needs Python several times (ONNX Runtime's symbolic shape inference in every constant-folding
// pass, a PyTorch model run iteration after iteration) pays one interpreter start. Any backend or
// script runner may start one; each gives the commands it needs as Python source.
//
// The interpreter runs `python -c <program> <descriptor>`: a pure-Python program (numpy imported
// only when tensors cross) followed by the user's command definitions. Its standard input carries
// requests and a copy of its standard output the replies, each one message "<byte count>\n<JSON>";
// its own standard output goes to its standard error, which goes to a file read back only to
// explain a worker that ended. Tensors cross in shared memory: a memfd both sides map, its number
// passed as <descriptor>; a message lists each tensor's name, numpy dtype ("<f4"), shape and offset,
// and the Python side sees numpy views of the region. Replies' tensors are written after the
// request's, the region grown (ftruncate) by whichever side needs more.
//
// In the Python source, a command is a function taking (arguments: dict, tensors: dict of name ->
// numpy array, views valid during the call) registered with @command("name"); it returns a JSON
// value, or Reply(result, {name: array}) to send tensors back (numpy arrays, or anything numpy's
// asarray takes; torch tensors are detached to CPU). An exception becomes a PythonCommandError whose
// message is the last line of the traceback; `raise CommandFailed(text)` reports `text` as the
// traceback. The worker stays usable after a command's error.
//
// A command run again and again on tensors of one layout (a runner's inference) may be bound:
// @command("name", bind=prepare) registers prepare(arguments, tensors), which does the work that does
// not change between calls once (torch tensors over the shared memory's views, say) and returns a
// function of no argument doing one call on the tensors' current values, returning what the command
// returns. PythonWorker::call_bound sends the command, its arguments and the tensors' layout the first
// time (the worker prepares it); later calls whose tensors keep that layout are one fixed 8-byte
// request ("!", three zero bytes, the binding's number as a little-endian uint32), the tensors written
// where they were. A reply without a result whose tensors keep the layout of the binding's previous
// reply is 8 bytes ("=" and seven zero bytes), the tensors copied where they were; any other reply (an
// error, a result, another layout) is the JSON message. A changed layout sends the whole request
// again, and the worker prepares the command anew.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "parity/core/array_io.h"
#include "parity/core/error.h"

namespace parity::runtime {

struct PythonWorkerOptions {
  std::string name;                     // names the worker in errors ("ONNX Runtime's symbolic shape inference")
  std::filesystem::path interpreter;    // a path, or a name looked up on PATH
  std::string commands;                 // Python source defining the @command functions
  // How long one call may take before the worker is stopped (SIGKILL); nullopt: no limit.
  std::optional<std::chrono::milliseconds> call_timeout;
};

// A command that raised in the worker: the message is "<name>: <command>: <last line of the
// traceback>"; the whole traceback (or CommandFailed's text) is traceback().
class PythonCommandError : public Error {
 public:
  PythonCommandError(std::string message, std::string traceback)
      : Error(std::move(message)), traceback_(std::move(traceback)) {}
  const std::string& traceback() const { return traceback_; }

 private:
  std::string traceback_;
};

struct PythonReply {
  nlohmann::json result;
  NamedTensors tensors;  // copies, owned by the caller
};

// One call at a time: a worker shared between threads is guarded by its user (symbolic shape
// inference keeps one per interpreter behind a mutex).
class PythonWorker {
 public:
  // Starts the interpreter. Throws ProcessStartError when it cannot be started, FileError when its
  // temporary folder or shared memory cannot be made.
  explicit PythonWorker(const PythonWorkerOptions& options);
  ~PythonWorker();  // ends the input; the worker returns (killed if it has not within 10 s)
  PythonWorker(const PythonWorker&) = delete;
  PythonWorker& operator=(const PythonWorker&) = delete;

  // Runs `command` with `arguments` (a JSON object) and `tensors` (numpy dtypes only: no strings,
  // bfloat16, float8 or packed types, UnsupportedError). A command that raised gives
  // PythonCommandError. A worker that ends before it answers (an exit, a signal such as an
  // out-of-memory kill) or passes the call timeout gives Error "the Python worker for <name> ...",
  // with its exit status or signal and the end of its standard error; it stays ended, and later
  // calls say so.
  PythonReply call(const std::string& command, const nlohmann::json& arguments = nlohmann::json::object(),
                   const NamedTensors& tensors = {});

  // A binding of `command` with `arguments` for call_bound; nothing is sent until its first call.
  using Binding = std::size_t;
  Binding bind(const std::string& command, nlohmann::json arguments = nlohmann::json::object());

  // call() of a binding's command and arguments on `tensors`: the 8-byte exchange while their layout
  // (names, dtypes, shapes) stays that of the previous call (see above). Errors are call()'s.
  PythonReply call_bound(Binding binding, const NamedTensors& tensors);

  bool alive() const;
  const std::string& name() const;

 private:
  struct BoundCall;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace parity::runtime
