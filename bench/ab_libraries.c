/* Two builds of libsparsejit in one process, timed alternately on the same call.
 *
 * Why: this machine is shared, and a tiny call's time moves by 10-40% between two runs of the
 * same binary (other processes, frequency), more than most changes to the per-call path
 * make. Loading the old and the new library side by side (dlopen, RTLD_LOCAL: each keeps its
 * own symbols and state) and alternating short batches of calls puts both under the same
 * load; the ratio of their medians is then stable to ~1% where separate runs disagree by 20%.
 * callgrind's instruction counts are no substitute: a change that took 155 instructions off
 * a 2,700-instruction SpMSpV call (a per-thread cache of small blocks, replacing glibc's
 * tcache) was no faster here (new/old 0.99-1.04).
 *
 * Usage: ab_libraries LIB_A LIB_B MATRIX.mtx OP [x_entries] [rounds] [calls_per_batch]
 *   OP: spmspv (drop-in sj_spmspv + sj_tensor_destroy), spmspv-plan (sj_plan_execute + destroy),
 *       spmspv-into (sj_plan_execute_into caller buffers), spgemm (drop-in A*A + destroy; A square),
 *       spgemm-recompute (a plan of A*A with options.recompute_structure: the whole product every
 *       execution, as the peers compute it; sj_plan_execute + destroy).
 *   x has x_entries entries (default 3), evenly spaced (at most the column count).
 * Prints the minimum and median ns per call of each and B/A of the medians.
 * Build: cc -O2 -Iinclude bench/ab_libraries.c -ldl (scripts/ab-libraries.sh does it). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sparsejit/sparsejit.h"

typedef enum { OP_SPMSPV, OP_SPMSPV_PLAN, OP_SPMSPV_INTO, OP_SPGEMM, OP_SPGEMM_RECOMPUTE } Op;

/* The operation named on the command line, or exit with the list of names. */
static Op parse_op(const char* name) {
  static const char* const names[] = {"spmspv", "spmspv-plan", "spmspv-into", "spgemm", "spgemm-recompute"};
  for (int k = 0; k < 5; ++k)
    if (strcmp(name, names[k]) == 0) return (Op)k;
  fprintf(stderr, "unknown op %s (spmspv, spmspv-plan, spmspv-into, spgemm, spgemm-recompute)\n", name);
  exit(2);
}

typedef struct {
  const char* path;
  sj_status (*context_create)(const sj_config*, sj_context**);
  sj_status (*read_file)(sj_context*, const char*, sj_tensor**);
  sj_status (*get_info)(const sj_tensor*, sj_tensor_info*);
  sj_status (*sparse_vector)(sj_context*, int64_t, int64_t, sj_index_type, sj_value_type, const void*, const void*,
                             uint32_t, sj_tensor**);
  sj_status (*spmspv)(sj_context*, const sj_tensor*, const sj_tensor*, const sj_op_options*, sj_tensor**);
  sj_status (*spgemm)(sj_context*, const sj_tensor*, const sj_tensor*, const sj_op_options*, sj_tensor**);
  sj_status (*options_init)(sj_op_options*);
  sj_status (*plan_create)(sj_context*, sj_op, const sj_tensor* const*, int, const sj_op_options*, sj_plan**);
  sj_status (*plan_execute)(sj_plan*, const sj_tensor* const*, int, sj_tensor**);
  sj_status (*plan_execute_into)(sj_plan*, const sj_tensor* const*, int, const sj_output_buffers*, sj_output_sizes*);
  sj_status (*tensor_destroy)(sj_tensor*);
  const char* (*last_error)(void);
  sj_context* ctx;
  sj_tensor *A, *x;
  sj_plan* plan;
  int32_t* yi;
  double* yv;
  int64_t rows;
} Lib;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void die(const Lib* L, const char* what) {
  fprintf(stderr, "%s: %s failed: %s\n", L->path, what, L->last_error ? L->last_error() : "");
  exit(1);
}

