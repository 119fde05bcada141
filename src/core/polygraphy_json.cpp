// Polygraphy's JSON encoding of numpy arrays (polygraphy/json/serde.py):
//   {"array": "<base64 of np.save bytes>", "polygraphy_class": "ndarray"}
// older files mark the object with "__polygraphy_encoded_ndarray": "polygraphy_serialized_json_type"
// and older still hold the .npy bytes as a latin-1 string or an .npz archive. Input files
// (--save-inputs / --load-inputs) are a JSON list with one {name: array} object per iteration,
// written by json.dumps(obj, indent=4).
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "array_io_detail.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/json_depth.h"
#include "parity/core/file_io.h"
#include "parity/core/json_error.h"

namespace parity {
namespace {

constexpr const char* kTypeMarker = "polygraphy_class";
constexpr const char* kLegacyMarker = "__polygraphy_encoded_ndarray";
constexpr const char* kLegacyMarkerValue = "polygraphy_serialized_json_type";

// What Python's str.encode("latin-1") gives for a UTF-8 string, or nothing if some character is
// above U+00FF.
std::optional<std::string> utf8_to_latin1(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c == 0xC2 || c == 0xC3) && i + 1 < text.size() &&
               (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) {
      out.push_back(static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F)));
      ++i;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

bool looks_like_npy_or_npz(std::string_view bytes) {
  return bytes.starts_with("\x93NUMPY") || bytes.starts_with("PK\x03\x04") || bytes.starts_with("PK\x05\x06");
}

Tensor decode_payload(std::string&& bytes, const std::string& what) {
  if (bytes.starts_with("PK")) {  // an .npz archive: Polygraphy takes its first array
    NamedTensors arrays = detail::decode_npz(std::move(bytes), what);
    if (arrays.empty()) raise<InvalidInputError>("{}: the encoded .npz archive holds no arrays", what);
    return std::move(arrays.front().second);
  }
  return detail::decode_npy_owned(std::move(bytes), what);
}

// {"tensor": base64 of torch.save bytes, "polygraphy_class": "Tensor"}: a torch tensor.
template <typename Json>
Tensor decode_torch_object(const Json& object, const std::string& what) {
  auto tensor = object.find("tensor");
  if (tensor == object.end())
    raise<InvalidInputError>("{}: Polygraphy-encoded torch tensor has no \"tensor\" key", what);
  if (!tensor->is_string())
    raise<InvalidInputError>("{}: \"tensor\" must be a base64 string, found a JSON {}", what, tensor->type_name());
  return decode_torch_save(base64_decode(tensor->template get_ref<const std::string&>(), what), what);
}

template <typename Json>
Tensor decode_object(const Json& object, const std::string& what) {
  if (!object.is_object())
    raise<InvalidInputError>(
        "{}: expected a Polygraphy-encoded array ({{\"array\": ..., \"polygraphy_class\": \"ndarray\"}}), "
        "found a JSON {}",
        what, object.type_name());
  auto legacy = object.find(kLegacyMarker);
  bool is_legacy = legacy != object.end() && legacy->is_string() &&
                   legacy->template get_ref<const std::string&>() == kLegacyMarkerValue;
  if (!is_legacy) {
    auto marker = object.find(kTypeMarker);
    if (marker == object.end())
      raise<InvalidInputError>("{}: not a Polygraphy-encoded array: the object has no \"{}\" key", what,
                               kTypeMarker);
    if (!marker->is_string())
      raise<InvalidInputError>("{}: \"{}\" must be a string, found a JSON {}", what, kTypeMarker,
                               marker->type_name());
    const auto& type = marker->template get_ref<const std::string&>();
    if (type == "Tensor") return decode_torch_object(object, what);
    if (type != "ndarray")
      raise<UnsupportedError>("{}: holds a Polygraphy-encoded '{}', but only 'ndarray' and 'Tensor' (torch) are "
                              "supported", what, type);
  }
  auto array = object.find("array");
  if (array == object.end())
    raise<InvalidInputError>("{}: Polygraphy-encoded array has no \"array\" key", what);
  if (!array->is_string())
    raise<InvalidInputError>("{}: \"array\" must be a base64 string, found a JSON {}", what, array->type_name());
  return decode_polygraphy_array_text(array->template get_ref<const std::string&>(), what);
}

// A JSON string literal exactly as Python's json.dumps writes it (ensure_ascii=True).
std::string json_quote(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json(text).dump(-1, ' ', /*ensure_ascii=*/true);
  } catch (const nlohmann::json::exception&) {
    raise<InvalidInputError>("{}: input name is not valid UTF-8, so it cannot be written to JSON", what);
  }
}

}  // namespace

