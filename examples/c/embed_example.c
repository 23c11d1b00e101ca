/*
 * Embedding libsparsejit in a host program, using only <sparsejit/sparsejit.h>:
 *  - the host's allocator and logger are handed to the context;
 *  - a CSR matrix is borrowed from the host's arrays (zero-copy);
 *  - C = A*A is planned once, explained, and its result written into arrays the host allocated
 *    (sj_plan_execute_sizes -> allocate -> sj_pending_fill);
 *  - the result is checked against a naive product computed here.
 * Usage: embed_example MATRIX.mtx   (exit status 0 when everything matched)
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sparsejit/sparsejit.h>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    sj_status s_ = (call);                                                                \
    if (s_ != SJ_OK) {                                                                    \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, sj_last_error_message(),             \
              sj_status_string(s_));                                                      \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* The host's allocator: counts what the library takes, so leaks would show. */
static long live_blocks = 0;
static void *host_alloc(size_t size, size_t align, void *user) {
  (void)user;
  void *p = NULL;
  if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size) != 0) return NULL;
  ++live_blocks;
  return p;
}
static void host_free(void *p, size_t size, void *user) {
  (void)size;
  (void)user;
  --live_blocks;
  free(p);
}

/* The host's logger. */
static int log_lines = 0;
static void host_log(sj_log_level level, const char *message, void *user) {
  (void)user;
  ++log_lines;
  printf("  [host log, level %d] %s\n", (int)level, message);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MATRIX.mtx\n", argv[0]);
    return 2;
  }
  printf("libsparsejit %s\n", sj_version(NULL, NULL, NULL));

  sj_config cfg;
  CHECK(sj_config_init(&cfg));
  cfg.allocator.alloc = host_alloc;
  cfg.allocator.free = host_free;
  cfg.log_callback = host_log;
  cfg.log_level = SJ_LOG_DEBUG;
  cfg.disable_disk_cache = 1;
  sj_context *ctx = NULL;
  CHECK(sj_context_create(&cfg, &ctx));

  /* Read the file, then rebuild it as a tensor that borrows host-owned arrays. */
  sj_tensor *file = NULL;
  CHECK(sj_tensor_read_file(ctx, argv[1], &file));
  sj_tensor_info info;
  CHECK(sj_tensor_get_info(file, &info));
  if (info.format != SJ_FORMAT_CSR || info.dims[0] != info.dims[1] || info.value_type != SJ_VALUE_F64) {
    fprintf(stderr, "need a square real matrix\n");
    return 1;
  }
  const int64_t n = info.dims[0];
  const int64_t *fpos;
  const void *fcrd;
  const void *fval;
  int64_t nnz;
  CHECK(sj_tensor_get_level(file, 1, &fpos, NULL, &fcrd, NULL));
  CHECK(sj_tensor_get_values(file, &fval, &nnz));
  int64_t *row_ptr = malloc(sizeof(int64_t) * (n + 1));
  int64_t *col = malloc(sizeof(int64_t) * (nnz ? nnz : 1));
  double *val = malloc(sizeof(double) * (nnz ? nnz : 1));
  memcpy(row_ptr, fpos, sizeof(int64_t) * (n + 1));
  for (int64_t k = 0; k < nnz; ++k)
    col[k] = info.index_type == SJ_INDEX_INT32 ? ((const int32_t *)fcrd)[k] : ((const int64_t *)fcrd)[k];
  memcpy(val, fval, sizeof(double) * nnz);
  CHECK(sj_tensor_destroy(file));

  sj_tensor *A = NULL;
  CHECK(sj_tensor_create_csr(ctx, n, n, SJ_INDEX_INT64, SJ_VALUE_F64, row_ptr, col, val, 0, &A));
  sj_tensor_info ainfo;
  CHECK(sj_tensor_get_info(A, &ainfo));
  printf("A: %lld x %lld, %lld stored, borrowed (owns_arrays = %d)\n", (long long)n, (long long)n,
         (long long)nnz, ainfo.owns_arrays);

  /* Plan C = A*A with int32 result coordinates, and explain the choice. */
  sj_op_options opt;
  CHECK(sj_op_options_init(&opt));
  opt.output_index_type = SJ_INDEX_INT32;
  const sj_tensor *ops[2] = {A, A};
  sj_plan *plan = NULL;
  CHECK(sj_plan_create(ctx, SJ_OP_SPGEMM, ops, 2, &opt, &plan));
  const char *text = NULL;
  CHECK(sj_plan_explain_text(plan, &text));
  printf("%s", text);

  /* Pass 1: sizes. Pass 2: the library fills arrays the host owns. */
  sj_output_sizes sizes;
  memset(&sizes, 0, sizeof sizes);
  sizes.struct_size = sizeof sizes;
  sj_pending *pending = NULL;
  CHECK(sj_plan_execute_sizes(plan, ops, 2, &sizes, &pending));
  printf("C: %lld x %lld, %lld stored\n", (long long)sizes.dims[0], (long long)sizes.dims[1],
         (long long)sizes.values_len);
  sj_output_buffers out;
  memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.pos = malloc(sizeof(int64_t) * sizes.pos_len);
  out.pos_capacity = sizes.pos_len;
  out.crd = malloc(sizeof(int32_t) * (sizes.crd_len ? sizes.crd_len : 1));
  out.crd_capacity = sizes.crd_len;
  out.values = malloc(sizeof(double) * (sizes.values_len ? sizes.values_len : 1));
  out.values_capacity = sizes.values_len - 1; /* one short: refused, nothing written */
  if (sizes.values_len > 0 && sj_pending_fill(pending, &out) != SJ_ERR_INVALID_ARGUMENT) {
    fprintf(stderr, "a short buffer was not refused\n");
    return 1;
  }
  out.values_capacity = sizes.values_len;
  CHECK(sj_pending_fill(pending, &out));
  CHECK(sj_pending_destroy(pending));

  /* Check against a naive dense-accumulator product. */
  double *acc = calloc((size_t)n, sizeof(double));
  char *seen = calloc((size_t)n, 1);
  const int32_t *ccol = out.crd;
  const double *cval = out.values;
  long mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t count = 0;
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p)
      for (int64_t q = row_ptr[col[p]]; q < row_ptr[col[p] + 1]; ++q) {
        if (!seen[col[q]]) ++count;
        seen[col[q]] = 1;
        acc[col[q]] += val[p] * val[q];
      }
    if (out.pos[i + 1] - out.pos[i] != count) ++mismatches;
    for (int64_t p = out.pos[i]; p < out.pos[i + 1]; ++p) {
      double want = acc[ccol[p]];
      if (!seen[ccol[p]] || fabs(cval[p] - want) > 1e-9 * fmax(1.0, fabs(want))) ++mismatches;
    }
    for (int64_t p = row_ptr[i]; p < row_ptr[i + 1]; ++p)
      for (int64_t q = row_ptr[col[p]]; q < row_ptr[col[p] + 1]; ++q) acc[col[q]] = 0, seen[col[q]] = 0;
  }

  CHECK(sj_plan_destroy(plan));
  CHECK(sj_tensor_destroy(A));
  CHECK(sj_context_destroy(ctx));
  printf("naive check: %ld mismatches; host log lines: %d; library blocks still allocated: %ld\n", mismatches,
         log_lines, live_blocks);
  free(acc);
  free(seen);
  free(out.pos);
  free(out.crd);
  free(out.values);
  free(row_ptr);
  free(col);
  free(val);
  if (mismatches != 0 || log_lines == 0 || live_blocks != 0) {
    printf("embed_example: FAILED\n");
    return 1;
  }
  printf("embed_example: OK\n");
  return 0;
}
