// OpenvinoRunner::compile_for_feed_shapes: performance mode's static compile. A model input with a
// dynamic dimension makes OpenVINO's CPU plugin infer the shapes and reallocate memory in every
// inference, outside every layer's performance counter; benchmark_app -shape reshapes the model to
// the shapes it measures. With no --ov-min/max-shapes given, the model is compiled again with the
// feeds' shapes as both bounds, which OpenVINO compiles as static dimensions.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "parity/runtime/openvino/openvino_runner.h"

namespace parity::runtime {

std::string OpenvinoRunner::compile_for_feed_shapes(const std::vector<NamedTensors>& feeds) {
  if (feeds.empty() || !options_.compiled_file.empty() || !options_.min_shapes.empty() || !compiled_) return {};
  bool dynamic = false;
  for (const auto& [name, info] : inputs_)
    if (info.shape)
      for (const Dim& dim : *info.shape) dynamic = dynamic || !dim.is_fixed();
  if (!dynamic) return {};
  for (const auto& feed : feeds)
    for (const auto& [name, tensor] : feed) {
      const auto& front = feeds.front();
      const auto first = std::find_if(front.begin(), front.end(), [&](const auto& entry) { return entry.first == name; });
      if (first == front.end() || first->second.shape() != tensor.shape()) return {};
    }
  TensorMetadata shapes;
  std::vector<std::string> described;
  for (const auto& [name, tensor] : feeds.front()) {
    std::vector<Dim> dims;
    for (int64_t size : tensor.shape()) dims.push_back(Dim::fixed(size));
    shapes.add(name, tensor.dtype(), std::move(dims));
    described.push_back(fmt::format("{}:[{}]", name, fmt::join(tensor.shape(), ",")));
  }
  options_.min_shapes = options_.max_shapes = shapes;
  feed_shapes_ = true;
  compile(marked_outputs(), /*announce=*/false);
  return fmt::format("compiled again for the static shapes of the feed, {} (as benchmark_app -shape): a dynamic "
                     "dimension makes OpenVINO infer shapes and reallocate memory in every inference; "
                     "--ov-min-shapes/--ov-max-shapes keep it dynamic",
                     fmt::join(described, " "));
}

}  // namespace parity::runtime
