#include "src/huge_pages.hpp"

#include <cstdlib>

#include <sys/mman.h>

namespace sj {

void* huge_page_allocate(size_t bytes) {
  if (bytes > static_cast<size_t>(-1) - kHugePageBytes) return nullptr;
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
#if defined(MADV_HUGEPAGE)
  if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace sj
