// Private helpers shared by npy.cpp, npz.cpp, base64.cpp and polygraphy_json.cpp (not installed,
// not part of the public API).
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "parity/core/array_io.h"

namespace parity::detail {

// The pieces of a .npy file: the header (magic, version, length, dict, padding) and the data.
// The data are either the tensor's own bytes (`external`) or re-encoded into `owned` (strings,
// normalized bools); data() picks the right one, so moving a NpyParts is safe.
struct NpyParts {
  std::string header;
  std::string owned;
  std::string_view external;
  bool use_owned = false;
  std::string_view data() const { return use_owned ? std::string_view(owned) : external; }
};
NpyParts npy_parts(const TensorView& tensor);

// Like decode_npy, but takes ownership of `bytes`: when the data are little endian, C order and
// suitably aligned, the tensor points into `bytes` instead of copying them.
Tensor decode_npy_owned(std::string&& bytes, const std::string& what);

// Reads the member being visited and returns its bytes; `member_what` names it in errors.
using ZipMemberReader = std::function<std::string(const std::string& member_what)>;
// Called for each member (directory entries aside) in archive order, with its name and a reader.
using ZipVisitor = std::function<void(const std::string& member, const ZipMemberReader& read)>;
// Walks an in-memory zip archive; `kind` names the format in errors (".npz (zip)").
void visit_zip(std::string&& bytes, const std::string& what, std::string_view kind, const ZipVisitor& visit);

// Reverses the bytes of each `unit`-byte value of `data` (big endian <-> little endian).
void byte_swap(std::byte* data, std::size_t bytes, std::size_t unit);

// Reads an in-memory .npz archive.
NamedTensors decode_npz(std::string&& bytes, const std::string& what);

// Base64 of the concatenation of `parts`, handed to `sink` in chunks (no single big buffer).
void base64_encode_parts(std::initializer_list<std::string_view> parts,
                         const std::function<void(std::string_view)>& sink);

}  // namespace parity::detail
