// Comparator::run and Comparator::postprocess: runners in order over one set of feeds.
#include <algorithm>

#include <fmt/format.h>

#include "comparator_internal.h"
#include "parity/compare/comparator.h"
#include "parity/core/interrupt.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/runtime/feed_coercion.h"

namespace parity::compare {

DataLoaderFunc data_loader_from(runtime::DataLoader loader) {
  return [loader = std::move(loader)](const TensorMetadata& inputs) { return loader.generate_all(inputs); };
}

DataLoaderFunc data_loader_from(std::vector<NamedTensors> feeds) {
  return [feeds = std::move(feeds)](const TensorMetadata&) { return feeds; };
}

namespace detail {

namespace {

void log_metadata(const runtime::Runner& runner, const char* what, const TensorMetadata& metadata) {
  log::info("{:35}\n---- Inference {}(s) ----\n{}", runner.name(), what, metadata.to_string());
}

TensorMetadata metadata_of(const NamedTensors& tensors) {
  TensorMetadata metadata;
  for (const auto& [name, tensor] : tensors) {
    std::vector<Dim> dims;
    for (int64_t d : tensor.shape()) dims.push_back(Dim::fixed(d));
    metadata.add(name, tensor.dtype(), dims);
  }
  return metadata;
}

}  // namespace

std::vector<NamedTensors> make_feeds(runtime::Runner& first, const DataLoaderFunc& data_loader,
                                     const std::function<void(const std::vector<NamedTensors>&)>& on_feeds) {
  TensorMetadata metadata = first.input_metadata();
  std::vector<NamedTensors> feeds = data_loader(metadata);
  if (feeds.empty()) log::warning("Data loader did not yield any input data.");
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    runtime::match_feed_names(metadata, feeds[i]);
    runtime::coerce_feed_dtypes(metadata, feeds[i]);
    with_context(fmt::format("iteration {}", i), [&] { runtime::validate_feed(metadata, feeds[i], first.name()); });
  }
  if (on_feeds) on_feeds(feeds);
  return feeds;
}

RunnerResults run_runner(runtime::Runner& runner, std::vector<NamedTensors>& feeds, const RunnerSetup& setup) {
  log::start("{:35} | Activating and starting inference", runner.name());
  runtime::ActiveRunner active(runner);
  if (setup.data_loader) feeds = make_feeds(runner, *setup.data_loader, setup.on_feeds);
  RunnerResults results;
  results.runner_name = runner.name();
  if (setup.warm_up > 0 && !feeds.empty()) {
    log::info("{:35} | Running {} warm-up inference(s)", runner.name(), setup.warm_up);
    for (int i = 0; i < setup.warm_up; ++i) runner.infer(feeds.front());
  }
  int64_t iteration = 0;
  // With dropped intermediates, what the runner produced is only described: name, type, shape.
  TensorMetadata produced;
  if (setup.on_tensor) {
    runner.set_tensor_callback([&](const runtime::ProducedTensor& tensor) { setup.on_tensor(iteration, tensor); });
  } else if (setup.drop_intermediates) {
    runner.set_tensor_callback([&](const runtime::ProducedTensor& tensor) {
      if (iteration != 0 || setup.exclude_outputs.count(tensor.name) || produced.contains(tensor.name)) return;
      const auto& listed = setup.intermediates.names;
      if (setup.intermediates.mode == runtime::IntermediateOutputs::Mode::kList &&
          std::find(listed.begin(), listed.end(), tensor.name) == listed.end())
        return;
      std::vector<Dim> dims;
      for (int64_t d : tensor.tensor.shape()) dims.push_back(Dim::fixed(d));
      produced.add(tensor.name, tensor.tensor.dtype(), dims);
    });
  } else if (setup.intermediates.mode != runtime::IntermediateOutputs::Mode::kNone) {
    runner.set_intermediate_outputs(setup.intermediates);
  }
  double total = 0;
  for (const auto& feed : feeds) {
    if (iteration == 0) log_metadata(runner, "Input", metadata_of(feed));
    IterationResult result;
    result.runner_name = runner.name();
    // Ctrl-C in Python (core/interrupt.h) stops the run between inferences too.
    if (interrupt_requested()) raise<InterruptedError>("{}: interrupted before iteration {}", runner.name(), iteration);
    result.outputs = runner.infer(feed);
    result.runtime = runner.last_inference_time();
    if (!setup.exclude_outputs.empty())
      std::erase_if(result.outputs, [&](const auto& output) { return setup.exclude_outputs.count(output.first) > 0; });
    total += *result.runtime;
    if (iteration == 0) {
      if (setup.drop_intermediates) {
        // The graph outputs first, then every other tensor in production order, as a held run lists them.
        // A list of names is returned in the list's order, "mark all" in production order.
        TensorMetadata listed = metadata_of(result.outputs);
        if (setup.intermediates.mode == runtime::IntermediateOutputs::Mode::kList) {
          for (const auto& name : setup.intermediates.names)
            if (const TensorInfo* info = produced.find(name); info && !listed.contains(name)) listed.add(name, *info);
        } else {
          for (const auto& [name, info] : produced)
            if (!listed.contains(name)) listed.add(name, info);
        }
        log_metadata(runner, "Output", listed);
      } else {
        log_metadata(runner, "Output", metadata_of(result.outputs));
      }
    }
    results.iterations.push_back(std::move(result));
    ++iteration;
  }
  runner.set_tensor_callback(nullptr);
  double ms = total * 1000.0;
  log::finish("{:35} | Completed {} iteration(s) in {:.4g} ms | Average inference time: {:.4g} ms.", runner.name(),
              feeds.size(), ms, feeds.empty() ? 0.0 : ms / static_cast<double>(feeds.size()));
  return results;
}

}  // namespace detail

RunResults Comparator::run(const std::vector<runtime::Runner*>& runners, const DataLoaderFunc& data_loader,
                           const RunOptions& options, std::vector<NamedTensors>* feeds_used) {
  std::vector<NamedTensors> feeds;
  RunResults results;
  for (std::size_t i = 0; i < runners.size(); ++i) {
    detail::RunnerSetup setup;
    if (i == 0) setup.data_loader = &data_loader;
    setup.on_feeds = options.on_feeds;
    setup.warm_up = options.warm_up;
    setup.intermediates = options.intermediates;
    setup.exclude_outputs = options.exclude_outputs;
    setup.drop_intermediates =
        options.drop_intermediates && options.intermediates.mode != runtime::IntermediateOutputs::Mode::kNone;
    results.push_back(options.use_subprocess ? detail::run_runner_in_subprocess(*runners[i], feeds, setup)
                                             : detail::run_runner(*runners[i], feeds, setup));
  }
  if (feeds_used) *feeds_used = std::move(feeds);
  return results;
}

void Comparator::postprocess(RunResults& results, const PostprocessRules& rules) {
  if (rules.empty()) return;
  log::start("Applying post-processing to outputs: top_k");
  for (auto& runner : results)
    for (auto& iteration : runner.iterations) compare::postprocess(iteration, rules);
  log::finish("Finished applying post-processing");
}

}  // namespace parity::compare
