// Runs the portable reference kernel of an operation on prepared operands (see
// src/operation.hpp). The oracle of every test and the fallback of every generated kernel.
#pragma once
#include "src/operation.hpp"

namespace sj {

Tensor run_reference(const OpRequest& req, const PreparedOperands& prepared, const Allocator& alloc);

}  // namespace sj
