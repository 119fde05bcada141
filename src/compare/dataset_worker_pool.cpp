#include "parity/compare/dataset_worker_pool.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/core/temporary_folder.h"

namespace parity::compare {
namespace {

constexpr const char* kReady = "ready";

// The samples not yet handed out: those given back by a worker that ended first, then the rest in order.
class SampleQueue {
 public:
  explicit SampleQueue(std::size_t samples) : samples_(samples) {}

  std::optional<std::size_t> next() {
    std::lock_guard lock(mutex_);
    if (stopped_) return std::nullopt;
    if (!returned_.empty()) {
      std::size_t index = returned_.front();
      returned_.pop_front();
      return index;
    }
    if (next_ == samples_) return std::nullopt;
    return next_++;
  }
  // A sample whose worker ended: true when it is to run again, false on its second end.
  bool give_back(std::size_t index) {
    std::lock_guard lock(mutex_);
    if (++ends_[index] >= 2) return false;
    returned_.push_front(index);
    return true;
  }
  void stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  bool stopped() {
    std::lock_guard lock(mutex_);
    return stopped_;
  }

 private:
  std::mutex mutex_;
  std::size_t samples_, next_ = 0;
  std::deque<std::size_t> returned_;
  std::map<std::size_t, int> ends_;
  bool stopped_ = false;
};

// The last "[E] " line of a worker's log (the prefix, colours and indentation left out), else "".
std::string last_error_line(const std::filesystem::path& log_path) {
  std::string text;
  try {
    text = read_file(log_path);
  } catch (const Error&) {
    return "";
  }
  std::string found;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    std::string plain;
    for (std::size_t i = 0; i < line.size(); ++i) {  // ANSI colour sequences out
      if (line[i] == '\x1b') {
        while (i < line.size() && line[i] != 'm') ++i;
        continue;
      }
      plain += line[i];
    }
    if (plain.rfind("[E] ", 0) == 0) {
      found = plain.substr(4);
      found.erase(0, found.find_first_not_of(' '));
    }
  }
  return found;
}

// One worker process and the lines it writes.
class WorkerProcess {
 public:
  explicit WorkerProcess(ProcessSpec spec) : process_(std::make_unique<Process>(spec)) {}

  // The next whole line, or nullopt at the end of the worker's output or, with `timed_out` set,
  // when `deadline` passed first.
  std::optional<std::string> read_line(ProcessDeadline deadline = std::nullopt, bool* timed_out = nullptr) {
    while (true) {
      auto end = buffer_.find('\n');
      if (end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 1);
        return line;
      }
      auto read = process_->read_output(ProcessOutput::kStandardOutput, buffer_, deadline);
      if (!read && timed_out) *timed_out = true;
      if (!read || *read == 0) return std::nullopt;
    }
  }
  bool send(std::size_t index) { return process_->write_input(fmt::format("{}\n", index)); }
  ProcessEnd finish() {
    process_->close_input();
    return process_->wait();
  }
  ProcessEnd kill() {
    process_->kill(SIGKILL);
    return process_->wait();
  }
  // Kills the worker and the programs it started (a Python worker hung in a dataset script).
  ProcessEnd kill_all() {
    process_->kill_group(SIGKILL);
    return process_->wait();
  }
  pid_t pid() const { return process_->pid(); }

 private:
  std::unique_ptr<Process> process_;
  std::string buffer_;
};

// "12.5" for 12.5 s: a timeout as the --sample-timeout flag gives it.
std::string describe_seconds(std::chrono::milliseconds duration) {
  return fmt::format("{:g}", static_cast<double>(duration.count()) / 1000.0);
}

}  // namespace

