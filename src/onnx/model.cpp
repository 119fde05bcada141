#include "parity/onnx/model.h"

#include <climits>
#include <cstring>
#include <memory>
#include <optional>
#include <set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/onnx/tensor_proto.h"
#include "inlined_save.h"
#include "lazy_weights.h"

namespace parity::onnx {
namespace {

using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

constexpr std::size_t kProtobufLimit = static_cast<std::size_t>(INT_MAX);

void visit_graph(const GraphProto& graph, int depth, int max_depth,
                 const std::function<void(const GraphProto&, int)>& fn) {
  if (depth > max_depth)
    raise<ResourceLimitError>("graph '{}' is nested {} levels deep in subgraphs, over the limit of {}",
                              graph.name(), depth, max_depth);
  fn(graph, depth);
  for (const auto& node : graph.node()) {
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) visit_graph(attribute.g(), depth + 1, max_depth, fn);
      for (const auto& g : attribute.graphs()) visit_graph(g, depth + 1, max_depth, fn);
    }
  }
}

// Every TensorProto that carries data: initializers, Constant/attribute tensors, sparse values.
template <typename Fn>
void for_each_data_tensor(GraphProto& graph, Fn&& fn) {
  for (auto& t : *graph.mutable_initializer()) fn(t);
  for (auto& s : *graph.mutable_sparse_initializer()) {
    fn(*s.mutable_values());
    fn(*s.mutable_indices());
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_t()) fn(*attribute.mutable_t());
      for (auto& t : *attribute.mutable_tensors()) fn(t);
      if (attribute.has_g()) for_each_data_tensor(*attribute.mutable_g(), fn);
      for (auto& g : *attribute.mutable_graphs()) for_each_data_tensor(g, fn);
    }
  }
}

template <typename Fn>
void for_each_data_tensor(ModelProto& model, Fn&& fn) {
  for_each_data_tensor(*model.mutable_graph(), fn);
  for (auto& function : *model.mutable_functions())
    for (auto& node : *function.mutable_node())
      for (auto& attribute : *node.mutable_attribute())
        if (attribute.has_t()) fn(*attribute.mutable_t());
}

void check_value_info_dims(const GraphProto& graph) {
  auto check = [&](const ::onnx::ValueInfoProto& value, const char* kind) {
    if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return;
    const auto& dims = value.type().tensor_type().shape().dim();
    for (int i = 0; i < dims.size(); ++i) {
      if (dims[i].has_dim_value() && dims[i].dim_value() < 0)
        raise<InvalidInputError>("{} '{}' has a negative dimension {} at axis {}", kind, value.name(),
                                 dims[i].dim_value(), i);
    }
  };
  for (const auto& v : graph.input()) check(v, "graph input");
  for (const auto& v : graph.output()) check(v, "graph output");
  for (const auto& v : graph.value_info()) check(v, "value");
}

// Structural checks that make a loaded model safe to walk: a graph, sane dims, tensors whose
// declared sizes match the data they carry, external data inside the model's folder.
void validate(Model& model, const LoadOptions& options) {
  ModelProto& proto = *model.proto;
  if (!proto.has_graph())
    raise<InvalidInputError>("not an ONNX model: the protobuf message has no graph");
  if (proto.ir_version() <= 0)
    raise<InvalidInputError>("not an ONNX model: IR version is {} (missing or invalid)", proto.ir_version());
  for_each_graph(proto, [&](const GraphProto& graph, int) {
    if (options.check_dims_and_data) check_value_info_dims(graph);
  }, options.max_subgraph_depth);
  for_each_data_tensor(proto, [&](TensorProto& tensor) {
    if (options.ignore_external_data && uses_external_data(tensor)) return;
    if (options.check_dims_and_data) validate_tensor_data(tensor, model.base_dir);
    else if (uses_external_data(tensor)) resolve_external_location(tensor, model.base_dir);
  });
}

Model parse(std::string_view bytes, const fs::path& base_dir, const LoadOptions& options,
            const std::function<void(ModelProto&)>& before_validation = {}) {
  if (bytes.empty()) raise<InvalidInputError>("the file is empty, expected an ONNX model");
  if (bytes.size() >= kProtobufLimit)
    raise<InvalidInputError>("the file is {:.2f} GB; protobuf cannot parse a message of 2 GB or more. Store "
                             "large tensors as external data", static_cast<double>(bytes.size()) / 1e9);
  Model model;
  model.proto = std::make_shared<ModelProto>();
  model.base_dir = base_dir;
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  coded.SetRecursionLimit(400);  // deeply nested subgraphs are refused, not a stack overflow
  if (!model.proto->ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    raise<InvalidInputError>("cannot parse the file as an ONNX model (invalid or truncated protobuf)");
  if (before_validation) before_validation(*model.proto);
  if (options.ignore_external_data && (options.load_external_data || options.lazy_weights))
    raise<InvalidInputError>("ignoring external data cannot be combined with loading it (load_external_data) or "
                             "with lazy weights");
  model.external_data_ignored = options.ignore_external_data;
  validate(model, options);
  if (options.load_external_data) load_external_data(model);
  return model;
}

}  // namespace

