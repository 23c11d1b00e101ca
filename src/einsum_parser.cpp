#include "src/einsum_parser.hpp"

#include <algorithm>

#include "src/error.hpp"

namespace sj::einsum {
namespace {

constexpr size_t kMaxText = 4096;   // longer expressions are refused (bounded work, bounded messages)
constexpr size_t kMaxTerms = 64;    // after distributing parentheses
constexpr int kMaxIndices = 4;

// The "expression:COL: message" text with the expression and a caret under column COL.
[[noreturn]] void fail_at(std::string_view text, size_t at, const std::string& what) {
  std::string shown;
  for (char c : text.substr(0, 200)) shown += (static_cast<unsigned char>(c) < 32 || c == 127) ? ' ' : c;
  std::string caret(std::min<size_t>(at, shown.size()), ' ');
  fail(SJ_ERR_PARSE, "expression:", at + 1, ": ", what, "\n  ", shown, "\n  ", caret, "^");
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

std::string describe_char(std::string_view text, size_t at) {
  if (at >= text.size()) return "the end of the expression";
  char c = text[at];
  if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) >= 127)
    return cat("byte 0x", "0123456789abcdef"[(static_cast<unsigned char>(c) >> 4) & 15],
               "0123456789abcdef"[c & 15]);
  return cat("'", c, "'");
}

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  Expression run() {
    if (t_.size() > kMaxText) fail(SJ_ERR_PARSE, "expression: longer than ", kMaxText, " characters");
    Expression e;
    e.text = std::string(t_);
    skip();
    if (p_ >= t_.size()) fail_at(t_, p_, "empty expression (expected e.g. \"A(i,j) = B(i,k) * C(k,j)\")");
    e.output = access(e);
    skip();
    expect('=', "expected '=' after the output");
    std::vector<Term> terms = sum(e);
    skip();
    if (p_ < t_.size()) fail_at(t_, p_, cat("unexpected ", describe_char(t_, p_), " (expected '+', '*' or the end)"));
    e.terms = std::move(terms);
    check(e);
    return e;
  }

