// The Python worker: its Python program, the shared-memory region and the request/reply exchange.
#include "parity/runtime/python_worker.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "parity/core/dtype.h"
#include "parity/core/process.h"
#include "parity/core/temporary_folder.h"

namespace parity::runtime {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The worker's side, before the user's commands. Requests on stdin, replies on a copy of stdout
// (stdout itself becomes stderr, so prints never mix with replies). The region is the memfd whose
// number is argv[1], mapped again whenever a message says it has grown.
constexpr const char* kWorkerProgram = R"PY(
import json, mmap, os, sys, traceback
_requests = sys.stdin.buffer
_replies = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
_region_fd = int(sys.argv[1])
_region = None
_region_size = 0
_commands = {}

def command(name):
    def register(function):
        _commands[name] = function
        return function
    return register

class Reply:
    def __init__(self, result=None, tensors=None):
        self.result = result
        self.tensors = tensors or {}

class CommandFailed(Exception):
    """Reports its text as the traceback."""

def _map(size):
    global _region, _region_size
    if size != _region_size:
        _region = mmap.mmap(_region_fd, size) if size > 0 else None
        _region_size = size

def _read_message():
    header = _requests.readline()
    if not header:
        return None
    return json.loads(_requests.read(int(header)))

def _send(message):
    data = json.dumps(message).encode()
    _replies.write(b"%d\n" % len(data) + data)
    _replies.flush()

def _views(entries):
    if not entries:
        return {}
    import numpy as np
    return {e["name"]: np.ndarray(tuple(e["shape"]), dtype=np.dtype(e["dtype"]), buffer=_region, offset=e["offset"])
            for e in entries}

def _write(tensors, offset):
    import numpy as np
    arrays = []
    for name, value in tensors.items():
        if hasattr(value, "detach") and hasattr(value, "cpu"):
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
        if not array.flags.c_contiguous:
            array = array.copy(order="C")  # not ascontiguousarray, which makes a scalar 1-D
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        if array.dtype == object:
            raise TypeError(f"tensor '{name}' is not a numeric array")
        offset = (offset + 63) // 64 * 64
        arrays.append((str(name), array, offset))
        offset += array.nbytes
    if offset > _region_size:
        size = max(offset, 2 * _region_size)
        os.ftruncate(_region_fd, size)
        _map(size)
    entries = []
    for name, array, start in arrays:
        if array.nbytes:
            np.ndarray(array.shape, dtype=array.dtype, buffer=_region, offset=start)[...] = array
        entries.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape), "offset": start})
    return entries

def _serve():
    while True:
        request = _read_message()
        if request is None:
            break
        try:
            _map(request["region_size"])
            function = _commands.get(request["command"])
            if function is None:
                raise KeyError(f"no command '{request['command']}' (commands: {', '.join(sorted(_commands))})")
            returned = function(request["arguments"], _views(request["tensors"]))
            reply = returned if isinstance(returned, Reply) else Reply(returned)
            entries = _write(reply.tensors, request["reply_offset"]) if reply.tensors else []
            _send({"ok": True, "result": reply.result, "tensors": entries, "region_size": _region_size})
        except BaseException as error:
            text = str(error) if isinstance(error, CommandFailed) else traceback.format_exc()
            lines = [line for line in text.strip().splitlines() if line.strip()]
            _send({"ok": False, "error": lines[-1].strip() if lines else type(error).__name__, "traceback": text})
)PY";

constexpr const char* kServe = "\n_serve()\n";

constexpr std::size_t kAlignment = 64;

std::size_t aligned(std::size_t offset) { return (offset + kAlignment - 1) / kAlignment * kAlignment; }

// The last `limit` bytes of a file.
std::string tail_of(const fs::path& file, std::size_t limit = 4000) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  return all.size() > limit ? "..." + all.substr(all.size() - limit) : all;
}

// The memfd both sides map; this side's mapping follows the file's size.
class SharedRegion {
 public:
  SharedRegion() {
    fd_ = ::memfd_create("parity-python-worker", MFD_CLOEXEC);
    if (fd_ < 0) raise<FileError>("cannot create shared memory for a Python worker: {}", std::strerror(errno));
  }
  ~SharedRegion() {
    unmap();
    ::close(fd_);
  }
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  int fd() const { return fd_; }
  std::size_t size() const { return size_; }
  std::byte* data() { return static_cast<std::byte*>(mapping_); }

