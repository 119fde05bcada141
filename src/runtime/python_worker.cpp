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
import json, mmap, os, select, struct, sys, time, traceback
_requests = sys.stdin.buffer
_replies = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
_region_fd = int(sys.argv[1])
_region = None
_region_size = 0
_commands = {}
_preparers = {}
_bindings = {}
_BOUND_REPLY = b"=" + bytes(7)
_poller = select.poll()
_poller.register(_requests.fileno(), select.POLLIN)
_poll = _poller.poll
_clock = time.perf_counter

def command(name, bind=None):
    def register(function):
        _commands[name] = function
        if bind is not None:
            _preparers[name] = bind
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

class _Binding:
    """A bound command: its prepared call, where its reply's tensors go, and [(name, view)] of its
    previous reply's tensors (None after a reply with a result). Views of a region that grew since stay
    valid: the memfd only grows, and every mapping of it shares its pages."""
    def __init__(self, run, reply_offset):
        self.run = run
        self.reply_offset = reply_offset
        self.outputs = None

# After a reply the worker polls its requests' pipe for up to _SPIN seconds before it blocks, when the
# last request came within that: a caller's next inference then finds it awake. A blocked process's
# wake-up costs more than a small model's inference on some machines (40-50 us on a 2-CPU VM).
_SPIN = 200e-6
_last_wait = 0.0

def _read_request():
    """A JSON request (a dict), a bound call's binding number (an int), or None at the end of the input."""
    global _last_wait
    start = _clock()
    if _last_wait <= _SPIN:
        while not _poll(0) and _clock() - start < _SPIN:
            pass
    head = _requests.peek(1)[:1]
    _last_wait = _clock() - start
    if not head:
        return None
    if head == b"!":
        return struct.unpack("<4xI", _requests.read(8))[0]
    header = _requests.readline()
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

def _reply(returned, reply_offset):
    """Sends a command's JSON reply; returns its Reply and its tensors' entries."""
    reply = returned if isinstance(returned, Reply) else Reply(returned)
    entries = _write(reply.tensors, reply_offset) if reply.tensors else []
    _send({"ok": True, "result": reply.result, "tensors": entries, "region_size": _region_size})
    return reply, entries

def _reply_bound(binding, returned):
    """A bound call's reply: 8 bytes when it has no result and its numpy arrays keep the names, dtypes and
    shapes of the binding's previous reply (copied into that reply's views), else the JSON reply, whose
    tensors' views the binding keeps."""
    outputs = binding.outputs
    if (outputs is not None and isinstance(returned, Reply) and returned.result is None
            and len(returned.tensors) == len(outputs)):
        import numpy as np
        for (name, value), (bound, view) in zip(returned.tensors.items(), outputs):
            if (name != bound or type(value) is not np.ndarray or value.shape != view.shape
                    or value.dtype != view.dtype):
                break
            np.copyto(view, value)
        else:
            _replies.write(_BOUND_REPLY)
            _replies.flush()
            return
    reply, entries = _reply(returned, binding.reply_offset)
    binding.outputs = None
    if reply.result is None:
        import numpy as np
        binding.outputs = [(e["name"], np.ndarray(tuple(e["shape"]), dtype=np.dtype(e["dtype"]), buffer=_region,
                                                   offset=e["offset"]) if _region is not None else
                            np.empty(tuple(e["shape"]), dtype=np.dtype(e["dtype"]))) for e in entries]

def _serve():
    while True:
        request = _read_request()
        if request is None:
            break
        try:
            if isinstance(request, int):
                binding = _bindings.get(request)
                if binding is None:
                    raise RuntimeError(f"bound call {request} was never prepared")
                _reply_bound(binding, binding.run())
                continue
            _map(request["region_size"])
            name = request["command"]
            function = _commands.get(name)
            if function is None:
                raise KeyError(f"no command '{name}' (commands: {', '.join(sorted(_commands))})")
            if "bind" in request:
                _bindings.pop(request["bind"], None)
                if name not in _preparers:
                    raise KeyError(f"command '{name}' cannot be bound (it was registered without bind=)")
                binding = _Binding(_preparers[name](request["arguments"], _views(request["tensors"])),
                                   request["reply_offset"])
                _bindings[request["bind"]] = binding
                _reply_bound(binding, binding.run())
                continue
            _reply(function(request["arguments"], _views(request["tensors"])), request["reply_offset"])
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

// Where one tensor of a request or reply lies in the shared memory.
struct TensorPlace {
  std::string name;
  DType dtype{};
  Shape shape;
  std::size_t offset = 0;
  std::size_t bytes = 0;
  bool operator==(const TensorPlace&) const = default;
};

