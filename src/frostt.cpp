#include "src/frostt.hpp"

#include <algorithm>

#include "src/error.hpp"
#include "src/matrix_market.hpp"  // textio: the helpers shared by the text formats

namespace sj {

namespace {

constexpr int kMaxOrder = 4;

}  // namespace

CooTensor parse_frostt(std::string_view text, std::string_view name) {
  using textio::NumStatus;
  textio::LineCursor cur{text};
  auto error = [&](sj_status status, const auto&... parts) {
    fail(status, name, ":", std::max<int64_t>(cur.line_no, 1), ": ", parts...);
  };

  CooTensor t;
  int64_t first_entry_line = 0;
  std::string_view line;
  // Room for one more field than the widest supported entry, to see "too many".
  std::string_view tok[kMaxOrder + 2];
  while (cur.next(&line)) {
    size_t first = line.find_first_not_of(" \t\r\v\f");
    if (first == std::string_view::npos || line[first] == '#') continue;
    int n = textio::split_tokens(line, tok, kMaxOrder + 2);
    if (t.order == 0) {
      if (n < 2) error(SJ_ERR_PARSE, "expected 'i j ... value', found a single field");
      if (n - 1 > kMaxOrder)
        error(SJ_ERR_UNSUPPORTED, "entry has more than ", kMaxOrder,
              " coordinates; tensors of order 1..", kMaxOrder, " are supported");
      t.order = n - 1;
      first_entry_line = cur.line_no;
      // Entries look alike, so the first line's length estimates the count; the bound is the
      // text itself, never a number read from it.
      size_t estimate = text.size() / (line.size() + 1) + 1;
      for (int m = 0; m < t.order; ++m) t.coords[m].reserve(estimate);
      t.values.reserve(estimate);
    } else if (n != t.order + 1) {
      error(SJ_ERR_PARSE, "expected ", t.order + 1, " fields like line ", first_entry_line,
            ", found ", n > kMaxOrder + 2 ? "more than " : "", std::min(n, kMaxOrder + 2));
    }
    for (int m = 0; m < t.order; ++m) {
      int64_t c = 0;
      NumStatus s = textio::parse_int64(tok[m], &c);
      if (s == NumStatus::malformed)
        error(SJ_ERR_PARSE, "coordinate ", m + 1, " ", textio::quote(tok[m]), " is not an integer");
      if (s == NumStatus::out_of_range || c < 1)
        error(SJ_ERR_PARSE, "coordinate ", m + 1, " ", textio::quote(tok[m]),
              " out of range (coordinates are 1-based 64-bit integers)");
      t.coords[m].push_back(c - 1);
      t.dims[m] = std::max(t.dims[m], c);
    }
    double v = 0;
    if (textio::parse_real(tok[t.order], &v) != NumStatus::ok)
      error(SJ_ERR_PARSE, "value ", textio::quote(tok[t.order]), " is not a number");
    t.values.push_back(v);
  }
  if (t.order == 0) error(SJ_ERR_PARSE, "no entries (a .tns file without entries has no order)");
  return t;
}

CooTensor read_frostt(const std::string& path) {
  std::string text = textio::read_file(path);
  return parse_frostt(text, path);
}

void write_frostt(const CooTensor& t, const std::string& path) {
  textio::check_writable(t, path, kMaxOrder, "FROSTT");
  std::string out;
  out.reserve(t.values.size() * static_cast<size_t>(8 * t.order + 26));
  for (size_t k = 0; k < t.values.size(); ++k) {
    for (int m = 0; m < t.order; ++m) {
      textio::append_int(&out, t.coords[m][k] + 1);
      out += ' ';
    }
    textio::append_real(&out, t.values[k]);
    out += '\n';
  }
  textio::replace_file(path, out);
}

}  // namespace sj
