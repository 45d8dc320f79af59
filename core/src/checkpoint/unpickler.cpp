// The unpickling machine: protocols 2-5 (and the binary opcodes of protocol 1),
// restricted to plain data, OrderedDict and torch tensor rebuilds.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/unpickler.h"
#include "expnet/checkpoint/pickler.h"

namespace expnet::pickle {
namespace {

std::string allowed_list_text() {
  std::string out;
  for (const auto& name : allowed_globals()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Python 2 module names that protocols 0-2 use (Python's fix_imports), so
// errors and the allow-list see the Python 3 names.
std::string python3_module(const std::string& module) {
  if (module == "__builtin__" || module == "exceptions") return "builtins";
  if (module == "copy_reg") return "copyreg";
  if (module == "commands") return "subprocess";
  if (module == "cPickle") return "pickle";
  return module;
}

std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  if (text.size() > 80) out += "...";
  return out;
}

class Machine {
 public:
  Machine(std::string_view in, const std::string& source, const Limits& limits)
      : in_(in), source_(source), limits_(limits), budget_(limits.budget_for(in.size())),
        arena_(std::make_shared<Arena>()) {}

  Document run(size_t* consumed) {
    if (in_.empty()) fail("empty input: not a pickle");
    for (;;) {
      op_pos_ = pos_;
      const auto op = static_cast<unsigned char>(take(1)[0]);
      if (op == '.') break;  // STOP
      step(op);
      charge_new_values();
    }
    if (!marks_.empty()) fail("STOP inside an unclosed MARK");
    if (stack_.size() != 1) fail("STOP with " + std::to_string(stack_.size()) + " values on the stack (expected 1)");
    if (consumed) *consumed = pos_;
    return Document{arena_, stack_.back(), protocol_, storage_order_, budget_.used()};
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw PickleError(source_ + ": " + why + " (at byte " + std::to_string(op_pos_) + ")");
  }

  // The budget (Limits): charged before anything is copied, so a hostile
  // program stops at the limit, in time and memory proportional to it.
  [[noreturn]] void over_budget() const {
    const size_t limit = budget_.limit();
    fail("building its values would take more than " +
         (limit >= (size_t{1} << 20) ? std::to_string(limit >> 20) + " MiB" : std::to_string(limit) + " bytes") +
         " (the budget for a pickle of " + std::to_string(in_.size()) +
         " bytes, docs/checkpoints.md \"Limits against hostile input\"): the file is corrupt or hostile "
         "(values copied or shared over and over); a real checkpoint or vocabulary stays far below, re-save it "
         "with torch.save if it is yours");
  }
  void charge(size_t count, size_t bytes_each) {
    if (!budget_.charge(count, bytes_each)) over_budget();
  }
  void charge_new_values() {
    const size_t made = arena_->size();
    if (made > charged_values_) charge(made - charged_values_, Budget::kValueBytes);
    charged_values_ = std::max(made, charged_values_);
  }
  // Dict insertion: the key's identity is capped by what the budget has left,
  // and a tuple's (shared sub-objects expand there) by max_key_bytes too.
  void set_item(Value* dict, Value* key, Value* value) {
    const size_t room = budget_.limit() - budget_.used();
    const size_t cap = key->is(Kind::Tuple) ? std::min(limits_.max_key_bytes, room) : room;
    size_t key_bytes = 0;
    try {
      key_bytes = dict->dict_set(key, value, cap);
    } catch (const KeyTooLargeError& e) {
      if (cap == room) over_budget();
      fail(e.what());
    } catch (const PickleError& e) {
      fail(e.what());
    }
    charge(1, Budget::kEntryBytes + key_bytes);
  }

  std::string_view take(size_t n) {
    if (n > in_.size() - pos_)
      fail("truncated: needs " + std::to_string(n) + " more bytes, " + std::to_string(in_.size() - pos_) + " remain");
    const std::string_view out = in_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t take_le(size_t n) {
    const std::string_view b = take(n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
    return v;
  }
  std::string_view take_line() {
    const size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) fail("truncated: a text argument has no end of line");
    const std::string_view out = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  size_t length_arg(size_t width) {
    const uint64_t n = take_le(width);
    if (n > in_.size() - pos_)
      fail("length " + std::to_string(n) + " is larger than the " + std::to_string(in_.size() - pos_) +
           " bytes that remain (truncated or corrupt)");
    return static_cast<size_t>(n);
  }

  void push(Value* v) { stack_.push_back(v); }
  void push_again(Value* v) {  // DUP, BINGET: a copy of a pointer
    charge(1, Budget::kPointerBytes);
    push(v);
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Value* pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) fail("missing MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    charge(stack_.size() - m, Budget::kPointerBytes);  // the items move into a container
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Value* expect(Value* v, Kind kind, const char* what) {
    if (!v->is(kind)) fail(std::string(what) + " must be a " + kind_name(kind) + ", got " + kind_name(v->kind));
    return v;
  }

  void memo_put(uint64_t index, Value* v) {
    const auto [it, inserted] = memo_.emplace(index, v);
    if (inserted) charge(1, 64);  // a hash node
    it->second = v;
  }
  Value* memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
    return it->second;
  }

  Value* resolve_global(const std::string& module, const std::string& name) {
    const std::string full = python3_module(module) + "." + name;
    const auto& allowed = allowed_globals();
    if (std::find(allowed.begin(), allowed.end(), full) == allowed.end())
      fail("refused to load the global '" + printable(full) +
           "': only plain data and tensors are allowed (" + allowed_list_text() +
           "). The file may be malicious or hold an unsupported Python object; it was not executed");
    return arena_->global(full);
  }

  int64_t as_int(const Value* v, const char* what) {
    if (v->is(Kind::Int)) return v->integer;
    if (v->is(Kind::Bool)) return v->boolean ? 1 : 0;
    fail(std::string(what) + " must be an int, got " + kind_name(v->kind));
  }
  std::vector<int64_t> int_tuple(const Value* v, const char* what) {
    if (!v->is(Kind::Tuple) && !v->is(Kind::List)) fail(std::string(what) + " must be a tuple of ints");
    charge(v->items.size(), sizeof(int64_t));
    std::vector<int64_t> out;
    for (const Value* item : v->items) out.push_back(as_int(item, what));
    return out;
  }

  Value* persistent_load(Value* pid) {
    // zip: ('storage', torch.FloatStorage, key, location, numel)
    // legacy: ('storage', torch.FloatStorage, root_key, location, numel, view_metadata)
    if (!pid->is(Kind::Tuple) || pid->items.size() < 5 || !pid->items[0]->is(Kind::Str) ||
        pid->items[0]->text != "storage")
      fail("unsupported persistent id " + describe(*pid) + " (only torch storages are supported)");
    const auto& it = pid->items;
    if (!it[1]->is(Kind::Global)) fail("storage type must be a torch storage class");
    const std::string cls = it[1]->text.rfind("torch.", 0) == 0 ? it[1]->text.substr(6) : it[1]->text;
    const auto dtype = dtype_from_storage_class(cls);
    if (!dtype) fail("unsupported storage type '" + it[1]->text + "'");
    std::string key;
    if (it[2]->is(Kind::Str)) key = it[2]->text;
    else if (it[2]->is(Kind::Int)) key = std::to_string(it[2]->integer);
    else fail("storage key must be a str");
    if (!it[3]->is(Kind::Str)) fail("storage location must be a str");
    const int64_t numel = as_int(it[4], "storage size");
    if (numel < 0) fail("negative storage size");
    if (it.size() == 6 && !it[5]->is(Kind::None))
      fail("legacy storage views (view_metadata) are not supported");
    if (it.size() > 6) fail("persistent id has too many fields");
    auto& known = storages_[key];
    if (known) {
      if (known->dtype != *dtype)
        fail("storage '" + key + "' is used with two element types (" + dtype_name(known->dtype) + " and " +
             dtype_name(*dtype) + ")");
    } else {
      auto ref = std::make_shared<StorageRef>();
      ref->key = key;
      ref->dtype = *dtype;
      ref->location = it[3]->text;
      ref->numel = numel;
      known = std::move(ref);
      storage_order_.push_back(known);
    }
    Value* out = arena_->make(Kind::Storage);
    out->storage = known;
    return out;
  }

  Value* rebuild_tensor(const std::vector<Value*>& a, bool v2) {
    if (a.size() < 4 || (v2 && a.size() < 6) || a.size() > 7)
      fail("_rebuild_tensor_v2 takes 6 or 7 arguments, got " + std::to_string(a.size()));
    expect(a[0], Kind::Storage, "tensor storage");
    TensorInfo info;
    info.storage = a[0]->storage;
    info.storage_offset = as_int(a[1], "storage offset");
    info.sizes = int_tuple(a[2], "tensor size");
    info.strides = int_tuple(a[3], "tensor stride");
    if (a.size() > 4) {
      if (!a[4]->is(Kind::Bool)) fail("requires_grad must be a bool");
      info.requires_grad = a[4]->boolean;
    }
    info.validate(source_);
    if (info.storage->location.rfind("cpu", 0) != 0 && info.storage->location.rfind("cuda", 0) != 0)
      fail("unsupported storage location '" + printable(info.storage->location) + "'");
    return arena_->tensor(std::move(info));
  }

  Value* rebuild_parameter(const std::vector<Value*>& a) {
    if (a.size() < 3 || a.size() > 4) fail("_rebuild_parameter takes 3 or 4 arguments");
    expect(a[0], Kind::Tensor, "parameter data");
    if (!a[1]->is(Kind::Bool)) fail("requires_grad must be a bool");
    Value* out = arena_->tensor(a[0]->tensor);
    out->tensor.parameter = true;
    out->tensor.requires_grad = a[1]->boolean;
    return out;
  }

  Value* latin1_bytes(const std::vector<Value*>& a) {
    if (a.empty() || !a[0]->is(Kind::Str)) fail("_codecs.encode needs a str");
    if (a.size() == 2 && !(a[1]->is(Kind::Str) && (a[1]->text == "latin1" || a[1]->text == "latin-1")))
      fail("_codecs.encode is only allowed with the latin1 encoding");
    if (a.size() > 2) fail("_codecs.encode takes 2 arguments");
    // UTF-8 code points < 256 back to single bytes.
    const std::string& s = a[0]->text;
    charge(s.size(), 1);  // one str can be encoded again and again
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else if ((c == 0xc2 || c == 0xc3) && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xc0) == 0x80) {
        out += static_cast<char>(((c & 0x1f) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3f));
        ++i;
      } else {
        fail("_codecs.encode: character outside latin1");
      }
    }
    return arena_->bytes(std::move(out));
  }

  Value* make_set(const std::vector<Value*>& a) {
    Value* out = arena_->make(Kind::Set);
    if (a.size() > 1) fail("set() takes at most 1 argument");
    if (!a.empty()) {
      if (!a[0]->is(Kind::List) && !a[0]->is(Kind::Tuple)) fail("set() needs a list");
      charge(a[0]->items.size(), Budget::kPointerBytes);
      out->items = a[0]->items;
    }
    return out;
  }

  Value* call(const Value* callable, Value* args) {
    expect(args, Kind::Tuple, "REDUCE arguments");
    const std::string& f = callable->text;
    const auto& a = args->items;
    if (f == "collections.OrderedDict") {
      Value* d = arena_->dict(true);
      if (a.size() > 1) fail("OrderedDict() takes at most 1 argument");
      if (a.size() == 1) {
        if (!a[0]->is(Kind::List) && !a[0]->is(Kind::Tuple)) fail("OrderedDict() argument must be a list of pairs");
        for (Value* pair : a[0]->items) {
          if (!(pair->is(Kind::Tuple) || pair->is(Kind::List)) || pair->items.size() != 2)
            fail("OrderedDict() argument must be a list of pairs");
          set_item(d, pair->items[0], pair->items[1]);
        }
      }
      return d;
    }
    if (f == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(a, true);
    if (f == "torch._utils._rebuild_tensor") return rebuild_tensor(a, false);
    if (f == "torch._utils._rebuild_parameter" || f == "torch._utils._rebuild_parameter_with_state")
      return rebuild_parameter(a);
    if (f == "_codecs.encode") return latin1_bytes(a);
    if (f == "builtins.set" || f == "builtins.frozenset") return make_set(a);
    if (f == "builtins.bytes") {
      if (!a.empty()) fail("bytes() is only allowed without arguments");
      return arena_->bytes("");
    }
    if (f == "torch.Size") {
      if (a.size() != 1) fail("torch.Size takes 1 argument");
      const std::vector<int64_t> sizes = int_tuple(a[0], "torch.Size");
      charge(sizes.size(), Budget::kValueBytes + Budget::kPointerBytes);
      charged_values_ += sizes.size();
      Value* t = arena_->tuple();
      for (const int64_t v : sizes) t->items.push_back(arena_->integer(v));
      return t;
    }
    fail("'" + f + "' cannot be called (it is only allowed as a storage type)");
  }

  void build(Value* state) {
    Value* obj = top();
    if (obj->is(Kind::Dict)) {
      obj->state = state;  // OrderedDict's __dict__, e.g. {'_metadata': ...}
      return;
    }
    if (obj->is(Kind::Tensor)) return;  // _rebuild_parameter_with_state's Python attributes: not needed
    fail(std::string("BUILD on a ") + kind_name(obj->kind) + " is not supported");
  }

  Value* long_value(std::string_view b) {
    if (b.empty()) return arena_->integer(0);
    const bool negative = (static_cast<unsigned char>(b.back()) & 0x80) != 0;
    // Bytes beyond the 8th must be pure sign extension for the value to fit.
    for (size_t i = 8; i < b.size(); ++i)
      if (static_cast<unsigned char>(b[i]) != (negative ? 0xff : 0x00))
        fail("integer of " + std::to_string(b.size()) + " bytes does not fit in 64 bits");
    uint64_t v = negative ? ~uint64_t{0} : 0;
    const size_t n = std::min<size_t>(b.size(), 8);
    for (size_t i = 0; i < n; ++i) {
      v &= ~(uint64_t{0xff} << (8 * i));
      v |= static_cast<uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
    }
    if (b.size() > 8 && ((v >> 63) != 0) != negative) fail("integer does not fit in 64 bits");
    int64_t s;
    std::memcpy(&s, &v, sizeof s);
    return arena_->integer(s);
  }

  void step(unsigned char op);

  std::string_view in_;
  size_t pos_ = 0, op_pos_ = 0;
  const std::string& source_;
  Limits limits_;
  Budget budget_;
  size_t charged_values_ = 0;
  std::shared_ptr<Arena> arena_;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value*> memo_;
  std::unordered_map<std::string, std::shared_ptr<const StorageRef>> storages_;
  std::vector<std::shared_ptr<const StorageRef>> storage_order_;
  int protocol_ = 0;
};

void Machine::step(unsigned char op) {
  switch (op) {
    case 0x80: {  // PROTO
      protocol_ = static_cast<unsigned char>(take(1)[0]);
      if (protocol_ > 5) fail("pickle protocol " + std::to_string(protocol_) + " is not supported (max 5)");
      return;
    }
    case 0x95: length_arg(8); return;  // FRAME: framing is only an I/O hint
    case '(':  // MARK
      if (marks_.size() >= limits_.max_mark_depth) fail("MARKs nested too deep");
      marks_.push_back(stack_.size());
      return;
    case '0': pop(); return;        // POP
    case '1': pop_mark(); return;   // POP_MARK
    case '2': push_again(top()); return;  // DUP
    case 'N': push(arena_->none()); return;
    case 0x88: push(arena_->boolean(true)); return;
    case 0x89: push(arena_->boolean(false)); return;
    case 'J': {  // BININT
      const auto v = static_cast<uint32_t>(take_le(4));
      int32_t s;
      std::memcpy(&s, &v, sizeof s);
      push(arena_->integer(s));
      return;
    }
    case 'K': push(arena_->integer(static_cast<int64_t>(take_le(1)))); return;  // BININT1
    case 'M': push(arena_->integer(static_cast<int64_t>(take_le(2)))); return;  // BININT2
    case 0x8a: push(long_value(take(length_arg(1)))); return;                  // LONG1
    case 0x8b: {                                                                // LONG4
      const auto n = static_cast<int32_t>(take_le(4));
      if (n < 0 || static_cast<size_t>(n) > in_.size() - pos_) fail("bad LONG4 length");
      push(long_value(take(static_cast<size_t>(n))));
      return;
    }
    case 'G': {  // BINFLOAT, big-endian
      const std::string_view b = take(8);
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(b[i]);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      push(arena_->real(d));
      return;
    }
    case 0x8c: push(arena_->str(std::string(take(length_arg(1))))); return;  // SHORT_BINUNICODE
    case 'X': push(arena_->str(std::string(take(length_arg(4))))); return;   // BINUNICODE
    case 0x8d: push(arena_->str(std::string(take(length_arg(8))))); return;  // BINUNICODE8
    case 'U': push(arena_->str(std::string(take(length_arg(1))))); return;   // SHORT_BINSTRING (Python 2 str)
    case 'T': push(arena_->str(std::string(take(length_arg(4))))); return;   // BINSTRING
    case 'C': push(arena_->bytes(std::string(take(length_arg(1))))); return;  // SHORT_BINBYTES
    case 'B': push(arena_->bytes(std::string(take(length_arg(4))))); return;  // BINBYTES
    case 0x8e: push(arena_->bytes(std::string(take(length_arg(8))))); return;  // BINBYTES8
    case 0x96: push(arena_->bytes(std::string(take(length_arg(8))))); return;  // BYTEARRAY8
    case '}': push(arena_->dict()); return;
    case ']': push(arena_->list()); return;
    case ')': push(arena_->tuple()); return;
    case 0x8f: push(arena_->make(Kind::Set)); return;  // EMPTY_SET
    case 'd': {  // DICT
      auto items = pop_mark();
      if (items.size() % 2) fail("DICT with an odd number of items");
      Value* d = arena_->dict();
      for (size_t i = 0; i < items.size(); i += 2) set_item(d, items[i], items[i + 1]);
      push(d);
      return;
    }
    case 'l': push(arena_->list(pop_mark())); return;   // LIST
    case 't': push(arena_->tuple(pop_mark())); return;  // TUPLE
    case 0x85: case 0x86: case 0x87: {                   // TUPLE1..3
      const size_t n = op - 0x84u;
      if (stack_.size() < floor() + n) fail("stack underflow");
      std::vector<Value*> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
      stack_.resize(stack_.size() - n);
      push(arena_->tuple(std::move(items)));
      return;
    }
    case 0x91: {  // FROZENSET
      Value* s = arena_->make(Kind::Set);
      s->items = pop_mark();
      push(s);
      return;
    }
    case 'a': {  // APPEND
      Value* v = pop();
      Value* list = top();
      if (!list->is(Kind::List)) fail(std::string("APPEND to a ") + kind_name(list->kind));
      charge(1, Budget::kPointerBytes);
      list->items.push_back(v);
      return;
    }
    case 'e': {  // APPENDS
      auto items = pop_mark();
      Value* list = top();
      if (!list->is(Kind::List)) fail(std::string("APPENDS to a ") + kind_name(list->kind));
      list->items.insert(list->items.end(), items.begin(), items.end());
      return;
    }
    case 0x90: {  // ADDITEMS
      auto items = pop_mark();
      Value* set = top();
      if (!set->is(Kind::Set)) fail(std::string("ADDITEMS to a ") + kind_name(set->kind));
      set->items.insert(set->items.end(), items.begin(), items.end());
      return;
    }
    case 's': {  // SETITEM
      Value* v = pop();
      Value* k = pop();
      Value* d = top();
      if (!d->is(Kind::Dict)) fail(std::string("SETITEM on a ") + kind_name(d->kind));
      set_item(d, k, v);
      return;
    }
    case 'u': {  // SETITEMS
      auto items = pop_mark();
      Value* d = top();
      if (!d->is(Kind::Dict)) fail(std::string("SETITEMS on a ") + kind_name(d->kind));
      if (items.size() % 2) fail("SETITEMS with an odd number of items");
      for (size_t i = 0; i < items.size(); i += 2) set_item(d, items[i], items[i + 1]);
      return;
    }
    case 'q': memo_put(take_le(1), top()); return;  // BINPUT
    case 'r': memo_put(take_le(4), top()); return;  // LONG_BINPUT
    case 0x94: memo_put(memo_.size(), top()); return;  // MEMOIZE
    case 'h': push_again(memo_get(take_le(1))); return;  // BINGET
    case 'j': push_again(memo_get(take_le(4))); return;  // LONG_BINGET
    case 'c': {  // GLOBAL "module\nname\n"
      const std::string module(take_line());
      const std::string name(take_line());
      push(resolve_global(module, name));
      return;
    }
    case 0x93: {  // STACK_GLOBAL
      Value* name = pop();
      Value* module = pop();
      if (!module->is(Kind::Str) || !name->is(Kind::Str)) fail("STACK_GLOBAL needs two str");
      push(resolve_global(module->text, name->text));
      return;
    }
    case 'R': {  // REDUCE
      Value* args = pop();
      Value* callable = pop();
      expect(callable, Kind::Global, "REDUCE callable");
      push(call(callable, args));
      return;
    }
    case 0x81: {  // NEWOBJ: cls.__new__(cls, *args)
      Value* args = pop();
      Value* cls = pop();
      expect(cls, Kind::Global, "NEWOBJ class");
      expect(args, Kind::Tuple, "NEWOBJ arguments");
      if (cls->text != "collections.OrderedDict" && cls->text != "builtins.set")
        fail("NEWOBJ of '" + cls->text + "' is not supported");
      push(cls->text == "builtins.set" ? arena_->make(Kind::Set) : arena_->dict(true));
      return;
    }
    case 0x92: {  // NEWOBJ_EX
      pop();  // kwargs
      Value* args = pop();
      Value* cls = pop();
      expect(cls, Kind::Global, "NEWOBJ_EX class");
      expect(args, Kind::Tuple, "NEWOBJ_EX arguments");
      if (cls->text != "collections.OrderedDict") fail("NEWOBJ_EX of '" + cls->text + "' is not supported");
      push(arena_->dict(true));
      return;
    }
    case 'b': build(pop()); return;  // BUILD
    case 'Q': push(persistent_load(pop())); return;  // BINPERSID
    case 'P': fail("text persistent ids (PERSID) are not supported");
    case 'i': case 'o': fail("INST/OBJ opcodes (object construction) are refused");
    case 0x82: case 0x83: case 0x84: fail("extension registry opcodes (EXT1/2/4) are refused");
    case 0x97: case 0x98: fail("out-of-band buffers (pickle protocol 5 NEXT_BUFFER) are not supported");
    case 'I': case 'L': case 'F': case 'S': case 'V': case 'p': case 'g':
      fail(std::string("text opcode '") + static_cast<char>(op) + "' of pickle protocol 0 is not supported");
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", op);
      fail(std::string("unknown opcode ") + buf + " (not a pickle, or corrupt)");
    }
  }
}

}  // namespace

size_t Limits::budget_for(size_t input_bytes) const {
  const size_t proportional = input_bytes > max_budget_bytes / std::max<size_t>(budget_per_input_byte, 1)
                                  ? max_budget_bytes
                                  : input_bytes * budget_per_input_byte;
  return std::min(max_budget_bytes, std::max(min_budget_bytes, proportional));
}

Document parse_prefix(std::string_view data, const std::string& source, size_t* consumed, const Limits& limits) {
  return Machine(data, source, limits).run(consumed);
}

Document parse(std::string_view data, const std::string& source, const Limits& limits) {
  size_t consumed = 0;
  Document doc = parse_prefix(data, source, &consumed, limits);
  return doc;
}

}  // namespace expnet::pickle
