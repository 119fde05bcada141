// Comparator::run_layerwise: two runs compared tensor by tensor as the second one produces them.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "comparator_internal.h"
#include "parity/compare/comparator.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::compare {

AccuracyResult LayerwiseRun::accuracy() const {
  AccuracyResult result;
  result.pairs.push_back(comparison.as_pair());
  return result;
}

bool LayerwiseRun::passed() const {
  if (!comparison.passed()) return false;
  for (const auto& checks : validation)
    if (!checks.passed()) return false;
  return true;
}

namespace {

// The state of one streamed comparison: which tensors take part, their postprocessing, and the
// per-runner NaN/Inf checks.
class LayerwiseSession {
 public:
  explicit LayerwiseSession(const LayerwiseRunOptions& options) : options_(options) {}

  // Whether the tensor `name`, produced by an `op` node ("" when not known), is compared. Mark all
  // leaves out Constants' values, as Polygraphy's does: they are no computation of the runner.
  bool wanted(const std::string& name, const std::string& op) const {
    if (options_.exclude.count(name)) return false;
    if (options_.tensors.mode == runtime::IntermediateOutputs::Mode::kAll) return op != "Constant";
    const auto& names = options_.tensors.names;
    return std::find(names.begin(), names.end(), name) != names.end() || options_.graph_outputs.count(name) > 0;
  }

  // The tensor after the postprocess rules (the same handle, no copy, when no rule applies).
  Tensor postprocessed(const std::string& name, const Tensor& tensor) const {
    if (auto rule = postprocess_rule(options_.postprocess, name))
      return with_context(fmt::format("--postprocess: tensor '{}'", name),
                          [&] { return top_k_indices(tensor, rule->k, rule->axis); });
    return tensor;
  }

  // With fail_fast, once a tensor failed the rest are not compared.
  bool stopped(const LayerwiseResult& result) const {
    return options_.fail_fast && !result.entries.empty() && !result.entries.back().comparison.passed;
  }

  SimpleOutputParams params(const std::string& name) const { return simple_output_params(options_.simple, name); }

