/* The LLVM module is loaded on first use (jit/llvm_module.hpp), from a plain C program against
 * the shared library, as a host links it.
 *   llvm_on_demand loads    a context and a SpGEMM map no libLLVM; an index-notation plan
 *                           compiles its loop nest (which maps the module and libLLVM) and runs it.
 *   llvm_on_demand missing [WHY]  run with SPARSEJIT_LLVM_MODULE naming no file (or a library
 *                           that is no module): the same plan runs the reference evaluator,
 *                           explain says why (WHY among it, when given), as does
 *                           sj_einsum_backend_load's SJ_ERR_JIT; no libLLVM is mapped.
 *   llvm_on_demand loads DIR  also: the module mapped is the one in DIR (scripts/check-install.sh:
 *                           an installed library finds the module installed beside it).
 *   llvm_on_demand preload  as loads, but sj_einsum_backend_load (called on a thread of its own,
 *                           as a host reading its data would) maps the module before the plan.
 *   llvm_on_demand tls      loads, then starts threads that take their block of libLLVM's
 *                           thread-local storage until one lands 16 bytes into a page, and leaves
 *                           that thread running at exit: in a sanitizer build, LeakSanitizer's
 *                           exit check must not die on it (tools/sanitizer_default_options.c).
 * In both, the plan is destroyed at exit by a handler registered before the module was loaded,
 * so after libLLVM's static destructors (a host tearing down its globals; under ASan a touch of
 * torn-down LLVM state would be reported).
 * Exit 0 = pass. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlinfo */
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_check.h"
#include "sparsejit/sparsejit.h"
#define EXPECT(cond, ...)               \
  do {                                  \
    if (!(cond)) {                      \
      fprintf(stderr, __VA_ARGS__);     \
      fprintf(stderr, " (%s)\n", #cond); \
      return 1;                         \
    }                                   \
  } while (0)

/* What lives until exit: the plan, its operand and the context, destroyed in that order. */
static sj_plan* g_plan = NULL;
static sj_tensor* g_b = NULL;
static sj_context* g_ctx = NULL;
static void destroy_at_exit(void) {
  sj_plan_destroy(g_plan);
  sj_tensor_destroy(g_b);
  if (sj_context_destroy(g_ctx) != SJ_OK) {
    fprintf(stderr, "context not destroyed at exit: %s\n", sj_last_error_message());
    _exit(1);
  }
}

/* Whether a mapped file's name contains `name` (its line of /proc/self/maps in `line`). */
static int mapped_line(const char* name, char* line, size_t size) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  int found = 0;
  while (!found && fgets(line, (int)size, f)) found = strstr(line, name) != NULL;
  fclose(f);
  return found;
}
static int mapped(const char* name) {
  char line[4096];
  return mapped_line(name, line, sizeof line);
}

/* What a thread-local access in libLLVM's code calls: glibc's __tls_get_addr with the module's
 * TLS id, which allocates the calling thread's block of it on first use (the sanitizer runtime
 * intercepts the call, as it does LLVM's own). */
typedef struct {
  unsigned long module, offset;
} tls_index;
extern void* __tls_get_addr(tls_index*);
static tls_index g_llvm_tls;
static sem_t g_taken;
static int g_at_16;
static void* take_llvm_tls(void* unused) {
  (void)unused;
  const int at_16 = (uintptr_t)__tls_get_addr(&g_llvm_tls) % 4096 == 16;
  g_at_16 = at_16;
  sem_post(&g_taken);
  while (at_16) pause(); /* still running when the process exits */
  return NULL;
}
/* Threads, one at a time, until one's block of libLLVM's TLS starts 16 bytes into a page (about
 * one in sixty under ASan, whose chunk header sits just before it); that thread is left running. */
static int leave_a_thread_with_tls_at_page_offset_16(void) {
  char line[4096];
  EXPECT(mapped_line("libLLVM", line, sizeof line) == 1, "libLLVM is not mapped");
  const char* path = strchr(line, '/');
  line[strcspn(line, "\n")] = 0;
  EXPECT(path != NULL, "no path in %s", line);
  void* llvm = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  EXPECT(llvm != NULL, "cannot open the mapped %s", path);
  size_t id = 0;
  EXPECT(dlinfo(llvm, RTLD_DI_TLS_MODID, &id) == 0 && id != 0, "%s has no thread-local storage", path);
  g_llvm_tls.module = id;
  EXPECT(sem_init(&g_taken, 0, 0) == 0, "no semaphore");
  for (int n = 1; n <= 1000; ++n) {
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, take_llvm_tls, NULL) == 0, "no thread");
    while (sem_wait(&g_taken) != 0) continue; /* sem_post orders g_at_16 before this returns */
    if (g_at_16) {
      printf("thread %d took its libLLVM TLS block 16 bytes into a page; left running at exit\n", n);
      return 0;
    }
    EXPECT(pthread_join(t, NULL) == 0, "join");
  }
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LLVM_ON_DEMAND_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(LLVM_ON_DEMAND_UNDER_ASAN)
  /* ASan's chunk header puts about one block in sixty there: none in 1000 means the test no
   * longer recreates what it guards against. */
  EXPECT(0, "no libLLVM TLS block 16 bytes into a page in 1000 threads under ASan");
#else
  printf("no libLLVM TLS block 16 bytes into a page in 1000 threads (this malloc places none there)\n");
  return 0;
#endif
}