// A request's tensors placed one after another (64-byte aligned); the end of the last.
std::vector<TensorPlace> place(const std::string& worker, const NamedTensors& tensors, std::size_t& end) {
  std::vector<TensorPlace> places;
  places.reserve(tensors.size());
  end = 0;
  for (const auto& [name, tensor] : tensors) {
    const DTypeInfo& info = dtype_info(tensor.dtype());
    if (info.numpy_descr.empty() || tensor.dtype() == DType::kString)
      raise<UnsupportedError>("{}: tensor '{}' is {}, which a Python worker cannot exchange (numpy has no such type)",
                              worker, name, info.name);
    places.push_back({name, tensor.dtype(), tensor.shape(), aligned(end), tensor.byte_size()});
    end = places.back().offset + places.back().bytes;
  }
  return places;
}

json entries_json(const std::vector<TensorPlace>& places) {
  json entries = json::array();
  for (const auto& place : places)
    entries.push_back({{"name", place.name},
                       {"dtype", dtype_info(place.dtype).numpy_descr},
                       {"shape", place.shape},
                       {"offset", place.offset}});
  return entries;
}

// A bound call's request and reply are 8 bytes; the reply ("=" and seven zero bytes) says the tensors
// lie where the previous reply put them.
constexpr std::size_t kBoundMessageSize = 8;
constexpr char kBoundReplyMark = '=';

// A bound call's request: "!", three zero bytes, the binding as a little-endian uint32.
std::string bound_request(std::size_t binding) {
  std::string request(kBoundMessageSize, '\0');
  request[0] = '!';
  for (int i = 0; i < 4; ++i) request[4 + i] = static_cast<char>((binding >> (8 * i)) & 0xff);
  return request;
}

}  // namespace

// A bound command: its arguments, and the layouts of its last request and reply while the worker holds
// it prepared. The region only grows, so the places stay valid as it does.
struct PythonWorker::BoundCall {
  std::string command;
  json arguments;
  bool prepared = false;
  std::vector<TensorPlace> request;
  std::optional<std::vector<TensorPlace>> reply;  // nullopt: the last reply had a result
};

struct PythonWorker::State {
  std::string name;
  std::optional<std::chrono::milliseconds> call_timeout;
  TemporaryFolder folder{"parity-python-worker", "a Python worker"};  // holds stderr.txt
  SharedRegion region;
  std::unique_ptr<Process> process;
  std::string pending;  // bytes read past the last reply
  std::string failure;  // why the worker ended; empty while it serves
  std::vector<BoundCall> bound;

  void write(const NamedTensors& tensors, const std::vector<TensorPlace>& places);
  std::string exchange(const std::string& request, const std::string& command);
  std::string json_request(const std::string& command, const json& arguments, const std::vector<TensorPlace>& places,
                           std::size_t end, std::optional<std::size_t> binding);
  PythonReply answer(const std::string& message, const std::string& command, std::vector<TensorPlace>& places);

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

