// The most bytes one buffer made from what Parity reads may take: a generated input, a tensor read
// from a file, an npz member, a file that is no regular file (a pipe, /dev/zero), and every tensor
// allocated on the heap (Tensor::zeros/uninitialized: the reference interpreter's outputs). Sizes declared by
// files and flags are checked against it before anything is allocated, so a hostile size is one
// error naming the file and tensor instead of an allocation that fails or exhausts the machine.
//
// The limit: `--max-allocation SIZE` (every command), else the PARITY_MAX_ALLOCATION environment
// variable, else the machine's physical memory. SIZE is bytes with an optional K, M, G or T suffix
// (powers of 1024).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "parity/core/dtype.h"

namespace parity {

// The limit in force (read from PARITY_MAX_ALLOCATION on first use when not set).
uint64_t allocation_limit();
void set_allocation_limit(uint64_t bytes);
// Whether the user gave the limit (--max-allocation or PARITY_MAX_ALLOCATION) rather than it being
// the machine's memory: readers refuse suspicious inputs (a zip bomb) only under the default.
bool allocation_limit_is_set();

// "64G", "512M", "1000" -> bytes; throws InvalidInputError naming `option` for anything else.
uint64_t parse_allocation_size(const std::string& text, std::string_view option);

// Throws ResourceLimitError "<what>: needs <bytes> bytes, more than the allocation limit of
// <limit> bytes (raise it with --max-allocation or PARITY_MAX_ALLOCATION)" when bytes > limit.
void check_allocation(uint64_t bytes, std::string_view what);
// The same for `count` elements of `dtype` (the byte count computed without overflow).
void check_tensor_allocation(DType dtype, int64_t count, std::string_view what);

}  // namespace parity
