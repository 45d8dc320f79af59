// Protocol-2 pickler in torch.save's conventions, and describe().
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/unpickler.h"
#include "expnet/checkpoint/pickler.h"

namespace expnet::pickle {
namespace {

class Writer {
 public:
  explicit Writer(int max_depth) : max_depth_(max_depth) {}

  std::string run(const Value& root) {
    count_references(root);
    out_ += "\x80\x02";
    value(root, 0);
    out_ += '.';
    return std::move(out_);
  }

 private:
  void op(char c) { out_ += c; }
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      le(static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      op('M');
      le(static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      le(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    } else {  // LONG1: shortest two's complement little-endian
      std::string bytes;
      uint64_t u;
      std::memcpy(&u, &v, sizeof u);
      for (int i = 0; i < 8; ++i) bytes += static_cast<char>((u >> (8 * i)) & 0xff);
      while (bytes.size() > 1) {
        const auto last = static_cast<unsigned char>(bytes.back());
        const auto prev = static_cast<unsigned char>(bytes[bytes.size() - 2]);
        if ((last == 0x00 && !(prev & 0x80)) || (last == 0xff && (prev & 0x80)))
          bytes.pop_back();
        else
          break;
      }
      out_ += '\x8a';
      le(bytes.size(), 1);
      out_ += bytes;
    }
  }
  void unicode(const std::string& s) {
    op('X');
    le(s.size(), 4);
    out_ += s;
  }
  void global(const std::string& qualified) {
    const size_t dot = qualified.rfind('.');
    std::string module = qualified.substr(0, dot);
    if (module == "builtins") module = "__builtin__";  // protocol 2 names Python 2 modules
    out_ += 'c' + module + '\n' + qualified.substr(dot + 1) + '\n';
  }
  void items(const std::vector<Value*>& values, int depth) {
    for (const Value* v : values) value(*v, depth + 1);
  }
  void storage(const StorageRef& s) {
    op('(');
    unicode("storage");
    global(std::string("torch.") + storage_class(s.dtype));
    unicode(s.key);
    unicode(s.location.empty() ? "cpu" : s.location);
    integer(s.numel);
    op('t');
    op('Q');  // BINPERSID
  }
  void int_tuple(const std::vector<int64_t>& v) {
    op('(');
    for (const int64_t x : v) integer(x);
    op('t');
  }
  void tensor(const TensorInfo& t) {
    if (!t.storage) throw PickleError("pickle writer: tensor without storage");
    if (t.parameter) global("torch._utils._rebuild_parameter");
    global("torch._utils._rebuild_tensor_v2");
    op('(');
    storage(*t.storage);
    integer(t.storage_offset);
    int_tuple(t.sizes);
    int_tuple(t.strides);
    op(t.requires_grad && !t.parameter ? '\x88' : '\x89');
    global("collections.OrderedDict");
    op(')');
    op('R');
    op('t');
    op('R');
    if (t.parameter) {  // _rebuild_parameter(data, requires_grad, backward_hooks)
      op(t.requires_grad ? '\x88' : '\x89');
      global("collections.OrderedDict");
      op(')');
      op('R');
      op('\x87');  // TUPLE3
      op('R');
    }
  }
  void latin1_bytes(const std::string& b) {  // protocol 2: _codecs.encode(str, 'latin1')
    std::string utf8;
    for (const char c : b) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x80) {
        utf8 += c;
      } else {
        utf8 += static_cast<char>(0xc0 | (u >> 6));
        utf8 += static_cast<char>(0x80 | (u & 0x3f));
      }
    }
    global("_codecs.encode");
    unicode(utf8);
    unicode("latin1");
    op('\x86');
    op('R');
  }

  // Values referenced more than once are written once, then fetched from the
  // memo (BINPUT/BINGET, as Python's pickle does): a document that shares
  // sub-objects is written in proportion to its distinct values, not to their
  // expansion (a read file can share exponentially). Iterative: no recursion.
  void count_references(const Value& root) {
    std::vector<const Value*> todo{&root};
    while (!todo.empty()) {
      const Value* v = todo.back();
      todo.pop_back();
      if (++references_[v] > 1) continue;
      todo.insert(todo.end(), v->items.begin(), v->items.end());
      for (const auto& [key, item] : v->entries) todo.insert(todo.end(), {key, item});
      if (v->state) todo.push_back(v->state);
    }
  }
  static bool memoizable(Kind kind) {
    return kind == Kind::List || kind == Kind::Tuple || kind == Kind::Dict || kind == Kind::Set ||
           kind == Kind::Str || kind == Kind::Bytes || kind == Kind::Tensor;
  }
  void memo_op(char short_op, char long_op, uint32_t index) {
    if (index < 256) {
      op(short_op);
      le(index, 1);
    } else {
      op(long_op);
      le(index, 4);
    }
  }

