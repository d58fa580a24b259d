// A small JSON reader (no dependency): the performance model's file
// (transport/model_json.cpp) and dtmpi-scope's Google Benchmark results
// (tools/scope/scope_results.cpp). Numbers are doubles; NaN and Infinity, as
// Google Benchmark writes them, are read as numbers; a string's escapes keep
// the escaped character (\" -> ", \\ -> \, \n -> n: nothing read needs more).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace dtmpi::json {

struct Value {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  double number = 0;
  bool boolean = false;
  std::string text;
  std::vector<Value> items;
  std::map<std::string, Value> fields;
};

// Parses the whole of `text` into `out`; false for anything that is not one
// JSON value (nesting deeper than 16 levels included).
bool parse(const std::string& text, Value& out);

// The member `name` of object `o` when it has that kind, else nullptr.
const Value* field(const Value& o, const char* name, Value::Kind kind);

}  // namespace dtmpi::json
