// A runner for a model one backend cannot run whole (`parity run --openvino --fallback ref`): at
// activation the model is partitioned (parity/runtime/capability.h), each supported subgraph goes
// to the primary backend's runner and each unsupported one to the fallback runner; infer() runs
// the subgraphs in topological order, handing tensors across, and returns the model's outputs
// (parity/runtime/partitioned_runner.h runs them).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parity/runtime/capability.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/partitioned_runner.h"

namespace parity::runtime {

// A backend the hybrid runner hands subgraphs to: its name for messages ("OpenVINO", "ref") and
// how to make a runner for a subgraph.
struct HybridBackend {
  std::string label;
  std::function<std::unique_ptr<Runner>(ModelLoader)> make_runner;
};

class HybridRunner : public PartitionedRunner {
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
  // A hybrid run of another model: each of its nodes goes where the support query places it.
  std::unique_ptr<Runner> with_model(ModelLoader model) const override {
    return std::make_unique<HybridRunner>(std::move(model), make_query_, primary_, fallback_);
  }

 private:
  // At activation: the model partitioned by the support query, each part's runner made by its backend.
  Partitioning partition();

  ModelLoader loader_;
  std::function<std::unique_ptr<SupportQuery>()> make_query_;
  HybridBackend primary_, fallback_;
  CapabilityReport report_;
  std::vector<Placement> placements_;
};

}  // namespace parity::runtime
