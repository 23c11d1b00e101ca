#include "src/einsum_format.hpp"

#include <algorithm>
#include <cctype>

#include "src/error.hpp"

namespace sj::einsum {
namespace {

std::string lower(std::string_view s) {
  std::string r;
  for (char c : s) r += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string dims_text(const Tensor& t) {
  std::string s;
  for (int m = 0; m < t.order; ++m) s += cat(m ? "x" : "", t.dims[m]);
  return s;
}

}  // namespace

FormatSpec parse_format(std::string_view text_in, const Expression& e, const Access& a) {
  const int order = static_cast<int>(a.indices.size());
  const std::string who = cat("format of ", a.tensor, " ('", std::string(text_in.substr(0, 80)), "')");
  if (text_in.size() > 256) fail(SJ_ERR_FORMAT, "format of ", a.tensor, ": longer than 256 characters");
  std::string text = lower(trim(text_in));
  if (order == 0) {
    if (text == "dense" || text == "scalar") return FormatSpec{};
    fail(SJ_ERR_FORMAT, who, ": ", a.tensor, " is a scalar; its format can only be 'dense'");
  }
  static const std::pair<const char*, sj_format> kNamed[] = {
      {"csr", SJ_FORMAT_CSR},   {"csc", SJ_FORMAT_CSC},     {"dcsr", SJ_FORMAT_DCSR},
      {"coo", SJ_FORMAT_COO},   {"dense", SJ_FORMAT_DENSE}, {"csf", SJ_FORMAT_CSF},
      {"sparse-vector", SJ_FORMAT_SPARSE_VECTOR}, {"sparse", SJ_FORMAT_SPARSE_VECTOR},
  };
  for (auto& [name, f] : kNamed)
    if (text == name) {
      try {
        return format_spec(f, order);
      } catch (const Error& err) {
        fail(SJ_ERR_FORMAT, who, ": ", err.what(), " (", a.tensor, " is used as ", Expression::access_text(e, a), ")");
      }
    }
  if (text.find('(') == std::string::npos)
    fail(SJ_ERR_FORMAT, who, ": unknown format (expected csr, csc, dcsr, coo, dense, csf, sparse-vector or a level "
         "list such as \"dense(i),compressed(j)\")");
  // A level list: kind(index), kind(index), ...
  FormatSpec spec;
  spec.order = order;
  std::vector<bool> seen(order, false);
  int level = 0;
  size_t p = 0;
  while (p < text.size()) {
    size_t open = text.find('(', p);
    size_t close = text.find(')', p);
    if (open == std::string::npos || close == std::string::npos || close < open)
      fail(SJ_ERR_FORMAT, who, ": level ", level, ": expected kind(index)");
    std::string kind = trim(std::string_view(text).substr(p, open - p));
    // index names are case-sensitive: take them from the trimmed original text
    std::string orig = trim(text_in);
    std::string idx = trim(std::string_view(orig).substr(open + 1, close - open - 1));
    if (level >= order)
      fail(SJ_ERR_FORMAT, who, ": more levels than the ", order, " indices of ", Expression::access_text(e, a));
    LevelKind k;
    bool unique = true;
    if (kind == "dense") k = LevelKind::Dense;
    else if (kind == "compressed") k = LevelKind::Compressed;
    else if (kind == "compressed-nonunique" || kind == "compressed_nonunique") k = LevelKind::Compressed, unique = false;
    else if (kind == "singleton") k = LevelKind::Singleton;
    else fail(SJ_ERR_FORMAT, who, ": level ", level, ": unknown kind '", kind, "' (dense, compressed, compressed-nonunique, singleton)");
    int mode = -1;
    for (int m = 0; m < order; ++m)
      if (e.index_names[a.indices[m]] == idx) mode = m;
    if (mode < 0)
      fail(SJ_ERR_FORMAT, who, ": level ", level, " names index '", idx, "', which ", Expression::access_text(e, a),
           " does not use");
    if (seen[mode]) fail(SJ_ERR_FORMAT, who, ": index '", idx, "' named by two levels");
    seen[mode] = true;
    if (k == LevelKind::Singleton && level == 0)
      fail(SJ_ERR_FORMAT, who, ": a singleton level needs a parent level (it cannot be first)");
    spec.kinds[level] = k;
    spec.unique[level] = unique;
    spec.mode_order[level] = mode;
    ++level;
    p = close + 1;
    while (p < text.size() && (text[p] == ',' || std::isspace(static_cast<unsigned char>(text[p])))) ++p;
  }
  if (level != order)
    fail(SJ_ERR_FORMAT, who, ": ", level, " levels for the ", order, " indices of ", Expression::access_text(e, a));
  for (int l = 1; l < order; ++l)
    if (!spec.unique[l - 1] && spec.kinds[l] != LevelKind::Singleton)
      fail(SJ_ERR_FORMAT, who, ": a compressed-nonunique level must be followed by a singleton level");
  if (!spec.unique[order - 1]) fail(SJ_ERR_FORMAT, who, ": the last level cannot be non-unique");
  return spec;
}

void check_operand(const Tensor& t, const Expression& e, const Access& a) {
  const int order = static_cast<int>(a.indices.size());
  if (t.order != order)
    fail(SJ_ERR_SHAPE_MISMATCH, a.tensor, " is ", t.order == 0 ? std::string("a scalar") : cat(t.order, "-D (", dims_text(t), ")"),
         " but the expression uses ", Expression::access_text(e, a));
}

std::string format_text(const FormatSpec& spec, const Expression& e, const Access& a) {
  if (spec.order == 0) return "scalar";
  std::string s;
  for (int l = 0; l < spec.order; ++l) {
    const char* kind = spec.kinds[l] == LevelKind::Dense ? "dense"
                       : spec.kinds[l] == LevelKind::Singleton ? "singleton"
                       : spec.unique[l] ? "compressed" : "compressed-nonunique";
    s += cat(l ? "," : "", kind, "(", e.index_names[a.indices[spec.mode_order[l]]], ")");
  }
  return s;
}

std::string format_text(const FormatSpec& spec) {
  if (spec.order == 0) return "scalar";
  std::string s;
  for (int l = 0; l < spec.order; ++l) {
    const char* kind = spec.kinds[l] == LevelKind::Dense ? "dense"
                       : spec.kinds[l] == LevelKind::Singleton ? "singleton"
                       : spec.unique[l] ? "compressed" : "compressed-nonunique";
    s += cat(l ? "," : "", kind, "(", spec.mode_order[l], ")");
  }
  return s;
}

bool all_dense(const FormatSpec& spec) {
  for (int l = 0; l < spec.order; ++l)
    if (spec.kinds[l] != LevelKind::Dense) return false;
  return true;
}

}  // namespace sj::einsum
