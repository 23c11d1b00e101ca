// The sink that generated index-notation kernels emit sparse output entries into (apart from
// kernels/einsum_output.hpp so that the LLVM module, jit/llvm_backend.cpp, reads its layout
// without the library's headers behind that one).
#pragma once
#include <cstdint>
#include <type_traits>

namespace sj::einsum {

// The kernel calls sj_einsum_emit(sink, coords, value) with coordinates in mode order, unless
// the sink's lane has room: then generated code appends the entry itself, with no call (a
// call per entry was about half of y(i) = A(i,k) * x(k) into a sparse vector). The lane serves
// layouts of one compressed level after at most two dense ones: the entry's coordinate is
// coords[lane_j_mode], its dense position coords[lane_p_mode[0]] * lane_p_mul[0] +
// coords[lane_p_mode[1]] * lane_p_mul[1] - lane_p_base. While lane_n < lane_cap the kernel
// writes lane_crd[lane_n] and lane_val[lane_n], adds one to lane_counts[position] and
// increments lane_n; at lane_cap it calls emit, which grows the arrays and opens the lane
// again. lane_cap 0: every entry through emit. Generated code reads the fields at their
// offsets (jit/llvm_backend.cpp), so the struct stays standard-layout.
struct EmitSink {
  void (*emit)(EmitSink* self, const int64_t* coords, double value) = nullptr;
  int64_t* lane_crd = nullptr;
  double* lane_val = nullptr;
  int64_t* lane_counts = nullptr;
  int64_t lane_n = 0, lane_cap = 0;
  int64_t lane_j_mode = 0, lane_p_base = 0;
  int64_t lane_p_mode[2] = {0, 0}, lane_p_mul[2] = {0, 0};
};
static_assert(std::is_standard_layout_v<EmitSink>);

}  // namespace sj::einsum
