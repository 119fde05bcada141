// parity_fuzz: the structured fuzzer's driver (see docs/fuzzing.md).
//
//   parity_fuzz [--seconds S | --iterations N] [--seed N] [--target NAME] [--findings DIR]
//               [--known FILE] [--slow SECONDS] [--case-timeout SECONDS] [--show-rejections]
//               [--replay PATH...]
//
// Generates cases for every target (fuzz_targets.h) in turn from one seed, runs each in this
// process, and counts the outcomes. A clean rejection is one of Parity's own errors other than
// InternalError (a bad file or model named in one message). A finding is anything else: another
// exception (std::bad_alloc, std::out_of_range, a library's own), an InternalError, or a crash
// (signal; under AddressSanitizer any report). The case of a finding is written to --findings
// (tests/fuzz/corpus's format: "parity-fuzz <target>\n" then the file's bytes) so it can be
// replayed and kept. Findings whose message holds a text listed in --known (known_findings.txt)
// are known (another change fixes them) and counted apart; the rules there also bound generation.
// --case-timeout ends the run as a finding (its case kept) when one case runs longer than SECONDS.
// --slow names (and keeps in --findings) the cases that take longer than SECONDS; --show-rejections
// prints each clean rejection's message (to see how far the generated cases get).
// --replay runs the given case files (or every file in the given folders) instead of generating.
// Exit status: 0 when no new finding, 1 otherwise, 2 for bad arguments. ONNX's shape inference is
// given 3 s (PARITY_SHAPE_INFERENCE_TIME_LIMIT, unless set) before it is taken for hung.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <typeinfo>

#include "fuzz_targets.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/core/temporary_folder.h"

extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace parity::fuzz {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kCaseMagic = "parity-fuzz ";

struct KnownFinding {
  std::string target, text, reason;
};

struct Known {
  GenerationLimits limits;
  std::vector<KnownFinding> findings;
};

// known_findings.txt: "#" comments; "<target> finding <text...>  # reason", "json max-depth <n>",
// "onnx-model no-shape-inference <op>".
Known read_known(const fs::path& path) {
  Known known;
  std::istringstream lines(read_file(path));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::string reason;
    if (auto hash = line.find("  #"); hash != std::string::npos) {
      reason = line.substr(hash + 3);
      line = line.substr(0, hash);
    }
    std::istringstream fields(line);
    std::string target, rule, value;
    fields >> target >> rule;
    std::getline(fields >> std::ws, value);
    if (rule == "finding") known.findings.push_back({target, value, reason});
    else if (rule == "max-depth") known.limits.max_json_depth = std::stoi(value);
    else if (rule == "no-shape-inference") known.limits.no_shape_inference_ops.insert(value);
    else raise<InvalidInputError>("{}: unknown rule in line '{}'", path.string(), line);
  }
  return known;
}

// The case being run, for the crash handlers and the watchdog (written with write(2) only).
std::string g_case;
std::string g_case_path;
std::atomic<long> g_case_number{-1};

