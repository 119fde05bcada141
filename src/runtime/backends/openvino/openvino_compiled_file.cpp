// Compiled OpenVINO model files: the header described in parity/runtime/openvino/openvino_compiled_file.h.
#include "parity/runtime/openvino/openvino_compiled_file.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"

namespace parity::runtime {
namespace {

constexpr std::string_view kMagic = "PARITY-OPENVINO-COMPILED-MODEL ";
// A header longer than this is not one of ours (it holds a few lines per input and output).
constexpr std::size_t kMaxHeaderBytes = 16 << 20;

std::string dims_text(const TensorInfo& info) {
  if (!info.shape || info.shape->empty()) return "-";
  std::vector<std::string> parts;
  for (const Dim& dim : *info.shape) {
    if (dim.is_fixed()) parts.push_back(std::to_string(*dim.value));
    else if (!dim.min && !dim.max) parts.push_back("?");
    else parts.push_back(fmt::format("{}..{}", dim.min.value_or(0), dim.max ? std::to_string(*dim.max) : ""));
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

int64_t parse_integer(const std::string& text, const std::filesystem::path& path, const std::string& line) {
  std::size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 0)
    raise<FileError>("{}: damaged compiled model header: '{}' in line '{}'", path.string(), text, line);
  return value;
}

std::vector<Dim> parse_dims(const std::string& text, const std::filesystem::path& path, const std::string& line) {
  std::vector<Dim> dims;
  if (text == "-") return dims;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    if (part == "?") {
      dims.push_back(Dim::unknown());
      continue;
    }
    auto range = part.find("..");
    if (range == std::string::npos) {
      dims.push_back(Dim::fixed(parse_integer(part, path, line)));
      continue;
    }
    Dim dim = Dim::unknown();
    dim.min = parse_integer(part.substr(0, range), path, line);
    std::string max = part.substr(range + 2);
    if (!max.empty()) dim.max = parse_integer(max, path, line);
    dims.push_back(dim);
  }
  return dims;
}

}  // namespace

std::string fnv1a64_hash(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;
  }
  return fmt::format("fnv1a64:{:016x}", hash);
}

bool is_openvino_compiled_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  std::string start(kMagic.size(), '\0');
  if (!stream.read(start.data(), static_cast<std::streamsize>(start.size()))) return false;
  return start == kMagic;
}

void write_openvino_compiled_file(const std::filesystem::path& path, const OpenvinoCompiledFile& file) {
  std::string header = fmt::format("{}{}\n", kMagic, kOpenvinoCompiledFormatVersion);
  header += fmt::format("openvino-version {}\n", file.openvino_version);
  header += fmt::format("device {}\n", file.device);
  header += fmt::format("inference-precision {}\n", file.inference_precision);
  header += fmt::format("source-model-hash {}\n", file.source_model_hash);
  auto tensors = [&](const char* kind, const TensorMetadata& metadata) {
    for (const auto& [name, info] : metadata) {
      if (name.empty() || name.find_first_of("\r\n") != std::string::npos)
        raise<FileError>("{}: cannot write {} name '{}' (empty or with a line break)", path.string(), kind, name);
      header += fmt::format("{} {} {} {}\n", kind, static_cast<int32_t>(info.dtype), dims_text(info), name);
    }
  };
  tensors("input", file.inputs);
  tensors("output", file.outputs);
  if (!file.onnx_map.empty()) {
    if (file.onnx_map.find_first_of("\r\n") != std::string::npos)
      raise<InternalError>("{}: the ONNX node map must be one line", path.string());
    header += fmt::format("onnx-map {}\n", file.onnx_map);
    header += fmt::format("onnx-map-hash {}\n", fnv1a64_hash(file.onnx_map));
  }
  header += fmt::format("compiled-bytes {}\n", file.compiled.size());
  header += fmt::format("compiled-hash {}\n", fnv1a64_hash(file.compiled));
  header += fmt::format("header-hash {}\n", fnv1a64_hash(header));
  header += "end\n";
  AtomicFileWriter writer(path);
  writer.write(header);
  writer.write(file.compiled);
  writer.commit();
}

