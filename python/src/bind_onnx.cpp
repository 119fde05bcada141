// Model loading and graph passes over serialized ONNX models (bytes in, bytes out): the Python
// package's ONNX loaders hand models around as onnx.ModelProto like Polygraphy's, and these run
// Parity's C++ passes on them.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "conversion.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/model.h"
#include "parity/onnx/passes.h"
#include "parity/onnx/reduced_precision.h"
#include "parity/onnx/torch_module_pairing.h"
#include "parity/runtime/passes/fold_constants.h"

namespace parity::python {

using namespace nb::literals;

namespace {

nb::bytes to_bytes(const std::string& text) { return nb::bytes(text.data(), text.size()); }

onnx::Model from_bytes(const std::string& bytes) { return onnx::load_model_from_bytes(bytes, {}, {}, "<model>"); }

}  // namespace

void bind_onnx(nb::module_& m) {
  m.def("load_model_bytes",
        [](const std::string& path, const std::string& external_data_dir) {
          std::string bytes;
          {
            nb::gil_scoped_release release;
            onnx::LoadOptions options;
            options.external_data_dir = external_data_dir;
            onnx::Model model = onnx::load_model(path, options);
            onnx::load_external_data(model);
            bytes = onnx::serialize_model(*model);
          }
          return to_bytes(bytes);
        },
        "path"_a, "external_data_dir"_a = "");
  m.def("save_model_bytes",
        [](nb::bytes model_bytes, const std::string& path, std::optional<bool> external_data,
           std::size_t size_threshold, std::string location) {
          std::string bytes = bytes_of(model_bytes);
          nb::gil_scoped_release release;
          onnx::Model model = from_bytes(bytes);
          onnx::SaveOptions options;
          options.external_data = !external_data ? onnx::ExternalData::kAuto
                                  : *external_data ? onnx::ExternalData::kAlways
                                                   : onnx::ExternalData::kNever;
          options.size_threshold = size_threshold;
          options.location = std::move(location);
          onnx::save_model(model, path, options);
        },
        "model"_a, "path"_a, "external_data"_a = nb::none(), "size_threshold"_a = 1024, "location"_a = "");
  m.def("infer_shapes",
        [](nb::bytes model_bytes) {
          std::string result;
          {
            std::string bytes = bytes_of(model_bytes);
          nb::gil_scoped_release release;
            onnx::Model model = from_bytes(bytes);
            onnx::ShapeInferenceResult inference = onnx::infer_shapes(*model);
            if (!inference.ok) log::warning("ONNX shape inference failed: {}", inference.error);
            result = onnx::serialize_model(*model);
          }
          return to_bytes(result);
        },
        "model"_a);
  m.def("fold_constants",
        [](nb::bytes model_bytes, int num_passes, std::optional<int64_t> size_threshold, bool fold_shapes,
           std::optional<std::string> partitioning) {
          std::string result;
          {
            std::string bytes = bytes_of(model_bytes);
          nb::gil_scoped_release release;
            onnx::Model model = from_bytes(bytes);
            runtime::FoldOptions options;
            options.num_passes = num_passes;
            options.size_threshold = size_threshold;
            options.fold_shapes = fold_shapes;
            if (partitioning) options.partitioning = runtime::parse_fold_partitioning(*partitioning);
            runtime::fold_constants(model, options);
            result = onnx::serialize_model(*model);
          }
          return to_bytes(result);
        },
        "model"_a, "num_passes"_a = 0, "size_threshold"_a = nb::none(), "fold_shapes"_a = true,
        "partitioning"_a = nb::none());
  m.def("extract_subgraph",
        [](nb::bytes model_bytes, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
          std::string result;
          {
            std::string bytes = bytes_of(model_bytes);
          nb::gil_scoped_release release;
            onnx::Model model = from_bytes(bytes);
            onnx::infer_shapes(*model);
            auto known = onnx::known_value_infos(model->graph());
            auto resolve = [&](const std::vector<std::string>& names) {
              std::vector<onnx::ExtractTensor> tensors;
              for (const auto& name : names) {
                onnx::ExtractTensor tensor{name, std::nullopt, std::nullopt};
                if (auto it = known.find(name); it != known.end()) {
                  tensor.dtype = it->second.dtype;
                  tensor.shape = it->second.shape;
                }
                if (!tensor.dtype || !tensor.shape)
                  raise<InvalidInputError>("tensor '{}': dtype and shape unknown after shape inference", name);
                tensors.push_back(std::move(tensor));
              }
              return tensors;
            };
            onnx::extract_subgraph(*model, resolve(inputs), resolve(outputs));
            result = onnx::serialize_model(*model);
          }
          return to_bytes(result);
        },
        "model"_a, "inputs"_a, "outputs"_a);
  m.def("convert_to_reduced_precision",
        [](nb::bytes model_bytes, const std::string& precision, bool keep_io_types,
           std::vector<std::string> keep_fp32, bool default_keep) {
          std::string result;
          {
            std::string bytes = bytes_of(model_bytes);
          nb::gil_scoped_release release;
            onnx::Model model = from_bytes(bytes);
            onnx::infer_shapes(*model);
            onnx::ReducedPrecisionOptions options;
            if (precision == "float16") options.precision = onnx::ReducedPrecision::kFloat16;
            else if (precision == "bfloat16") options.precision = onnx::ReducedPrecision::kBFloat16;
            else raise<InvalidInputError>("precision '{}': expected float16 or bfloat16", precision);
            options.keep_io_types = keep_io_types;
            options.keep_fp32 = std::move(keep_fp32);
            options.default_keep = default_keep;
            onnx::convert_float_to_reduced_precision(model, options);
            result = onnx::serialize_model(*model);
          }
          return to_bytes(result);
        },
        "model"_a, "precision"_a = "float16", "keep_io_types"_a = true, "keep_fp32"_a = std::vector<std::string>{},
        "default_keep"_a = true);
  // The ONNX tensor holding each PyTorch module's output (onnx/torch_module_pairing.h): modules as
  // (qualified name, class name) in named_modules() order; returns the exporter's label and, per
  // module, a dict of module, class_name, tensor, node, reason (tensor and node empty when unpaired).
  m.def("pair_torch_modules",
        [](nb::bytes model_bytes, const std::vector<std::pair<std::string, std::string>>& modules) {
          std::string bytes = bytes_of(model_bytes);
          onnx::TorchModulePairings pairings;
          {
            nb::gil_scoped_release release;
            onnx::Model model = from_bytes(bytes);
            std::vector<onnx::TorchModule> list;
            for (const auto& [name, class_name] : modules) list.push_back({name, class_name});
            pairings = onnx::pair_torch_modules(model->graph(), list);
          }
          nb::list out;
          for (const auto& p : pairings.modules) {
            nb::dict entry;
            entry["module"] = p.module;
            entry["class_name"] = p.class_name;
            entry["tensor"] = p.tensor;
            entry["node"] = p.node;
            entry["reason"] = p.reason;
            out.append(entry);
          }
          return nb::make_tuple(std::string(onnx::torch_exporter_label(pairings.exporter)), out);
        },
        "model"_a, "modules"_a);
}

}  // namespace parity::python
