// Base64 (RFC 4648, standard alphabet, '=' padding). Table driven: the encoder turns each 12-bit
// half of a 3-byte group into two output characters with one lookup; the decoder maps characters
// through a 256-entry table and checks a whole 4-character group for invalid entries at once.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "array_io_detail.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"

namespace parity {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr uint8_t kInvalid = 0xFF;

// Two output characters for every 12-bit value.
struct PairTable {
  std::array<char, 2 * 4096> chars{};
  constexpr PairTable() {
    for (int v = 0; v < 4096; ++v) {
      chars[2 * v] = kAlphabet[v >> 6];
      chars[2 * v + 1] = kAlphabet[v & 63];
    }
  }
};
constexpr PairTable kPairs;

struct DecodeTable {
  std::array<uint8_t, 256> values{};
  constexpr DecodeTable() {
    for (auto& v : values) v = kInvalid;
    for (int i = 0; i < 64; ++i) values[static_cast<unsigned char>(kAlphabet[i])] = static_cast<uint8_t>(i);
  }
};
constexpr DecodeTable kDecode;

std::size_t encoded_size(std::size_t n) { return (n + 2) / 3 * 4; }

// Encodes `n` bytes (any n) to `out`, which has room for encoded_size(n) characters.
void encode_into(const unsigned char* in, std::size_t n, char* out) {
  std::size_t full = n / 3;
  for (std::size_t i = 0; i < full; ++i, in += 3, out += 4) {
    uint32_t group = (uint32_t{in[0]} << 16) | (uint32_t{in[1]} << 8) | in[2];
    std::memcpy(out, &kPairs.chars[2 * (group >> 12)], 2);
    std::memcpy(out + 2, &kPairs.chars[2 * (group & 0xFFF)], 2);
  }
  std::size_t rest = n - full * 3;
  if (rest == 1) {
    uint32_t group = uint32_t{in[0]} << 16;
    out[0] = kAlphabet[(group >> 18) & 63];
    out[1] = kAlphabet[(group >> 12) & 63];
    out[2] = '=';
    out[3] = '=';
  } else if (rest == 2) {
    uint32_t group = (uint32_t{in[0]} << 16) | (uint32_t{in[1]} << 8);
    out[0] = kAlphabet[(group >> 18) & 63];
    out[1] = kAlphabet[(group >> 12) & 63];
    out[2] = kAlphabet[(group >> 6) & 63];
    out[3] = '=';
  }
}

std::string describe_char(unsigned char c) {
  if (c >= 0x20 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("byte 0x{:02x}", c);
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.resize(encoded_size(bytes.size()));
  encode_into(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), out.data());
  return out;
}

// Accepts exactly what Python's base64.b64decode(text, validate=True) accepts (CPython 3.11+,
// binascii strict mode): alphabet characters, then optionally '=' padding and nothing after it.
// 4k+2 data characters need exactly "==", 4k+3 exactly "="; 4k+1 data characters and padding
// without data are errors. Like Python, '=' after a complete group and non-zero unused bits in
// the last group are tolerated.
std::string base64_decode(std::string_view text, const std::string& what) {
  const auto* in = reinterpret_cast<const unsigned char*>(text.data());
  std::size_t n = text.size();
  std::size_t pad = 0;
  while (pad < n && in[n - 1 - pad] == '=') ++pad;
  std::size_t data_chars = n - pad;
  if (pad > 0 && data_chars == 0)
    raise<InvalidInputError>("{}: invalid base64: padding without data", what);
  if (data_chars % 4 == 1)
    raise<InvalidInputError>(
        "{}: invalid base64: the number of data characters ({}) cannot be 1 more than a multiple of 4",
        what, data_chars);
  if ((data_chars % 4 == 2 && pad != 2) || (data_chars % 4 == 3 && pad != 1))
    raise<InvalidInputError>("{}: invalid base64: incorrect padding ({} data characters, {} '=')",
                             what, data_chars, pad);

  std::size_t full = data_chars / 4;
  std::size_t tail = data_chars % 4;  // 0, 2 or 3
  std::string out;
  out.resize(full * 3 + (tail == 0 ? 0 : tail - 1));
  auto* dst = reinterpret_cast<unsigned char*>(out.data());
  const auto& table = kDecode.values;

  auto fail_at = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      if (table[in[i]] == kInvalid)
        raise<InvalidInputError>("{}: invalid base64: {} at offset {} is not a base64 character", what,
                                 describe_char(in[i]), i);
    raise<InternalError>("{}: base64 decoder lost track of an invalid character", what);
  };

  const unsigned char* p = in;
  for (std::size_t g = 0; g < full; ++g, p += 4, dst += 3) {
    uint32_t a = table[p[0]], b = table[p[1]], c = table[p[2]], d = table[p[3]];
    if ((a | b | c | d) & 0x80) fail_at(4 * g, 4 * g + 4);
    uint32_t group = (a << 18) | (b << 12) | (c << 6) | d;
    dst[0] = static_cast<unsigned char>(group >> 16);
    dst[1] = static_cast<unsigned char>(group >> 8);
    dst[2] = static_cast<unsigned char>(group);
  }
  if (tail) {
    uint32_t group = 0;
    for (std::size_t k = 0; k < tail; ++k) {
      uint32_t v = table[p[k]];
      if (v & 0x80) fail_at(4 * full, 4 * full + tail);
      group |= v << (18 - 6 * k);
    }
    dst[0] = static_cast<unsigned char>(group >> 16);
    if (tail == 3) dst[1] = static_cast<unsigned char>(group >> 8);
  }
  return out;
}

namespace detail {

void base64_encode_parts(std::initializer_list<std::string_view> parts,
                         const std::function<void(std::string_view)>& sink) {
  constexpr std::size_t kChunk = 3 * 262144;  // input bytes per output chunk (1 MiB of text)
  std::string out;
  out.resize(encoded_size(kChunk));
  unsigned char carry[3];
  std::size_t carried = 0;
  for (std::string_view part : parts) {
    const auto* p = reinterpret_cast<const unsigned char*>(part.data());
    std::size_t left = part.size();
    while (carried > 0 && carried < 3 && left > 0) {
      carry[carried++] = *p++;
      --left;
    }
    if (carried == 3) {
      encode_into(carry, 3, out.data());
      sink(std::string_view(out.data(), 4));
      carried = 0;
    }
    while (left >= 3) {
      std::size_t take = std::min(kChunk, left / 3 * 3);
      encode_into(p, take, out.data());
      sink(std::string_view(out.data(), encoded_size(take)));
      p += take;
      left -= take;
    }
    while (left > 0) {
      carry[carried++] = *p++;
      --left;
    }
  }
  if (carried > 0) {
    encode_into(carry, carried, out.data());
    sink(std::string_view(out.data(), 4));
  }
}

}  // namespace detail
}  // namespace parity
