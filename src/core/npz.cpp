// numpy's .npz: a zip archive with one "<name>.npy" member per array, stored (np.savez) or
// deflated (np.savez_compressed). Read and written with libzip.
#include <zip.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <set>

#include "array_io_detail.h"
#include "parity/core/allocation_limit.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"

namespace parity {
namespace {

constexpr std::string_view kMemberSuffix = ".npy";

std::string zip_error_message(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string message = zip_error_strerror(&error);
  zip_error_fini(&error);
  return message;
}

struct ArchiveCloser {
  void operator()(zip_t* archive) const { zip_discard(archive); }
};
using Archive = std::unique_ptr<zip_t, ArchiveCloser>;

struct FileCloser {
  void operator()(zip_file_t* file) const { zip_fclose(file); }
};

// Reads one member completely. The buffer grows as data actually arrive, so a member that merely
// claims a huge size cannot make us allocate it up front.
// A member inflating more than this many times its compressed size, to more than kBombFloor bytes,
// is refused as a zip bomb unless the user set an allocation limit: real arrays of that size do not
// compress 100-fold (constant data does; deflate's ceiling is about 1,030-fold).
constexpr zip_uint64_t kBombRatio = 100;
constexpr zip_uint64_t kBombFloor = zip_uint64_t{256} << 20;

std::string read_member(zip_t* archive, zip_uint64_t index, zip_uint64_t size,
                        std::optional<zip_uint64_t> compressed, const std::string& what) {
  check_allocation(size, what);  // the size the archive declares, before inflating any of it
  const zip_uint64_t ratio = compressed ? size / std::max<zip_uint64_t>(*compressed, 1) : 0;
  if (size > kBombFloor && ratio > kBombRatio && !allocation_limit_is_set())
    raise<ResourceLimitError>("{}: {} compressed bytes inflate to {} bytes ({}x), which looks like a zip bomb; "
                              "a member over {} MiB that compresses more than {}-fold is read only under an "
                              "allocation limit given with --max-allocation or PARITY_MAX_ALLOCATION",
                              what, *compressed, size, ratio, kBombFloor >> 20, kBombRatio);
  std::unique_ptr<zip_file_t, FileCloser> file(zip_fopen_index(archive, index, 0));
  if (!file) raise<InvalidInputError>("{}: cannot open it: {}", what, zip_strerror(archive));
  constexpr zip_uint64_t kFirstChunk = zip_uint64_t{1} << 24;
  std::string bytes;
  bytes.resize(static_cast<std::size_t>(std::min(size, kFirstChunk)));
  zip_uint64_t filled = 0;
  while (filled < size) {
    if (filled == bytes.size()) bytes.resize(static_cast<std::size_t>(std::min(size, 2 * filled)));
    zip_int64_t n = zip_fread(file.get(), bytes.data() + filled, bytes.size() - filled);
    if (n < 0) raise<InvalidInputError>("{}: corrupt data: {}", what, zip_file_strerror(file.get()));
    if (n == 0) break;
    filled += static_cast<zip_uint64_t>(n);
  }
  if (filled != size)
    raise<InvalidInputError>("{}: truncated: the archive lists {} bytes but only {} could be read", what,
                             size, filled);
  // libzip verifies the CRC when a read reaches the end of the member, so read once more.
  char extra;
  zip_int64_t n = zip_fread(file.get(), &extra, 1);
  if (n < 0) raise<InvalidInputError>("{}: corrupt data: {}", what, zip_file_strerror(file.get()));
  if (n > 0) raise<InvalidInputError>("{}: holds more data than the archive lists ({} bytes)", what, size);
  bytes.resize(static_cast<std::size_t>(filled));
  return bytes;
}

void read_archive(zip_t* archive, const std::string& what, const detail::ZipVisitor& visit) {
  zip_int64_t entries = zip_get_num_entries(archive, 0);
  if (entries < 0) raise<InvalidInputError>("{}: cannot list the archive: {}", what, zip_strerror(archive));
  for (zip_int64_t i = 0; i < entries; ++i) {
    auto index = static_cast<zip_uint64_t>(i);
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(archive, index, 0, &stat) != 0 || !(stat.valid & ZIP_STAT_NAME) ||
        !(stat.valid & ZIP_STAT_SIZE))
      raise<InvalidInputError>("{}: cannot read entry {} of the archive: {}", what, i, zip_strerror(archive));
    std::string member = stat.name;
    if (member.ends_with('/')) continue;  // a directory entry
    std::optional<zip_uint64_t> compressed;
    if (stat.valid & ZIP_STAT_COMP_SIZE) compressed = stat.comp_size;
    visit(member, [&](const std::string& member_what) {
      return read_member(archive, index, stat.size, compressed, member_what);
    });
  }
}

// Collects a .npz archive's .npy members as arrays named after them, warning about other members.
class NpzMembers {
 public:
  NpzMembers(NamedTensors& arrays, const std::string& what) : arrays_(arrays), what_(what) {}
  void operator()(const std::string& member, const detail::ZipMemberReader& read) {
    if (!member.ends_with(kMemberSuffix)) {
      log::warning("{}: ignoring member '{}', which is not a .npy file", what_, member);
      return;
    }
    std::string name = member.substr(0, member.size() - kMemberSuffix.size());
    if (!seen_.insert(name).second)
      raise<InvalidInputError>("{}: the archive holds member '{}' more than once", what_, member);
    std::string member_what = fmt::format("{}: member '{}'", what_, member);
    arrays_.emplace_back(std::move(name), detail::decode_npy_owned(read(member_what), member_what));
  }