  // Grows the file to at least `size` (doubling) and maps it.
  void reserve(std::size_t size) {
    if (size <= size_) return;
    std::size_t grown = std::max(size, 2 * size_);
    if (::ftruncate(fd_, static_cast<off_t>(grown)) != 0)
      raise<ResourceLimitError>("cannot grow a Python worker's shared memory to {} bytes: {}", grown,
                                std::strerror(errno));
    map(grown);
  }

  // Maps the file again at the size the other side gave it.
  void follow(std::size_t size) {
    struct stat status {};
    if (::fstat(fd_, &status) != 0 || static_cast<std::size_t>(status.st_size) < size)
      raise<InternalError>("a Python worker's shared memory is smaller than its reply says ({} bytes)", size);
    if (size != size_) map(size);
  }

 private:
  void unmap() {
    if (mapping_) ::munmap(mapping_, size_);
    mapping_ = nullptr;
    size_ = 0;
  }
  void map(std::size_t size) {
    unmap();
    if (size == 0) return;
    void* mapping = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (mapping == MAP_FAILED)
      raise<ResourceLimitError>("cannot map a Python worker's shared memory ({} bytes): {}", size,
                                std::strerror(errno));
    mapping_ = mapping;
    size_ = size;
  }

  int fd_ = -1;
  void* mapping_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace

struct PythonWorker::State {
  std::string name;
  std::optional<std::chrono::milliseconds> call_timeout;
  TemporaryFolder folder{"parity-python-worker", "a Python worker"};  // holds stderr.txt
  SharedRegion region;
  std::unique_ptr<Process> process;
  std::string pending;  // bytes read past the last reply
  std::string failure;  // why the worker ended; empty while it serves

  // Ends the worker after `what` happened and throws the explanation, kept for later calls.
  // `stopped`: this side killed it.
  [[noreturn]] void ended(const std::string& what, bool stopped = false) {
    if (stopped) process->kill(SIGKILL);
    ProcessEnd end = process->wait(ProcessClock::now() + std::chrono::seconds(1));
    std::string how = end.describe() + (end.signal != 0 ? signal_name(end.signal) : "");
    if (end.signal == SIGKILL && !stopped && !end.timed_out) how += ", perhaps killed for lack of memory";
    std::string errors = tail_of(folder.path() / "stderr.txt");
    failure = fmt::format("the Python worker for {} {} ({}){}", name, what, how, errors.empty() ? "" : ":\n" + errors);
    raise<Error>("{}", failure);
  }

