#include "fuzz_values.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace parity::fuzz {

int64_t FuzzValues::integer() {
  if (one_in(2)) return static_cast<int64_t>(below(7)) - 3;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  return pick<int64_t>({kMax, kMin, kMax - 1, kMin + 1, -1, 0, INT32_MAX, INT32_MIN, int64_t{INT32_MAX} + 1,
                        int64_t{UINT32_MAX}, int64_t{1} << 32, int64_t{1} << 40, int64_t{1} << 62, -(int64_t{1} << 62),
                        65535, 65536, -65536});
}

int64_t FuzzValues::dim() {
  if (!one_in(4)) return small_dim();
  return pick<int64_t>({0, -1, -2, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                        int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 62, 1000000007, 99999999999});
}

double FuzzValues::real() {
  if (one_in(2)) return static_cast<double>(static_cast<int64_t>(below(9)) - 4) * 0.5;
  return pick<double>({std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity(), -0.0, std::numeric_limits<double>::denorm_min(),
                       std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest(),
                       std::numeric_limits<double>::max(), std::numeric_limits<float>::min(), 1e300, -1e-300,
                       9007199254740993.0});
}

std::string FuzzValues::name() {
  switch (below(12)) {
    case 0: return "";
    case 1: return std::string(4096 + below(8192), static_cast<char>('a' + below(26)));
    case 2: return "quote\"back\\slash'";
    case 3: return "line\nbreak\r";
    case 4: return std::string("nul\0byte", 8);
    case 5: return "\xc3\xa9t\xc3\xa9/\xe2\x82\xac";
    case 6: return "bad\xff\xfeutf8";
    case 7: return "../../etc/passwd";
    default: return fmt::format("t{}", below(4));
  }
}

std::string FuzzValues::bytes(std::size_t max) {
  std::string out(below(max + 1), '\0');
  for (char& c : out) c = static_cast<char>(next());
  return out;
}

}  // namespace parity::fuzz
