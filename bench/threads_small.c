/* One library, each operation planned twice on the same operands (options.threads 1 and 2),
 * the two plans executed alternately in one process: the time at 2 threads over the time at 1.
 *
 * Why: on a small input a call must not get slower because the machine has more cores. The
 * library decides per call whether the work is worth a second thread (min_parallel_work), but
 * a driver that reaches that decision only after a pass of its own (a per-row work prefix, a
 * bound) pays the pass at 2 threads and not at 1: small SpGEMMs took 1.04-1.48x as long at 2
 * threads until the thirty-seventh session. Alternating the two plans in one process keeps the
 * ratio steady on this shared machine, where separate runs differ by 10-40%.
 *
 * Usage: threads_small MATRIX.mtx [rounds] [calls_per_batch]   (a square matrix)
 *   Operations: A*A recomputing its structure (plan option recompute_structure), A<A> = A*A,
 *   A*x with x sparse (10% of the columns) and dense, A .* A, A + A, A', A .* A', and the
 *   index-notation plans y(i)=A(i,k)*x(k), C(i,j)=A(i,k)*B(k,j), Z(i,j)=A(i,j)*B(i,j).
 *   Not pinned: the context takes the CPUs the process may use (run it where 2 are free).
 * Prints the median ns per call of each plan and 2T/1T.
 * Build: cc -O2 -Iinclude bench/threads_small.c -Lbuild -lsparsejit (scripts/threads-small.sh). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sparsejit/sparsejit.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int by_value(const void* p, const void* q) {
  const double a = *(const double*)p, b = *(const double*)q;
  return a < b ? -1 : a > b;
}

static void check(sj_status s, const char* what) {
  if (s != SJ_OK) {
    fprintf(stderr, "%s failed: %s\n", what, sj_last_error_message());
    exit(1);
  }
}

typedef struct {
  const char* name;
  sj_op op;         /* for op plans */
  const char* ein;  /* an index-notation expression instead, or NULL */
  int n;            /* operand count */
  int which[3];     /* 0 = A, 1 = sparse x, 2 = dense x */
  int recompute, transpose_b;
} Case;

