#include "parity/onnx/tensor_proto.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include <charconv>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "parity/core/error.h"
#include "parity/core/file_io.h"

namespace parity::onnx {
namespace {

using ::onnx::TensorProto;

std::string tensor_label(const TensorProto& tensor) {
  return tensor.name().empty() ? std::string("tensor <unnamed>") : fmt::format("tensor '{}'", tensor.name());
}

uint64_t parse_unsigned(const std::string& text, const char* key, const TensorProto& tensor) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    raise<InvalidInputError>("{}: external data '{}' is '{}', expected a non-negative integer",
                             tensor_label(tensor), key, text);
  return value;
}

// Maps each external file once per process; tensors keep their mapping alive.
std::shared_ptr<Storage> mapped(const std::filesystem::path& file) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::weak_ptr<Storage>> cache;
  std::lock_guard lock(mutex);
  auto& slot = cache[file.string()];
  if (auto existing = slot.lock()) return existing;
  auto storage = map_file(file);
  slot = storage;
  return storage;
}

// Reads exactly `size` bytes at `offset` of `file` (the range was checked against the file's size).
void read_range(const std::filesystem::path& file, uint64_t offset, void* out, std::size_t size,
                const std::string& what) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) raise<FileError>("{}: cannot open external data '{}': {}", what, file.string(), std::strerror(errno));
  auto* p = static_cast<char*>(out);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ::close(fd);
      raise<FileError>("{}: reading external data '{}' failed: {}", what, file.string(),
                       err ? std::strerror(err) : "the file ended early");
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

// Number of elements stored in the typed field for this dtype.
int64_t typed_field_count(const TensorProto& tensor, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return tensor.float_data_size();
    case DType::kComplex64: return tensor.float_data_size() / 2;
    case DType::kFloat64: return tensor.double_data_size();
    case DType::kComplex128: return tensor.double_data_size() / 2;
    case DType::kInt64: return tensor.int64_data_size();
    case DType::kUInt32:
    case DType::kUInt64: return tensor.uint64_data_size();
    case DType::kString: return tensor.string_data_size();
    default: {
      int bits = dtype_bits(dtype);
      int64_t per_entry = (bits == 4) ? 2 : (bits == 2) ? 4 : 1;
      return static_cast<int64_t>(tensor.int32_data_size()) * per_entry;
    }
  }
}

bool has_typed_data(const TensorProto& t) {
  return t.float_data_size() || t.double_data_size() || t.int64_data_size() || t.uint64_data_size() ||
         t.int32_data_size() || t.string_data_size();
}

template <typename T, typename Source>
void copy_cast(T* dst, const Source& src, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<T>(src.Get(static_cast<int>(i)));
}

void pack_sub_byte(std::byte* dst, const TensorProto& tensor, DType dtype, int64_t count) {
  int bits = dtype_bits(dtype);
  if (bits == 4 || bits == 2) {  // each int32 entry already holds a packed byte
    int64_t bytes = static_cast<int64_t>(storage_bytes(dtype, count));
    for (int64_t i = 0; i < bytes; ++i) dst[i] = static_cast<std::byte>(tensor.int32_data(static_cast<int>(i)) & 0xff);
    return;
  }
  // float6: one element per entry, repack as a 6-bit LSB-first bit stream.
  uint64_t bit = 0;
  for (int64_t i = 0; i < count; ++i, bit += 6) {
    uint32_t v = static_cast<uint32_t>(tensor.int32_data(static_cast<int>(i))) & 0x3fu;
    for (int b = 0; b < 6; ++b)
      if (v & (1u << b)) dst[(bit + b) / 8] |= static_cast<std::byte>(1u << ((bit + b) % 8));
  }
}

}  // namespace

bool uses_external_data(const TensorProto& tensor) {
  return tensor.has_data_location() && tensor.data_location() == TensorProto::EXTERNAL;
}