void write_current_case() {
  if (g_case_path.empty()) return;
  int fd = ::open(g_case_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  std::size_t done = 0;
  while (done < g_case.size()) {
    ssize_t n = ::write(fd, g_case.data() + done, g_case.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  const char note[] = "\nparity_fuzz: crash; the case is in ";
  (void)!::write(2, note, sizeof(note) - 1);
  (void)!::write(2, g_case_path.c_str(), g_case_path.size());
  (void)!::write(2, "\n", 1);
}

// Ends the process (status 1) when one case runs longer than `seconds`: a hang or a size no limit
// refused is a finding too, and its case is kept like a crash's.
void start_watchdog(double seconds) {
  std::thread([seconds] {
    long watched = -1;
    auto since = std::chrono::steady_clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const long current = g_case_number.load();
      const auto now = std::chrono::steady_clock::now();
      if (current != watched) {
        watched = current;
        since = now;
      } else if (current >= 0 && std::chrono::duration<double>(now - since).count() > seconds) {
        std::fprintf(stderr, "parity_fuzz: a case ran longer than --case-timeout %.0f s\n", seconds);
        write_current_case();
        std::_Exit(1);
      }
    }
  }).detach();
}

void on_crash_signal(int signal) {
  write_current_case();
  std::raise(signal);  // SA_RESETHAND: the default action now
}

std::string exception_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (!type) return "unknown";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type->name();
}

struct Outcome {
  std::string rejection;  // a clean rejection's message
  std::string finding;    // "<type>: <message>" of a finding
};

Outcome run_case(const FuzzTarget& target, const std::string& bytes, const fs::path& scratch,
                 const GenerationLimits& limits) {
  try {
    target.run(bytes, scratch, limits);
    return {};
  } catch (const InternalError& error) {
    return {"", "parity::InternalError: " + std::string(error.what())};
  } catch (const Error& error) {
    return {error.what()[0] ? error.what() : "(empty message)", ""};
  } catch (const std::exception& error) {
    return {"", exception_type() + ": " + error.what()};
  } catch (...) {
    return {"", exception_type()};
  }
}

struct Counts {
  long runs = 0, rejected = 0, findings = 0, known = 0;
};

int main_impl(int argc, char** argv) {
  double seconds = 0;
  double slow_seconds = 0;  // cases taking longer are named on stderr
  bool show_rejections = false;
  double case_timeout = 0;  // a case running longer ends the run as a finding
  long iterations = 0;
  uint64_t seed = 20261127;
  std::string only;
  fs::path findings_dir, known_path;
  std::vector<fs::path> replay;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) raise<InvalidInputError>("{} needs a value", arg);
      return argv[++i];
    };
    if (arg == "--seconds") seconds = std::stod(value());
    else if (arg == "--iterations") iterations = std::stol(value());
    else if (arg == "--seed") seed = std::stoull(value());
    else if (arg == "--target") only = value();
    else if (arg == "--findings") findings_dir = value();
    else if (arg == "--slow") slow_seconds = std::stod(value());
    else if (arg == "--show-rejections") show_rejections = true;
    else if (arg == "--case-timeout") case_timeout = std::stod(value());
    else if (arg == "--known") known_path = value();
    else if (arg == "--replay") {
      while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) replay.emplace_back(argv[++i]);
    } else raise<InvalidInputError>("unknown argument '{}'", arg);
  }
  if (replay.empty() && seconds <= 0 && iterations <= 0) raise<InvalidInputError>("give --seconds, --iterations or --replay");
  Known known = known_path.empty() ? Known{} : read_known(known_path);
  std::vector<FuzzTarget> targets = file_targets();
  for (auto& target : model_targets()) targets.push_back(target);
  if (!only.empty()) {
    std::erase_if(targets, [&](const FuzzTarget& t) { return t.name != only; });
    if (targets.empty()) raise<InvalidInputError>("no target named '{}'", only);
  }
  if (!findings_dir.empty()) fs::create_directories(findings_dir);
  Logger::global().set_silent(true);
  TemporaryFolder scratch("parity-fuzz", "the fuzzer's files");
  // On an alternate stack, so that a stack overflow (deep recursion) still writes its case.
  static std::vector<char> alternate_stack(1 << 16);
  stack_t stack{};
  stack.ss_sp = alternate_stack.data();
  stack.ss_size = alternate_stack.size();
  ::sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = on_crash_signal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND;
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(signal, &action, nullptr);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(write_current_case);
  if (case_timeout > 0) start_watchdog(case_timeout);

  std::map<std::string, Counts> counts;
  long new_findings = 0;
  // Replayed cases run everything: the no-shape-inference rules only keep generation fast.
  GenerationLimits replay_limits = known.limits;
  replay_limits.no_shape_inference_ops.clear();
  auto judge = [&](const FuzzTarget& target, const std::string& bytes, const std::string& label) {
    g_case = std::string(kCaseMagic) + target.name + "\n" + bytes;
    g_case_number.fetch_add(1);
    Counts& count = counts[target.name];
    ++count.runs;
    const auto case_start = std::chrono::steady_clock::now();
    Outcome outcome = run_case(target, bytes, scratch.path(), replay.empty() ? known.limits : replay_limits);
    const std::string& finding = outcome.finding;
    if (!outcome.rejection.empty()) {
      ++count.rejected;
      if (show_rejections) std::fprintf(stderr, "parity_fuzz: %s %s rejected: %s\n", target.name.c_str(), label.c_str(),
                                        outcome.rejection.substr(0, 300).c_str());
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - case_start).count();
    if (slow_seconds > 0 && took > slow_seconds) {
      std::fprintf(stderr, "parity_fuzz: slow case %s %s: %.2f s\n", target.name.c_str(), label.c_str(), took);
      if (!findings_dir.empty())
        write_file_atomic(findings_dir / fmt::format("slow-{}-{}.case", target.name, label), g_case);
    }
    if (finding.empty()) return;
    ++count.findings;
    for (const auto& k : known.findings)
      if (k.target == target.name && finding.find(k.text) != std::string::npos) {
        ++count.known;
        return;
      }
    ++new_findings;
    std::string kept;
    if (!findings_dir.empty()) {
      fs::path path = findings_dir / fmt::format("{}-{}.case", target.name, label);
      write_file_atomic(path, g_case);
      kept = " (case: " + path.string() + ")";
    }
    std::fprintf(stderr, "parity_fuzz: finding in %s %s: %s%s\n", target.name.c_str(), label.c_str(),
                 finding.substr(0, 2000).c_str(), kept.c_str());
  };

  const auto start = std::chrono::steady_clock::now();
  if (!replay.empty()) {
    std::vector<fs::path> files;
    for (const auto& path : replay) {
      if (fs::is_directory(path)) {
        for (const auto& entry : fs::directory_iterator(path))
          if (entry.is_regular_file() && entry.path().extension() == ".case") files.push_back(entry.path());
      } else {
        files.push_back(path);
      }
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      std::string text = read_file(file);
      const auto newline = text.find('\n');
      const std::string name = text.starts_with(kCaseMagic) && newline != std::string::npos
                                   ? text.substr(kCaseMagic.size(), newline - kCaseMagic.size())
                                   : "";
      auto target = std::find_if(targets.begin(), targets.end(), [&](const FuzzTarget& t) { return t.name == name; });
      if (target == targets.end()) raise<InvalidInputError>("{}: not a case of a known target", file.string());
      g_case_path = (findings_dir.empty() ? fs::temp_directory_path() : findings_dir) / ("crash-" + file.filename().string());
      judge(*target, text.substr(newline + 1), file.filename().string());
    }
  } else {
    FuzzValues values(seed);
    for (long i = 0;; ++i) {
      if (iterations > 0 && i >= iterations) break;
      if (seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= seconds) break;
      const FuzzTarget& target = targets[static_cast<std::size_t>(i) % targets.size()];
      std::string bytes = target.generate(values, known.limits);
      const std::string label = fmt::format("seed{}-{}", seed, i);
      g_case_path = ((findings_dir.empty() ? fs::temp_directory_path() : findings_dir) /
                     fmt::format("crash-{}-{}.case", target.name, label)).string();
      judge(target, bytes, label);
    }
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  long runs = 0, findings = 0, known_count = 0;
  for (const auto& [name, count] : counts) {
    std::printf("parity_fuzz: %-16s %8ld cases, %8ld rejected, %5ld findings (%ld known)\n", name.c_str(), count.runs,
                count.rejected, count.findings, count.known);
    runs += count.runs;
    findings += count.findings;
    known_count += count.known;
  }
  std::printf("parity_fuzz: %ld cases in %.1f s (%.0f per second), seed %llu: %ld findings, %ld known, %ld new\n", runs,
              elapsed, elapsed > 0 ? runs / elapsed : 0.0, static_cast<unsigned long long>(seed), findings, known_count,
              new_findings);
  return new_findings == 0 ? 0 : 1;
}

}  // namespace
}  // namespace parity::fuzz

int main(int argc, char** argv) {
  // ONNX's shape inference never ends on some legal models (an Einsum equation with fewer operands than
  // inputs): Parity kills it at this limit. The product's 60 s would make each such case a minute long.
  ::setenv("PARITY_SHAPE_INFERENCE_TIME_LIMIT", "3", /*overwrite=*/0);
  try {
    return parity::fuzz::main_impl(argc, argv);
  } catch (const parity::Error& error) {
    std::fprintf(stderr, "parity_fuzz: %s\n", error.what());
    return 2;
  }
}
