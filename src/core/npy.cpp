// numpy's .npy format (numpy/lib/format.py): "\x93NUMPY", a version byte pair, a little-endian
// header length (2 bytes in version 1.0, 4 in 2.0 and 3.0), a Python dict literal
// {'descr': ..., 'fortran_order': ..., 'shape': ...} padded with spaces and a newline to a multiple
// of 64 bytes, then the raw data.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "array_io_detail.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"

namespace parity {
namespace {

static_assert(std::endian::native == std::endian::little,
              ".npy support assumes a little-endian host");

constexpr std::string_view kMagic("\x93NUMPY", 6);
constexpr std::size_t kArrayAlign = 64;
// numpy leaves room for the growth axis to reach this many digits (GROWTH_AXIS_MAX_DIGITS).
constexpr std::size_t kGrowthAxisMaxDigits = 21;

// ---------------------------------------------------------------------------------------------
// Encoding

// Python's repr of a tuple of ints: "()", "(5,)", "(1, 3)".
std::string shape_repr(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// Decodes one UTF-8 sequence at s[i]; returns false if it is not valid UTF-8 (overlong forms,
// surrogates and values over U+10FFFF included).
bool next_code_point(std::string_view s, std::size_t& i, char32_t& cp) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  int extra;
  char32_t min;
  if (b0 < 0x80) {
    cp = b0;
    ++i;
    return true;
  } else if ((b0 & 0xE0) == 0xC0) {
    cp = b0 & 0x1F, extra = 1, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    cp = b0 & 0x0F, extra = 2, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    cp = b0 & 0x07, extra = 3, min = 0x10000;
  } else {
    return false;
  }
  if (s.size() - i <= static_cast<std::size_t>(extra)) return false;
  for (int k = 1; k <= extra; ++k) {
    unsigned char b = byte(i + k);
    if ((b & 0xC0) != 0x80) return false;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  i += static_cast<std::size_t>(extra) + 1;
  return true;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Magic, version, length, dict, padding: exactly what numpy's _write_array_header produces for a
// C-order array (it chooses version 1.0 unless the header needs more than 65535 bytes).
std::string make_header(std::string_view descr, const Shape& shape) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr,
                                 shape_repr(shape));
  if (!shape.empty()) {
    std::size_t digits = fmt::formatted_size("{}", shape[0]);
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  std::size_t hlen = dict.size() + 1;  // + '\n'
  int major = 1;
  std::size_t prefix = kMagic.size() + 2 + 2;
  std::size_t padlen = kArrayAlign - (prefix + hlen) % kArrayAlign;
  if (hlen + padlen > 0xFFFF) {
    major = 2;
    prefix = kMagic.size() + 2 + 4;
    padlen = kArrayAlign - (prefix + hlen) % kArrayAlign;
  }
  std::size_t total_len = hlen + padlen;
  std::string header;
  header.reserve(prefix + total_len);
  header.append(kMagic);
  header.push_back(static_cast<char>(major));
  header.push_back('\0');
  int len_bytes = major == 1 ? 2 : 4;
  for (int k = 0; k < len_bytes; ++k) header.push_back(static_cast<char>((total_len >> (8 * k)) & 0xFF));
  header.append(dict);
  header.append(padlen, ' ');
  header.push_back('\n');
  return header;
}

// ---------------------------------------------------------------------------------------------
// Decoding

// Printable excerpt of a header for error messages.
std::string excerpt(std::string_view text) {
  constexpr std::size_t kMax = 160;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\') out += "\\\\";
    else if (c >= 0x20 && c < 0x7F) out.push_back(static_cast<char>(c));
    else out += fmt::format("\\x{:02x}", c);
  }
  if (text.size() > kMax) out += "...";
  return out;
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// Parses the subset of Python literal syntax numpy headers use.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  Header parse() {
    Header header;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() == '[')
          raise<UnsupportedError>(
              "{}: structured (record) arrays are not supported; descr is a list of fields in header "
              "\"{}\"",
              what_, excerpt(text_));
        header.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        header.shape = parse_shape();
        have_shape = true;
      } else {
        fail(fmt::format("unexpected key '{}' (expected only 'descr', 'fortran_order' and 'shape')",
                         excerpt(key)));
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}' after a value");
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'");
    if (!have_descr) fail("missing key 'descr'");
    if (!have_order) fail("missing key 'fortran_order'");
    if (!have_shape) fail("missing key 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    raise<InvalidInputError>("{}: malformed .npy header: {} at offset {} of header \"{}\"", what_,
                             problem, pos_, excerpt(text_));
  }
  int peek() const { return pos_ < text_.size() ? static_cast<unsigned char>(text_[pos_]) : -1; }
  void expect(char c) {
    if (peek() != static_cast<unsigned char>(c)) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  void skip_ws() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') break;
      ++pos_;
    }
  }
  std::string parse_string() {
    int quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    ++pos_;
    std::string out;
    while (true) {
      int c = peek();
      if (c < 0 || c == '\n') fail("unterminated string");
      ++pos_;
      if (c == quote) break;
      if (c == '\\') {
        int e = peek();
        if (e != '\\' && e != '\'' && e != '"') fail("unsupported escape sequence in a string");
        ++pos_;
        c = e;
      }
      out.push_back(static_cast<char>(c));
    }
    return out;
  }
  bool parse_bool() {
    std::string_view rest = text_.substr(pos_);
    auto ends_word = [&](std::size_t n) {
      return rest.size() == n || !(std::isalnum(static_cast<unsigned char>(rest[n])) || rest[n] == '_');
    };
    if (rest.starts_with("True") && ends_word(4)) {
      pos_ += 4;
      return true;
    }
    if (rest.starts_with("False") && ends_word(5)) {
      pos_ += 5;
      return false;
    }
    fail("fortran_order must be True or False");
  }
  int64_t parse_dim() {
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos_;
      skip_ws();
    }
    if (peek() < '0' || peek() > '9') fail("expected an integer dimension");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, digit, &value))
        fail("dimension does not fit in 64 bits");
      ++pos_;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2's long suffix, as numpy tolerates
    if (negative && value != 0)
      raise<InvalidInputError>("{}: .npy header has a negative dimension -{} in shape (header \"{}\")",
                               what_, value, excerpt(text_));
    return value;
  }
  Shape parse_shape() {
    if (peek() != '(') fail("shape must be a tuple");
    ++pos_;
    Shape shape;
    bool after_comma = false;
    while (true) {
      skip_ws();
      if (peek() == ')') {
        if (shape.size() == 1 && !after_comma) fail("shape must be a tuple; '(n)' is an int, '(n,)' a tuple");
        if (shape.empty() && after_comma) fail("invalid tuple");
        ++pos_;
        return shape;
      }
      if (!shape.empty() && !after_comma) fail("expected ',' or ')' in shape");
      shape.push_back(parse_dim());
      skip_ws();
      after_comma = false;
      if (peek() == ',') {
        ++pos_;
        after_comma = true;
      }
    }
  }

  std::string_view text_;
  const std::string& what_;
  std::size_t pos_ = 0;
};

