// A runner for a model one backend cannot run whole (`parity run --openvino --fallback ref`): at
// activation the model is partitioned (parity/runtime/capability.h), each supported subgraph goes
// to the primary backend's runner and each unsupported one to the fallback runner; infer() runs
// the subgraphs in topological order, handing tensors across, and returns the model's outputs.
// Intermediate outputs (--onnx-outputs) and streamed tensors (layerwise runs) come from the
// subgraph that produces each tensor.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parity/runtime/capability.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/runner.h"

namespace parity::runtime {

// A backend the hybrid runner hands subgraphs to: its name for messages ("OpenVINO", "ref") and
// how to make a runner for a subgraph.
struct HybridBackend {
  std::string label;
  std::function<std::unique_ptr<Runner>(ModelLoader)> make_runner;
};

class HybridRunner : public Runner {
 public:
  // `make_query` is called at activation (the primary backend is loaded then).
  HybridRunner(ModelLoader model, std::function<std::unique_ptr<SupportQuery>()> make_query,
               HybridBackend primary, HybridBackend fallback);
  ~HybridRunner() override;

  // Where each subgraph runs, after activation.
  struct Placement {
    CapabilityPartition partition;
    std::string backend;                  // the label of the backend running it
    std::vector<std::string> node_names;  // in order
  };
  const std::vector<Placement>& placements() const { return placements_; }
  const CapabilityReport& report() const { return report_; }

 protected:
  void activate_impl() override;
  void deactivate_impl() override;
  TensorMetadata input_metadata_impl() override;
  NamedTensors infer_impl(const NamedTensors& feed) override;

 private:
  struct Stage {
    std::unique_ptr<Runner> runner;
    std::vector<std::string> inputs;
    std::vector<std::string> produced;  // tensors its own nodes produce (not copied Constants)
  };
  ModelLoader loader_;
  std::function<std::unique_ptr<SupportQuery>()> make_query_;
  HybridBackend primary_, fallback_;
  CapabilityReport report_;
  std::vector<Placement> placements_;
  std::vector<Stage> stages_;
  TensorMetadata inputs_;
  std::vector<std::string> graph_outputs_;
};

}  // namespace parity::runtime