 private:
  NamedTensors& arrays_;
  const std::string& what_;
  std::set<std::string> seen_;
};

// A valid zip archive with no members: only the end-of-central-directory record.
std::string empty_zip() {
  std::string bytes("PK\x05\x06", 4);
  bytes.append(18, '\0');
  return bytes;
}

std::string build_archive(const NamedTensors& arrays, bool compress, const std::string& what) {
  if (arrays.empty()) return empty_zip();
  std::set<std::string_view> seen;
  for (const auto& [name, tensor] : arrays)
    if (!seen.insert(name).second)
      raise<InvalidInputError>("{}: two arrays are named '{}'; .npz member names must be unique", what, name);

  // Every member's bytes must stay put until zip_close, which is when libzip reads them.
  std::vector<detail::NpyParts> parts;
  parts.reserve(arrays.size());
  for (const auto& [name, tensor] : arrays)
    parts.push_back(with_context(fmt::format("{}: array '{}'", what, name),
                                 [&] { return detail::npy_parts(tensor); }));

  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  if (!buffer) {
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    raise<InternalError>("{}: cannot create an in-memory zip buffer: {}", what, message);
  }
  Archive archive(zip_open_from_source(buffer, ZIP_TRUNCATE, &error));
  if (!archive) {
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    zip_source_free(buffer);
    raise<InternalError>("{}: cannot start a zip archive: {}", what, message);
  }
  zip_error_fini(&error);
  zip_source_keep(buffer);  // keep it readable after zip_close
  std::unique_ptr<zip_source_t, decltype(&zip_source_free)> result(buffer, &zip_source_free);

  for (std::size_t i = 0; i < arrays.size(); ++i) {
    std::string member = arrays[i].first + std::string(kMemberSuffix);
    std::string_view header = parts[i].header, data = parts[i].data();
    zip_buffer_fragment_t fragments[2] = {
        {reinterpret_cast<zip_uint8_t*>(const_cast<char*>(header.data())), header.size()},
        {reinterpret_cast<zip_uint8_t*>(const_cast<char*>(data.data())), data.size()},
    };
    zip_uint64_t count = data.empty() ? 1 : 2;
    zip_source_t* source = zip_source_buffer_fragment(archive.get(), fragments, count, 0);
    if (!source) raise<InternalError>("{}: cannot add '{}': {}", what, member, zip_strerror(archive.get()));
    zip_int64_t index = zip_file_add(archive.get(), member.c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(source);
      raise<InvalidInputError>("{}: cannot add member '{}': {}", what, member, zip_strerror(archive.get()));
    }
    if (zip_set_file_compression(archive.get(), static_cast<zip_uint64_t>(index),
                                 compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, compress ? 6 : 0) != 0)
      raise<InternalError>("{}: cannot set the compression of '{}': {}", what, member,
                           zip_strerror(archive.get()));
  }
  if (zip_close(archive.get()) != 0)
    raise<InternalError>("{}: cannot finish the zip archive: {}", what, zip_strerror(archive.get()));
  archive.release();  // zip_close freed it

  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_source_stat(buffer, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE) || zip_source_open(buffer) != 0)
    raise<InternalError>("{}: cannot read back the zip archive", what);
  std::string bytes(static_cast<std::size_t>(stat.size), '\0');
  zip_int64_t n = zip_source_read(buffer, bytes.data(), stat.size);
  zip_source_close(buffer);
  if (n < 0 || static_cast<zip_uint64_t>(n) != stat.size)
    raise<InternalError>("{}: cannot read back the zip archive", what);
  return bytes;
}

}  // namespace

