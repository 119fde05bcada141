#include "parity/compare/dataset_ray.h"

#include <csignal>
#include <cstring>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/core/process.h"
#include "parity/core/temporary_folder.h"

namespace parity::compare {
namespace {

// The Ray driver. argv[1]: the configuration (JSON). On its standard output, one JSON line each:
// a sample's record (relayed as the worker wrote it), {"error": ...} before it exits 1,
// {"warning": ...} for an actor restarted, {"nodes": {node id: samples}} at the end. Everything
// else it or Ray prints goes to its standard error.
constexpr const char* kRayDriver = R"PY(
import json, os, select, signal, socket, subprocess, sys, time
config = json.loads(sys.argv[1])
_out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)

def emit(message):
    _out.write(json.dumps(message) + "\n")
    _out.flush()

def fail(message):
    emit({"error": message})
    sys.exit(1)

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
address = config["address"]
where = f"--ray {address}" if address else "--ray"
try:
    import ray
except ImportError:
    fail(f"{where}: the ray package is not installed in {sys.executable} (scripts/requirements.txt pins the "
         "version Parity is tested with; or set PARITY_PYTHON to a Python that has it)")
if address and address != "auto":
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        fail(f"{where}: expected HOST:PORT, the address of a Ray cluster's head ('ray start --head' prints it), "
             "or 'auto'")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as error:
        fail(f"{where}: cannot reach a Ray cluster there ({error.strerror or error}); nothing was started")
try:
    if address:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    else:
        ray.init(log_to_driver=False, logging_level="ERROR", include_dashboard=False)
except Exception as error:
    fail(f"{where}: cannot connect to Ray: {error}")

timeout = config["sample_timeout"]

@ray.remote(num_cpus=1, max_restarts=3, max_task_retries=3)
class SampleWorker:
    """One parity worker (runners activated once) serving batches of sample indices."""

    def __init__(self, program, arguments, folder):
        self.restarted = ray.get_runtime_context().was_current_actor_reconstructed
        self.command, self.folder = [program] + arguments, folder
        self.start()

    def start(self):
        # In a session of its own, so that a worker past the sample timeout is killed with the
        # programs it started.
        environment = dict(os.environ, PARITY_DATASET_WORKER="1")
        self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=self.folder,
                                        env=environment, start_new_session=True)
        self.buffer = b""
        if self.read_line(None) != b"ready\n":
            status = self.process.wait()
            raise RuntimeError(f"the parity worker on node {ray.get_runtime_context().get_node_id()} ended before "
                               f"it was ready (exit status {status}); its error is in the node's worker log")

    def read_line(self, seconds):
        """The worker's next line (b"" at its end), or None when `seconds` passed first."""
        descriptor = self.process.stdout.fileno()
        deadline = None if seconds is None else time.monotonic() + seconds
        while b"\n" not in self.buffer:
            if deadline is not None and not select.select([descriptor], [], [],
                                                           max(0.0, deadline - time.monotonic()))[0]:
                return None
            chunk = os.read(descriptor, 65536)
            if not chunk:
                return b""
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"

    def node(self):
        return ray.get_runtime_context().get_node_id()

    def run(self, indices):
        lines, timed_out = [], []
        for index in indices:
            self.process.stdin.write(b"%d\n" % index)
            self.process.stdin.flush()
            line = self.read_line(timeout)
            if line is None:
                # Hung past the sample timeout: killed with what it started, the sample failed, a new worker.
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                lines.append(json.dumps({"index": index, "passed": False, "pairs": [], "metric_error": "",
                                         "error": f"no result within --sample-timeout {timeout:g}s: the worker "
                                                  "running it was killed (the sample is not run again)"}) + "\n")
                timed_out.append(index)
                self.start()
                continue
            if not line.endswith(b"\n"):
                os._exit(1)  # the worker ended: end the actor, so Ray restarts it and runs the batch again
            lines.append(line.decode())
        restarted, self.restarted = self.restarted, False
        return self.node(), lines, restarted, timed_out

def start_actor():
    return SampleWorker.options(scheduling_strategy="SPREAD").remote(config["program"], config["arguments"],
                                                                      config["folder"])