ExternalLocation resolve_external_location(const TensorProto& tensor, const std::filesystem::path& base_dir) {
  namespace fs = std::filesystem;
  ExternalLocation out;
  std::string location;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset") out.offset = parse_unsigned(entry.value(), "offset", tensor);
    else if (entry.key() == "length") out.length = parse_unsigned(entry.value(), "length", tensor);
  }
  if (location.empty()) raise<InvalidInputError>("{}: external data has no 'location'", tensor_label(tensor));
  fs::path relative(location);
  if (relative.is_absolute())
    raise<InvalidInputError>("{}: external data location '{}' is an absolute path; only paths inside the "
                             "model's folder are allowed", tensor_label(tensor), location);
  for (const auto& part : relative)
    if (part == "..")
      raise<InvalidInputError>("{}: external data location '{}' contains '..'; only paths inside the model's "
                               "folder are allowed", tensor_label(tensor), location);
  std::error_code ec;
  fs::path base = fs::weakly_canonical(base_dir.empty() ? fs::current_path() : base_dir, ec);
  fs::path candidate = base / relative;
  if (!fs::exists(candidate, ec))
    raise<InvalidInputError>("{}: external data file '{}' not found (looked in '{}')", tensor_label(tensor),
                             location, base.string());
  fs::path resolved = fs::canonical(candidate, ec);
  if (ec) raise<InvalidInputError>("{}: cannot resolve external data file '{}': {}", tensor_label(tensor),
                                   location, ec.message());
  auto [base_end, _] = std::mismatch(base.begin(), base.end(), resolved.begin(), resolved.end());
  if (base_end != base.end())
    raise<InvalidInputError>("{}: external data location '{}' resolves to '{}', outside the model's folder "
                             "'{}' (through a symbolic link)", tensor_label(tensor), location,
                             resolved.string(), base.string());
  if (!fs::is_regular_file(resolved, ec))
    raise<InvalidInputError>("{}: external data location '{}' is not a regular file", tensor_label(tensor),
                             location);
  uint64_t file_size = fs::file_size(resolved, ec);
  if (out.offset > file_size || (out.length && *out.length > file_size - out.offset))
    raise<InvalidInputError>("{}: external data range [offset {}, length {}] exceeds the {}-byte file '{}'",
                             tensor_label(tensor), out.offset, out.length ? std::to_string(*out.length) : "<rest>",
                             file_size, location);
  out.file = resolved;
  return out;
}

int64_t declared_element_count(const TensorProto& tensor) {
  return with_context(tensor_label(tensor), [&] {
    return checked_element_count(std::vector<int64_t>(tensor.dims().begin(), tensor.dims().end()));
  });
}

void validate_tensor_data(const TensorProto& tensor, const std::filesystem::path& base_dir) {
  DType dtype = with_context(tensor_label(tensor), [&] { return dtype_from_onnx(tensor.data_type()); });
  int64_t count = declared_element_count(tensor);
  if (uses_external_data(tensor)) {
    if (dtype == DType::kString)
      raise<InvalidInputError>("{}: string tensors cannot use external data", tensor_label(tensor));
    auto location = resolve_external_location(tensor, base_dir);
    uint64_t available = location.length ? *location.length
                                         : std::filesystem::file_size(location.file) - location.offset;
    std::size_t need = storage_bytes(dtype, count);
    if (available < need)
      raise<InvalidInputError>("{}: shape ({}) needs {} bytes of external data, the file holds {}",
                               tensor_label(tensor), fmt::join(tensor.dims(), ", "), need, available);
    return;
  }
  if (tensor.has_raw_data()) {
    if (dtype == DType::kString)
      raise<InvalidInputError>("{}: string tensors must use string_data, not raw_data", tensor_label(tensor));
    std::size_t need = storage_bytes(dtype, count);
    if (tensor.raw_data().size() != need)
      raise<InvalidInputError>("{}: declares shape ({}) of {} = {} bytes, but raw_data holds {} bytes",
                               tensor_label(tensor), fmt::join(tensor.dims(), ", "), dtype_name(dtype), need,
                               tensor.raw_data().size());
    return;
  }
  int64_t have = typed_field_count(tensor, dtype);
  // int4-style fields hold whole bytes, so one extra element slot is allowed.
  bool ok = have == count || (dtype_bits(dtype) < 8 && dtype_bits(dtype) != 6 &&
                              static_cast<std::size_t>(tensor.int32_data_size()) == storage_bytes(dtype, count));
  if (!ok && !(count == 0 && !has_typed_data(tensor)))
    raise<InvalidInputError>("{}: declares shape ({}) = {} elements, but holds {}", tensor_label(tensor),
                             fmt::join(tensor.dims(), ", "), count, have);
}

