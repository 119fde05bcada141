// torch.save's format for one tensor, read without Python or torch: a zip archive holding
// "<prefix>/data.pkl", a pickle that rebuilds the tensor through torch._utils._rebuild_tensor_v2
// (typed storages: FloatStorage...) or _rebuild_tensor_v3 (an UntypedStorage and a torch dtype)
// from a persistent storage reference, an offset, sizes and strides; "<prefix>/data/<key>", the
// storage's raw bytes; and "<prefix>/byteorder" ("little" or "big"; absent in old files: little).
// Only the pickle opcodes torch.save emits are interpreted; nothing is ever imported or called.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "array_io_detail.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/shape.h"

namespace parity {
namespace {

// A value on the unpickler's stack: only what a tensor's pickle holds is represented; lists,
// dicts and built objects (backward hooks, metadata) become kOther and are never looked into.
struct PickleValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kGlobal, kTuple, kPersistent, kCall, kMark, kOther };
  Kind kind = Kind::kNone;
  int64_t integer = 0;
  std::string text;  // a string, or "module.name" for a global
  // kTuple: its items; kPersistent: {the persistent id}; kCall: {the callable, its argument tuple}.
  std::shared_ptr<const std::vector<PickleValue>> items;

  static PickleValue of(Kind kind) { return PickleValue{kind}; }
  const std::vector<PickleValue>& elements() const { return *items; }
};