static const Case kCases[] = {
    {"A*A (recomputed)", SJ_OP_SPGEMM, NULL, 2, {0, 0, 0}, 1, 0},
    {"A<A> = A*A", SJ_OP_SPGEMM_MASKED, NULL, 3, {0, 0, 0}, 0, 0},
    {"A*x, x sparse", SJ_OP_SPMSPV, NULL, 2, {0, 1, 0}, 0, 0},
    {"A*x, x dense", SJ_OP_SPMV, NULL, 2, {0, 2, 0}, 0, 0},
    {"A .* A", SJ_OP_EWISE_MULT, NULL, 2, {0, 0, 0}, 0, 0},
    {"A + A", SJ_OP_EWISE_ADD, NULL, 2, {0, 0, 0}, 0, 0},
    {"A'", SJ_OP_TRANSPOSE, NULL, 1, {0, 0, 0}, 0, 0},
    {"A .* A'", SJ_OP_EWISE_MULT, NULL, 2, {0, 0, 0}, 0, 1},
    {"einsum y(i)=A(i,k)*x(k)", SJ_OP_SPMV, "y(i)=A(i,k)*x(k)", 2, {0, 2, 0}, 0, 0},
    {"einsum C(i,j)=A(i,k)*B(k,j)", SJ_OP_SPGEMM, "C(i,j)=A(i,k)*B(k,j)", 2, {0, 0, 0}, 0, 0},
    {"einsum Z(i,j)=A(i,j)*B(i,j)", SJ_OP_EWISE_MULT, "Z(i,j)=A(i,j)*B(i,j)", 2, {0, 0, 0}, 0, 0},
};

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MATRIX.mtx [rounds] [calls_per_batch]\n", argv[0]);
    return 2;
  }
  const int rounds = argc > 2 ? atoi(argv[2]) : 41;
  const int calls = argc > 3 ? atoi(argv[3]) : 100;
  if (rounds < 1 || calls < 1) return 2;
  sj_context* ctx = NULL;
  check(sj_context_create(NULL, &ctx), "sj_context_create");
  sj_tensor *read = NULL, *A = NULL;
  check(sj_tensor_read_file(ctx, argv[1], &read), "sj_tensor_read_file");
  check(sj_tensor_convert(ctx, read, SJ_FORMAT_CSR, NULL, SJ_INDEX_INT32, &A), "sj_tensor_convert");
  sj_tensor_destroy(read);
  sj_tensor_info info;
  check(sj_tensor_get_info(A, &info), "sj_tensor_get_info");
  if (info.dims[0] != info.dims[1]) {
    fprintf(stderr, "%s is %lldx%lld: a square matrix is needed\n", argv[1], (long long)info.dims[0],
            (long long)info.dims[1]);
    return 2;
  }
  const int64_t n = info.dims[1];
  const int64_t nx = n / 10 > 0 ? n / 10 : 1;
  int32_t* xi = malloc(sizeof(int32_t) * (size_t)nx);
  double* xv = malloc(sizeof(double) * (size_t)nx);
  double* xd = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; i < nx; ++i) {  /* evenly spaced: increasing and within [0, n) */
    xi[i] = (int32_t)(i * n / nx);
    xv[i] = 1.0 + (double)i;
  }
  for (int64_t i = 0; i < n; ++i) xd[i] = (double)(i % 7);
  sj_tensor *xs = NULL, *xdense = NULL;
  check(sj_tensor_create_sparse_vector(ctx, n, nx, SJ_INDEX_INT32, SJ_VALUE_F64, xi, xv, SJ_TENSOR_COPY, &xs),
        "sj_tensor_create_sparse_vector");
  check(sj_tensor_create_dense(ctx, 1, &n, SJ_VALUE_F64, xd, SJ_TENSOR_COPY, &xdense), "sj_tensor_create_dense");
  const sj_tensor* pool[3] = {A, xs, xdense};
  double* t[3] = {NULL, malloc(sizeof(double) * (size_t)rounds), malloc(sizeof(double) * (size_t)rounds)};
  printf("%s: %lldx%lld, nnz %lld; median ns per call over %d alternated rounds of %d calls\n", argv[1],
         (long long)n, (long long)n, (long long)info.nnz, rounds, calls);
  for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; ++c) {
    const Case* k = &kCases[c];
    const sj_tensor* ops[3];
    for (int i = 0; i < k->n; ++i) ops[i] = pool[k->which[i]];
    sj_plan* plan[3] = {NULL, NULL, NULL};
    for (int th = 1; th <= 2; ++th) {
      sj_op_options o;
      check(sj_op_options_init(&o), "sj_op_options_init");
      o.threads = th;
      o.recompute_structure = k->recompute;
      o.transpose_b = k->transpose_b;
      if (k->ein)
        check(sj_einsum_plan(ctx, k->ein, ops, k->n, NULL, NULL, &o, &plan[th]), k->name);
      else
        check(sj_plan_create(ctx, k->op, ops, k->n, &o, &plan[th]), k->name);
    }
    for (int r = 0; r < rounds; ++r)
      for (int q = 0; q < 2; ++q) {  /* each plan first in turn */
        const int th = (r + q) % 2 + 1;
        const double t0 = now_ns();
        for (int i = 0; i < calls; ++i) {
          sj_tensor* out = NULL;
          check(sj_plan_execute(plan[th], ops, k->n, &out), k->name);
          sj_tensor_destroy(out);
        }
        t[th][r] = (now_ns() - t0) / calls;
      }
    for (int th = 1; th <= 2; ++th) {
      qsort(t[th], (size_t)rounds, sizeof(double), by_value);
      sj_plan_destroy(plan[th]);
    }
    const double m1 = t[1][rounds / 2], m2 = t[2][rounds / 2];
    printf("  %-28s 1T %10.0f  2T %10.0f  2T/1T %.2f\n", k->name, m1, m2, m2 / m1);
  }
  free(t[1]);
  free(t[2]);
  free(xi);
  free(xv);
  free(xd);
  sj_tensor_destroy(xs);
  sj_tensor_destroy(xdense);
  sj_tensor_destroy(A);
  sj_context_destroy(ctx);
  return 0;
}