Tensor tensor_from_proto(const TensorProto& tensor, const std::filesystem::path& base_dir, int64_t element_limit) {
  DType dtype = with_context(tensor_label(tensor), [&] { return dtype_from_onnx(tensor.data_type()); });
  Shape shape(tensor.dims().begin(), tensor.dims().end());
  int64_t count = with_context(tensor_label(tensor), [&] { return checked_element_count(shape, element_limit); });
  validate_tensor_data(tensor, base_dir);

  if (uses_external_data(tensor)) {
    auto location = resolve_external_location(tensor, base_dir);
    // Bytes at an offset that does not suit the element type (external data written without
    // alignment, weights inside a protobuf) are read into a tensor of their own: kernels may not
    // read misaligned elements. Read, not copied from a mapping, so no page of the file stays
    // resident. Aligned bytes are borrowed from the (shared, per-file) mapping.
    std::size_t alignment = std::clamp<std::size_t>(static_cast<std::size_t>(dtype_bits(dtype)) / 8, 1, 8);
    if (location.offset % alignment == 0)
      return Tensor::borrow(dtype, std::move(shape), mapped(location.file), location.offset);
    Tensor out = Tensor::zeros(dtype, std::move(shape));
    read_range(location.file, location.offset, out.mutable_raw(), out.byte_size(), tensor_label(tensor));
    return out;
  }
  if (tensor.has_raw_data()) {
    const auto& raw = tensor.raw_data();
    return Tensor::from_bytes(dtype, std::move(shape), raw.data(), raw.size());
  }
  Tensor out = Tensor::zeros(dtype, std::move(shape));
  if (count == 0) return out;
  switch (dtype) {
    case DType::kFloat32: copy_cast(out.mutable_data<float>(), tensor.float_data(), count); break;
    case DType::kComplex64: copy_cast(out.mutable_data<float>(), tensor.float_data(), 2 * count); break;
    case DType::kFloat64: copy_cast(out.mutable_data<double>(), tensor.double_data(), count); break;
    case DType::kComplex128: copy_cast(out.mutable_data<double>(), tensor.double_data(), 2 * count); break;
    case DType::kInt64: copy_cast(out.mutable_data<int64_t>(), tensor.int64_data(), count); break;
    case DType::kUInt64: copy_cast(out.mutable_data<uint64_t>(), tensor.uint64_data(), count); break;
    case DType::kUInt32: copy_cast(out.mutable_data<uint32_t>(), tensor.uint64_data(), count); break;
    case DType::kString: {
      auto* dst = out.mutable_data<std::string>();
      for (int64_t i = 0; i < count; ++i) dst[i] = tensor.string_data(static_cast<int>(i));
      break;
    }
    case DType::kInt32: copy_cast(out.mutable_data<int32_t>(), tensor.int32_data(), count); break;
    case DType::kInt16: copy_cast(out.mutable_data<int16_t>(), tensor.int32_data(), count); break;
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16: copy_cast(out.mutable_data<uint16_t>(), tensor.int32_data(), count); break;
    case DType::kInt8: copy_cast(out.mutable_data<int8_t>(), tensor.int32_data(), count); break;
    case DType::kBool:
      for (int64_t i = 0; i < count; ++i) out.mutable_data<uint8_t>()[i] = tensor.int32_data(static_cast<int>(i)) != 0;
      break;
    default:
      if (dtype_bits(dtype) < 8)
        pack_sub_byte(static_cast<std::byte*>(out.mutable_raw()), tensor, dtype, count);
      else  // uint8 and the 8-bit floats
        copy_cast(out.mutable_data<uint8_t>(), tensor.int32_data(), count);
  }
  return out;
}

TensorProto tensor_to_proto(const TensorView& tensor, const std::string& name) {
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  if (tensor.dtype() == DType::kString) {
    for (const auto& s : tensor.span<std::string>()) proto.add_string_data(s);
  } else {
    proto.set_raw_data(tensor.raw(), tensor.byte_size());
  }
  return proto;
}

}  // namespace parity::onnx