using Kind = PickleValue::Kind;

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const std::string& what) : bytes_(bytes), what_(what) {}

  PickleValue run() {
    while (true) {
      std::size_t at = position_;
      auto opcode = static_cast<unsigned char>(take(1)[0]);
      switch (opcode) {
        case 0x80: take(1); break;                         // PROTO
        case 0x95: take(8); break;                         // FRAME (protocol 4)
        case '.': return pop(at);                          // STOP
        case '(': push(PickleValue::of(Kind::kMark)); break;
        case 'N': push(PickleValue::of(Kind::kNone)); break;
        case 0x88: push(boolean(true)); break;             // NEWTRUE
        case 0x89: push(boolean(false)); break;            // NEWFALSE
        case 'K': push(integer(little_endian(take(1), false))); break;  // BININT1
        case 'M': push(integer(little_endian(take(2), false))); break;  // BININT2
        case 'J': push(integer(little_endian(take(4), true))); break;   // BININT
        case 0x8a: {                                                    // LONG1
          auto length = static_cast<unsigned char>(take(1)[0]);
          if (length > 8) fail(at, "an integer wider than 64 bits");
          push(integer(length == 0 ? 0 : little_endian(take(length), true)));
          break;
        }
        case 'G': {  // BINFLOAT (big endian double): kept only as a placeholder
          take(8);
          push(PickleValue::of(Kind::kFloat));
          break;
        }
        case 'X': push(string(take(static_cast<std::size_t>(little_endian(take(4), false))))); break;  // BINUNICODE
        case 0x8c: push(string(take(static_cast<unsigned char>(take(1)[0])))); break;  // SHORT_BINUNICODE
        case 'T': push(string(take(static_cast<std::size_t>(little_endian(take(4), false))))); break;  // BINSTRING
        case 'U': push(string(take(static_cast<unsigned char>(take(1)[0])))); break;   // SHORT_BINSTRING
        case 'c': {  // GLOBAL "module\nname\n"
          std::string module = line(at), name = line(at);
          push(global(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          PickleValue name = pop(at), module = pop(at);
          if (name.kind != Kind::kString || module.kind != Kind::kString) fail(at, "a global named by non-strings");
          push(global(module.text + "." + name.text));
          break;
        }
        case ')': push(tuple({})); break;  // EMPTY_TUPLE
        case 0x85: push(tuple(pop_n(1, at))); break;  // TUPLE1
        case 0x86: push(tuple(pop_n(2, at))); break;  // TUPLE2
        case 0x87: push(tuple(pop_n(3, at))); break;  // TUPLE3
        case 't': push(tuple(pop_to_mark(at))); break;  // TUPLE
        case ']': case '}': push(PickleValue::of(Kind::kOther)); break;  // EMPTY_LIST, EMPTY_DICT
        case 'l': case 'd': pop_to_mark(at); push(PickleValue::of(Kind::kOther)); break;  // LIST, DICT
        case 'a': pop(at); expect_container(at); break;                       // APPEND
        case 'e': case 'u': pop_to_mark(at); expect_container(at); break;     // APPENDS, SETITEMS
        case 's': pop(at); pop(at); expect_container(at); break;              // SETITEM
        case 'b': pop(at); if (stack_.empty()) fail(at, "BUILD with nothing to build"); break;  // BUILD
        case 'Q': {  // BINPERSID
          PickleValue id = pop(at);
          PickleValue value = PickleValue::of(Kind::kPersistent);
          value.items = std::make_shared<std::vector<PickleValue>>(std::vector<PickleValue>{std::move(id)});
          push(std::move(value));
          break;
        }
        case 'R': {  // REDUCE
          PickleValue arguments = pop(at), callable = pop(at);
          if (arguments.kind != Kind::kTuple) fail(at, "REDUCE without an argument tuple");
          PickleValue value = PickleValue::of(callable.kind == Kind::kGlobal ? Kind::kCall : Kind::kOther);
          value.items = std::make_shared<std::vector<PickleValue>>(
              std::vector<PickleValue>{std::move(callable), std::move(arguments)});
          push(std::move(value));
          break;
        }
        case 'q': memo_[little_endian(take(1), false)] = top(at); break;  // BINPUT
        case 'r': memo_[little_endian(take(4), false)] = top(at); break;  // LONG_BINPUT
        case 0x94: memo_[static_cast<int64_t>(memo_.size())] = top(at); break;  // MEMOIZE
        case 'h': push(memo(little_endian(take(1), false), at)); break;  // BINGET
        case 'j': push(memo(little_endian(take(4), false), at)); break;  // LONG_BINGET
        default:
          fail(at, fmt::format("pickle opcode 0x{:02x}, which torch.save does not write for a tensor", opcode));
      }
    }
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& why) const {
    raise<InvalidInputError>("{}: not a tensor saved by torch.save: data.pkl byte {}: {}", what_, at, why);
  }
  std::string_view take(std::size_t count) {
    if (bytes_.size() - position_ < count) fail(position_, "the pickle ends early");
    std::string_view piece = bytes_.substr(position_, count);
    position_ += count;
    return piece;
  }
  std::string line(std::size_t at) {
    std::size_t end = bytes_.find('\n', position_);
    if (end == std::string_view::npos) fail(at, "a GLOBAL name without its newline");
    std::string text(bytes_.substr(position_, end - position_));
    position_ = end + 1;
    return text;
  }
  static int64_t little_endian(std::string_view piece, bool is_signed) {
    uint64_t value = 0;
    for (std::size_t i = 0; i < piece.size(); ++i) value |= uint64_t{static_cast<unsigned char>(piece[i])} << (8 * i);
    if (is_signed && piece.size() < 8 && (value >> (8 * piece.size() - 1)) & 1)
      value |= ~uint64_t{0} << (8 * piece.size());
    return static_cast<int64_t>(value);
  }
  static PickleValue boolean(bool value) {
    PickleValue result = PickleValue::of(Kind::kBool);
    result.integer = value;
    return result;
  }
  static PickleValue integer(int64_t value) {
    PickleValue result = PickleValue::of(Kind::kInt);
    result.integer = value;
    return result;
  }
  static PickleValue string(std::string_view text) {
    PickleValue result = PickleValue::of(Kind::kString);
    result.text = std::string(text);
    return result;
  }
  static PickleValue global(std::string name) {
    PickleValue result = PickleValue::of(Kind::kGlobal);
    result.text = std::move(name);
    return result;
  }
  static PickleValue tuple(std::vector<PickleValue> items) {
    PickleValue result = PickleValue::of(Kind::kTuple);
    result.items = std::make_shared<std::vector<PickleValue>>(std::move(items));
    return result;
  }
  void push(PickleValue value) {
    if (stack_.size() >= kMaxStack) fail(position_, "a pickle stack deeper than a tensor's");
    stack_.push_back(std::move(value));
  }
  const PickleValue& top(std::size_t at) const {
    if (stack_.empty() || stack_.back().kind == Kind::kMark) fail(at, "memoizing from an empty stack");
    return stack_.back();
  }
  PickleValue pop(std::size_t at) {
    if (stack_.empty() || stack_.back().kind == Kind::kMark) fail(at, "popping an empty stack");
    PickleValue value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }
  std::vector<PickleValue> pop_n(std::size_t count, std::size_t at) {
    std::vector<PickleValue> items(count);
    for (std::size_t i = count; i-- > 0;) items[i] = pop(at);
    return items;
  }
  std::vector<PickleValue> pop_to_mark(std::size_t at) {
    auto mark =
        std::find_if(stack_.rbegin(), stack_.rend(), [](const PickleValue& v) { return v.kind == Kind::kMark; });
    if (mark == stack_.rend()) fail(at, "no MARK before a TUPLE, APPENDS or SETITEMS");
    auto first = mark.base();  // just after the mark
    std::vector<PickleValue> items(std::make_move_iterator(first), std::make_move_iterator(stack_.end()));
    stack_.erase(first - 1, stack_.end());
    return items;
  }
  void expect_container(std::size_t at) const {
    if (stack_.empty() || stack_.back().kind != Kind::kOther) fail(at, "adding items to something not a list or dict");
  }
  PickleValue memo(int64_t key, std::size_t at) const {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail(at, fmt::format("memo entry {} read before it was written", key));
    return it->second;
  }

  static constexpr std::size_t kMaxStack = 4096;
  std::string_view bytes_;
  const std::string& what_;
  std::size_t position_ = 0;
  std::vector<PickleValue> stack_;
  std::unordered_map<int64_t, PickleValue> memo_;
};

// torch's typed storage classes (v2) and dtypes (v3) with the DType each holds.
std::optional<DType> storage_dtype(const std::string& global) {
  static const std::map<std::string, DType, std::less<>> kTypes = {
      {"torch.FloatStorage", DType::kFloat32},       {"torch.DoubleStorage", DType::kFloat64},
      {"torch.HalfStorage", DType::kFloat16},        {"torch.BFloat16Storage", DType::kBFloat16},
      {"torch.LongStorage", DType::kInt64},          {"torch.IntStorage", DType::kInt32},
      {"torch.ShortStorage", DType::kInt16},         {"torch.CharStorage", DType::kInt8},
      {"torch.ByteStorage", DType::kUInt8},          {"torch.BoolStorage", DType::kBool},
      {"torch.ComplexFloatStorage", DType::kComplex64}, {"torch.ComplexDoubleStorage", DType::kComplex128},
      {"torch.float32", DType::kFloat32},            {"torch.float64", DType::kFloat64},
      {"torch.float16", DType::kFloat16},            {"torch.bfloat16", DType::kBFloat16},
      {"torch.int64", DType::kInt64},                {"torch.int32", DType::kInt32},
      {"torch.int16", DType::kInt16},                {"torch.int8", DType::kInt8},
      {"torch.uint8", DType::kUInt8},                {"torch.uint16", DType::kUInt16},
      {"torch.uint32", DType::kUInt32},              {"torch.uint64", DType::kUInt64},
      {"torch.bool", DType::kBool},                  {"torch.complex64", DType::kComplex64},
      {"torch.complex128", DType::kComplex128},      {"torch.float8_e4m3fn", DType::kFloat8E4M3FN},
      {"torch.float8_e4m3fnuz", DType::kFloat8E4M3FNUZ}, {"torch.float8_e5m2", DType::kFloat8E5M2},
      {"torch.float8_e5m2fnuz", DType::kFloat8E5M2FNUZ}, {"torch.float8_e8m0fnu", DType::kFloat8E8M0},
  };
  auto it = kTypes.find(global);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

std::vector<int64_t> int_tuple(const PickleValue& value, const char* name, const std::string& what) {
  if (value.kind != Kind::kTuple) raise<InvalidInputError>("{}: torch tensor's {} is not a tuple", what, name);
  std::vector<int64_t> numbers;
  for (const auto& item : value.elements()) {
    if (item.kind != Kind::kInt) raise<InvalidInputError>("{}: torch tensor's {} holds a non-integer", what, name);
    numbers.push_back(item.integer);
  }
  return numbers;
}

// The tensor the pickle's REDUCE of _rebuild_tensor_v2/v3 describes, and the storage it reads.
struct TensorRecipe {
  DType dtype = DType::kUndefined;
  std::string storage_key;
  int64_t storage_bytes = 0;  // as the pickle declares it (v2: elements * itemsize)
  int64_t offset = 0;         // in elements
  Shape sizes;
  std::vector<int64_t> strides;
};

TensorRecipe recipe_of(const PickleValue& root, const std::string& what) {
  if (root.kind != Kind::kCall)
    raise<InvalidInputError>("{}: torch.save data that is not a single tensor (Parity reads tensors only)", what);
  const std::string& function = root.elements()[0].text;
  bool v3 = function == "torch._utils._rebuild_tensor_v3";
  if (function != "torch._utils._rebuild_tensor_v2" && !v3)
    raise<UnsupportedError>("{}: torch.save data rebuilt by '{}', not a plain CPU tensor (Parity reads dense tensors "
                            "only: _rebuild_tensor_v2/v3)", what, function);
  const auto& arguments = root.elements()[1].elements();
  if (arguments.size() < (v3 ? 7u : 4u))
    raise<InvalidInputError>("{}: '{}' called with {} argument(s)", what, function, arguments.size());
  if (arguments[0].kind != Kind::kPersistent || arguments[0].elements()[0].kind != Kind::kTuple)
    raise<InvalidInputError>("{}: the tensor's storage is not a persistent reference", what);
  const auto& id = arguments[0].elements()[0].elements();
  if (id.size() < 5 || id[0].kind != Kind::kString || id[0].text != "storage" || id[1].kind != Kind::kGlobal ||
      id[2].kind != Kind::kString || id[3].kind != Kind::kString || id[4].kind != Kind::kInt)
    raise<InvalidInputError>("{}: the tensor's storage reference is not ('storage', type, key, location, size)", what);
  TensorRecipe recipe;
  recipe.storage_key = id[2].text;
  const PickleValue& type = v3 ? arguments[6] : id[1];
  std::optional<DType> dtype = type.kind == Kind::kGlobal ? storage_dtype(type.text) : std::nullopt;
  if (!dtype)
    raise<UnsupportedError>("{}: torch tensor of type '{}', which Parity cannot hold", what,
                            type.kind == Kind::kGlobal ? type.text : std::string("(not a global)"));
  recipe.dtype = *dtype;
  int64_t itemsize = dtype_info(recipe.dtype).bits / 8;
  // v2's typed storage counts elements; v3's untyped storage counts bytes.
  if (id[4].integer < 0 || (!v3 && __builtin_mul_overflow(id[4].integer, itemsize, &recipe.storage_bytes)))
    raise<InvalidInputError>("{}: the tensor's storage size {} is invalid", what, id[4].integer);
  if (v3) recipe.storage_bytes = id[4].integer;
  if (arguments[1].kind != Kind::kInt || arguments[1].integer < 0)
    raise<InvalidInputError>("{}: the tensor's storage offset is not a non-negative integer", what);
  recipe.offset = arguments[1].integer;
  recipe.sizes = int_tuple(arguments[2], "size", what);
  recipe.strides = int_tuple(arguments[3], "stride", what);
  if (recipe.sizes.size() != recipe.strides.size())
    raise<InvalidInputError>("{}: the tensor has {} size(s) but {} stride(s)", what, recipe.sizes.size(),
                             recipe.strides.size());
  return recipe;
}

// Copies the strided elements of `storage` into a new C-order tensor.
Tensor gather(const TensorRecipe& recipe, std::string_view storage, bool big_endian, const std::string& what) {
  int64_t itemsize = dtype_info(recipe.dtype).bits / 8;
  int64_t storage_elements = static_cast<int64_t>(storage.size()) / itemsize;
  // Strides of 0 (expanded tensors) can describe far more elements than the file holds.
  int64_t count = checked_element_count(recipe.sizes, std::max<int64_t>(storage_elements, int64_t{1} << 27));
  int64_t last = recipe.offset;
  for (std::size_t d = 0; d < recipe.sizes.size(); ++d)
    if (recipe.strides[d] < 0)
      raise<InvalidInputError>("{}: negative stride {} in dimension {}", what, recipe.strides[d], d);
  if (count > 0) {
    for (std::size_t d = 0; d < recipe.sizes.size(); ++d) {
      int64_t reach = 0;
      if (__builtin_mul_overflow(recipe.sizes[d] - 1, recipe.strides[d], &reach) ||
          __builtin_add_overflow(last, reach, &last))
        raise<InvalidInputError>("{}: the tensor's strides reach past any storage", what);
    }
    if (last >= storage_elements)
      raise<InvalidInputError>("{}: the tensor reads element {} of a storage of {} element(s)", what, last,
                               storage_elements);
  }
  Tensor tensor = Tensor::zeros(recipe.dtype, recipe.sizes);
  auto* out = static_cast<std::byte*>(tensor.mutable_raw());
  const auto* in = reinterpret_cast<const std::byte*>(storage.data());
  std::vector<int64_t> index(recipe.sizes.size(), 0);
  int64_t source = recipe.offset;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(out + i * itemsize, in + source * itemsize, static_cast<std::size_t>(itemsize));
    for (std::size_t d = recipe.sizes.size(); d-- > 0;) {
      source += recipe.strides[d];
      if (++index[d] < recipe.sizes[d]) break;
      source -= recipe.strides[d] * recipe.sizes[d];
      index[d] = 0;
    }
  }
  if (big_endian) {
    bool complex = recipe.dtype == DType::kComplex64 || recipe.dtype == DType::kComplex128;
    detail::byte_swap(out, static_cast<std::size_t>(count * itemsize),
                      static_cast<std::size_t>(complex ? itemsize / 2 : itemsize));
  }
  return tensor;
}

}  // namespace

