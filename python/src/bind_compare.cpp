// The Comparator, comparison functions, run results and their files for Python (parity._parity).
// Results cross the boundary as plain Python lists/tuples/dicts of numpy arrays (zero-copy both
// ways); parity/comparator.py wraps them in Polygraphy's classes.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "compare_bindings.h"
#include "conversion.h"
#include "parity/core/interrupt.h"
#include "parity/compare/attribution.h"
#include "parity/compare/module_attribution.h"
#include "parity/runtime/torch/torch_runner.h"
#include "parity/compare/comparator.h"
#include "parity/compare/judge.h"
#include "parity/compare/perf.h"
#include "parity/compare/postprocess.h"
#include "parity/compare/run_results.h"
#include "parity/core/error.h"

namespace parity::python {

using namespace nb::literals;

namespace {

// A float or {name: float} ("" as the default) from Python.
template <typename T>
compare::PerOutput<T> per_output(nb::handle value, T fallback) {
  if (value.is_none()) return compare::PerOutput<T>(fallback);
  if (nb::isinstance<nb::dict>(value)) {
    std::vector<std::pair<std::string, T>> entries;
    for (auto [key, item] : nb::cast<nb::dict>(value))
      entries.emplace_back(nb::cast<std::string>(key), nb::cast<T>(item));
    return compare::PerOutput<T>::per_name(std::move(entries));
  }
  return compare::PerOutput<T>(nb::cast<T>(value));
}

compare::PerOutput<compare::ErrorStat> per_output_stat(nb::handle value) {
  if (value.is_none()) return compare::PerOutput<compare::ErrorStat>(compare::ErrorStat::kElemwise);
  if (nb::isinstance<nb::dict>(value)) {
    std::vector<std::pair<std::string, compare::ErrorStat>> entries;
    for (auto [key, item] : nb::cast<nb::dict>(value))
      entries.emplace_back(nb::cast<std::string>(key), compare::parse_error_stat(nb::cast<std::string>(item)));
    return compare::PerOutput<compare::ErrorStat>::per_name(std::move(entries));
  }
  return compare::PerOutput<compare::ErrorStat>(compare::parse_error_stat(nb::cast<std::string>(value)));
}

statistics::StatisticsStyle style_from(const std::string& style) {
  if (style == "parity") return statistics::StatisticsStyle::kParity;
  if (style == "polygraphy") return statistics::StatisticsStyle::kPolygraphy;
  raise<InvalidInputError>("statistics style '{}': expected 'parity' or 'polygraphy'", style);
}

// [(runner_name, [(iteration_runner_name, runtime or None, [(name, array, dtype)]), ...]), ...]
compare::RunResults results_from_python(nb::handle results) {
  compare::RunResults converted;
  for (nb::handle runner : results) {
    auto entry = nb::cast<nb::tuple>(runner);
    compare::RunnerResults runner_results;
    runner_results.runner_name = nb::cast<std::string>(entry[0]);
    for (nb::handle iteration : entry[1]) {
      auto it = nb::cast<nb::tuple>(iteration);
      compare::IterationResult result;
      result.runner_name = nb::cast<std::string>(it[0]);
      if (!it[1].is_none()) result.runtime = nb::cast<double>(it[1]);
      result.outputs = feed_from_python(it[2]);
      runner_results.iterations.push_back(std::move(result));
    }
    converted.push_back(std::move(runner_results));
  }
  return converted;
}

nb::list results_to_python(const compare::RunResults& results) {
  nb::list converted;
  for (const auto& runner : results) {
    nb::list iterations;
    for (const auto& iteration : runner.iterations)
      iterations.append(nb::make_tuple(iteration.runner_name,
                                       iteration.runtime ? nb::object(nb::float_(*iteration.runtime)) : nb::none(),
                                       dict_from_tensors(iteration.outputs)));
    converted.append(nb::make_tuple(runner.runner_name, iterations));
  }
  return converted;
}

nb::dict comparison_to_python(const compare::OutputComparison& c) {
  nb::dict d;
  d["kind"] = c.kind;
  d["output0"] = c.output0;
  d["output1"] = c.output1;
  d["passed"] = c.passed;
  d["compared"] = c.compared;
  d["failure"] = c.failure;
  if (c.simple) {
    const auto& s = *c.simple;
    d["atol"] = s.atol;
    d["rtol"] = s.rtol;
    d["max_absdiff"] = s.max_absdiff;
    d["max_reldiff"] = s.max_reldiff;
    d["mean_absdiff"] = s.mean_absdiff;
    d["mean_reldiff"] = s.mean_reldiff;
    d["median_absdiff"] = s.median_absdiff;
    d["median_reldiff"] = s.median_reldiff;
    d["quantile_absdiff"] = s.quantile_absdiff ? nb::object(nb::float_(*s.quantile_absdiff)) : nb::none();
    d["quantile_reldiff"] = s.quantile_reldiff ? nb::object(nb::float_(*s.quantile_reldiff)) : nb::none();
    d["required_atol"] = s.required_atol;
    d["required_rtol"] = s.required_rtol;
    d["element_count"] = s.element_count;
    d["mismatch_count"] = s.mismatch_count;
  }
  if (c.indices) {
    d["values_not_found"] = c.indices->values_not_found;
    d["beyond_tolerance"] = c.indices->beyond_tolerance;
  }
  if (c.distance) {
    d["l2_norm"] = c.distance->l2_norm;
    d["cosine_similarity"] = c.distance->cosine_similarity;
  }
  if (c.quality) {
    d["psnr"] = c.quality->psnr ? nb::object(nb::float_(*c.quality->psnr)) : nb::none();
    d["snr"] = c.quality->snr ? nb::object(nb::float_(*c.quality->snr)) : nb::none();
  }
  return d;
}

nb::list iteration_to_python(const compare::IterationComparison& iteration) {
  nb::list outputs;
  for (const auto& output : iteration.outputs) outputs.append(comparison_to_python(output));
  return outputs;
}

// One layerwise comparison: its entries in comparison order, each a comparison dict with the
// tensor's iteration, topological position, producing node and op, and the PyTorch module the
// node was exported from ("" when the model does not record it).
nb::dict layerwise_to_python(const compare::LayerwiseResult& result) {
  nb::list entries;
  for (const auto& entry : result.entries) {
    nb::dict d = comparison_to_python(entry.comparison);
    d["iteration"] = entry.iteration;
    d["order"] = entry.order;
    d["tensor"] = entry.tensor;
    d["node"] = entry.node;
    d["op"] = entry.op;
    d["module"] = entry.module;
    entries.append(d);
  }
  nb::dict converted;
  converted["runner0"] = result.runner0;
  converted["runner1"] = result.runner1;
  converted["entries"] = entries;
  converted["only_in_runner0"] = result.only_in_runner0;
  converted["only_in_runner1"] = result.only_in_runner1;
  converted["skipped"] = result.skipped;
  converted["spilled_bytes"] = result.spilled_bytes;
  return converted;
}

// data_loader: callable(metadata entries) -> [[(name, array, dtype)], ...] per iteration, called
// with the GIL held.
compare::DataLoaderFunc data_loader_func(nb::object data_loader) {
  PythonObject loader(std::move(data_loader));
  return [loader](const TensorMetadata& metadata) {
    nb::gil_scoped_acquire gil;
    nb::object generated = nb::borrow(loader.get())(metadata_to_python(metadata));
    std::vector<NamedTensors> result;
    for (nb::handle iteration : generated) result.push_back(feed_from_python(iteration));
    return result;
  };
}

// Comparator.run_layerwise(attribute=True): the layerwise comparison's tensors attributed
// (compare/attribution.h) on the ONNX model the reference (else the runner under test) runs; by
// module when the runner under test is a PyTorch runner (compare/module_attribution.h).
compare::AttributionResult attribute_layerwise(const std::vector<runtime::Runner*>& runners, const NamedTensors& feed,
                                               const compare::Verdict& verdict, const compare::SimpleOptions& simple,
                                               uint64_t memory_budget, std::size_t count) {
  runtime::ModelLoader model = runners.front()->source_model();
  if (!model) model = runners.back()->source_model();
  const bool by_module = dynamic_cast<runtime::TorchRunner*>(runners.back()) != nullptr;
  if (!model && !by_module)
    raise<InvalidInputError>("Comparator.run_layerwise(attribute=True) needs a runner of an ONNX model it can give "
                             "back; {} and {} run none",
                             runners.front()->name(), runners.back()->name());
  if (verdict.layerwise.size() != 1)
    raise<InternalError>("attribution: {} layerwise comparisons, one expected", verdict.layerwise.size());
  compare::AttributionOptions options;
  options.simple = simple;
  options.memory_budget = memory_budget;
  auto result = compare::attribute_run(model, *runners.front(), *runners.back(), feed, verdict.layerwise.front(), options);
  compare::log_attribution(result, count);
  return result;
}

}  // namespace

void bind_compare(nb::module_& m) {
  nb::class_<CompareFunction>(m, "CompareFunction")
      .def_ro("kind", &CompareFunction::kind)
      .def("__call__",
           [](const CompareFunction& self, nb::handle result0, nb::handle result1) {
             // (runner_name, runtime, items) for each side.
             auto convert = [](nb::handle side) {
               auto t = nb::cast<nb::tuple>(side);
               compare::IterationResult result;
               result.runner_name = nb::cast<std::string>(t[0]);
               if (!t[1].is_none()) result.runtime = nb::cast<double>(t[1]);
               result.outputs = feed_from_python(t[2]);
               return result;
             };
             compare::IterationResult a = convert(result0), b = convert(result1);
             compare::IterationComparison comparison;
             {
               nb::gil_scoped_release release;
               comparison = self.function(a, b);
             }
             return iteration_to_python(comparison);
           });

  m.def("compare_simple",
        [](bool check_shapes, nb::object rtol, nb::object atol, bool fail_fast, nb::object check_error_stat,
           bool infinities_compare_equal, nb::object error_quantile, const std::string& style) {
          compare::SimpleOptions options;
          options.check_shapes = check_shapes;
          options.rtol = per_output<double>(rtol, 1e-5);
          options.atol = per_output<double>(atol, 1e-5);
          options.fail_fast = fail_fast;
          options.check_error_stat = per_output_stat(check_error_stat);
          options.infinities_compare_equal = infinities_compare_equal;
          options.error_quantile = per_output<double>(error_quantile, 0.99);
          options.style = style_from(style);
          return CompareFunction{compare::simple(options), "simple", options};
        },
        "check_shapes"_a, "rtol"_a.none(), "atol"_a.none(), "fail_fast"_a, "check_error_stat"_a.none(),
        "infinities_compare_equal"_a,
        "error_quantile"_a.none(), "style"_a);
  m.def("compare_indices",
        [](nb::object index_tolerance, bool fail_fast, const std::string& style) {
          compare::IndicesOptions options;
          options.index_tolerance = per_output<int64_t>(index_tolerance, 0);
          options.fail_fast = fail_fast;
          options.style = style_from(style);
          return CompareFunction{compare::indices(std::move(options)), "indices"};
        },
        "index_tolerance"_a.none(), "fail_fast"_a, "style"_a);
  m.def("compare_distance",
        [](nb::object l2_tolerance, nb::object cosine_similarity_threshold, bool check_shapes, bool fail_fast,
           const std::string& style) {
          compare::DistanceOptions options;
          options.l2_tolerance = per_output<double>(l2_tolerance, 1e-5);
          options.cosine_similarity_threshold = per_output<double>(cosine_similarity_threshold, 0.997);
          options.check_shapes = check_shapes;
          options.fail_fast = fail_fast;
          options.style = style_from(style);
          return CompareFunction{compare::distance(std::move(options)), "distance"};
        },
        "l2_tolerance"_a.none(), "cosine_similarity_threshold"_a.none(), "check_shapes"_a, "fail_fast"_a, "style"_a);
  m.def("compare_quality",
        [](nb::object psnr_tolerance, nb::object snr_tolerance, bool check_psnr, bool check_snr, bool check_shapes,
           bool fail_fast, const std::string& style) {
          compare::QualityOptions options;
          options.psnr_tolerance = check_psnr ? std::optional(per_output<double>(psnr_tolerance, 30.0)) : std::nullopt;
          options.snr_tolerance = check_snr ? std::optional(per_output<double>(snr_tolerance, 20.0)) : std::nullopt;
          options.check_shapes = check_shapes;
          options.fail_fast = fail_fast;
          options.style = style_from(style);
          return CompareFunction{compare::quality(std::move(options)), "quality"};
        },
        "psnr_tolerance"_a.none(), "snr_tolerance"_a.none(), "check_psnr"_a, "check_snr"_a, "check_shapes"_a,
        "fail_fast"_a,
        "style"_a);

  // runners: [(native Runner or Python runner object, display name or None)]
  // data_loader: callable(metadata entries) -> [[(name, array, dtype)], ...] per iteration
  m.def("comparator_run",
        [](nb::list runners, nb::object data_loader, int warm_up) {
          RunnerList list(runners);
          compare::DataLoaderFunc feeds = data_loader_func(std::move(data_loader));
          compare::RunOptions options;
          options.warm_up = warm_up;
          compare::RunResults results;
          try {
            SigintInterruptsInference sigint;
            nb::gil_scoped_release release;
            results = compare::Comparator::run(list.pointers, feeds, options);
            feeds = nullptr;
          } catch (const InterruptedError&) {
            // Python's handler raises KeyboardInterrupt (or what the user's handler raises).
            if (PyErr_CheckSignals() != 0) throw nb::python_error();
            throw;
          }
          list.rename(results);
          return results_to_python(results);
        },
        "runners"_a, "data_loader"_a, "warm_up"_a = 0);

  // Performance mode (compare/perf.h): returns (results, perf report JSON text), one perf entry per
  // runner, named as the results are. sweep: one data loader per swept shape set (PerfOptions::sweep),
  // called as data_loader is.
  m.def("comparator_run_perf",
        [](nb::list runners, nb::object data_loader, int warm_up, int iterations, std::optional<double> duration,
           int layer_inferences, int top_layers, std::optional<int> requests, nb::list sweep) {
          RunnerList list(runners);
          compare::DataLoaderFunc feeds = data_loader_func(std::move(data_loader));
          compare::PerfOptions options;
          for (nb::handle set : sweep) options.sweep.push_back(data_loader_func(nb::borrow(set)));
          options.warm_up = warm_up;
          options.iterations = iterations;
          options.duration = duration;
          options.layer_inferences = layer_inferences;
          options.top_layers = top_layers;
          options.requests = requests;
          compare::PerfRun run;
          {
            nb::gil_scoped_release release;
            run = compare::measure_performance(list.pointers, feeds, options);
            feeds = nullptr;
            options.sweep.clear();
          }
          list.rename(run.results);
          for (std::size_t i = 0; i < run.perf.size() && i < run.results.size(); ++i)
            run.perf[i].runner_name = run.results[i].runner_name;
          return nb::make_tuple(results_to_python(run.results), compare::perf_report(run.perf).dump());
        },
        "runners"_a, "data_loader"_a, "warm_up"_a, "iterations"_a, "duration"_a.none(), "layer_inferences"_a,
        "top_layers"_a, "requests"_a.none() = nb::none(), "sweep"_a = nb::list());

  // The streamed layerwise comparison of two runners through the judge (compare::Judge).
  // tensors: None (every tensor) or a list of names; postprocess: [(output name or "", k, axis)].
  // Returns {"passed", "streamed", "results", "layerwise": [{"runner0", "runner1", "entries": [...],
  // "only_in_runner0", "only_in_runner1", "skipped", "spilled_bytes"}], "report": JSON text}.
  m.def("comparator_run_layerwise",
        [](nb::list runners, nb::object data_loader, int warm_up, std::optional<std::vector<std::string>> tensors,
           std::vector<std::string> exclude, const CompareFunction& function,
           std::vector<std::tuple<std::string, int64_t, int64_t>> postprocess, bool fail_fast, bool validate,
           uint64_t memory_budget, std::size_t worst_count, bool attribute) {
          if (!function.simple)
            raise<InvalidInputError>("Comparator.run_layerwise compares with CompareFunc.simple() only, not {}",
                                     function.kind);
          RunnerList list(runners);
          if (list.pointers.size() != 2)
            raise<InvalidInputError>("Comparator.run_layerwise compares two runners, got {}", list.pointers.size());
          compare::JudgeOptions options;
          options.tensors =
              tensors ? runtime::IntermediateOutputs::list(*tensors) : runtime::IntermediateOutputs::all();
          options.exclude.insert(exclude.begin(), exclude.end());
          options.compare_func = function.function;
          options.streamable_simple = function.simple;
          for (const auto& [name, k, axis] : postprocess)
            options.postprocess.emplace_back(name, compare::TopK{k, axis});
          options.fail_fast = fail_fast;
          if (validate) options.validate = compare::ValidateOptions{.check_inf = true, .check_nan = true};
          options.warm_up = warm_up;
          options.memory_budget = memory_budget;
          options.worst_count = worst_count;
          NamedTensors first_feed;  // what attribution runs the reference on again
          if (attribute)
            options.on_feeds = [&first_feed](const std::vector<NamedTensors>& made) {
              if (!made.empty()) first_feed = made.front();
            };
          compare::DataLoaderFunc feeds = data_loader_func(std::move(data_loader));
          compare::Verdict verdict;
          std::optional<compare::AttributionResult> attribution;
          {
            nb::gil_scoped_release release;
            verdict = compare::Judge(list.pointers, {}, std::move(options)).run(feeds);
            feeds = nullptr;
            if (attribute) attribution = attribute_layerwise(list.pointers, first_feed, verdict, *function.simple,
                                                             memory_budget, worst_count);
          }
          list.rename(verdict.results);
          nb::list layerwise;
          for (const auto& result : verdict.layerwise) layerwise.append(layerwise_to_python(result));
          nb::dict converted;
          converted["passed"] = verdict.passed;
          converted["streamed"] = verdict.streamed;
          converted["results"] = results_to_python(verdict.results);
          converted["layerwise"] = layerwise;
          auto report = verdict.report(worst_count);
          if (attribution) report["attribution"] = compare::to_json(*attribution, worst_count);
          converted["report"] = report.dump();
          return converted;
        },
        "runners"_a, "data_loader"_a, "warm_up"_a, "tensors"_a.none(), "exclude"_a, "compare_func"_a,
        "postprocess"_a, "fail_fast"_a, "validate"_a, "memory_budget"_a, "worst_count"_a, "attribute"_a = false);

  m.def("compare_accuracy",
        [](nb::handle results, const CompareFunction& function, bool fail_fast,
           std::optional<std::vector<std::pair<std::size_t, std::size_t>>> comparisons) {
          compare::RunResults converted = results_from_python(results);
          compare::CompareAccuracyOptions options;
          options.fail_fast = fail_fast;
          options.comparisons = std::move(comparisons);
          compare::AccuracyResult accuracy;
          {
            nb::gil_scoped_release release;
            accuracy = compare::Comparator::compare_accuracy(converted, function.function, options);
            converted.clear();
          }
          nb::list pairs;
          for (const auto& pair : accuracy.pairs) {
            nb::list iterations;
            for (const auto& iteration : pair.iterations) iterations.append(iteration_to_python(iteration));
            pairs.append(nb::make_tuple(pair.runner0, pair.runner1, iterations));
          }
          return pairs;
        },
        "results"_a, "compare_func"_a, "fail_fast"_a = false, "comparisons"_a = nb::none());

  m.def("validate",
        [](nb::handle results, bool check_inf, bool check_nan, bool fail_fast) {
          compare::RunResults converted = results_from_python(results);
          compare::ValidateOptions options;
          options.check_inf = check_inf;
          options.check_nan = check_nan;
          options.fail_fast = fail_fast;
          nb::gil_scoped_release release;
          bool passed = compare::Comparator::validate(converted, options).passed;
          converted.clear();
          return passed;
        },
        "results"_a, "check_inf"_a, "check_nan"_a, "fail_fast"_a);

  m.def("save_run_results",
        [](const std::string& path, nb::handle results) {
          compare::RunResults converted = results_from_python(results);
          nb::gil_scoped_release release;
          compare::save_run_results(path, converted);
          converted.clear();
        },
        "path"_a, "results"_a);
  m.def("load_run_results",
        [](const std::string& path) {
          compare::RunResults results;
          {
            nb::gil_scoped_release release;
            results = compare::load_run_results(path);
          }
          return results_to_python(results);
        },
        "path"_a);

  m.def("top_k_indices",
        [](nb::handle array, const std::string& dtype, int64_t k, int64_t axis) {
          Tensor tensor = tensor_from_array(array, dtype, "array");
          Tensor indices;
          {
            nb::gil_scoped_release release;
            indices = compare::top_k_indices(tensor, k, axis);
            tensor = Tensor();
          }
          return array_from_tensor(indices);
        },
        "array"_a, "dtype"_a, "k"_a, "axis"_a);

  m.def("encode_npy",
        [](nb::handle array, const std::string& dtype) {
          Tensor tensor = tensor_from_array(array, dtype, "array");
          std::string bytes = encode_npy(tensor);
          return nb::bytes(bytes.data(), bytes.size());
        },
        "array"_a, "dtype"_a);
  m.def("decode_npy",
        [](nb::bytes data, const std::string& what) { return array_from_tensor(decode_npy(bytes_of(data), what)); },
        "data"_a, "what"_a = "array");
}

}  // namespace parity::python
