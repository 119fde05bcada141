// Whole-file reads, padded read-only mappings and the buffered atomic writer (core/file_io).
#include <gtest/gtest.h>

#include <string>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/tensor.h"
#include "test_support.h"

namespace parity {
namespace {

using testing_support::read_bytes;
using testing_support::TempDir;

std::string pattern(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + seed) % 251 + 1);
  return bytes;
}

TEST(FileIo, PaddedMappingHoldsTheFileThenZeros) {
  TempDir dir("parity-file-io");
  constexpr std::size_t kPadding = 64;
  // Sizes around page boundaries, where the padding spills into a page the file does not cover.
  for (std::size_t size : {0ul, 1ul, 100ul, 4096ul - kPadding, 4096ul - kPadding + 1, 4095ul, 4096ul, 4097ul,
                           8192ul + 17}) {
    SCOPED_TRACE(size);
    std::string bytes = pattern(size, static_cast<unsigned>(size));
    write_file_atomic(dir / "f.bin", bytes);
    std::shared_ptr<Storage> mapped = map_file(dir / "f.bin", kPadding);
    ASSERT_EQ(mapped->size(), size);
    ASSERT_NE(mapped->data(), nullptr);
    const char* data = reinterpret_cast<const char*>(mapped->data());
    EXPECT_EQ(std::string(data, size), bytes);
    for (std::size_t i = 0; i < kPadding; ++i) ASSERT_EQ(data[size + i], '\0') << "padding byte " << i;
  }
}

TEST(FileIo, MappingErrorsNameTheFile) {
  TempDir dir("parity-file-io");
  for (std::size_t padding : {0ul, 64ul}) {
    try {
      map_file(dir / "missing.bin", padding);
      FAIL() << "no error for a missing file";
    } catch (const FileError& error) {
      EXPECT_NE(std::string(error.what()).find("missing.bin"), std::string::npos) << error.what();
    }
    EXPECT_THROW(map_file(dir.path(), padding), FileError);
  }
}

TEST(FileIo, AtomicWriterKeepsTheOrderOfSmallAndLargeWrites) {
  TempDir dir("parity-file-io");
  std::string expected;
  {
    AtomicFileWriter out(dir / "out.bin");
    // Small writes are gathered; one at least as large as the buffer (1 MiB) goes straight
    // through after what was gathered; a write that would overflow the buffer flushes it first.
    for (std::size_t size : {5ul, 1000ul, (1ul << 20) + 3, 7ul, (1ul << 20) - 10, 100ul, 0ul, 3ul << 20, 1ul}) {
      std::string piece = pattern(size, static_cast<unsigned>(expected.size()));
      out.write(piece);
      expected += piece;
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "out.bin"));
    out.commit();
  }
  EXPECT_EQ(read_bytes(dir / "out.bin"), expected);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(FileIo, AtomicWriterWithoutCommitLeavesNothing) {
  TempDir dir("parity-file-io");
  {
    AtomicFileWriter out(dir / "out.bin");
    out.write(pattern(100, 1));
    out.write(pattern(2 << 20, 2));
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 0);
}

}  // namespace
}  // namespace parity