enum class Layout { kPod, kUnicode, kBytes };

struct Descr {
  DType dtype = DType::kUndefined;
  Layout layout = Layout::kPod;
  bool big_endian = false;
  std::size_t itemsize = 0;  // bytes per element in the file
  std::size_t swap_unit = 1; // bytes per byte-swapped unit (half the itemsize for complex)
};

Descr parse_descr(const std::string& descr, const std::string& what) {
  std::string_view s = descr;
  Descr d;
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=' || s[0] == '!')) {
    d.big_endian = s[0] == '>' || s[0] == '!';
    s.remove_prefix(1);
  }
  auto unknown = [&]() -> Descr {
    raise<InvalidInputError>("{}: unknown .npy dtype descr '{}'", what, excerpt(descr));
  };
  auto unsupported = [&](std::string_view kind) -> Descr {
    raise<UnsupportedError>("{}: .npy dtype '{}' ({}) is not supported", what, excerpt(descr), kind);
  };
  if (s == "?") s = "b1";
  if (s.empty()) return unknown();
  char kind = s[0];
  std::string_view digits = s.substr(1);
  if (kind == 'O') return unsupported("Python objects, which need pickle");
  if (kind == 'M' || kind == 'm') return unsupported("datetime/timedelta");
  if (kind == 'V') return unsupported("raw void bytes; e.g. ml_dtypes types saved with np.save");
  if (digits.empty() || digits.size() > 9) return unknown();
  std::size_t size = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return unknown();
    size = size * 10 + static_cast<std::size_t>(c - '0');
  }
  d.itemsize = size;
  d.swap_unit = size;
  switch (kind) {
    case 'b':
      if (size == 1) d.dtype = DType::kBool;
      break;
    case 'i':
      if (size == 1) d.dtype = DType::kInt8;
      if (size == 2) d.dtype = DType::kInt16;
      if (size == 4) d.dtype = DType::kInt32;
      if (size == 8) d.dtype = DType::kInt64;
      break;
    case 'u':
      if (size == 1) d.dtype = DType::kUInt8;
      if (size == 2) d.dtype = DType::kUInt16;
      if (size == 4) d.dtype = DType::kUInt32;
      if (size == 8) d.dtype = DType::kUInt64;
      break;
    case 'f':
      if (size == 2) d.dtype = DType::kFloat16;
      if (size == 4) d.dtype = DType::kFloat32;
      if (size == 8) d.dtype = DType::kFloat64;
      if (size == 12 || size == 16) return unsupported("long double");
      break;
    case 'c':
      if (size == 8) d.dtype = DType::kComplex64;
      if (size == 16) d.dtype = DType::kComplex128;
      if (size == 24 || size == 32) return unsupported("complex long double");
      d.swap_unit = size / 2;
      break;
    case 'U':
      if (size == 0) return unknown();
      d.dtype = DType::kString;
      d.layout = Layout::kUnicode;
      d.itemsize = size * 4;
      d.swap_unit = 4;
      break;
    case 'S':
    case 'a':
      if (size == 0) return unknown();
      d.dtype = DType::kString;
      d.layout = Layout::kBytes;
      d.swap_unit = 1;
      break;
    default:
      break;
  }
  if (d.dtype == DType::kUndefined) return unknown();
  return d;
}