  void value(const Value& v, int depth) {
    if (const auto it = memo_.find(&v); it != memo_.end()) return memo_op('h', 'j', it->second);  // BINGET
    if (depth > max_depth_) throw PickleError("pickle writer: nesting deeper than " + std::to_string(max_depth_));
    if (++written_ > kMaxWrittenValues)
      throw PickleError("pickle writer: more than " + std::to_string(kMaxWrittenValues) + " values to write");
    body(v, depth);
    if (memoizable(v.kind) && references_[&v] > 1) {  // BINPUT, once written (a cycle still hits the depth limit)
      const auto index = static_cast<uint32_t>(memo_.size());
      memo_.emplace(&v, index);
      memo_op('q', 'r', index);
    }
  }

  void body(const Value& v, int depth) {
    switch (v.kind) {
      case Kind::None: op('N'); return;
      case Kind::Bool: op(v.boolean ? '\x88' : '\x89'); return;
      case Kind::Int: integer(v.integer); return;
      case Kind::Float: {
        uint64_t bits;
        std::memcpy(&bits, &v.real, sizeof bits);
        op('G');
        for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
        return;
      }
      case Kind::Str: unicode(v.text); return;
      case Kind::Bytes: latin1_bytes(v.text); return;
      case Kind::List:
        op(']');
        if (!v.items.empty()) {
          op('(');
          items(v.items, depth);
          op('e');
        }
        return;
      case Kind::Tuple:
        if (v.items.empty()) {
          op(')');
        } else if (v.items.size() <= 3) {
          items(v.items, depth);
          op(static_cast<char>(0x84 + v.items.size()));
        } else {
          op('(');
          items(v.items, depth);
          op('t');
        }
        return;
      case Kind::Set:
        global("builtins.set");
        op(']');
        if (!v.items.empty()) {
          op('(');
          items(v.items, depth);
          op('e');
        }
        op('\x85');
        op('R');
        return;
      case Kind::Dict:
        if (v.ordered_dict) {
          global("collections.OrderedDict");
          op(')');
          op('R');
        } else {
          op('}');
        }
        if (!v.entries.empty()) {
          op('(');
          for (const auto& [key, val] : v.entries) {
            value(*key, depth + 1);
            value(*val, depth + 1);
          }
          op('u');
        }
        if (v.state) {
          value(*v.state, depth + 1);
          op('b');
        }
        return;
      case Kind::Global: global(v.text); return;
      case Kind::Storage:
        if (!v.storage) throw PickleError("pickle writer: storage value without storage");
        storage(*v.storage);
        return;
      case Kind::Tensor: tensor(v.tensor); return;
    }
  }

  static constexpr size_t kMaxWrittenValues = 20'000'000;
  int max_depth_;
  size_t written_ = 0;
  std::unordered_map<const Value*, size_t> references_;
  std::unordered_map<const Value*, uint32_t> memo_;
  std::string out_;
};

void render(const Value& v, int depth, int max_depth, std::ostringstream& out) {
  if (depth > max_depth) {
    out << "...";
    return;
  }
  switch (v.kind) {
    case Kind::None: out << "None"; return;
    case Kind::Bool: out << (v.boolean ? "True" : "False"); return;
    case Kind::Int: out << v.integer; return;
    case Kind::Float: out << v.real; return;
    case Kind::Str: out << '\'' << (v.text.size() > 60 ? v.text.substr(0, 60) + "..." : v.text) << '\''; return;
    case Kind::Bytes: out << "b<" << v.text.size() << " bytes>"; return;
    case Kind::Global: out << v.text; return;
    case Kind::Storage: out << "storage(" << v.storage->key << ")"; return;
    case Kind::Tensor: {
      out << "tensor(" << (v.tensor.storage ? dtype_name(v.tensor.storage->dtype) : "?") << ", [";
      for (size_t i = 0; i < v.tensor.sizes.size(); ++i) out << (i ? ", " : "") << v.tensor.sizes[i];
      out << "])";
      return;
    }
    case Kind::List: case Kind::Tuple: case Kind::Set: {
      const char* open = v.is(Kind::List) ? "[" : v.is(Kind::Tuple) ? "(" : "{";
      const char* close = v.is(Kind::List) ? "]" : v.is(Kind::Tuple) ? ")" : "}";
      out << open;
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i == 8) {
          out << ", ... " << v.items.size() << " items";
          break;
        }
        if (i) out << ", ";
        render(*v.items[i], depth + 1, max_depth, out);
      }
      out << close;
      return;
    }
    case Kind::Dict: {
      out << (v.ordered_dict ? "OrderedDict{" : "{");
      for (size_t i = 0; i < v.entries.size(); ++i) {
        if (i == 8) {
          out << ", ... " << v.entries.size() << " entries";
          break;
        }
        if (i) out << ", ";
        render(*v.entries[i].first, depth + 1, max_depth, out);
        out << ": ";
        render(*v.entries[i].second, depth + 1, max_depth, out);
      }
      out << "}";
      return;
    }
  }
}

}  // namespace

std::string write(const Value& root, int max_depth) { return Writer(max_depth).run(root); }

std::string describe(const Value& value, int max_depth) {
  std::ostringstream out;
  render(value, 0, max_depth, out);
  return out.str();
}

}  // namespace expnet::pickle