try:
    count = config["actors"] or max(1, int(ray.cluster_resources().get("CPU", 1)))
    actors = [start_actor() for _ in range(count)]
    try:
        ray.get([actor.node.remote() for actor in actors])
    except Exception as error:
        fail(f"{where}: a worker could not start: {error}")
    samples, size = config["samples"], config["batch_size"]
    batches = [list(range(start, min(start + size, samples))) for start in range(0, samples, size)]
    batches.reverse()
    pending = {}
    def submit(slot):
        if batches:
            indices = batches.pop()
            pending[actors[slot].run.remote(indices)] = (slot, indices)
    for _ in range(2):  # two batches in flight per actor, so none waits for the driver
        for slot in range(count):
            submit(slot)
    nodes = {}
    while pending:
        (done,), _ = ray.wait(list(pending), num_returns=1)
        slot, indices = pending.pop(done)
        try:
            node, lines, restarted, timed_out = ray.get(done)
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as error:
            # The actor ended more often than Ray restarts it: the batch's samples fail with the reason,
            # and a new actor takes the slot.
            message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            for index in indices:
                emit({"index": index, "passed": False, "pairs": [], "metric_error": "",
                      "error": f"the Ray actor running this sample's batch ended beyond its restarts: {message}"})
            actors[slot] = start_actor()
        else:
            if restarted:
                emit({"warning": f"a Ray actor on node {node[:12]} ended and was restarted; "
                                 "the samples it held ran again"})
            for index in timed_out:
                emit({"warning": f"a parity worker on node {node[:12]} gave no result for sample {index} within "
                                 f"--sample-timeout {timeout:g}s: it was killed (with the programs it started) and "
                                 "restarted; the sample is recorded as failed"})
            nodes[node] = nodes.get(node, 0) + len(lines)
            _out.write("".join(lines))
            _out.flush()
        submit(slot)
    emit({"nodes": nodes})
finally:
    ray.shutdown()
)PY";

}  // namespace

void run_on_ray(const RayOptions& options, std::size_t samples,
                const std::function<bool(const SampleRecord&)>& on_record) {
  TemporaryFolder folder("parity-ray", "the Ray driver's log");
  const auto log_path = folder.path() / "ray_driver.log";
  nlohmann::json config{{"address", options.address}, {"program", options.program},
                        {"arguments", options.arguments}, {"folder", options.folder},
                        {"actors", options.actors},   {"batch_size", options.batch_size},
                        {"samples", samples}};
  if (options.sample_timeout)
    config["sample_timeout"] = static_cast<double>(options.sample_timeout->count()) / 1000.0;
  else
    config["sample_timeout"] = nullptr;
  ProcessSpec spec;
  spec.program = options.python;
  spec.arguments = {"-c", kRayDriver, config.dump()};
  spec.standard_input = ProcessStream::null();
  spec.standard_output = ProcessStream::pipe();
  spec.standard_error = ProcessStream::to_file(log_path);
  std::optional<Process> driver;
  try {
    driver.emplace(spec);
  } catch (const ProcessStartError& error) {
    raise<InvalidInputError>("--ray: cannot start the Python interpreter '{}': {} (set PARITY_PYTHON)",
                             options.python, std::strerror(error.error_number()));
  }
  std::string buffer;
  bool stopped = false;
  std::optional<std::string> failure;
  while (true) {
    auto end = buffer.find('\n');
    if (end == std::string::npos) {
      auto read = driver->read_output(ProcessOutput::kStandardOutput, buffer, std::nullopt);
      if (!read || *read == 0) break;
      continue;
    }
    nlohmann::json message = nlohmann::json::parse(buffer.substr(0, end));
    buffer.erase(0, end + 1);
    if (message.contains("error") && !message.contains("index")) {
      failure = message["error"].get<std::string>();
      continue;
    }
    if (message.contains("warning")) {
      log::warning("{}", message["warning"].get<std::string>());
      continue;
    }
    if (message.contains("nodes")) {
      std::vector<std::string> counts;
      for (const auto& [node, count] : message["nodes"].items())
        counts.push_back(fmt::format("{}: {}", node.substr(0, 12), count.get<std::size_t>()));
      log::info("Ray: samples per node ({} node(s)): {}", counts.size(), fmt::join(counts, ", "));
      continue;
    }
    if (!on_record(SampleRecord::from_json(message))) {
      stopped = true;
      driver->kill(SIGTERM);
      break;
    }
  }
  const ProcessEnd end = driver->wait();
  if (failure) raise<InvalidInputError>("{}", *failure);
  if (!stopped && !end.succeeded()) {
    std::string text;
    std::error_code error;
    if (std::filesystem::exists(log_path, error)) text = read_file(log_path);
    if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
    raise<Error>("--ray: the Ray driver ended ({}) before the dataset was done:\n{}", end.describe(), text);
  }
}

}  // namespace parity::compare
