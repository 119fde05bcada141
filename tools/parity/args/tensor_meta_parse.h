// Parsing of Polygraphy's tensor metadata arguments for the graph tools: "name:[1,3,'N']",
// "name:shape:dtype" and "name:dtype" with `auto` for either part, and byte counts with K/M/G
// suffixes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parity/core/tensor_metadata.h"

namespace parity::cli {

struct ParsedTensorArg {
  std::string name;
  std::optional<std::vector<Dim>> shape;  // nullopt: auto / not given
  std::optional<DType> dtype;             // nullopt: auto / not given
};

// "[1,3,224,224]" or "(1, 'N', 3)": numbers are fixed dims, anything else a symbolic dim,
// "-1"/"?"/"None" an unknown one. Throws InvalidInputError naming `option` on bad text.
std::vector<Dim> parse_shape_text(const std::string& text, const std::string& option);

// Splits "name:part1:part2" from the right (names may contain ':'), as Polygraphy's parse_meta.
ParsedTensorArg parse_tensor_arg(const std::string& text, bool has_shape, bool has_dtype,
                                 const std::string& option);

// "name:[dims]" for --override-input-shapes / --model-input-shapes.
TensorMetadata parse_input_shapes(const std::vector<std::string>& args, const std::string& option);

// --val-range "[0,1]" or "name:[min,max]" (Polygraphy's syntax) -> (name or "", (min, max)).
std::vector<std::pair<std::string, std::pair<double, double>>> parse_val_ranges(const std::vector<std::string>& args,
                                                                               const std::string& option);

// "16000000", "16e6", "16M" (K, M, G = KiB, MiB, GiB).
int64_t parse_num_bytes(const std::string& text, const std::string& option);

}  // namespace parity::cli