void run_worker_pool(const WorkerPoolOptions& options, std::size_t samples,
                     const std::function<bool(const SampleRecord&)>& on_record) {
  TemporaryFolder logs("parity-dataset-workers", "the dataset workers' logs");
  const ProcessSpec spec = options.worker;
  auto log_path = [&](std::size_t slot) { return logs.path() / fmt::format("worker_{}.log", slot); };
  auto worker_spec = [&](std::size_t slot) {
    ProcessSpec with_streams = spec;
    with_streams.standard_input = ProcessStream::pipe();
    with_streams.standard_output = ProcessStream::pipe();
    with_streams.standard_error = ProcessStream::to_file(log_path(slot));
    with_streams.own_process_group = true;  // a hung worker is killed with what it started
    return with_streams;
  };
  auto why = [&](std::size_t slot) {
    std::string line = last_error_line(log_path(slot));
    return line.empty() ? std::string() : ": " + line;
  };
  SampleQueue queue(samples);
  std::mutex record_mutex;
  std::exception_ptr failure;

  auto fail = [&](std::exception_ptr error) {
    std::lock_guard lock(record_mutex);
    if (!failure) failure = error;
    queue.stop();
  };
  auto start = [&](std::size_t slot) {
    auto worker = std::make_unique<WorkerProcess>(worker_spec(slot));
    auto line = worker->read_line();
    if (!line || *line != kReady) {
      ProcessEnd end = line ? worker->kill() : worker->finish();
      raise<Error>("dataset worker {} ended before it was ready ({}){}", slot, end.describe(), why(slot));
    }
    return worker;
  };
  auto serve = [&](std::size_t slot) {
    try {
      std::unique_ptr<WorkerProcess> worker;
      while (auto index = queue.next()) {
        if (!worker) worker = start(slot);
        std::optional<std::string> line;
        bool timed_out = false;
        ProcessDeadline deadline;
        if (options.sample_timeout) deadline = ProcessClock::now() + *options.sample_timeout;
        if (worker->send(*index)) line = worker->read_line(deadline, &timed_out);
        if (timed_out) {
          worker->kill_all();
          worker.reset();
          const std::string seconds = describe_seconds(*options.sample_timeout);
          log::warning("Dataset worker {} gave no result for sample {} within --sample-timeout {}s: it was killed "
                       "(with the programs it started) and is restarted; the sample is recorded as failed",
                       slot, *index, seconds);
          SampleRecord record;
          record.index = *index;
          record.error = fmt::format("no result within --sample-timeout {}s: the worker running it was killed (the "
                                     "sample is not run again)",
                                     seconds);
          std::lock_guard lock(record_mutex);
          if (!failure && !on_record(record)) queue.stop();
          continue;
        }
        if (!line) {
          ProcessEnd end = worker->finish();
          worker.reset();
          if (queue.give_back(*index)) {
            log::warning("Dataset worker {} ended ({}{}) while running sample {}: restarting it; the sample runs again",
                         slot, end.describe(), why(slot), *index);
            continue;
          }
          SampleRecord record;
          record.index = *index;
          record.error =
              fmt::format("a worker ended ({}{}) while running this sample, twice", end.describe(), why(slot));
          std::lock_guard lock(record_mutex);
          if (!on_record(record)) queue.stop();
          continue;
        }
        SampleRecord record = with_context(fmt::format("dataset worker {}: sample {}", slot, *index), [&] {
          return SampleRecord::from_json(nlohmann::json::parse(*line));
        });
        std::lock_guard lock(record_mutex);
        if (!failure && !on_record(record)) queue.stop();
      }
      if (worker) worker->finish();
    } catch (...) {
      fail(std::current_exception());
    }
  };

  std::vector<std::thread> threads;
  for (std::size_t slot = 0; slot < options.workers; ++slot) threads.emplace_back(serve, slot);
  for (auto& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
}

namespace {

bool write_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void serve_samples(runtime::DatasetSource& dataset, SampleValidator& validator, int requests, int records) {
  if (!write_all(records, std::string(kReady) + "\n")) return;
  std::string buffer;
  char chunk[256];
  while (true) {
    auto end = buffer.find('\n');
    if (end == std::string::npos) {
      ssize_t n = ::read(requests, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    const std::size_t index = std::stoull(buffer.substr(0, end));
    buffer.erase(0, end + 1);
    SampleRecord record;
    if (index >= dataset.size()) {
      record.index = index;
      record.error = fmt::format("sample {} is beyond the dataset's {} samples", index, dataset.size());
    } else {
      std::optional<NamedTensors> feed;
      try {
        feed = dataset.load(index);
      } catch (const Error& error) {
        record.index = index;
        record.error = error.what();
      }
      if (feed) record = validator.validate(index, *feed);
    }
    if (!write_all(records, record.to_json().dump() + "\n")) return;
  }
}

}  // namespace parity::compare
