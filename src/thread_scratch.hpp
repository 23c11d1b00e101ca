// Thread-local workspaces reached once per call, not once per use.
#pragma once

namespace sj {

// `x` (a thread_local) through an address the optimiser cannot see through. In a shared
// library every access to a thread_local is a __tls_get_addr call (~20 instructions), and
// GCC, treating that address as a constant it may recompute, calls it again at each use
// inside a loop instead of keeping it in a register: one call per row of a SpGEMM, ~13 in a
// 1 us product (callgrind, Tina_AskCal). Getters of workspaces return their object through
// this, so callers hold a plain reference.
template <class T> [[gnu::always_inline]] inline T& tls_pinned(T& x) {
  T* p = &x;
  asm("" : "+r"(p));
  return *p;
}

}  // namespace sj
