// Array files: numpy's .npy and .npz, and Polygraphy's JSON encoding of arrays
// ({"array": base64 of .npy bytes, "polygraphy_class": "ndarray"}) and of input files
// (a JSON list, one {name: array} object per iteration).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "parity/core/tensor.h"

namespace parity {

// A named set of arrays in insertion order (one iteration's inputs, or one npz file).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// --- .npy ---
// Bytes of a version 1.0 .npy file exactly as numpy's np.save writes them (header padded to a
// multiple of 64, C order). Types numpy lacks (bfloat16, float8, int4...) raise UnsupportedError.
std::string encode_npy(const TensorView& tensor);
// Accepts versions 1.0/2.0/3.0, little and big endian, fortran_order False and True, any header
// padding; `what` names the source in errors (file path, "input 'x'").
Tensor decode_npy(std::string_view bytes, const std::string& what);
Tensor load_npy(const std::filesystem::path& path);
void save_npy(const std::filesystem::path& path, const TensorView& tensor);  // atomic

// --- .npz (zip of .npy members; stored or deflated) ---
NamedTensors load_npz(const std::filesystem::path& path);
void save_npz(const std::filesystem::path& path, const NamedTensors& arrays,
              bool compress = false);  // atomic

// --- torch.save (one tensor, as Polygraphy's JSON holds torch tensors) ---
// Reads the zip archive torch.save writes for a dense CPU tensor (any storage offset and strides,
// either byte order) into a C-order tensor, without Python; `what` names the source in errors.
Tensor decode_torch_save(std::string&& bytes, const std::string& what);

// --- base64 (standard alphabet, padded) ---
std::string base64_encode(std::string_view bytes);
// Strict: rejects characters outside the alphabet and bad padding (InvalidInputError).
std::string base64_decode(std::string_view text, const std::string& what);

// --- Polygraphy JSON ---
nlohmann::json encode_polygraphy_array(const TensorView& tensor);
// Streams base64(encode_npy(tensor)) to `sink` in chunks, never holding the whole text (for
// writers of large Polygraphy JSON files such as RunResults).
void encode_npy_base64(const TensorView& tensor, const std::function<void(std::string_view)>& sink);
// Accepts the current {"array": ..., "polygraphy_class": "ndarray"} layout and the legacy
// "__polygraphy_encoded_ndarray" marker.
Tensor decode_polygraphy_array(const nlohmann::json& object, const std::string& what);
Tensor decode_polygraphy_array(const nlohmann::ordered_json& object, const std::string& what);
// The "array" text of such an object (base64 of .npy or .npz bytes, or the oldest files' latin-1
// text), for readers that walk the JSON themselves (large RunResults files).
Tensor decode_polygraphy_array_text(std::string_view text, const std::string& what);

// Polygraphy's --save-inputs/--load-inputs file: [ {name: ndarray}, ... ] with 4-space indent.
std::vector<NamedTensors> load_inputs_json(const std::filesystem::path& path);
void save_inputs_json(const std::filesystem::path& path,
                      const std::vector<NamedTensors>& iterations);  // atomic

}  // namespace parity