Tensor decode_polygraphy_array_text(std::string_view text, const std::string& what) {
  std::string bytes;
  try {
    bytes = base64_decode(text, what);
  } catch (const InvalidInputError&) {
    // Polygraphy's oldest files hold the raw bytes as a latin-1 string.
    std::optional<std::string> raw = utf8_to_latin1(text);
    if (!raw || !looks_like_npy_or_npz(*raw)) throw;
    bytes = std::move(*raw);
  }
  return decode_payload(std::move(bytes), what);
}

nlohmann::json encode_polygraphy_array(const TensorView& tensor) {
  nlohmann::json object = nlohmann::json::object();
  object["array"] = base64_encode(encode_npy(tensor));
  object[kTypeMarker] = "ndarray";
  return object;
}

void encode_npy_base64(const TensorView& tensor, const std::function<void(std::string_view)>& sink) {
  detail::NpyParts parts = detail::npy_parts(tensor);
  detail::base64_encode_parts({parts.header, parts.data()}, sink);
}

Tensor decode_polygraphy_array(const nlohmann::json& object, const std::string& what) {
  return decode_object(object, what);
}

Tensor decode_polygraphy_array(const nlohmann::ordered_json& object, const std::string& what) {
  return decode_object(object, what);
}

std::vector<NamedTensors> load_inputs_json(const std::filesystem::path& path) {
  std::string what = path.string();
  nlohmann::ordered_json document;
  {
    std::string text = read_file(path);
    check_json_depth(text, what);
    try {
      document = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& error) {  // also a number out of double's range (406)
      raise<InvalidInputError>("{}: not valid JSON: {}", what, json_error_text(error));
    }
  }
  if (!document.is_array())
    raise<InvalidInputError>(
        "{}: expected a JSON list with one {{input name: array}} object per iteration (Polygraphy's "
        "--save-inputs format), found a JSON {}",
        what, document.type_name());
  std::vector<NamedTensors> iterations;
  iterations.reserve(document.size());
  for (std::size_t i = 0; i < document.size(); ++i) {
    auto& iteration = document[i];
    if (!iteration.is_object())
      raise<InvalidInputError>("{}: iteration {} must be a JSON object mapping input names to arrays, found a JSON {}",
                               what, i, iteration.type_name());
    NamedTensors inputs;
    inputs.reserve(iteration.size());
    for (auto& [name, value] : iteration.items()) {
      inputs.emplace_back(name, decode_object(value, fmt::format("{}: iteration {}: input '{}'", what, i, name)));
      value = nullptr;  // release the base64 text early; files can be large
    }
    iterations.push_back(std::move(inputs));
  }
  return iterations;
}

void save_inputs_json(const std::filesystem::path& path, const std::vector<NamedTensors>& iterations) {
  std::string what = path.string();
  // Validate everything that can fail before creating the file.
  std::vector<std::vector<std::string>> quoted(iterations.size());
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    std::set<std::string_view> seen;
    for (const auto& [name, tensor] : iterations[i]) {
      std::string where = fmt::format("{}: iteration {}: input '{}'", what, i, name);
      if (!seen.insert(name).second)
        raise<InvalidInputError>("{}: appears twice in one iteration; input names must be unique", where);
      quoted[i].push_back(json_quote(name, where));
    }
  }

  AtomicFileWriter out(path);  // gathers the small writes itself
  if (iterations.empty()) {
    out.write("[]");
  } else {
    out.write("[\n");
    for (std::size_t i = 0; i < iterations.size(); ++i) {
      const NamedTensors& inputs = iterations[i];
      if (inputs.empty()) {
        out.write("    {}");
      } else {
        out.write("    {\n");
        for (std::size_t j = 0; j < inputs.size(); ++j) {
          detail::NpyParts parts = with_context(
              fmt::format("{}: iteration {}: input '{}'", what, i, inputs[j].first),
              [&] { return detail::npy_parts(inputs[j].second); });
          out.write("        ");
          out.write(quoted[i][j]);
          out.write(": {\n            \"array\": \"");
          detail::base64_encode_parts({parts.header, parts.data()}, [&](std::string_view chunk) { out.write(chunk); });
          out.write("\",\n            \"polygraphy_class\": \"ndarray\"\n        }");
          out.write(j + 1 < inputs.size() ? ",\n" : "\n");
        }
        out.write("    }");
      }
      out.write(i + 1 < iterations.size() ? ",\n" : "\n");
    }
    out.write("]");
  }
  out.commit();
}

}  // namespace parity