  // How one runner is run: its tensors go to `on_tensor` (after the NaN/Inf check with validate).
  detail::RunnerSetup setup(LayerwiseRun& run, const runtime::Runner& runner, const DataLoaderFunc* data_loader,
                            std::function<void(int64_t, const runtime::ProducedTensor&)> on_tensor) {
    detail::RunnerSetup setup;
    setup.data_loader = data_loader;
    setup.on_feeds = options_.on_feeds;
    setup.warm_up = options_.warm_up;
    setup.exclude_outputs = options_.exclude;
    // Time spent in the callback is the comparison's, not the runner's.
    on_tensor = [&run, on_tensor = std::move(on_tensor)](int64_t iteration, const runtime::ProducedTensor& tensor) {
      auto start = std::chrono::steady_clock::now();
      on_tensor(iteration, tensor);
      run.comparison_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    if (!options_.validate) {
      setup.on_tensor = std::move(on_tensor);
      return setup;
    }
    // run.validation never grows while a runner runs, so the index stays valid.
    run.validation.push_back(StreamedValidation{runner.name()});
    std::size_t index = run.validation.size() - 1;
    setup.on_tensor = [this, &run, index, on_tensor = std::move(on_tensor)](int64_t iteration,
                                                                         const runtime::ProducedTensor& tensor) {
      if (wanted(tensor.name, tensor.op_type) && tensor.tensor.dtype() != DType::kString)
        run.validation[index].check(iteration, tensor);
      on_tensor(iteration, tensor);
    };
    return setup;
  }

  void log_header(const LayerwiseResult& result) const {
    log::start("Accuracy Comparison | {} vs. {} (layerwise, streamed tensor by tensor)", result.runner0,
               result.runner1);
  }

 private:
  const LayerwiseRunOptions& options_;
};

bool is_qdq(const std::string& op) { return op == "QuantizeLinear" || op == "DequantizeLinear"; }

// A tensor of run `run` (0 or 1) with no twin in the other run: a Q/DQ node's output goes to
// qdq_only (once, from the first iteration; the quantized run is the one that has them), any
// other to `missing`.
void no_twin(LayerwiseResult& result, int run, int64_t iteration, const std::string& name, const std::string& op,
             std::vector<std::string>& missing) {
  if (!is_qdq(op)) {
    missing.push_back(name);
    return;
  }
  if (iteration == 0) result.qdq_only.push_back(name);
  result.quantized_run = run;
}

// "PASSED | All N tensor(s) matched" (or how many failed) and Polygraphy's accuracy summary line.
// Counted from the entries (as_pair() would copy every comparison: the run's largest transient).
void log_layerwise_verdict(const LayerwiseResult& result) {
  std::map<int64_t, bool> iterations;  // iteration -> every tensor passed
  std::size_t failed = 0;
  for (const auto& e : result.entries) {
    auto [it, inserted] = iterations.emplace(e.iteration, true);
    if (!e.comparison.passed) {
      it->second = false;
      ++failed;
    }
  }
  const auto passed_iterations = static_cast<std::size_t>(
      std::count_if(iterations.begin(), iterations.end(), [](const auto& entry) { return entry.second; }));
  const bool passed = failed == 0;
  if (passed) log::finish("    PASSED | All {} tensor(s) matched", result.entries.size());
  else log::error("    FAILED | {} of {} tensor(s) mismatched", failed, result.entries.size());
  const double pass_rate = iterations.empty() ? 100.0
                                              : static_cast<double>(passed_iterations) /
                                                    static_cast<double>(iterations.size()) * 100.0;
  std::string rate = fmt::format("{}", pass_rate);
  if (rate.find_first_of(".en") == std::string::npos) rate += ".0";  // Python's str(float)
  auto summary = fmt::format("Accuracy Summary | {} vs. {} | Passed: {}/{} iterations | Pass Rate: {}%", result.runner0,
                             result.runner1, passed_iterations, iterations.size(), rate);
  if (passed) log::finish("{}", summary);
  else log::error("{}", summary);
}

// Splits the runners' reported inference time into their own work and the comparison's (the
// validation checks count as the comparison's too), and says so at verbose level.
void log_timing(LayerwiseRun& run) {
  double reported = 0;
  for (const auto& runner : run.results)
    for (const auto& iteration : runner.iterations) reported += iteration.runtime.value_or(0.0);
  run.inference_seconds = std::max(0.0, reported - run.comparison_seconds);
  log::verbose("Layerwise timing | runners' own inference: {:.3f} s | comparison (spill, compare, statistics, "
               "logging): {:.3f} s ({:.2f}x the inference)",
               run.inference_seconds, run.comparison_seconds,
               run.inference_seconds > 0 ? run.comparison_seconds / run.inference_seconds : 0.0);
}

}  // namespace

LayerwiseRun Comparator::run_layerwise(runtime::Runner& runner0, runtime::Runner& runner1,
                                       const DataLoaderFunc& data_loader, const LayerwiseRunOptions& options) {
  LayerwiseSession session(options);
  LayerwiseRun run;
  run.validation.reserve(2);
  LayerwiseResult& result = run.comparison;
  result.runner0 = runner0.name();
  result.runner1 = runner1.name();
  std::vector<NamedTensors> feeds;
  std::set<std::pair<int64_t, std::string>> seen;

  TensorSpill spill(options.spill_directory, options.memory_budget);
  run.results.push_back(detail::run_runner(
      runner0, feeds,
      session.setup(run, runner0, &data_loader, [&](int64_t iteration, const runtime::ProducedTensor& t) {
        if (!session.wanted(t.name, t.op_type)) return;
        if (t.tensor.dtype() == DType::kString) {
          result.skipped.push_back(t.name);  // no numeric error
          return;
        }
        if (t.immutable)
          spill.append_shared(iteration, t.name, t.tensor, t.node_name, t.op_type);
        else
          spill.append(iteration, t.name, t.tensor, t.node_name, t.op_type);
      })));
  session.log_header(result);
  run.results.push_back(detail::run_runner(
      runner1, feeds, session.setup(run, runner1, nullptr, [&](int64_t iteration, const runtime::ProducedTensor& t) {
        if (!session.wanted(t.name, t.op_type) || t.tensor.dtype() == DType::kString || session.stopped(result))
          return;
        const auto* record = spill.find(iteration, t.name);
        if (!record) {
          no_twin(result, 1, iteration, t.name, t.op_type, result.only_in_runner1);
          return;
        }
        seen.emplace(iteration, t.name);
        // Tensor names are unique in a graph (SSA), so each record is read once and its tensor can be
        // handed over (a runner streaming a held name twice in one iteration gets an InternalError).
        Tensor first = session.postprocessed(t.name, spill.take(*record));
        Tensor second = session.postprocessed(t.name, t.tensor);
        Logger::Indent indent;
        compare_layer(result, record->order, iteration, t.name, record->node, record->op, first, second,
                      session.params(t.name));
      })));
  if (!session.stopped(result))
    for (const auto& record : spill.records())
      if (!seen.count({record.iteration, record.name}))
        no_twin(result, 0, record.iteration, record.name, record.op, result.only_in_runner0);
  result.spilled_bytes = spill.bytes_written();
  log_layerwise_verdict(result);
  log_timing(run);
  return run;
}

LayerwiseRun Comparator::run_layerwise(runtime::Runner& runner, const RunnerResults& held, bool live_is_first,
                                       const DataLoaderFunc& data_loader, const LayerwiseRunOptions& options) {
  LayerwiseSession session(options);
  LayerwiseRun run;
  run.validation.reserve(1);
  LayerwiseResult& result = run.comparison;
  result.runner0 = live_is_first ? runner.name() : held.runner_name;
  result.runner1 = live_is_first ? held.runner_name : runner.name();
  auto& only_in_live = live_is_first ? result.only_in_runner0 : result.only_in_runner1;
  auto& only_in_held = live_is_first ? result.only_in_runner1 : result.only_in_runner0;
  std::vector<NamedTensors> feeds;
  std::set<std::pair<int64_t, std::string>> seen;
  std::size_t order = 0;
  int64_t order_iteration = 0;
  std::set<std::string> left_out;  // live tensors not compared (excluded, Constants under mark all)

  session.log_header(result);
  run.results.push_back(detail::run_runner(
      runner, feeds, session.setup(run, runner, &data_loader, [&](int64_t iteration, const runtime::ProducedTensor& t) {
        if (iteration != order_iteration) order = 0, order_iteration = iteration;  // positions count per iteration
        ++order;
        if (!session.wanted(t.name, t.op_type)) {
          left_out.insert(t.name);  // not reported as missing from the live run below
          return;
        }
        if (session.stopped(result)) return;
        if (iteration >= static_cast<int64_t>(held.iterations.size())) return;
        const Tensor* other = held.iterations[static_cast<std::size_t>(iteration)].find(t.name);
        if (!other) {
          no_twin(result, live_is_first ? 0 : 1, iteration, t.name, t.op_type, only_in_live);
          return;
        }
        seen.emplace(iteration, t.name);
        Tensor live_tensor = session.postprocessed(t.name, t.tensor);
        Tensor held_tensor = session.postprocessed(t.name, *other);
        Logger::Indent indent;
        compare_layer(result, order - 1, iteration, t.name, t.node_name, t.op_type,
                      live_is_first ? live_tensor : held_tensor, live_is_first ? held_tensor : live_tensor,
                      session.params(t.name));
      })));
  for (std::size_t it = 0; !session.stopped(result) && it < held.iterations.size() && it < feeds.size(); ++it)
    for (const auto& [name, tensor] : held.iterations[it].outputs)
      if (!left_out.count(name) && session.wanted(name, "") && !seen.count({static_cast<int64_t>(it), name}))
        only_in_held.push_back(name);
  log_layerwise_verdict(result);
  log_timing(run);
  return run;
}

std::function<TensorProducer(const std::string&)> tensor_producers(const onnx::Model& model) {
  auto producers = std::make_shared<std::map<std::string, TensorProducer>>();
  std::size_t order = 0;
  for (const auto& node : model->graph().node())
    for (const auto& output : node.output())
      if (!output.empty()) (*producers)[output] = {order++, node.name(), node.op_type()};
  return [producers](const std::string& name) {
    auto it = producers->find(name);
    return it == producers->end() ? TensorProducer{} : it->second;
  };
}

}  // namespace parity::compare