void for_each_graph(const ModelProto& model, const std::function<void(const GraphProto&, int)>& fn,
                    int max_depth) {
  visit_graph(model.graph(), 0, max_depth, fn);
  for (const auto& function : model.functions()) {
    for (const auto& node : function.node())
      for (const auto& attribute : node.attribute()) {
        if (attribute.has_g()) visit_graph(attribute.g(), 1, max_depth, fn);
        for (const auto& g : attribute.graphs()) visit_graph(g, 1, max_depth, fn);
      }
  }
}

constexpr std::size_t kLazyWeightBytes = 64 * 1024;

// LoadOptions::lazy_weights: the file is mapped, the large raw_data fields are cut out without
// being read, and each cut initializer becomes an external-data reference to its bytes in the
// file. Nothing when the file is not a plain regular file or has nothing to cut.
std::optional<Model> load_lazily(const fs::path& path, const LoadOptions& options) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec)) || !fs::is_regular_file(path, ec) ||
      fs::file_size(path, ec) < kLazyWeightBytes || !path.has_filename())
    return std::nullopt;
  std::optional<detail::CutModel> cut;
  {
    std::shared_ptr<Storage> file = map_file(path);
    cut = detail::cut_large_weights(
        std::string_view(reinterpret_cast<const char*>(file->data()), file->size()), kLazyWeightBytes);
  }
  if (!cut) return std::nullopt;
  std::string location = path.filename().string();
  fs::path base_dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  Model model = parse(cut->bytes, base_dir, options, [&](ModelProto& proto) {
    auto& initializers = *proto.mutable_graph()->mutable_initializer();
    for (const auto& weight : cut->weights) {
      if (weight.initializer >= initializers.size())
        raise<InternalError>("lazy weights: initializer {} of {} is missing after parsing", weight.initializer,
                             initializers.size());
      TensorProto& tensor = initializers[weight.initializer];
      // As strict as raw_data: the bytes must be exactly what the shape declares.
      std::string label = fmt::format("initializer '{}'", tensor.name());
      DType dtype = with_context(label, [&] { return dtype_from_onnx(tensor.data_type()); });
      std::size_t need = with_context(label, [&] { return storage_bytes(dtype, declared_element_count(tensor)); });
      if (dtype == DType::kString || need != weight.length)
        raise<InvalidInputError>("{}: declares shape ({}) of {} = {} bytes, but raw_data holds {} bytes", label,
                                 fmt::join(tensor.dims(), ", "), dtype_name(dtype), need, weight.length);
      tensor.set_data_location(TensorProto::EXTERNAL);
      auto add = [&](const char* key, std::string value) {
        auto* entry = tensor.add_external_data();
        entry->set_key(key);
        entry->set_value(std::move(value));
      };
      add("location", location);
      add("offset", std::to_string(weight.offset));
      add("length", std::to_string(weight.length));
    }
  });
  model.path = path;
  return model;
}

Tensor tensor_values(const Model& model, const TensorProto& tensor) {
  if (model.external_data_ignored && uses_external_data(tensor)) {
    std::string location;
    for (const auto& entry : tensor.external_data())
      if (entry.key() == "location") location = entry.value();
    raise<InvalidInputError>("tensor '{}' keeps its values in external data ({}), which was not loaded "
                             "(--ignore-external-data)",
                             tensor.name(), location);
  }
  return tensor_from_proto(tensor, model.base_dir);
}

Model load_model(const fs::path& path, const LoadOptions& options) {
  if (options.lazy_weights && options.external_data_dir.empty()) {
    if (auto model = with_context(path.string(), [&] { return load_lazily(path, options); })) return std::move(*model);
  }
  // Protobuf parses at most 2 GiB, so a longer model cannot load; a file stat cannot size (a pipe,
  // /dev/zero) is read only that far.
  constexpr uint64_t kProtobufLimit = uint64_t{2} << 30;
  std::string bytes = with_context(path.string(), [&] {
    return read_file(path, kProtobufLimit,
                     "an ONNX model file holds at most 2 GiB (protobuf's limit; larger weights go in external data)");
  });
  // read_file's message already names the path; parse errors get it prepended here.
  Model model = with_context(path.string(), [&] {
    fs::path base_dir = !options.external_data_dir.empty() ? options.external_data_dir
                        : path.has_parent_path()            ? path.parent_path()
                                                            : fs::path(".");
    return parse(bytes, base_dir, options);
  });
  model.path = path;
  return model;
}

