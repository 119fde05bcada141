// parity_compare_tool: runs Parity's comparison layer on arrays saved by Python, for the peer test
// (tests/peers/test_compare_peer.py) that checks it against Polygraphy's Comparator.
//
//   parity_compare_tool --out0 a0.npz [--out0 a1.npz ...] --out1 b0.npz [...]
//       [--compare simple|indices|distance|quality] [--atol [name:]x ...] [--rtol [name:]x ...]
//       [--check-error-stat [name:]s ...] [--error-quantile [name:]q ...] [--infinities-compare-equal]
//       [--no-shape-check] [--index-tolerance [name:]n ...] [--l2-tolerance x] [--cosine-threshold x]
//       [--psnr x] [--snr x] [--style parity|polygraphy] [--runner0 name] [--runner1 name]
//       [--validate] [--report report.json] [--verbosity info|verbose|...] [--fail-fast]
//
// Each --out0/--out1 file is one iteration of that runner (npz members in order are the outputs).
// The log goes to stdout; the exit status is 0 when everything passed, 1 when something failed,
// 2 on bad input.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "parity/compare/comparator.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace {

using namespace parity;
using namespace parity::compare;
using namespace parity::statistics;

// Polygraphy's "[<name>:]<value>" arguments: the last colon splits the name from the value.
template <typename T, typename Parse>
PerOutput<T> per_output(const std::vector<std::string>& args, T fallback, Parse parse) {
  if (args.empty()) return PerOutput<T>(fallback);
  std::vector<std::pair<std::string, T>> entries;
  bool any_named = false;
  for (const auto& arg : args) {
    auto colon = arg.rfind(':');
    if (colon == std::string::npos) entries.emplace_back("", parse(arg));
    else {
      entries.emplace_back(arg.substr(0, colon), parse(arg.substr(colon + 1)));
      any_named = true;
    }
  }
  if (!any_named && entries.size() == 1) return PerOutput<T>(entries[0].second);
  return PerOutput<T>::per_name(std::move(entries));
}

double parse_double(const std::string& s) {
  try {
    std::size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    raise<InvalidInputError>("expected a number, got '{}'", s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs Parity's comparison functions on arrays saved as .npz files"};
  std::vector<std::string> out0_files, out1_files, atol, rtol, stat, quantile, index_tolerance;
  std::string compare = "simple", style = "parity", runner0 = "runner0", runner1 = "runner1", report,
              verbosity = "info";
  bool inf_equal = false, no_shape_check = false, do_validate = false, fail_fast = false;
  double l2 = 1e-5, cosine = 0.997;
  std::optional<double> psnr, snr;
  app.add_option("--out0", out0_files, "first runner's iterations (.npz)")->required();
  app.add_option("--out1", out1_files, "second runner's iterations (.npz)");
  app.add_option("--compare", compare)->check(CLI::IsMember({"simple", "indices", "distance", "quality"}));
  app.add_option("--atol", atol);
  app.add_option("--rtol", rtol);
  app.add_option("--check-error-stat", stat);
  app.add_option("--error-quantile", quantile);
  app.add_option("--index-tolerance", index_tolerance);
  app.add_option("--l2-tolerance", l2);
  app.add_option("--cosine-threshold", cosine);
  app.add_option("--psnr", psnr);
  app.add_option("--snr", snr);
  app.add_flag("--infinities-compare-equal", inf_equal);
  app.add_flag("--no-shape-check", no_shape_check);
  app.add_flag("--validate", do_validate);
  app.add_flag("--fail-fast", fail_fast);
  app.add_option("--style", style)->check(CLI::IsMember({"parity", "polygraphy"}));
  app.add_option("--runner0", runner0);
  app.add_option("--runner1", runner1);
  app.add_option("--report", report);
  app.add_option("--verbosity", verbosity);
  CLI11_PARSE(app, argc, argv);

  try {
    Logger::global().set_severity(severity_from_name(verbosity));
    Logger::global().set_format(LogFormat{false, false, true});
    const StatisticsStyle stats_style = style == "polygraphy" ? StatisticsStyle::kPolygraphy : StatisticsStyle::kParity;

    RunResults results;
    auto load_runner = [](const std::string& name, const std::vector<std::string>& files) {
      RunnerResults r;
      r.runner_name = name;
      for (const auto& f : files) {
        IterationResult it;
        it.runner_name = name;
        it.outputs = load_npz(f);
        r.iterations.push_back(std::move(it));
      }
      return r;
    };
    results.push_back(load_runner(runner0, out0_files));
    if (!out1_files.empty()) results.push_back(load_runner(runner1, out1_files));

    bool passed = true;
    std::optional<ValidationResult> validation;
    if (do_validate) {
      ValidateOptions vo;
      vo.check_inf = vo.check_nan = true;
      vo.style = stats_style;
      validation = compare::validate(results, vo);
      passed = passed && validation->passed;
    }

    std::optional<AccuracyResult> accuracy;
    if (results.size() > 1) {
      CompareFunc func;
      if (compare == "simple") {
        SimpleOptions o;
        o.atol = per_output<double>(atol, 1e-5, parse_double);
        o.rtol = per_output<double>(rtol, 1e-5, parse_double);
        o.check_error_stat =
            per_output<ErrorStat>(stat, ErrorStat::kElemwise, [](const std::string& s) { return parse_error_stat(s); });
        o.error_quantile = per_output<double>(quantile, 0.99, parse_double);
        o.infinities_compare_equal = inf_equal;
        o.check_shapes = !no_shape_check;
        o.fail_fast = fail_fast;
        o.style = stats_style;
        func = simple(o);
      } else if (compare == "indices") {
        IndicesOptions o;
        o.index_tolerance = per_output<int64_t>(
            index_tolerance, 0, [](const std::string& s) { return static_cast<int64_t>(parse_double(s)); });
        o.fail_fast = fail_fast;
        o.style = stats_style;
        func = indices(o);
      } else if (compare == "distance") {
        DistanceOptions o;
        o.l2_tolerance = l2;
        o.cosine_similarity_threshold = cosine;
        o.check_shapes = !no_shape_check;
        o.fail_fast = fail_fast;
        o.style = stats_style;
        func = distance(o);
      } else {
        QualityOptions o;
        if (psnr) o.psnr_tolerance = PerOutput<double>(*psnr);
        if (snr) o.snr_tolerance = PerOutput<double>(*snr);
        o.check_shapes = !no_shape_check;
        o.fail_fast = fail_fast;
        o.style = stats_style;
        func = quality(o);
      }
      CompareAccuracyOptions ao;
      ao.fail_fast = fail_fast;
      accuracy = compare_accuracy(results, func, ao);
      passed = passed && accuracy->passed();
    }
    if (!report.empty())
      save_report(report, make_report(accuracy ? &*accuracy : nullptr, validation ? &*validation : nullptr));
    return passed ? 0 : 1;
  } catch (const parity::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
