// The split mechanism of `debug precision`, for a runner whose precision is one global setting
// (OpenVINO's inference precision hint on the CPU, which does not honour per-node pinning): the
// model's nodes, in topological order, are cut into runs kept in higher precision and runs left in
// lower precision. Each run becomes a subgraph of its own, cut out by onnx::extract_subgraph (the
// code behind `surgeon extract`), and is run by a runner made for its precision; a run's inputs are
// handed across from the outputs of the runs before it (graph inputs from the feed). A kept prefix
// is one cut (the higher-precision side first); the search's narrowing asks for scattered nodes,
// which gives several cuts.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parity/debug/precision_candidate.h"
#include "parity/onnx/model.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/partitioned_runner.h"
#include "parity/runtime/runner.h"

namespace parity::debug {

struct SplitSearchSpace {
  // Main-graph nodes in topological order that depend on a graph input: the positions a cut can
  // fall between. Nodes computing constants only are left out; each subgraph reading one takes it
  // along (extract walks back through them). An unnamed node is shown as "(unnamed OP 'OUTPUT')".
  std::vector<PrecisionNode> nodes;
  std::vector<int> node_indices;  // each node's index in the main graph
  // Positions (in `nodes`) matched by `keep_fp32` entries: always on the higher-precision side.
  std::vector<std::size_t> always_kept;
};

// `fp32` must have been shape-inferred (the dtypes of the tensors handed across come from its
// value_info). `keep_fp32`: convert's --keep-fp32 entries; an entry matching no node is an
// InvalidInputError naming it.
SplitSearchSpace split_search_space(const onnx::Model& fp32, const std::vector<std::string>& keep_fp32);

// Makes a runner (not activated) for one subgraph, in higher or lower precision.
using PrecisionRunnerFactory =
    std::function<std::unique_ptr<runtime::Runner>(runtime::ModelLoader model, bool high_precision)>;

// One run of consecutive positions on one side of the cuts.
struct SplitSegment {
  std::size_t first = 0, last = 0;  // positions in the search space, inclusive
  bool high_precision = false;
  std::vector<std::string> inputs;   // tensors it reads from the feed or from earlier segments
  std::vector<std::string> outputs;  // tensors later segments read, and graph outputs
};

// The segments for keeping `kept` (positions, with the space's always_kept added) in higher
// precision. A segment whose tensors nothing reads (dead nodes) is left out.
std::vector<SplitSegment> split_segments(const onnx::Model& fp32, const SplitSearchSpace& space,
                                         const std::vector<std::size_t>& kept);

// Runs the model as its segments, each on its own runner, handing tensors across (a
// runtime::PartitionedRunner). Each segment's subgraph is cut out and its runner activated at the
// first inference, with its inputs' shapes fixed to those of the tensors handed across (OpenVINO
// compiles static shapes faster, and some of its CPU kernels refuse dynamic ones); a later feed of
// other shapes builds it again.
class SplitPrecisionRunner : public runtime::PartitionedRunner {
 public:
  SplitPrecisionRunner(onnx::Model fp32, std::vector<SplitSegment> segments, PrecisionRunnerFactory make_runner);

  const std::vector<SplitSegment>& segments() const { return segments_; }

 private:
  runtime::Partitioning partition() const;
  std::unique_ptr<runtime::Runner> build_segment(const SplitSegment& segment, const NamedTensors& inputs) const;

  onnx::Model fp32_;
  std::vector<SplitSegment> segments_;
  PrecisionRunnerFactory make_runner_;
};

// "OpenVINO at f32: nodes 0-11 ('head_0' .. 'head_11') | bf16: 12-40 ...": segments for messages.
std::string describe_segments(const std::vector<SplitSegment>& segments, const SplitSearchSpace& space,
                              const std::string& high_label, const std::string& low_label);

}  // namespace parity::debug
