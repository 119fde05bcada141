// A runner for a model cut into consecutive parts, each a subgraph run by a runner of its own:
// infer() runs the parts in order, handing each the tensors it reads (from the feed or from earlier
// parts), and returns the model's outputs. Intermediate outputs (--onnx-outputs) and streamed
// tensors (layerwise runs) come from the part whose nodes produce each tensor. It serves the
// hybrid run (parity/runtime/hybrid_runner.h: supported parts on one backend, the rest on a
// fallback) and debug precision's split (parity/debug/precision_split.h: parts at higher and
// lower precision).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parity/core/shape.h"
#include "parity/core/tensor_metadata.h"
#include "parity/runtime/runner.h"

namespace parity::runtime {

struct ModelPart {
  std::string description;            // for messages: "the subgraph from node 12 on"
  std::vector<std::string> inputs;    // the tensors it reads, in its subgraph's input order
  std::vector<std::string> produced;  // the tensors its own nodes produce
  // Makes and activates its runner. `inputs`: the values of `inputs` at the inference that builds
  // it (PartBuild::kPerInputShapes), or nothing (PartBuild::kAtActivation). A runner that names
  // its inputs otherwise than `inputs` is fed by position.
  std::function<std::unique_ptr<Runner>(const NamedTensors& inputs)> make_runner;
};

struct Partitioning {
  TensorMetadata inputs;             // the model's
  std::vector<std::string> outputs;  // the model's graph outputs, in order
  std::vector<ModelPart> parts;      // in execution order
};

// When the parts' runners are made: all at activation, or each at the first inference and again
// whenever the shapes of the tensors it reads change (a runner compiled for static shapes).
enum class PartBuild { kAtActivation, kPerInputShapes };

class PartitionedRunner : public Runner {
 public:
  // `name_prefix` starts the runner's name ("split-runner"); `partition` is called at each activation.
  PartitionedRunner(std::string_view name_prefix, std::function<Partitioning()> partition, PartBuild build);
  ~PartitionedRunner() override;

 protected:
  void activate_impl() override;
  void deactivate_impl() override;
  TensorMetadata input_metadata_impl() override;
  NamedTensors infer_impl(const NamedTensors& feed) override;

 private:
  struct Stage {
    std::unique_ptr<Runner> runner;
    std::vector<std::string> input_names;  // its runner's names of the part's inputs
    std::vector<Shape> input_shapes;       // kPerInputShapes: the shapes it was built for
  };
  void build(std::size_t index, const NamedTensors& inputs);

  std::function<Partitioning()> partition_;
  PartBuild build_;
  Partitioning model_;
  std::vector<Stage> stages_;  // one per part
};

}  // namespace parity::runtime