  // One message "<byte count>\n<bytes>", or a bound call's 8-byte reply (returned whole, its first
  // byte kBoundReplyMark); nullopt when the worker's output ended first.
  std::optional<std::string> read_message(ProcessDeadline deadline, const std::string& command) {
    for (;;) {
      if (!pending.empty() && pending[0] == kBoundReplyMark && pending.size() >= kBoundMessageSize) {
        std::string message = pending.substr(0, kBoundMessageSize);
        pending.erase(0, kBoundMessageSize);
        return message;
      }
      auto newline = !pending.empty() && pending[0] == kBoundReplyMark ? std::string::npos : pending.find('\n');
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

// Writes the tensors where `places` puts them (the region already reserved).
void PythonWorker::State::write(const NamedTensors& tensors, const std::vector<TensorPlace>& places) {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (places[i].bytes > 0) std::memcpy(region.data() + places[i].offset, tensors[i].second.raw(), places[i].bytes);
}

// Sends a request and returns the reply to `command`; a worker that ended is an error.
std::string PythonWorker::State::exchange(const std::string& request, const std::string& command) {
  ProcessDeadline deadline;
  if (call_timeout) deadline = ProcessClock::now() + *call_timeout;
  const bool sent = process->write_input(request);
  std::optional<std::string> message = sent ? read_message(deadline, command) : std::nullopt;
  if (!message) ended("ended before it answered");
  return std::move(*message);
}

std::string PythonWorker::State::json_request(const std::string& command, const json& arguments,
                                              const std::vector<TensorPlace>& places, std::size_t end,
                                              std::optional<std::size_t> binding) {
  json request = {{"command", command},           {"arguments", arguments},
                  {"tensors", entries_json(places)}, {"reply_offset", aligned(end)},
                  {"region_size", region.size()}};
  if (binding) request["bind"] = *binding;
  const std::string text = request.dump();
  return fmt::format("{}\n", text.size()) + text;
}

// A JSON reply's result and tensors (copies); `places` receives where its tensors lay.
PythonReply PythonWorker::State::answer(const std::string& message, const std::string& command,
                                        std::vector<TensorPlace>& places) {
  if (!message.empty() && message[0] == kBoundReplyMark)
    raise<InternalError>("the Python worker for {}: a bound reply to '{}', which was not a bound call", name, command);
  json reply;
  try {
    reply = json::parse(message);
  } catch (const json::exception& error) {
    raise<InternalError>("the Python worker for {}: unreadable reply to '{}': {}", name, command, error.what());
  }
  if (!reply.at("ok").get<bool>())
    throw PythonCommandError(fmt::format("{}: {}: {}", name, command, reply.at("error").get<std::string>()),
                             reply.at("traceback").get<std::string>());
  region.follow(reply.at("region_size").get<std::size_t>());
  PythonReply answer;
  answer.result = std::move(reply.at("result"));
  places.clear();
  for (const auto& entry : reply.at("tensors")) {
    TensorPlace place;
    place.name = entry.at("name").get<std::string>();
    const std::string descr = entry.at("dtype").get<std::string>();
    auto dtype = dtype_from_numpy_descr(descr);
    if (!dtype)
      raise<UnsupportedError>("{}: '{}' returned tensor '{}' of numpy dtype '{}', which Parity has no type for", name,
                              command, place.name, descr);
    place.dtype = *dtype;
    place.shape = entry.at("shape").get<Shape>();
    place.offset = entry.at("offset").get<std::size_t>();
    place.bytes = storage_bytes(*dtype, checked_element_count(place.shape));
    if (place.offset + place.bytes > region.size())
      raise<InternalError>("{}: tensor '{}' lies outside the shared memory", name, place.name);
    answer.tensors.emplace_back(place.name, Tensor::from_bytes(place.dtype, place.shape, region.data() + place.offset,
                                                                place.bytes));
    places.push_back(std::move(place));
  }
  return answer;
}

PythonReply PythonWorker::call(const std::string& command, const json& arguments, const NamedTensors& tensors) {
  State& state = *state_;
  if (!state.failure.empty()) raise<Error>("the Python worker for {} has already ended: {}", state.name, state.failure);
  std::size_t end = 0;
  const std::vector<TensorPlace> places = place(state.name, tensors, end);
  state.region.reserve(end);
  state.write(tensors, places);
  std::vector<TensorPlace> replied;
  return state.answer(state.exchange(state.json_request(command, arguments, places, end, std::nullopt), command),
                      command, replied);
}

PythonWorker::Binding PythonWorker::bind(const std::string& command, json arguments) {
  BoundCall bound;
  bound.command = command;
  bound.arguments = std::move(arguments);
  state_->bound.push_back(std::move(bound));
  return state_->bound.size() - 1;
}

PythonReply PythonWorker::call_bound(Binding binding, const NamedTensors& tensors) {
  State& state = *state_;
  if (!state.failure.empty()) raise<Error>("the Python worker for {} has already ended: {}", state.name, state.failure);
  BoundCall& bound = state.bound.at(binding);
  std::size_t end = 0;
  std::vector<TensorPlace> places = place(state.name, tensors, end);
  const bool prepared = bound.prepared && places == bound.request;
  if (!prepared) state.region.reserve(end);
  state.write(tensors, places);
  std::string request;
  if (prepared) {
    request = bound_request(binding);
  } else {
    request = state.json_request(bound.command, bound.arguments, places, end, binding);
    bound.request = std::move(places);
  }
  // Unprepared until a reply says otherwise: a command's error leaves the worker's binding unknown.
  bound.prepared = false;
  const std::string message = state.exchange(request, bound.command);
  if (message[0] == kBoundReplyMark) {
    if (!prepared || !bound.reply)
      raise<InternalError>("the Python worker for {}: a bound reply to '{}' without a previous reply's layout",
                           state.name, bound.command);
    PythonReply answer;
    for (const TensorPlace& place : *bound.reply)
      answer.tensors.emplace_back(place.name, Tensor::from_bytes(place.dtype, place.shape,
                                                                 state.region.data() + place.offset, place.bytes));
    bound.prepared = true;
    return answer;
  }
  std::vector<TensorPlace> replied;
  PythonReply answer = state.answer(message, bound.command, replied);
  bound.reply.reset();
  if (answer.result.is_null()) bound.reply = std::move(replied);
  bound.prepared = true;
  return answer;
}

}  // namespace parity::runtime