// Calls fn(source_index, destination_index) for every element, where the source is in Fortran
// order and the destination in C order.
template <typename Fn>
void for_each_fortran_element(const Shape& shape, int64_t count, Fn&& fn) {
  std::size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 1), index(rank, 0);
  for (std::size_t k = rank; k-- > 1;) stride[k - 1] = stride[k] * shape[k];
  int64_t dst = 0;
  for (int64_t src = 0; src < count; ++src) {
    fn(src, dst);
    for (std::size_t k = 0; k < rank; ++k) {
      if (++index[k] < shape[k]) {
        dst += stride[k];
        break;
      }
      dst -= (shape[k] - 1) * stride[k];
      index[k] = 0;
    }
  }
}

std::string decode_string_element(const unsigned char* p, const Descr& d, const std::string& what,
                                   int64_t index) {
  std::string out;
  if (d.layout == Layout::kBytes) {
    std::size_t n = d.itemsize;
    while (n > 0 && p[n - 1] == 0) --n;  // numpy strips trailing NULs
    out.assign(reinterpret_cast<const char*>(p), n);
    return out;
  }
  std::size_t chars = d.itemsize / 4;
  auto code_unit = [&](std::size_t k) {
    const unsigned char* q = p + 4 * k;
    return d.big_endian ? (char32_t{q[0]} << 24) | (char32_t{q[1]} << 16) | (char32_t{q[2]} << 8) | q[3]
                        : (char32_t{q[3]} << 24) | (char32_t{q[2]} << 16) | (char32_t{q[1]} << 8) | q[0];
  };
  while (chars > 0 && code_unit(chars - 1) == 0) --chars;
  out.reserve(chars);
  for (std::size_t k = 0; k < chars; ++k) {
    char32_t cp = code_unit(k);
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      raise<InvalidInputError>("{}: string element {} holds code point 0x{:x}, which is not valid Unicode",
                               what, index, static_cast<uint32_t>(cp));
    append_utf8(out, cp);
  }
  return out;
}

// Owns the bytes of a decoded file so tensors can point into them.
class OwnedBytes final : public Storage {
 public:
  explicit OwnedBytes(std::string bytes) : bytes_(std::move(bytes)) {}
  std::byte* data() override { return reinterpret_cast<std::byte*>(bytes_.data()); }
  std::size_t size() const override { return bytes_.size(); }

 private:
  std::string bytes_;
};

uint32_t read_le(std::string_view bytes, std::size_t offset, int n) {
  uint32_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(bytes[offset + k]);
  return v;
}