Model load_model_from_bytes(std::string_view bytes, const fs::path& base_dir, const LoadOptions& options,
                            const std::string& what) {
  return with_context(what, [&] { return parse(bytes, base_dir, options); });
}

void load_external_data(Model& model) {
  for_each_data_tensor(*model.proto, [&](TensorProto& tensor) {
    if (!uses_external_data(tensor)) return;
    Tensor data = tensor_from_proto(tensor, model.base_dir);
    tensor.set_raw_data(data.raw(), data.byte_size());
    tensor.clear_external_data();
    tensor.clear_data_location();
  });
}

std::string serialize_model(const ModelProto& model) {
  std::size_t size = model.ByteSizeLong();
  if (size >= kProtobufLimit)
    raise<InvalidInputError>("the model serializes to {:.2f} GB, over protobuf's 2 GB limit; save it with "
                             "external data", static_cast<double>(size) / 1e9);
  std::string bytes;
  if (!model.SerializeToString(&bytes)) raise<InternalError>("protobuf failed to serialize the model");
  return bytes;
}

void save_model(const Model& model, const fs::path& requested_path, const SaveOptions& options) {
  with_context(requested_path.string(), [&] {
    // A symbolic link is saved through: external data goes beside the file the link names.
    const fs::path path = follow_symlinks(requested_path);
    ModelProto proto = *model.proto;
    // Bytes of every tensor that will carry data, external ones read through their memory map.
    uint64_t external_bytes = 0;
    for_each_data_tensor(proto, [&](TensorProto& tensor) {
      if (uses_external_data(tensor))
        external_bytes +=
            resolve_external_location(tensor, model.base_dir)
                .length.value_or(storage_bytes(dtype_from_onnx(tensor.data_type()), declared_element_count(tensor)));
    });
    bool external = options.external_data == ExternalData::kAlways ||
                    (options.external_data == ExternalData::kAuto &&
                     proto.ByteSizeLong() + external_bytes >= kProtobufLimit - (1u << 20));
    if (!external) {
      if (proto.ByteSizeLong() + external_bytes >= kProtobufLimit)
        raise<InvalidInputError>("the model with its tensors inlined would be {:.2f} GB, over protobuf's 2 GB "
                                 "limit; save it with external data",
                                 static_cast<double>(proto.ByteSizeLong() + external_bytes) / 1e9);
      // The main graph's initializers (weights) are streamed into the file one at a time; other external
      // tensors (in subgraphs, attributes, functions: few and small) are inlined here.
      std::set<const TensorProto*> streamed;
      for (const auto& initializer : proto.graph().initializer()) streamed.insert(&initializer);
      for_each_data_tensor(proto, [&](TensorProto& tensor) {
        if (!uses_external_data(tensor) || streamed.count(&tensor)) return;
        Tensor data = tensor_from_proto(tensor, model.base_dir);
        tensor.set_raw_data(data.raw(), data.byte_size());
        tensor.clear_external_data();
        tensor.clear_data_location();
      });
      detail::write_model_inlined(std::move(proto), model.base_dir, path);
      return;
    }
    std::string location = options.location.empty() ? path.filename().string() + ".data" : options.location;
    if (fs::path(location).is_absolute() || location.find("..") != std::string::npos ||
        location.find('/') != std::string::npos)
      raise<InvalidInputError>("external data location '{}' must be a plain file name (it is written beside the model)",
                               location);
    const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    // All tensors in one file, or a file per tensor, each written whole as it comes and finished (a
    // model may have thousands: no file stays open). The model and its data are committed as one
    // unit: every file is written to its temp file first, and only then are they renamed into place,
    // the data before the model. A failed write (a full disk) leaves the old model and data as they
    // were, which matters when the model is saved over itself: new data under the old name with the
    // old model would read the wrong offsets.
    std::optional<AtomicFileWriter> data_file;
    if (options.all_tensors_to_one_file) data_file.emplace(folder / location);
    std::vector<std::unique_ptr<AtomicFileWriter>> tensor_files;
    std::set<std::string> used_names = {path.filename().string()};
    uint64_t offset = 0;
    // A tensor's own file is named after it when the name is a plain file name (onnx's test: none of
    // <>:;,?"*|/ ; Parity also refuses backslash, NUL, "." and "..").
    auto tensor_file_name = [&](const TensorProto& tensor) {
      std::string name = tensor.name();
      bool plain = !name.empty() && name != "." && name != ".." && name.size() <= 255 &&
                   name.find_first_of(std::string_view("<>:;,?\"*|/\\\0", 12)) == std::string::npos;
      for (std::size_t n = tensor_files.size(); !plain || used_names.count(name); ++n) {
        name = fmt::format("{}.tensor{}.data", path.filename().string(), n);
        plain = true;
      }
      used_names.insert(name);
      return name;
    };
    for_each_data_tensor(proto, [&](TensorProto& tensor) {
      std::string_view bytes;
      Tensor mapped;
      if (uses_external_data(tensor)) {
        mapped = tensor_from_proto(tensor, model.base_dir);
        bytes = std::string_view(static_cast<const char*>(mapped.raw()), mapped.byte_size());
      } else if (tensor.has_raw_data() && tensor.raw_data().size() >= options.size_threshold) {
        bytes = tensor.raw_data();
      } else {
        return;
      }
      std::string file_name = location;
      if (data_file) {
        constexpr uint64_t kAlign = 4096;  // page-aligned offsets so readers can mmap
        uint64_t padding = (kAlign - offset % kAlign) % kAlign;
        data_file->write(std::string(padding, '\0'));
        offset += padding;
        data_file->write(bytes);
      } else {
        file_name = tensor_file_name(tensor);
        offset = 0;
        auto& file = tensor_files.emplace_back(std::make_unique<AtomicFileWriter>(folder / file_name));
        file->write(bytes);
        file->finish();
      }
      uint64_t length = bytes.size();
      tensor.clear_external_data();
      auto add = [&](const char* key, std::string value) {
        auto* entry = tensor.add_external_data();
        entry->set_key(key);
        entry->set_value(std::move(value));
      };
      add("location", file_name);
      add("offset", std::to_string(offset));
      add("length", std::to_string(length));
      offset += length;
      tensor.clear_raw_data();
      tensor.set_data_location(TensorProto::EXTERNAL);
    });
    AtomicFileWriter model_file(path);
    model_file.write(serialize_model(proto));
    model_file.finish();
    if (data_file) data_file->commit();
    for (auto& file : tensor_files) file->commit();
    model_file.commit();
  });
}

