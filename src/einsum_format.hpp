// Per-operand formats of an index-notation call: a named format ("csr", "csc", "dcsr", "coo",
// "dense", "csf", "sparse-vector") or an ordered level list written with the access's own
// index names, e.g. "dense(j),compressed(i)" for C(i,j) stored as CSC. Parsed into the
// runtime's FormatSpec and checked against the tensor, with messages naming the tensor.
#pragma once
#include <string>
#include <string_view>

#include "src/convert.hpp"
#include "src/einsum_parser.hpp"

namespace sj::einsum {

// The FormatSpec `text` names for access `a` of `e` (its order is a's index count). Throws
// SJ_ERR_FORMAT ("format of B: ...") for unknown names, level lists that do not name each of
// the access's indices once, or kinds that do not fit.
FormatSpec parse_format(std::string_view text, const Expression& e, const Access& a);

// Throws SJ_ERR_SHAPE_MISMATCH when tensor `t` cannot be the operand of access `a`
// ("B is 3-D (10x20x30) but the expression uses B(i,j)").
void check_operand(const Tensor& t, const Expression& e, const Access& a);

// "dense(i),compressed(j)" for a spec, with the access's index names; "scalar" for order 0.
std::string format_text(const FormatSpec& spec, const Expression& e, const Access& a);
// The same with mode numbers when there is no access ("dense(0),compressed(1)").
std::string format_text(const FormatSpec& spec);

// True when every level is dense.
bool all_dense(const FormatSpec& spec);

}  // namespace sj::einsum