// `owner`, when given, holds `bytes` and may be borrowed from (and modified in place).
Tensor decode(std::string_view bytes, const std::string& what, std::shared_ptr<OwnedBytes> owner) {
  if (bytes.size() < kMagic.size() + 2 || bytes.substr(0, kMagic.size()) != kMagic) {
    if (bytes.size() < kMagic.size() + 2 && kMagic.starts_with(bytes.substr(0, kMagic.size())))
      raise<InvalidInputError>("{}: truncated .npy file: only {} bytes", what, bytes.size());
    raise<InvalidInputError>("{}: not a .npy file: it does not start with \"\\x93NUMPY\" (starts with \"{}\")",
                             what, excerpt(bytes.substr(0, 8)));
  }
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    raise<UnsupportedError>("{}: .npy format version {}.{} is not supported (only 1.0, 2.0 and 3.0)", what,
                            major, minor);
  int len_bytes = major == 1 ? 2 : 4;
  std::size_t prefix = kMagic.size() + 2 + static_cast<std::size_t>(len_bytes);
  if (bytes.size() < prefix)
    raise<InvalidInputError>("{}: truncated .npy file: it ends inside the header length ({} bytes)", what,
                             bytes.size());
  std::size_t header_len = read_le(bytes, kMagic.size() + 2, len_bytes);
  if (header_len > bytes.size() - prefix)
    raise<InvalidInputError>("{}: truncated .npy file: the header claims {} bytes but only {} follow", what,
                             header_len, bytes.size() - prefix);
  std::string_view header_text = bytes.substr(prefix, header_len);
  Header header = HeaderParser(header_text, what).parse();
  Descr descr = parse_descr(header.descr, what);

  std::size_t data_offset = prefix + header_len;
  std::size_t available = bytes.size() - data_offset;
  int64_t count = 1;
  bool overflow = false;
  for (int64_t dim : header.shape)
    if (dim == 0) count = 0;
  if (count != 0)
    for (int64_t dim : header.shape) overflow = overflow || __builtin_mul_overflow(count, dim, &count);
  unsigned __int128 need = overflow ? ~static_cast<unsigned __int128>(0)
                                    : static_cast<unsigned __int128>(count) * descr.itemsize;
  if (need > available) {
    std::string elements = overflow ? std::string("more than 2^63") : std::to_string(count);
    raise<InvalidInputError>(
        "{}: truncated .npy data: shape {} of '{}' needs {} elements of {} bytes, but only {} bytes of "
        "data follow the header",
        what, shape_to_string(header.shape), excerpt(header.descr), elements, descr.itemsize, available);
  }
  const auto* src = reinterpret_cast<const unsigned char*>(bytes.data() + data_offset);
  bool transpose = header.fortran_order && header.shape.size() >= 2 && count > 1;

  if (descr.layout != Layout::kPod) {
    Tensor tensor = Tensor::zeros(DType::kString, header.shape);
    auto* dst = tensor.mutable_data<std::string>();
    if (transpose) {
      for_each_fortran_element(header.shape, count, [&](int64_t s, int64_t c) {
        dst[c] = decode_string_element(src + s * descr.itemsize, descr, what, c);
      });
    } else {
      for (int64_t i = 0; i < count; ++i) dst[i] = decode_string_element(src + i * descr.itemsize, descr, what, i);
    }
    return tensor;
  }

  std::size_t data_bytes = static_cast<std::size_t>(count) * descr.itemsize;
  bool swap = descr.big_endian && descr.swap_unit > 1;
  std::size_t alignment = std::min<std::size_t>(descr.itemsize, 8);
  if (owner && !transpose && reinterpret_cast<uintptr_t>(src) % alignment == 0) {
    std::byte* data = owner->data() + data_offset;
    detail::byte_swap(data, data_bytes, swap ? descr.swap_unit : 1);
    if (descr.dtype == DType::kBool)
      for (std::size_t i = 0; i < data_bytes; ++i) data[i] = static_cast<std::byte>(data[i] != std::byte{0});
    return Tensor::borrow(descr.dtype, header.shape, std::move(owner), data_offset);
  }
  Tensor tensor = Tensor::zeros(descr.dtype, header.shape);
  auto* dst = static_cast<std::byte*>(tensor.mutable_raw());
  if (transpose) {
    std::size_t item = descr.itemsize;
    for_each_fortran_element(header.shape, count, [&](int64_t s, int64_t c) {
      std::memcpy(dst + c * item, src + s * item, item);
    });
  } else if (data_bytes) {
    std::memcpy(dst, src, data_bytes);
  }
  detail::byte_swap(dst, data_bytes, swap ? descr.swap_unit : 1);
  if (descr.dtype == DType::kBool)
    for (std::size_t i = 0; i < data_bytes; ++i) dst[i] = static_cast<std::byte>(dst[i] != std::byte{0});
  return tensor;
}

}  // namespace