namespace detail {

void visit_zip(std::string&& bytes, const std::string& what, std::string_view kind, const ZipVisitor& visit) {
  // libzip reads from `holder` until the archive is discarded (before `holder` goes away).
  std::string holder = std::move(bytes);
  if (holder.empty()) raise<InvalidInputError>("{}: empty data, not a {} archive", what, kind);
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(holder.data(), holder.size(), 0, &error);
  if (!source) {
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    raise<InternalError>("{}: cannot read the zip data: {}", what, message);
  }
  Archive archive(zip_open_from_source(source, ZIP_RDONLY, &error));
  if (!archive) {
    std::string message = zip_error_strerror(&error);
    zip_error_fini(&error);
    zip_source_free(source);
    raise<InvalidInputError>("{}: not a valid {} archive: {}", what, kind, message);
  }
  zip_error_fini(&error);
  read_archive(archive.get(), what, visit);
}

NamedTensors decode_npz(std::string&& bytes, const std::string& what) {
  NamedTensors arrays;
  NpzMembers members(arrays, what);
  visit_zip(std::move(bytes), what, ".npz (zip)", std::ref(members));
  return arrays;
}

}  // namespace detail

NamedTensors load_npz(const std::filesystem::path& path) {
  std::string what = path.string();
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) raise<FileError>("'{}': no such file", what);
  if (std::filesystem::is_directory(status)) raise<FileError>("'{}': is a directory, expected a file", what);
  // libzip opens an empty file as an empty archive; numpy (rightly) calls it an error.
  if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(path, ec) == 0 && !ec)
    raise<InvalidInputError>("{}: empty file, not a .npz (zip) archive", what);
  int code = 0;
  Archive archive(zip_open(path.c_str(), ZIP_RDONLY, &code));
  if (!archive) {
    if (code == ZIP_ER_NOENT || code == ZIP_ER_OPEN || code == ZIP_ER_READ || code == ZIP_ER_SEEK)
      raise<FileError>("'{}': cannot open: {}", what, zip_error_message(code));
    raise<InvalidInputError>("{}: not a valid .npz (zip) archive: {}", what, zip_error_message(code));
  }
  NamedTensors arrays;
  NpzMembers members(arrays, what);
  read_archive(archive.get(), what, std::ref(members));
  return arrays;
}

void save_npz(const std::filesystem::path& path, const NamedTensors& arrays, bool compress) {
  write_file_atomic(path, build_archive(arrays, compress, path.string()));
}

}  // namespace parity
