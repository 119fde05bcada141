#include "parity/core/allocation_limit.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "parity/core/error.h"

namespace parity {
namespace {

constexpr const char* kVariable = "PARITY_MAX_ALLOCATION";

uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return UINT64_MAX;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

// 0: not read yet.
std::atomic<uint64_t> limit{0};
std::atomic<bool> given{false};

}  // namespace

uint64_t parse_allocation_size(const std::string& text, std::string_view option) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0)
    raise<InvalidInputError>("{}: '{}' is not a size (bytes, with an optional K, M, G or T suffix)", option, text);
  errno = 0;
  const unsigned long long number = std::strtoull(text.substr(0, digits).c_str(), nullptr, 10);
  const std::string suffix = text.substr(digits);
  unsigned shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (suffix == "T" || suffix == "t") shift = 40;
  else if (!suffix.empty())
    raise<InvalidInputError>("{}: '{}' is not a size (bytes, with an optional K, M, G or T suffix)", option, text);
  if (errno == ERANGE || number == 0 || number > (UINT64_MAX >> shift))
    raise<InvalidInputError>("{}: '{}' is not a size from 1 byte to 16 EiB", option, text);
  return static_cast<uint64_t>(number) << shift;
}

uint64_t allocation_limit() {
  uint64_t current = limit.load(std::memory_order_relaxed);
  if (current != 0) return current;
  const char* variable = std::getenv(kVariable);
  const bool from_variable = variable && *variable;
  current = from_variable ? parse_allocation_size(variable, kVariable) : physical_memory();
  if (from_variable) given.store(true, std::memory_order_relaxed);
  limit.store(current, std::memory_order_relaxed);
  return current;
}

void set_allocation_limit(uint64_t bytes) {
  limit.store(bytes == 0 ? 1 : bytes, std::memory_order_relaxed);
  given.store(true, std::memory_order_relaxed);
}

bool allocation_limit_is_set() {
  allocation_limit();  // reads PARITY_MAX_ALLOCATION on first use
  return given.load(std::memory_order_relaxed);
}

void check_allocation(uint64_t bytes, std::string_view what) {
  const uint64_t current = allocation_limit();
  if (bytes > current)
    raise<ResourceLimitError>("{}: needs {} bytes, more than the allocation limit of {} bytes (raise it with "
                              "--max-allocation or {})",
                              what, bytes, current, kVariable);
}

void check_tensor_allocation(DType dtype, int64_t count, std::string_view what) {
  if (dtype == DType::kString || count <= 0) return;
  const unsigned __int128 bits = static_cast<unsigned __int128>(dtype_info(dtype).bits) * static_cast<uint64_t>(count);
  const unsigned __int128 bytes = (bits + 7) / 8;
  check_allocation(bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes), what);
}

}  // namespace parity