namespace detail {

NpyParts npy_parts(const TensorView& tensor) {
  DType dtype = tensor.dtype();
  if (dtype == DType::kUndefined) raise<InvalidInputError>("cannot write a tensor of undefined type to .npy");
  int64_t count = tensor.size();
  NpyParts parts;
  if (dtype == DType::kString) {
    // numpy stores str arrays as fixed-width UTF-32 ('<U{n}'), n = the longest string (at least 1).
    auto strings = tensor.span<std::string>();
    std::size_t width = 1;
    for (std::size_t i = 0; i < strings.size(); ++i) {
      std::size_t chars = 0, pos = 0;
      char32_t cp;
      while (pos < strings[i].size()) {
        if (!next_code_point(strings[i], pos, cp))
          raise<InvalidInputError>(
              "string element {} is not valid UTF-8 (byte {}), so it cannot be written as a numpy str", i,
              pos);
        ++chars;
      }
      width = std::max(width, chars);
    }
    parts.header = make_header(fmt::format("<U{}", width), tensor.shape());
    parts.owned.assign(strings.size() * width * 4, '\0');
    for (std::size_t i = 0; i < strings.size(); ++i) {
      char* out = parts.owned.data() + i * width * 4;
      std::size_t pos = 0;
      char32_t cp;
      while (pos < strings[i].size() && next_code_point(strings[i], pos, cp)) {
        for (int k = 0; k < 4; ++k) out[k] = static_cast<char>((cp >> (8 * k)) & 0xFF);
        out += 4;
      }
    }
    parts.use_owned = true;
    return parts;
  }
  const DTypeInfo& info = dtype_info(dtype);
  if (info.numpy_descr.empty())
    raise<UnsupportedError>("numpy has no {} type, so a {} tensor cannot be written to .npy", info.name,
                            info.name);
  parts.header = make_header(info.numpy_descr, tensor.shape());
  std::size_t bytes = storage_bytes(dtype, count);
  if (dtype == DType::kBool) {
    const auto* src = static_cast<const unsigned char*>(tensor.raw());
    parts.owned.resize(bytes);
    for (std::size_t i = 0; i < bytes; ++i) parts.owned[i] = src[i] != 0 ? '\1' : '\0';
    parts.use_owned = true;
  } else {
    parts.external = std::string_view(static_cast<const char*>(tensor.raw()), bytes);
  }
  return parts;
}

Tensor decode_npy_owned(std::string&& bytes, const std::string& what) {
  auto owner = std::make_shared<OwnedBytes>(std::move(bytes));
  std::string_view view(reinterpret_cast<const char*>(owner->data()), owner->size());
  return decode(view, what, owner);
}

}  // namespace detail

std::string encode_npy(const TensorView& tensor) {
  detail::NpyParts parts = detail::npy_parts(tensor);
  std::string out;
  out.reserve(parts.header.size() + parts.data().size());
  out.append(parts.header);
  out.append(parts.data());
  return out;
}

Tensor decode_npy(std::string_view bytes, const std::string& what) { return decode(bytes, what, nullptr); }

Tensor load_npy(const std::filesystem::path& path) {
  return detail::decode_npy_owned(read_file(path), path.string());
}

void save_npy(const std::filesystem::path& path, const TensorView& tensor) {
  detail::NpyParts parts = with_context(path.string(), [&] { return detail::npy_parts(tensor); });
  AtomicFileWriter writer(path);
  writer.write(parts.header);
  writer.write(parts.data());
  writer.commit();
}

namespace detail {

void byte_swap(std::byte* data, std::size_t bytes, std::size_t unit) {
  if (unit <= 1) return;
  for (std::size_t i = 0; i + unit <= bytes; i += unit) std::reverse(data + i, data + i + unit);
}

}  // namespace detail

}  // namespace parity
