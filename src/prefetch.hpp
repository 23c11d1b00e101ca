// A software prefetch that the compiler keeps. GCC 12's dead-code elimination drops a
// __builtin_prefetch whose address comes from a load inside a loop: the push walk's look-ahead
// of a column's first lines (crd + pos[x.idx[p + 8]]) was missing from the binary (objdump;
// a 12-line loop of the same shape keeps one prefetch of three at -O2, all three with
// -fno-tree-dce), so on x86-64 the instruction is emitted as volatile assembly, which no pass
// removes. (Gustavson's look-ahead of B's rows kept its prefetches; emitted this way it gained
// nothing, 1.707x against 1.730x the best peer in one run each, so it stays on the builtin.)
#pragma once

namespace sj {

// Fetches the cache line holding `p` into every level (prefetcht0). Never faults, whatever
// `p` points at.
inline void prefetch_line(const void* p) {
#if defined(__x86_64__) && defined(__GNUC__)
  asm volatile("prefetcht0 (%0)" : : "r"(p));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace sj