OpenvinoCompiledFile read_openvino_compiled_file(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  const std::string name = path.string();
  if (bytes.compare(0, kMagic.size(), kMagic) != 0)
    raise<FileError>("{}: not a compiled OpenVINO model file (no '{}' header; write one with `parity convert "
                     "MODEL.onnx --openvino -o {}`)",
                     name, kMagic.substr(0, kMagic.size() - 1), path.filename().string());
  OpenvinoCompiledFile file;
  std::size_t position = 0;
  std::optional<int64_t> compiled_bytes;
  std::string compiled_hash, onnx_map_hash, header_hash;
  std::size_t hashed_header_bytes = 0;  // the bytes before the header-hash line
  int version = 0;
  std::string previous_key;
  bool ended = false;
  while (!ended) {
    std::size_t end = bytes.find('\n', position);
    if (end == std::string::npos || end > kMaxHeaderBytes)
      raise<FileError>("{}: truncated or damaged compiled model file: its header has no end", name);
    const std::size_t line_start = position;
    std::string line = bytes.substr(position, end - position);
    position = end + 1;
    std::size_t space = line.find(' ');
    std::string key = line.substr(0, space);
    std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key + " " == kMagic) {
      if (line_start != 0) raise<FileError>("{}: damaged compiled model header: a second '{}' line", name, line);
      if (value != "1" && value != "2" && value != std::to_string(kOpenvinoCompiledFormatVersion))
        raise<FileError>("{}: compiled model file format version {}, this Parity reads versions 1 to {}; convert the "
                         "ONNX model again",
                         name, value, kOpenvinoCompiledFormatVersion);
      version = std::stoi(value);
    } else if (key == "header-hash" && version >= 3) {
      header_hash = value;
      hashed_header_bytes = line_start;
    } else if (key == "openvino-version") {
      file.openvino_version = value;
    } else if (key == "device") {
      file.device = value;
    } else if (key == "inference-precision") {
      file.inference_precision = value;
    } else if (key == "source-model-hash") {
      file.source_model_hash = value;
    } else if (key == "input" || key == "output") {
      std::istringstream fields(value);
      std::string type, dims;
      fields >> type >> dims;
      std::string tensor;
      std::getline(fields >> std::ws, tensor);
      if (tensor.empty()) raise<FileError>("{}: damaged compiled model header: line '{}'", name, line);
      DType dtype;
      try {
        dtype = dtype_from_onnx(static_cast<int32_t>(parse_integer(type, path, line)));
      } catch (const InvalidInputError& error) {
        raise<FileError>("{}: damaged compiled model header: line '{}': {}", name, line, error.what());
      }
      TensorMetadata& listed = key == "input" ? file.inputs : file.outputs;
      if (listed.contains(tensor))
        raise<FileError>("{}: damaged compiled model header: {} '{}' is listed twice", name, key, tensor);
      listed.add(tensor, dtype, parse_dims(dims, path, line));
    } else if (key == "onnx-map") {
      file.onnx_map = value;
    } else if (key == "onnx-map-hash") {
      onnx_map_hash = value;
    } else if (key == "compiled-bytes") {
      compiled_bytes = parse_integer(value, path, line);
    } else if (key == "compiled-hash") {
      compiled_hash = value;
    } else if (key == "end") {
      ended = true;
    } else {
      raise<FileError>("{}: damaged compiled model header: unknown line '{}'", name, line);
    }
    if (!ended) previous_key = key;
  }
  // Version 3 on: every header line is hashed, so an edited line (an input added, renamed or
  // reshaped) is refused here; versions 1 and 2 hashed only the compiled bytes and the ONNX node
  // map, and their inputs are checked against the compiled model when OpenVINO imports it.
  if (version >= 3 && previous_key != "header-hash")
    raise<FileError>("{}: damaged compiled model header: format version {} ends with a header-hash line", name,
                     version);
  if (!compiled_bytes || compiled_hash.empty() || file.openvino_version.empty() || file.inference_precision.empty())
    raise<FileError>("{}: damaged compiled model header: compiled-bytes, compiled-hash, openvino-version or "
                     "inference-precision missing",
                     name);
  if (file.onnx_map.empty() != onnx_map_hash.empty())
    raise<FileError>("{}: damaged compiled model header: onnx-map and onnx-map-hash come together", name);
  if (!file.onnx_map.empty() && fnv1a64_hash(file.onnx_map) != onnx_map_hash)
    raise<FileError>("{}: corrupt compiled model file: its ONNX node map hashes to {}, the header says {}", name,
                     fnv1a64_hash(file.onnx_map), onnx_map_hash);
  if (version >= 3 && fnv1a64_hash(std::string_view(bytes).substr(0, hashed_header_bytes)) != header_hash)
    raise<FileError>("{}: corrupt compiled model file: its header hashes to {}, the header says {} (edited or damaged)",
                     name, fnv1a64_hash(std::string_view(bytes).substr(0, hashed_header_bytes)), header_hash);
  const std::size_t available = bytes.size() - position;
  if (available < static_cast<std::size_t>(*compiled_bytes))
    raise<FileError>("{}: truncated compiled model file: {} of its {} compiled bytes are there", name, available,
                     *compiled_bytes);
  if (available > static_cast<std::size_t>(*compiled_bytes))
    raise<FileError>("{}: corrupt compiled model file: {} bytes follow the {} compiled bytes", name,
                     available - static_cast<std::size_t>(*compiled_bytes), *compiled_bytes);
  file.compiled = bytes.substr(position);
  if (fnv1a64_hash(file.compiled) != compiled_hash)
    raise<FileError>("{}: corrupt compiled model file: its compiled bytes hash to {}, the header says {}", name,
                     fnv1a64_hash(file.compiled), compiled_hash);
  return file;
}

}  // namespace parity::runtime
