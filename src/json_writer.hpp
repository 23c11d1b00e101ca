// A minimal streaming JSON writer for explain output (no JSON library ships with our
// dependencies). Handles commas and string escaping; the caller keeps the nesting right.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/error.hpp"

namespace sj {

class JsonWriter {
 public:
  JsonWriter& begin_object() { open('{'); return *this; }
  JsonWriter& end_object() { close('}'); return *this; }
  JsonWriter& begin_array() { open('['); return *this; }
  JsonWriter& end_array() { close(']'); return *this; }
  JsonWriter& key(std::string_view k) {
    comma();
    string(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view v) { comma(); string(v); return *this; }
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(bool v) { comma(); out_ += v ? "true" : "false"; return *this; }
  JsonWriter& value(int64_t v) { comma(); out_ += std::to_string(v); return *this; }
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(double v) {
    comma();
    if (std::isfinite(v)) append_part(out_, v);
    else out_ += "null";
    return *this;
  }
  // Inserts an already-rendered JSON value.
  JsonWriter& raw(std::string_view json) { comma(); out_ += json; return *this; }
  template <class T> JsonWriter& field(std::string_view k, const T& v) { key(k); return value(v); }
  const std::string& str() const { return out_; }

 private:
  void comma() {
    if (after_key_) { after_key_ = false; return; }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void open(char c) { comma(); out_ += c; first_.push_back(true); }
  void close(char c) { out_ += c; first_.pop_back(); }
  void string(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            snprintf(buf, sizeof buf, "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace sj