/* sj_einsum_backend_load on a thread of its own; the message is that thread's, so kept here. */
static char g_load_message[1024];
static void* load_backend(void* status) {
  *(sj_status*)status = sj_einsum_backend_load();
  snprintf(g_load_message, sizeof g_load_message, "%s", sj_last_error_message());
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 ||
      (strcmp(argv[1], "loads") != 0 && strcmp(argv[1], "preload") != 0 && strcmp(argv[1], "missing") != 0 &&
       strcmp(argv[1], "tls") != 0))
    return 2;
  const int loads = strcmp(argv[1], "missing") != 0;
  if (atexit(destroy_at_exit) != 0) return 1;
  EXPECT(mapped("libLLVM") == 0, "libLLVM is mapped at start-up");
  sj_config cfg;
  CHECK(sj_config_init(&cfg));
  cfg.disable_disk_cache = 1;
  CHECK(sj_context_create(&cfg, &g_ctx));
  sj_context* ctx = g_ctx;
  /* B = [[1,0,2],[0,3,0],[0,0,0]] */
  int64_t rp[4] = {0, 2, 3, 3};
  int32_t ci[3] = {0, 2, 1};
  double v[3] = {1, 2, 3};
  sj_tensor *c = NULL, *z = NULL;
  CHECK(sj_tensor_create_csr(ctx, 3, 3, SJ_INDEX_INT32, SJ_VALUE_F64, rp, ci, v, SJ_TENSOR_COPY, &g_b));
  sj_tensor* b = g_b;
  CHECK(sj_spgemm(ctx, b, b, NULL, &c));
  EXPECT(mapped("libLLVM") == 0, "a built-in kernel mapped libLLVM");

  if (strcmp(argv[1], "preload") == 0) {
    pthread_t t;
    sj_status st = SJ_ERR_INTERNAL;
    EXPECT(pthread_create(&t, NULL, load_backend, &st) == 0 && pthread_join(t, NULL) == 0, "no thread");
    EXPECT(st == SJ_OK, "sj_einsum_backend_load: %s: %s", sj_status_string(st), g_load_message);
    EXPECT(mapped("libLLVM") == 1 && mapped("libsparsejit-llvm.so") == 1, "sj_einsum_backend_load mapped no module");
    CHECK(sj_einsum_backend_load()); /* loaded: returns at once */
  }

  /* B .* B^T keeps (0,0) = 1 and (1,1) = 9, through a compiled loop nest. */
  const sj_tensor* ops[2] = {b, b};
  sj_plan* p = NULL;
  CHECK(sj_einsum_plan(ctx, "Z(i,j) = B(i,j) * C(j,i)", ops, 2, NULL, "csr", NULL, &p));
  g_plan = p;
  const char* text = NULL;
  CHECK(sj_plan_explain_text(p, &text));
  const char* json = NULL;
  CHECK(sj_plan_explain(p, &json));
  if (loads) {
    EXPECT(strstr(text, "kernel: LLVM ORC, from compiled") != NULL, "not compiled:\n%s", text);
    char line[4096];
    EXPECT(mapped("libLLVM") == 1 && mapped_line("libsparsejit-llvm.so", line, sizeof line) == 1,
           "compiled without mapping the module");
    if (argc == 3) {
      char want[4096];
      snprintf(want, sizeof want, " %s/libsparsejit-llvm.so", argv[2]);
      EXPECT(strstr(line, want) != NULL, "the module mapped is not the one in %s: %s", argv[2], line);
    }
  } else {
    EXPECT(strstr(text, "kernel: reference evaluator (LLVM failed") != NULL, "no fallback:\n%s", text);
    EXPECT(strstr(json, "cannot load the LLVM module libsparsejit-llvm.so (set SPARSEJIT_LLVM_MODULE to its path)") !=
                   NULL &&
               (argc < 3 || strstr(json, argv[2]) != NULL),
           "explain does not say why:\n%s", json);
    const sj_status st = sj_einsum_backend_load();
    EXPECT(st == SJ_ERR_JIT, "sj_einsum_backend_load gave %s", sj_status_string(st));
    EXPECT(strstr(sj_last_error_message(), "cannot load the LLVM module libsparsejit-llvm.so") != NULL &&
               (argc < 3 || strstr(sj_last_error_message(), argv[2]) != NULL),
           "sj_einsum_backend_load does not say why: %s", sj_last_error_message());
    EXPECT(mapped("libLLVM") == 0, "libLLVM mapped without the module");
  }
  CHECK(sj_plan_execute(p, ops, 2, &z));
  sj_tensor_info info;
  CHECK(sj_tensor_get_info(z, &info));
  const int64_t* pos = NULL;
  const void* crd = NULL;
  const void* val = NULL;
  CHECK(sj_tensor_get_level(z, 1, &pos, NULL, &crd, NULL));
  CHECK(sj_tensor_get_values(z, &val, NULL));
  const int32_t* zc = (const int32_t*)crd;
  const double* zv = (const double*)val;
  EXPECT(info.nnz == 2 && pos[1] == 1 && pos[2] == 2 && pos[3] == 2 && zc[0] == 0 && zc[1] == 1 && zv[0] == 1 &&
             zv[1] == 9,
         "wrong result: nnz %lld", (long long)info.nnz);
  if (strcmp(argv[1], "tls") == 0 && leave_a_thread_with_tls_at_page_offset_16() != 0) return 1;
  printf("llvm_on_demand %s: ok\n", argv[1]);
  sj_tensor_destroy(z);
  sj_tensor_destroy(c);
  return 0;  /* the rest at exit */
}