static void* symbol(void* h, const char* path, const char* name) {
  void* s = dlsym(h, name);
  if (!s) {
    fprintf(stderr, "%s: no symbol %s\n", path, name);
    exit(1);
  }
  return s;
}

static void load(Lib* L, const char* path, const char* mtx, Op op, int nx) {
  memset(L, 0, sizeof *L);
  L->path = path;
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    exit(1);
  }
  *(void**)&L->context_create = symbol(h, path, "sj_context_create");
  *(void**)&L->read_file = symbol(h, path, "sj_tensor_read_file");
  *(void**)&L->get_info = symbol(h, path, "sj_tensor_get_info");
  *(void**)&L->sparse_vector = symbol(h, path, "sj_tensor_create_sparse_vector");
  *(void**)&L->spmspv = symbol(h, path, "sj_spmspv");
  *(void**)&L->spgemm = symbol(h, path, "sj_spgemm");
  *(void**)&L->options_init = symbol(h, path, "sj_op_options_init");
  *(void**)&L->plan_create = symbol(h, path, "sj_plan_create");
  *(void**)&L->plan_execute = symbol(h, path, "sj_plan_execute");
  *(void**)&L->plan_execute_into = symbol(h, path, "sj_plan_execute_into");
  *(void**)&L->tensor_destroy = symbol(h, path, "sj_tensor_destroy");
  *(void**)&L->last_error = symbol(h, path, "sj_last_error_message");
  if (L->context_create(NULL, &L->ctx) != SJ_OK) die(L, "sj_context_create");
  if (L->read_file(L->ctx, mtx, &L->A) != SJ_OK) die(L, "sj_tensor_read_file");
  sj_tensor_info info;
  if (L->get_info(L->A, &info) != SJ_OK) die(L, "sj_tensor_get_info");
  L->rows = info.dims[0];
  const int64_t n = info.dims[1];
  if (nx > n) nx = (int)n;
  int32_t* idx = malloc(sizeof(int32_t) * (size_t)(nx > 0 ? nx : 1));
  double* val = malloc(sizeof(double) * (size_t)(nx > 0 ? nx : 1));
  for (int i = 0; i < nx; ++i) {  /* evenly spaced: increasing and within [0, n) */
    idx[i] = (int32_t)((int64_t)i * n / nx + n / nx / 2);
    val[i] = 1.0 + i;
  }
  if (L->sparse_vector(L->ctx, n, nx, SJ_INDEX_INT32, SJ_VALUE_F64, idx, val, SJ_TENSOR_COPY, &L->x) != SJ_OK)
    die(L, "sj_tensor_create_sparse_vector");
  free(idx);
  free(val);
  if (op == OP_SPMSPV_PLAN || op == OP_SPMSPV_INTO) {
    const sj_tensor* ops[2] = {L->A, L->x};
    sj_tensor* y = NULL;  /* one drop-in call first, as a caller's first call would */
    if (L->spmspv(L->ctx, L->A, L->x, NULL, &y) != SJ_OK) die(L, "sj_spmspv");
    L->tensor_destroy(y);
    if (L->plan_create(L->ctx, SJ_OP_SPMSPV, ops, 2, NULL, &L->plan) != SJ_OK) die(L, "sj_plan_create");
    L->yi = malloc(sizeof(int32_t) * (size_t)(L->rows + 1));
    L->yv = malloc(sizeof(double) * (size_t)(L->rows + 1));
  }
  if (op == OP_SPGEMM_RECOMPUTE) {
    const sj_tensor* ops[2] = {L->A, L->A};
    sj_op_options o;
    if (L->options_init(&o) != SJ_OK) die(L, "sj_op_options_init");
    o.recompute_structure = 1;
    if (L->plan_create(L->ctx, SJ_OP_SPGEMM, ops, 2, &o, &L->plan) != SJ_OK) die(L, "sj_plan_create");
  }
}

