/* Linked into every program of a SPARSEJIT_SANITIZE or SPARSEJIT_TSAN build (CMakeLists.txt).
 *
 * libLLVM-16 has thread-local storage, and the library dlopens it with the LLVM module the
 * first time it compiles a loop nest, so each thread that then runs LLVM code gets a dynamic
 * TLS block from malloc. GCC 12's sanitizer runtime intercepts __tls_get_addr and takes any
 * such block that starts 16 bytes into a page for a pre-2.25 glibc block with a header in
 * front, reading an address and a size from the 16 bytes before it. Under ASan those are a
 * chunk header, where a 48-byte block lands for about one thread in sixty, and LeakSanitizer's
 * exit check then scans that bogus range and dies ("Tracer caught signal 11") after every test
 * passed (tests/llvm_on_demand.c, mode tls). TSan takes the same path and resets the shadow of
 * whatever range it read. Without the interceptor LeakSanitizer still reaches those blocks
 * through glibc's own thread vector, so no leak goes unseen. Options set in the environment
 * (ASAN_OPTIONS, TSAN_OPTIONS) still override these.
 *
 * And under ASan a request for terabytes returns null, as a real allocator's failure does, so
 * the library's SJ_ERR_OUT_OF_MEMORY is what the tests of huge sizes see (tests/test_limits.cpp)
 * rather than ASan aborting the process. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "intercept_tls_get_addr=0:allocator_may_return_null=1"; }
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "intercept_tls_get_addr=0"; }
