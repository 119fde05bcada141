// Times Parity's comparison and results-file code on arrays from .npz files, for
// bench/compare_vs_polygraphy.py (which times Polygraphy on the same arrays):
//   parity_bench_compare_files compare A.npz B.npz [--repeat N]  simple() on every array pair
//   parity_bench_compare_files save IN.npz OUT.json [--repeat N]  RunResults JSON, one runner
//   parity_bench_compare_files load FILE.json [--repeat N]        RunResults JSON
// Loading the .npz inputs is not timed. Prints one JSON line: the median seconds and peak RSS (MB).
// The comparison logs its statistics lines as `parity run` does (to stdout).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "parity/compare/compare_func.h"
#include "parity/compare/run_results.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"

namespace {

double median_seconds(int repeat, const std::function<void()>& work) {
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace parity;
  CLI::App app{"Comparison and RunResults file timings"};
  app.require_subcommand(1);
  int repeat = 3;
  app.add_option("--repeat", repeat)->check(CLI::PositiveNumber);
  std::string a_path, b_path, in_path, out_path, file_path;
  auto* compare_cmd = app.add_subcommand("compare", "simple() on each array pair");
  compare_cmd->add_option("a", a_path)->required();
  compare_cmd->add_option("b", b_path)->required();
  auto* save_cmd = app.add_subcommand("save", "save a RunResults JSON");
  save_cmd->add_option("in", in_path)->required();
  save_cmd->add_option("out", out_path)->required();
  auto* load_cmd = app.add_subcommand("load", "load a RunResults JSON");
  load_cmd->add_option("file", file_path)->required();
  CLI11_PARSE(app, argc, argv);
  try {
    double seconds = 0;
    if (*compare_cmd) {
      compare::IterationResult a, b;
      a.runner_name = "a";
      b.runner_name = "b";
      a.outputs = load_npz(a_path);
      b.outputs = load_npz(b_path);
      auto func = compare::simple();
      bool passed = false;
      seconds = median_seconds(repeat, [&] { passed = func(a, b).passed(); });
      std::fflush(stdout);
      std::fprintf(stderr, "passed=%d\n", passed ? 1 : 0);
    } else if (*save_cmd) {
      compare::RunnerResults runner;
      runner.runner_name = "bench-runner";
      compare::IterationResult iteration;
      iteration.runner_name = runner.runner_name;
      iteration.outputs = load_npz(in_path);
      iteration.runtime = 0.001;
      runner.iterations.push_back(std::move(iteration));
      compare::RunResults results{runner};
      seconds = median_seconds(repeat, [&] { compare::save_run_results(out_path, results); });
    } else {
      std::size_t arrays = 0;
      seconds = median_seconds(repeat, [&] {
        auto results = compare::load_run_results(file_path);
        arrays = results.at(0).iterations.at(0).outputs.size();
      });
      if (arrays == 0) throw InternalError("loaded no arrays");
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n",
                 fmt::format(R"({{"seconds": {}, "peak_rss_mb": {}}})", seconds, usage.ru_maxrss / 1024.0).c_str());
  } catch (const Error& error) {
    std::fprintf(stderr, "[E] %s\n", error.what());
    return 1;
  }
  return 0;
}
