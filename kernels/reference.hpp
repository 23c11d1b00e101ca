// The reference kernels: portable, obviously-correct C++ for every operation. They are the
// oracle every generated kernel is tested against and the fallback when code generation is
// unavailable or fails. Inputs are already in the orientation each kernel names (the ops
// layer converts formats first) and valid: monotone positions, coordinates in range, sorted
// and unique within each segment.
//
// EXACTNESS CONTRACT (generated kernels must reproduce these results bit for bit):
//   every output value is the semiring sum of its products taken in increasing order of the
//   contracted coordinate k, starting from the FIRST product:
//       acc = p_first;  acc = add(acc, p_next);  ...
//   never from zero(). zero() appears only where no product exists (elements of dense
//   outputs). A sparse output stores an entry iff at least one product formed, whatever its
//   value. Products are mul(left, right) with the operands in the order of the expression
//   (A before B, A before x); ewise_add stores add(a, b), or the one stored value.
#pragma once

#include "kernels/reference_ewise.hpp"
#include "kernels/reference_masked_spgemm.hpp"
#include "kernels/reference_spgemm.hpp"
#include "kernels/reference_spmspv.hpp"
#include "kernels/reference_spmv.hpp"
#include "kernels/reference_transpose.hpp"
