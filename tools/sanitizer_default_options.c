/* Linked into every program (tools, tests, benchmarks) of a SPARSEJIT_SANITIZE, SPARSEJIT_TSAN
 * or SPARSEJIT_FUZZ build, the fuzz targets excepted (CMakeLists.txt).
 *
 * intercept_tls_get_addr=0: libLLVM-16 has thread-local storage, and the library dlopens it with
 * the LLVM module the first time it compiles a loop nest or links one from the disk cache, so
 * each thread that then runs LLVM code gets a dynamic TLS block from malloc. The sanitizer
 * runtimes of GCC 12 and clang 14 intercept __tls_get_addr and take any such block that starts
 * 16 bytes into a page for a pre-2.25 glibc block with a header in front, reading an address and
 * a size from the 16 bytes before it. Under ASan those are a chunk header, where a 48-byte block
 * lands for about one thread in sixty, and LeakSanitizer's exit check then scans that bogus
 * range and dies ("Tracer caught signal 11") after every test passed (tests/llvm_on_demand.c,
 * mode tls). TSan takes the same path and resets the shadow of whatever range it read. Without
 * the interceptor LeakSanitizer still counts what ld.so allocates, dynamic TLS blocks among it,
 * as reachable (use_ld_allocations); at worst it could report an object referenced only from
 * dynamic TLS as a leak, never hide one.
 *
 * allocator_may_return_null=1: a request for terabytes returns null, as a real allocator's
 * failure does, rather than aborting the process, so the library's SJ_ERR_OUT_OF_MEMORY is what
 * the tests of huge sizes see (tests/test_limits.cpp).
 *
 * Options set in the environment (ASAN_OPTIONS, TSAN_OPTIONS) still override these, one by one. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "intercept_tls_get_addr=0:allocator_may_return_null=1"; }
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "intercept_tls_get_addr=0:allocator_may_return_null=1"; }