  // One message "<byte count>\n<bytes>"; nullopt when the worker's output ended first.
  std::optional<std::string> read_message(ProcessDeadline deadline, const std::string& command) {
    for (;;) {
      auto newline = pending.find('\n');
      if (newline != std::string::npos) {
        std::string header = pending.substr(0, newline);
        if (header.empty() || header.size() > 20 ||
            !std::all_of(header.begin(), header.end(), [](unsigned char c) { return std::isdigit(c); })) {
          ended("sent a message that is not one", /*stopped=*/true);
        }
        const std::size_t size = std::stoull(header);
        if (pending.size() >= newline + 1 + size) {
          std::string message = pending.substr(newline + 1, size);
          pending.erase(0, newline + 1 + size);
          return message;
        }
      }
      auto got = process->read_output(ProcessOutput::kStandardOutput, pending, deadline);
      if (!got) {
        ended(fmt::format("did not answer '{}' within {} ms and was stopped", command, call_timeout->count()),
              /*stopped=*/true);
      }
      if (*got == 0) return std::nullopt;
    }
  }
};

PythonWorker::PythonWorker(const PythonWorkerOptions& options) : state_(std::make_unique<State>()) {
  state_->name = options.name;
  state_->call_timeout = options.call_timeout;
  ProcessSpec spec;
  spec.program = options.interpreter.string();
  spec.arguments = {"-c", std::string(kWorkerProgram) + options.commands + kServe, std::to_string(state_->region.fd())};
  spec.standard_input = ProcessStream::pipe();
  spec.standard_output = ProcessStream::pipe();
  spec.standard_error = ProcessStream::to_file(state_->folder.path() / "stderr.txt");
  spec.inherited_descriptors = {state_->region.fd()};
  state_->process = std::make_unique<Process>(spec);
}

PythonWorker::~PythonWorker() {
  if (!state_->failure.empty()) return;
  state_->process->close_input();  // the program reads the end of its input and returns
  try {
    state_->process->wait(ProcessClock::now() + std::chrono::seconds(10));
  } catch (const Error&) {
    // Nothing more can be done for a worker that cannot be waited for.
  }
}

bool PythonWorker::alive() const { return state_->failure.empty(); }

const std::string& PythonWorker::name() const { return state_->name; }

PythonReply PythonWorker::call(const std::string& command, const json& arguments, const NamedTensors& tensors) {
  State& state = *state_;
  if (!state.failure.empty()) raise<Error>("the Python worker for {} has already ended: {}", state.name, state.failure);
  json entries = json::array();
  std::size_t end = 0;
  std::vector<std::size_t> offsets;
  for (const auto& [name, tensor] : tensors) {
    const DTypeInfo& info = dtype_info(tensor.dtype());
    if (info.numpy_descr.empty() || tensor.dtype() == DType::kString)
      raise<UnsupportedError>("{}: tensor '{}' is {}, which a Python worker cannot exchange (numpy has no such type)",
                              state.name, name, info.name);
    offsets.push_back(aligned(end));
    end = offsets.back() + tensor.byte_size();
    entries.push_back(
        {{"name", name}, {"dtype", info.numpy_descr}, {"shape", tensor.shape()}, {"offset", offsets.back()}});
  }
  state.region.reserve(end);
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].second.byte_size() > 0)
      std::memcpy(state.region.data() + offsets[i], tensors[i].second.raw(), tensors[i].second.byte_size());
  json request = {{"command", command},     {"arguments", arguments},      {"tensors", std::move(entries)},
                  {"reply_offset", aligned(end)}, {"region_size", state.region.size()}};
  const std::string text = request.dump();
  ProcessDeadline deadline;
  if (state.call_timeout) deadline = ProcessClock::now() + *state.call_timeout;
  const bool sent = state.process->write_input(fmt::format("{}\n", text.size()) + text);
  std::optional<std::string> message = sent ? state.read_message(deadline, command) : std::nullopt;
  if (!message) state.ended("ended before it answered");

  json reply;
  try {
    reply = json::parse(*message);
  } catch (const json::exception& error) {
    raise<InternalError>("the Python worker for {}: unreadable reply to '{}': {}", state.name, command, error.what());
  }
  if (!reply.at("ok").get<bool>())
    throw PythonCommandError(fmt::format("{}: {}: {}", state.name, command, reply.at("error").get<std::string>()),
                             reply.at("traceback").get<std::string>());
  state.region.follow(reply.at("region_size").get<std::size_t>());
  PythonReply answer;
  answer.result = std::move(reply.at("result"));
  for (const auto& entry : reply.at("tensors")) {
    const std::string name = entry.at("name").get<std::string>();
    const std::string descr = entry.at("dtype").get<std::string>();
    auto dtype = dtype_from_numpy_descr(descr);
    if (!dtype)
      raise<UnsupportedError>("{}: '{}' returned tensor '{}' of numpy dtype '{}', which Parity has no type for",
                              state.name, command, name, descr);
    Shape shape = entry.at("shape").get<Shape>();
    const std::size_t offset = entry.at("offset").get<std::size_t>();
    const std::size_t bytes = storage_bytes(*dtype, checked_element_count(shape));
    if (offset + bytes > state.region.size())
      raise<InternalError>("{}: tensor '{}' lies outside the shared memory", state.name, name);
    answer.tensors.emplace_back(name,
                                Tensor::from_bytes(*dtype, std::move(shape), state.region.data() + offset, bytes));
  }
  return answer;
}

}  // namespace parity::runtime
