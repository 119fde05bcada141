// One ONNX Runtime session (OrtSession) with its names cached for fast runs, the session options
// Parity builds from OnnxrtOptions, and OnnxrtSession's internals. Private to the onnxrt backend.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ort_library.h"
#include "ort_values.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity::runtime::onnxrt {

// Polygraphy's provider matching: each requested name matches an available provider exactly, else
// as a case-insensitive substring. Throws InvalidInputError naming the request and what is there.
std::vector<std::string> resolve_providers(const Library& library,
                                           const std::vector<std::string>& requested);

// What differs between the session a user asked for and the ones made for layerwise runs.
struct SessionRole {
  bool primary = true;  // the user's session: profiling as asked, ONNX Runtime's default arena
  // Layerwise sessions run without the CPU memory arena (an arena keeps its peak for the life of
  // the session, which would defeat the memory budget across many cached sessions) and without
  // thread spinning (the next piece would pay for it).
};

// Session options from OnnxrtOptions (threads, optimization level, providers, profiling, external
// data folder); the caller releases them with ReleaseSessionOptions.
OrtSessionOptions* make_session_options(const Library& library, const OnnxrtOptions& options,
                                        const std::vector<std::string>& providers, SessionRole role,
                                        const std::filesystem::path& base_dir);

class Session {
 public:
  Session(LibraryPtr library, const ::onnx::ModelProto& model,
          const std::filesystem::path& base_dir, const OnnxrtOptions& options,
          const std::vector<std::string>& providers, SessionRole role);
  // From the serialized model, so a caller can free its ModelProto before ONNX Runtime parses its
  // own copy (for large models, one copy fewer at the peak); the bytes are freed once created.
  Session(LibraryPtr library, std::string serialized_model, const std::filesystem::path& base_dir,
          const OnnxrtOptions& options, const std::vector<std::string>& providers, SessionRole role);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  // `inputs` in input_names() order; returns one value per output, in output_names() order.
  std::vector<ValuePtr> run(const std::vector<const OrtValue*>& inputs) const;
  // Runs on the tensors of `feed` named like the session's inputs (others are ignored) and returns
  // the outputs that are tensors, in order, sharing ONNX Runtime's buffers.
  NamedTensors run(const NamedTensors& feed) const;
  // Mean seconds of a bare Run over `calls` calls (see measure_onnxrt_run_floor).
  double measure_run_floor(const NamedTensors& feed, int calls) const;
  // Ends profiling and returns the file written ("" when profiling is off).
  std::string end_profiling();

 private:
  LibraryPtr library_;
  OrtSession* session_ = nullptr;
  bool profiling_ = false;
  std::vector<std::string> input_names_, output_names_;
  std::vector<const char*> input_name_pointers_, output_name_pointers_;
};

}  // namespace parity::runtime::onnxrt

namespace parity::runtime {

struct OnnxrtSession::Impl {
  onnxrt::LibraryPtr library;
  OnnxrtLibraryInfo library_info;
  OnnxrtOptions options;
  std::vector<std::string> providers;  // resolved full names
  ModelLoader model_loader;            // called again when a modified model is needed
  std::string model_label;
  std::filesystem::path base_dir;  // external data folder
  TensorMetadata inputs, outputs;
  std::unique_ptr<onnxrt::Session> session;
};

}  // namespace parity::runtime
