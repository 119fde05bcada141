// Session options: execution providers (matched like Polygraphy's --providers), threads, graph
// optimization level, profiling, the external-data folder, and the layerwise sessions' arena.
#include <algorithm>
#include <cctype>
#include <utility>

#include "ort_session.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/core/thread_pool.h"

namespace parity::runtime {

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

OrtOptimizationLevel ort_optimization_level_from_name(std::string_view name) {
  std::string lower = lowercase(name);
  if (lower == "disable") return OrtOptimizationLevel::kDisable;
  if (lower == "basic") return OrtOptimizationLevel::kBasic;
  if (lower == "extended") return OrtOptimizationLevel::kExtended;
  if (lower == "all") return OrtOptimizationLevel::kAll;
  raise<InvalidInputError>(
      "unknown ONNX Runtime graph optimization level '{}' (expected disable, basic, extended or "
      "all)",
      name);
}

std::string_view ort_optimization_level_name(OrtOptimizationLevel level) {
  switch (level) {
    case OrtOptimizationLevel::kDisable:
      return "disable";
    case OrtOptimizationLevel::kBasic:
      return "basic";
    case OrtOptimizationLevel::kExtended:
      return "extended";
    case OrtOptimizationLevel::kAll:
      return "all";
  }
  return "all";
}

namespace onnxrt {
namespace {

GraphOptimizationLevel to_ort_level(OrtOptimizationLevel level) {
  switch (level) {
    case OrtOptimizationLevel::kDisable:
      return ORT_DISABLE_ALL;
    case OrtOptimizationLevel::kBasic:
      return ORT_ENABLE_BASIC;
    case OrtOptimizationLevel::kExtended:
      return ORT_ENABLE_EXTENDED;
    case OrtOptimizationLevel::kAll:
      return ORT_ENABLE_ALL;
  }
  return ORT_ENABLE_ALL;
}

// Provider names as SessionOptionsAppendExecutionProvider spells them.
std::string generic_provider_name(const std::string& full) {
  static const std::pair<const char*, const char*> known[] = {
      {"XnnpackExecutionProvider", "XNNPACK"}, {"QNNExecutionProvider", "QNN"},
      {"SNPEExecutionProvider", "SNPE"},       {"OpenVINOExecutionProvider", "OpenVINO"},
      {"AzureExecutionProvider", "AZURE"},     {"WebNNExecutionProvider", "WEBNN"},
      {"CoreMLExecutionProvider", "CoreML"},   {"VitisAIExecutionProvider", "VitisAI"},
      {"WebGpuExecutionProvider", "WebGPU"},
  };
  for (const auto& [name, short_name] : known)
    if (full == name) return short_name;
  const std::string suffix = "ExecutionProvider";
  if (full.size() > suffix.size() &&
      full.compare(full.size() - suffix.size(), suffix.size(), suffix) == 0)
    return full.substr(0, full.size() - suffix.size());
  return full;
}

void append_provider(const Library& library, OrtSessionOptions* options,
                     const std::string& provider) {
  const OrtApi& api = library.api();
  std::string what = fmt::format("enabling execution provider {}", provider);
  if (provider == "CPUExecutionProvider") return;  // always there, as the fallback
  if (provider == "CUDAExecutionProvider") {
    OrtCUDAProviderOptionsV2* cuda = nullptr;
    library.check(api.CreateCUDAProviderOptions(&cuda), what);
    OrtStatus* status = api.SessionOptionsAppendExecutionProvider_CUDA_V2(options, cuda);
    api.ReleaseCUDAProviderOptions(cuda);
    library.check(status, what);
    return;
  }
  if (provider == "TensorrtExecutionProvider") {
    OrtTensorRTProviderOptionsV2* tensorrt = nullptr;
    library.check(api.CreateTensorRTProviderOptions(&tensorrt), what);
    OrtStatus* status = api.SessionOptionsAppendExecutionProvider_TensorRT_V2(options, tensorrt);
    api.ReleaseTensorRTProviderOptions(tensorrt);
    library.check(status, what);
    return;
  }
  library.check(api.SessionOptionsAppendExecutionProvider(
                    options, generic_provider_name(provider).c_str(), nullptr, nullptr, 0),
                what);
}

}  // namespace

std::vector<std::string> resolve_providers(const Library& library,
                                           const std::vector<std::string>& requested) {
  const auto& available = library.available_providers();
  std::vector<std::string> resolved;
  for (const auto& request : requested) {
    const std::string* match = nullptr;
    for (const auto& name : available)
      if (name == request) match = &name;
    if (!match)
      for (const auto& name : available)
        if (lowercase(name).find(lowercase(request)) != std::string::npos) {
          match = &name;
          break;
        }
    if (!match)
      raise<InvalidInputError>(
          "could not find the ONNX Runtime execution provider '{}': ONNX Runtime {} at {} has {} "
          "(a provider matches by exact name or by a case-insensitive part of it)",
          request, library.version(), library.path(), fmt::join(available, ", "));
    if (std::find(resolved.begin(), resolved.end(), *match) == resolved.end())
      resolved.push_back(*match);
  }
  return resolved;
}

OrtSessionOptions* make_session_options(const Library& library, const OnnxrtOptions& options,
                                        const std::vector<std::string>& providers, SessionRole role,
                                        const std::filesystem::path& base_dir) {
  const OrtApi& api = library.api();
  OrtSessionOptions* session_options = nullptr;
  library.check(api.CreateSessionOptions(&session_options), "creating session options");
  try {
    library.check(api.SetSessionGraphOptimizationLevel(session_options,
                                                       to_ort_level(options.optimization_level)),
                  "setting the graph optimization level");
    check_backend_threads("ONNX Runtime's intra-op threads", options.intra_op_threads);
    check_backend_threads("ONNX Runtime's inter-op threads", options.inter_op_threads);
    if (options.intra_op_threads > 0)
      library.check(api.SetIntraOpNumThreads(session_options, options.intra_op_threads),
                    "setting intra-op threads");
    if (options.inter_op_threads > 0)
      library.check(api.SetInterOpNumThreads(session_options, options.inter_op_threads),
                    "setting inter-op threads");
    if (role.primary && !options.profile_prefix.empty())
      library.check(api.EnableProfiling(session_options, options.profile_prefix.c_str()),
                    "enabling profiling");
    if (!role.primary)
      library.check(api.DisableCpuMemArena(session_options), "disabling the CPU memory arena");
    // Layerwise runs go from piece to piece: threads spinning after a piece would only burn the
    // time of the next one (and spinning changes no result).
    if (!role.primary || !options.intra_op_spinning)
      library.check(
          api.AddSessionConfigEntry(session_options, "session.intra_op.allow_spinning", "0"),
          "turning off thread spinning");
    if (!base_dir.empty())
      library.check(api.AddSessionConfigEntry(
                        session_options, "session.model_external_initializers_file_folder_path",
                        base_dir.c_str()),
                    "setting the external data folder");
    for (const auto& provider : providers) append_provider(library, session_options, provider);
  } catch (...) {
    api.ReleaseSessionOptions(session_options);
    throw;
  }
  return session_options;
}

}  // namespace onnxrt
}  // namespace parity::runtime
