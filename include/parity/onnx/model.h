// ONNX models: load and save through protobuf with ONNX's schema (onnx-ml.proto), external data
// kept safely inside the model's folder, ONNX's checker and shape inference on demand.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "parity/core/tensor.h"
#include "parity/core/tensor_metadata.h"

namespace parity::onnx {

namespace fs = std::filesystem;

struct LoadOptions {
  // Read external tensors into the protobuf's raw_data (like onnx.load). When false, external
  // references are still validated (path inside the model folder, file exists, range in bounds)
  // and tensors are read on demand by tensor_from_proto.
  bool load_external_data = false;
  // Leave the raw bytes of large main-graph initializers (64 KiB and more) in the model file: the
  // parsed model refers to them as external data in its own file (read through memory maps when
  // a tensor is needed), so a 1 GB model does not cost 1 GB before anything runs. For runners;
  // save_model writes such tensors inline again (or to the new model's external data).
  bool lazy_weights = false;
  // Folder that external data locations are relative to, instead of the model's own folder
  // (--external-data-dir). Weights are then not left lazily in the model file.
  fs::path external_data_dir;
  // Deepest nesting of If/Loop/Scan subgraphs accepted.
  int max_subgraph_depth = 64;
  // Refuse the model when a declared dimension is negative or a tensor's data do not match its
  // dims. Off for display (`inspect model`, as Polygraphy shows such models): the model is shown
  // as declared, and a tensor's data are checked, and refused, only when its values are read.
  // External data locations are checked (inside the model's folder, file exists) either way.
  bool check_dims_and_data = true;
  // Load the structure only (Polygraphy's --ignore-external-data): external data references are
  // neither checked nor read, so a model whose data files are absent loads; tensor_values()
  // refuses the values of such tensors. Not with load_external_data or lazy_weights.
  bool ignore_external_data = false;
};

// A model and the folder its external data are relative to.
struct Model {
  std::shared_ptr<::onnx::ModelProto> proto;
  fs::path path;      // file it was loaded from; empty when loaded from bytes
  fs::path base_dir;  // folder external data locations are relative to
  bool external_data_ignored = false;  // loaded with LoadOptions::ignore_external_data

  ::onnx::ModelProto& operator*() const { return *proto; }
  ::onnx::ModelProto* operator->() const { return proto.get(); }
};

// Throws InvalidInputError / FileError naming the file and what is wrong.
Model load_model(const fs::path& path, const LoadOptions& options = {});
Model load_model_from_bytes(std::string_view bytes, const fs::path& base_dir,
                            const LoadOptions& options = {}, const std::string& what = "<bytes>");

enum class ExternalData { kAuto, kAlways, kNever };

struct SaveOptions {
  // kAuto: external only when the serialized model would reach protobuf's 2 GB limit.
  ExternalData external_data = ExternalData::kAuto;
  // Tensors at least this large go to the external file when external data is used.
  std::size_t size_threshold = 1024;
  // File name of the external data, relative to the model's folder; default "<model>.data".
  std::string location;
  // false: each external tensor in its own file beside the model, named after the tensor (a
  // tensor name that is no plain file name, or is taken, gets "<model>.tensor<N>.data"); `location`
  // is then unused. As onnx's all_tensors_to_one_file.
  bool all_tensors_to_one_file = true;
};

// Atomic: model (and external data file) are written to temp files and renamed into place.
void save_model(const Model& model, const fs::path& path, const SaveOptions& options = {});
std::string serialize_model(const ::onnx::ModelProto& model);  // bytes; throws over 2 GB

// A tensor of `model` decoded (tensor_from_proto with the model's base_dir). InvalidInputError naming
// the tensor when its values are external data the model was loaded without (ignore_external_data).
Tensor tensor_values(const Model& model, const ::onnx::TensorProto& tensor);

// Copies every external tensor's bytes into raw_data (so the model no longer depends on files).
void load_external_data(Model& model);

// ONNX's checker (full_check also runs shape inference strictly). Throws InvalidInputError with
// the checker's text.
void check_model(const Model& model, bool full_check = false);

struct ShapeInferenceResult {
  bool ok = true;
  std::string error;  // ONNX's message when inference stopped early
};
// Runs ONNX's shape inference in place (value_info filled, data propagation on). Errors are
// returned, not thrown: a model shape inference cannot fully handle is still a model. Inference runs
// in a child process: where it crashes (third-party code that legal but hostile models drive out of
// bounds), the error says so and names the first node whose inference crashes, and the model is
// left as it was.
ShapeInferenceResult infer_shapes(::onnx::ModelProto& model);

// "ONNX's shape inference crashed (signal 11 (SIGSEGV)) at node 'n' (Op)" where inference of the
// model crashes (run contained, as above); nullopt where it does not. For what runs the same code
// in-process (ONNX Runtime, when it loads a model).
std::optional<std::string> shape_inference_crash(const ::onnx::ModelProto& model);

// Metadata of graph inputs (initializers excluded) and outputs.
TensorMetadata graph_inputs(const ::onnx::GraphProto& graph);
TensorMetadata graph_outputs(const ::onnx::GraphProto& graph);
TensorInfo tensor_info_from_type(const ::onnx::TypeProto& type);
// The entry declaring each tensor of the graph (not its subgraphs): its value_info, graph input or
// graph output entry; where several name a tensor, an output's wins over an input's, an input's over
// a value_info's.
std::unordered_map<std::string, const ::onnx::ValueInfoProto*> declared_values(const ::onnx::GraphProto& graph);

// Calls fn(graph, depth) for the main graph, every subgraph in node attributes (recursively) and
// every function body; throws ResourceLimitError past max_depth.
void for_each_graph(const ::onnx::ModelProto& model,
                    const std::function<void(const ::onnx::GraphProto&, int depth)>& fn,
                    int max_depth = 64);

// Opset version of the default ("" / "ai.onnx") domain, or 0 when absent.
int64_t default_opset(const ::onnx::ModelProto& model);

}  // namespace parity::onnx