 private:
  void skip() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) ++p_;
  }
  void expect(char c, const char* what) {
    skip();
    if (p_ >= t_.size() || t_[p_] != c) fail_at(t_, p_, cat(what, ", found ", describe_char(t_, p_)));
    ++p_;
  }
  std::string name(const char* what) {
    skip();
    if (p_ >= t_.size() || !is_name_start(t_[p_])) fail_at(t_, p_, cat("expected ", what, ", found ", describe_char(t_, p_)));
    size_t s = p_;
    while (p_ < t_.size() && is_name_char(t_[p_])) ++p_;
    if (p_ - s > 32) fail_at(t_, s, "name longer than 32 characters");
    return std::string(t_.substr(s, p_ - s));
  }
  int index_id(Expression& e, const std::string& n) {
    auto it = std::find(e.index_names.begin(), e.index_names.end(), n);
    if (it != e.index_names.end()) return static_cast<int>(it - e.index_names.begin());
    e.index_names.push_back(n);
    return static_cast<int>(e.index_names.size()) - 1;
  }

  Access access(Expression& e) {
    skip();
    Access a;
    a.offset = p_;
    a.tensor = name("a tensor name");
    skip();
    if (p_ < t_.size() && t_[p_] == '(') {
      ++p_;
      skip();
      if (p_ < t_.size() && t_[p_] == ')') {
        ++p_;
        return a;
      }
      for (;;) {
        size_t at = (skip(), p_);
        std::string n = name("an index name");
        int id = index_id(e, n);
        if (std::find(a.indices.begin(), a.indices.end(), id) != a.indices.end())
          fail_at(t_, at, cat("index '", n, "' repeated in ", a.tensor, " (diagonals are not supported)"));
        a.indices.push_back(id);
        if (a.indices.size() > kMaxIndices) fail_at(t_, at, cat(a.tensor, " has more than ", kMaxIndices, " indices"));
        skip();
        if (p_ < t_.size() && t_[p_] == ',') {
          ++p_;
          continue;
        }
        expect(')', "expected ',' or ')' in the index list");
        break;
      }
    }
    return a;
  }

  // sum := product ('+' product)*
  std::vector<Term> sum(Expression& e) {
    if (++depth_ > 32) fail_at(t_, p_, "parentheses nested too deeply");
    std::vector<Term> out = product(e);
    for (;;) {
      skip();
      if (p_ >= t_.size() || t_[p_] != '+') break;
      ++p_;
      std::vector<Term> more = product(e);
      out.insert(out.end(), more.begin(), more.end());
      if (out.size() > kMaxTerms) fail_at(t_, p_, cat("more than ", kMaxTerms, " terms"));
    }
    --depth_;
    return out;
  }
  // product := factor ('*' factor)*, distributing sums inside parentheses
  std::vector<Term> product(Expression& e) {
    std::vector<Term> acc = factor(e);
    for (;;) {
      skip();
      if (p_ >= t_.size() || t_[p_] != '*') break;
      ++p_;
      std::vector<Term> rhs = factor(e);
      if (acc.size() * rhs.size() > kMaxTerms) fail_at(t_, p_, cat("more than ", kMaxTerms, " terms after expanding parentheses"));
      std::vector<Term> next;
      for (auto& l : acc)
        for (auto& r : rhs) {
          Term t = l;
          t.factors.insert(t.factors.end(), r.factors.begin(), r.factors.end());
          if (t.factors.size() > 16) fail_at(t_, p_, "more than 16 factors in one product");
          next.push_back(std::move(t));
        }
      acc = std::move(next);
    }
    return acc;
  }
  std::vector<Term> factor(Expression& e) {
    skip();
    if (p_ < t_.size() && t_[p_] == '(') {
      ++p_;
      std::vector<Term> inner = sum(e);
      expect(')', "expected ')'");
      return inner;
    }
    if (p_ >= t_.size() || !is_name_start(t_[p_]))
      fail_at(t_, p_, cat("expected a tensor or '(', found ", describe_char(t_, p_)));
    Term t;
    t.factors.push_back(access(e));
    return {t};
  }

  void check(Expression& e) {
    // Operands in order of first appearance; each name keeps one order.
    std::vector<size_t> order_of;
    for (auto& term : e.terms)
      for (auto& f : term.factors) {
        if (f.tensor == e.output.tensor)
          fail_at(t_, f.offset, cat("the output ", f.tensor, " also appears on the right-hand side"));
        auto it = std::find(e.operands.begin(), e.operands.end(), f.tensor);
        if (it == e.operands.end()) {
          e.operands.push_back(f.tensor);
          order_of.push_back(f.indices.size());
        } else if (order_of[it - e.operands.begin()] != f.indices.size()) {
          fail_at(t_, f.offset, cat(f.tensor, " is used with ", f.indices.size(), " indices here but ",
                                    order_of[it - e.operands.begin()], " before"));
        }
      }
    // Every output index must be bound by every term (no broadcasting of unknown extent).
    for (size_t ti = 0; ti < e.terms.size(); ++ti)
      for (int idx : e.output.indices) {
        bool found = false;
        for (auto& f : e.terms[ti].factors)
          found |= std::find(f.indices.begin(), f.indices.end(), idx) != f.indices.end();
        if (!found)
          fail_at(t_, e.terms[ti].factors.front().offset,
                  cat("output index '", e.index_names[idx], "' does not appear in ",
                      e.terms.size() > 1 ? cat("term ", ti + 1) : std::string("the right-hand side")));
      }
  }

  std::string_view t_;
  size_t p_ = 0;
  int depth_ = 0;
};

}  // namespace

int Expression::operand_of(const Access& a) const {
  auto it = std::find(operands.begin(), operands.end(), a.tensor);
  return it == operands.end() ? -1 : static_cast<int>(it - operands.begin());
}

bool Expression::is_free(int index) const {
  return std::find(output.indices.begin(), output.indices.end(), index) != output.indices.end();
}

bool chained_matrix_product(const std::vector<int>& a, const std::vector<int>& b, const std::vector<int>& out,
                            int* left) {
  if (a.size() != 2 || b.size() != 2 || out.size() != 2) return false;
  for (int l = 0; l < 2; ++l) {
    const std::vector<int>& L = l == 0 ? a : b;
    const std::vector<int>& R = l == 0 ? b : a;
    if (L[0] == out[0] && L[1] == R[0] && R[1] == out[1] && L[0] != L[1] && L[0] != R[1] && L[1] != R[1]) {
      *left = l;
      return true;
    }
  }
  return false;
}

std::string Expression::access_text(const Expression& e, const Access& a) {
  std::string s = a.tensor;
  if (a.indices.empty()) return s;
  s += '(';
  for (size_t i = 0; i < a.indices.size(); ++i) s += (i ? "," : "") + e.index_names[a.indices[i]];
  return s + ')';
}

std::string Expression::canonical() const {
  std::string s = access_text(*this, output) + " =";
  for (size_t t = 0; t < terms.size(); ++t) {
    s += t ? " + " : " ";
    for (size_t f = 0; f < terms[t].factors.size(); ++f) s += (f ? " * " : "") + access_text(*this, terms[t].factors[f]);
  }
  return s;
}

Expression parse(std::string_view text) { return Parser(text).run(); }

}  // namespace sj::einsum
