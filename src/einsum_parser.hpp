// The index-notation front end: an expression such as
//   A(i,j) = B(i,k) * C(k,j) * D(k,j)      or      a(i) = B(i,j,k) * (C(i,k,j) + E(i,k,j))
// parsed into an output access and a sum of product terms (parentheses are distributed, so
// every term is a plain product of tensor accesses). Which semiring '+' and '*' mean is an
// option of the call (sj_op_options::semiring), not part of the text.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sj::einsum {

// One tensor used with an index list: B(i,k). A bare name (or "a()") is a scalar.
struct Access {
  std::string tensor;
  std::vector<int> indices;  // ids into Expression::index_names
  size_t offset = 0;         // where the tensor name starts in the text (for messages)
};

// A product of accesses.
struct Term {
  std::vector<Access> factors;
};

struct Expression {
  std::string text;                      // as given
  Access output;
  std::vector<Term> terms;               // summed
  std::vector<std::string> index_names;  // every index, in order of first appearance
  std::vector<std::string> operands;     // right-hand-side tensors, in order of first appearance

  int operand_of(const Access& a) const;  // position of a.tensor in operands
  bool is_free(int index) const;          // appears in the output
  // Canonical text with single spaces ("A(i,j) = B(i,k) * C(k,j)"), used in cache keys.
  std::string canonical() const;
  static std::string access_text(const Expression& e, const Access& a);
};

// Parses `text`. Throws sj::Error(SJ_ERR_PARSE, "expression:COL: ...\n  TEXT\n  ^") pointing at
// the offending character, for syntax errors and for semantic ones (an index repeated within
// one access, an output index missing from a term, the output used on the right-hand side,
// a tensor used with two different orders, more than 4 indices). Never crashes on any input.
Expression parse(std::string_view text);

// Whether factors with these indices (each in its level order) form the chained matrix product
// out(i,j) = L(i,k) * R(k,j) with three distinct indices; sets *left to the factor that is L.
// The planner asks it of its operands' level orders before choosing the built-in SpGEMM, and
// the CLI of the raw accesses to guess whether a plan compiles anything.
bool chained_matrix_product(const std::vector<int>& a, const std::vector<int>& b, const std::vector<int>& out,
                            int* left);

}  // namespace sj::einsum