void check_model(const Model& model, bool full_check) {
  try {
    ModelProto copy = *model.proto;
    Model materialized{std::make_shared<ModelProto>(std::move(copy)), model.path, model.base_dir};
    load_external_data(materialized);
    ::onnx::checker::check_model(*materialized.proto, full_check, false, false);
  } catch (const ::onnx::checker::ValidationError& error) {
    raise<InvalidInputError>("ONNX checker: {}", error.what());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& error) {
    raise<InvalidInputError>("ONNX checker: {}", error.what());
  }
}

std::unordered_map<std::string, const ::onnx::ValueInfoProto*> declared_values(const ::onnx::GraphProto& graph) {
  std::unordered_map<std::string, const ::onnx::ValueInfoProto*> values;
  for (const auto& value : graph.value_info()) values[value.name()] = &value;
  for (const auto& value : graph.input()) values[value.name()] = &value;
  for (const auto& value : graph.output()) values[value.name()] = &value;
  return values;
}

TensorInfo tensor_info_from_type(const ::onnx::TypeProto& type) {
  TensorInfo info;
  const ::onnx::TypeProto_Tensor* tensor = nullptr;
  if (type.has_tensor_type()) tensor = &type.tensor_type();
  else if (type.has_sparse_tensor_type()) {
    // Sparse tensors share the elem_type/shape layout.
    const auto& sparse = type.sparse_tensor_type();
    info.dtype =
        sparse.elem_type() > 0 && sparse.elem_type() <= 28 ? dtype_from_onnx(sparse.elem_type()) : DType::kUndefined;
    return info;
  }
  if (!tensor) return info;
  int32_t elem = tensor->elem_type();
  info.dtype = (elem > 0 && elem <= 28) ? dtype_from_onnx(elem) : DType::kUndefined;
  if (tensor->has_shape()) {
    std::vector<Dim> dims;
    for (const auto& d : tensor->shape().dim()) {
      if (d.has_dim_value()) dims.push_back(Dim::fixed(d.dim_value()));
      else if (d.has_dim_param() && !d.dim_param().empty()) dims.push_back(Dim::named(d.dim_param()));
      else dims.push_back(Dim::unknown());
    }
    info.shape = std::move(dims);
  }
  return info;
}

TensorMetadata graph_inputs(const GraphProto& graph) {
  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  TensorMetadata metadata;
  for (const auto& input : graph.input())
    if (!initializers.count(input.name())) metadata.add(input.name(), tensor_info_from_type(input.type()));
  return metadata;
}

TensorMetadata graph_outputs(const GraphProto& graph) {
  TensorMetadata metadata;
  for (const auto& output : graph.output()) metadata.add(output.name(), tensor_info_from_type(output.type()));
  return metadata;
}

int64_t default_opset(const ModelProto& model) {
  for (const auto& opset : model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  return 0;
}

}  // namespace parity::onnx