Tensor decode_torch_save(std::string&& bytes, const std::string& what) {
  std::map<std::string, std::string> members;
  std::string pickle_member;
  detail::visit_zip(std::move(bytes), what, "torch.save (zip)",
                    [&](const std::string& member, const detail::ZipMemberReader& read) {
                      std::string_view name = member;
                      if (name.ends_with("/data.pkl") || name.ends_with("/byteorder") ||
                          name.find("/data/") != std::string_view::npos) {
                        if (name.ends_with("/data.pkl")) pickle_member = member;
                        members[member] = read(fmt::format("{}: member '{}'", what, member));
                      }
                    });
  if (pickle_member.empty())
    raise<InvalidInputError>("{}: not a tensor saved by torch.save: the archive has no data.pkl", what);
  std::string prefix = pickle_member.substr(0, pickle_member.size() - std::string_view("data.pkl").size());
  TensorRecipe recipe = recipe_of(Unpickler(members[pickle_member], what).run(), what);
  auto storage = members.find(prefix + "data/" + recipe.storage_key);
  if (storage == members.end())
    raise<InvalidInputError>("{}: the archive has no member '{}data/{}' for the tensor's storage", what, prefix,
                             recipe.storage_key);
  if (static_cast<int64_t>(storage->second.size()) < recipe.storage_bytes)
    raise<InvalidInputError>("{}: the tensor's storage holds {} bytes, the pickle declares {}", what,
                             storage->second.size(), recipe.storage_bytes);
  auto order = members.find(prefix + "byteorder");
  bool big_endian = order != members.end() && order->second == "big";
  if (order != members.end() && order->second != "big" && order->second != "little")
    raise<InvalidInputError>("{}: unknown byte order '{}'", what, order->second);
  return gather(recipe, std::string_view(storage->second).substr(0, static_cast<std::size_t>(recipe.storage_bytes)),
                big_endian, what);
}

}  // namespace parity