/* Mean ns per call over `calls` calls of `op`. */
static double batch(Lib* L, Op op, int calls) {
  const double t0 = now_ns();
  if (op == OP_SPMSPV) {
    for (int i = 0; i < calls; ++i) {
      sj_tensor* y = NULL;
      if (L->spmspv(L->ctx, L->A, L->x, NULL, &y) != SJ_OK) die(L, "sj_spmspv");
      L->tensor_destroy(y);
    }
  } else if (op == OP_SPGEMM) {
    for (int i = 0; i < calls; ++i) {
      sj_tensor* c = NULL;
      if (L->spgemm(L->ctx, L->A, L->A, NULL, &c) != SJ_OK) die(L, "sj_spgemm");
      L->tensor_destroy(c);
    }
  } else if (op == OP_SPGEMM_RECOMPUTE) {
    const sj_tensor* ops[2] = {L->A, L->A};
    for (int i = 0; i < calls; ++i) {
      sj_tensor* c = NULL;
      if (L->plan_execute(L->plan, ops, 2, &c) != SJ_OK) die(L, "sj_plan_execute");
      L->tensor_destroy(c);
    }
  } else if (op == OP_SPMSPV_PLAN) {
    const sj_tensor* ops[2] = {L->A, L->x};
    for (int i = 0; i < calls; ++i) {
      sj_tensor* y = NULL;
      if (L->plan_execute(L->plan, ops, 2, &y) != SJ_OK) die(L, "sj_plan_execute");
      L->tensor_destroy(y);
    }
  } else {
    const sj_tensor* ops[2] = {L->A, L->x};
    sj_output_buffers b;
    memset(&b, 0, sizeof b);
    b.struct_size = sizeof b;
    b.crd = L->yi;
    b.values = L->yv;
    b.crd_capacity = b.values_capacity = L->rows + 1;
    for (int i = 0; i < calls; ++i) {
      sj_output_sizes s;
      memset(&s, 0, sizeof s);
      s.struct_size = sizeof s;
      if (L->plan_execute_into(L->plan, ops, 2, &b, &s) != SJ_OK) die(L, "sj_plan_execute_into");
    }
  }
  return (now_ns() - t0) / calls;
}

static int by_value(const void* p, const void* q) {
  const double a = *(const double*)p, b = *(const double*)q;
  return a < b ? -1 : a > b;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s LIB_A LIB_B MATRIX.mtx OP [x_entries] [rounds] [calls_per_batch]\n", argv[0]);
    return 2;
  }
  const Op op = parse_op(argv[4]);  /* before any library is loaded */
  const int nx = argc > 5 ? atoi(argv[5]) : 3;
  const int rounds = argc > 6 ? atoi(argv[6]) : 41;
  const int calls = argc > 7 ? atoi(argv[7]) : 20000;
  if (rounds < 1 || calls < 1) return 2;
  static Lib a, b;  /* the same path twice is one library (dlopen counts references) */
  load(&a, argv[1], argv[3], op, nx);
  load(&b, argv[2], argv[3], op, nx);
  batch(&a, op, calls / 10 + 1);  /* warm: plans kept, code and data in cache */
  batch(&b, op, calls / 10 + 1);
  double* ta = malloc(sizeof(double) * (size_t)rounds);
  double* tb = malloc(sizeof(double) * (size_t)rounds);
  for (int r = 0; r < rounds; ++r) {  /* alternated, each side first in turn */
    if (r % 2 == 0) {
      ta[r] = batch(&a, op, calls);
      tb[r] = batch(&b, op, calls);
    } else {
      tb[r] = batch(&b, op, calls);
      ta[r] = batch(&a, op, calls);
    }
  }
  qsort(ta, (size_t)rounds, sizeof(double), by_value);
  qsort(tb, (size_t)rounds, sizeof(double), by_value);
  printf("%s %s x=%d: A min %.1f med %.1f ns | B min %.1f med %.1f ns | B/A (medians) %.3f\n", argv[4], argv[3], nx, ta[0],
         ta[rounds / 2], tb[0], tb[rounds / 2], tb[rounds / 2] / ta[rounds / 2]);
  free(ta);
  free(tb);
  return 0;
}
