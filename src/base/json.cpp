#include "base/json.hpp"

#include <cctype>
#include <cstdlib>

namespace dtmpi::json {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  bool parse(Value& v) {
    if (!value(v, 0)) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool lit(const char* w) {
    const std::string t(w);
    if (s_.compare(i_, t.size(), t) != 0) return false;
    i_ += t.size();
    return true;
  }
  bool string(std::string& out) {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '"') {
        ++i_;
        return true;
      }
      if (s_[i_] == '\\' && ++i_ >= s_.size()) return false;
      out += s_[i_];
    }
    return false;
  }
  bool value(Value& v, int depth) {
    if (depth > 16) return false;
    ws();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') {
      v.kind = Value::kObject;
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
      for (;;) {
        ws();
        std::string key;
        if (i_ >= s_.size() || !string(key)) return false;
        ws();
        if (i_ >= s_.size() || s_[i_++] != ':') return false;
        if (!value(v.fields[key], depth + 1)) return false;
        ws();
        if (i_ >= s_.size()) return false;
        if (s_[i_] == ',') { ++i_; continue; }
        if (s_[i_] == '}') return ++i_, true;
        return false;
      }
    }
    if (c == '[') {
      v.kind = Value::kArray;
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
      for (;;) {
        v.items.emplace_back();
        if (!value(v.items.back(), depth + 1)) return false;
        ws();
        if (i_ >= s_.size()) return false;
        if (s_[i_] == ',') { ++i_; continue; }
        if (s_[i_] == ']') return ++i_, true;
        return false;
      }
    }
    if (c == '"') {
      v.kind = Value::kString;
      return string(v.text);
    }
    if (lit("true")) return v.kind = Value::kBool, v.boolean = true, true;
    if (lit("false")) return v.kind = Value::kBool, v.boolean = false, true;
    if (lit("null")) return v.kind = Value::kNull, true;
    // numbers, and Google Benchmark's NaN / Infinity / -Infinity (strtod reads them)
    char* end = nullptr;
    v.number = std::strtod(s_.c_str() + i_, &end);
    if (end == s_.c_str() + i_) return false;
    v.kind = Value::kNumber;
    i_ = static_cast<size_t>(end - s_.c_str());
    return true;
  }
  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

bool parse(const std::string& text, Value& out) {
  out = Value{};
  return Parser(text).parse(out);
}

const Value* field(const Value& o, const char* name, Value::Kind kind) {
  if (o.kind != Value::kObject) return nullptr;
  auto it = o.fields.find(name);
  return it != o.fields.end() && it->second.kind == kind ? &it->second : nullptr;
}

}  // namespace dtmpi::json
