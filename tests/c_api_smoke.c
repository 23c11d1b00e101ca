/* A plain C program against the installed header and the shared library: reads a matrix,
 * squares it, checks a few invariants, and exercises an error path. Exit 0 = pass. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "c_check.h"
#include "sparsejit/sparsejit.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  sj_context* ctx = NULL;
  sj_config cfg;
  CHECK(sj_config_init(&cfg));
  CHECK(sj_context_create(&cfg, &ctx));
  sj_tensor *a = NULL, *c = NULL, *bad = NULL;
  CHECK(sj_tensor_read_file(ctx, argv[1], &a));
  CHECK(sj_spgemm(ctx, a, a, NULL, &c));
  sj_tensor_info info;
  CHECK(sj_tensor_get_info(c, &info));
  if (info.format != SJ_FORMAT_CSR || info.nnz <= 0) return 1;
  /* Columns sorted within each row. */
  const int64_t* pos;
  const void* crd;
  CHECK(sj_tensor_get_level(c, 1, &pos, NULL, &crd, NULL));
  for (int64_t i = 0; i < info.dims[0]; ++i)
    for (int64_t p = pos[i] + 1; p < pos[i + 1]; ++p)
      if (((const int32_t*)crd)[p] <= ((const int32_t*)crd)[p - 1]) return 1;
  /* An error path: unsorted columns are refused with a message. */
  int64_t rp[2] = {0, 2};
  int32_t ci[2] = {3, 1};
  double v[2] = {1, 2};
  if (sj_tensor_create_csr(ctx, 1, 4, SJ_INDEX_INT32, SJ_VALUE_F64, rp, ci, v, 0, &bad) != SJ_ERR_INVALID_TENSOR) return 1;
  if (strstr(sj_last_error_message(), "coordinates must be sorted") == NULL) return 1;
  printf("c_api_smoke: %s: A*A has %lld entries; version %s\n", argv[1], (long long)info.nnz,
         sj_version(NULL, NULL, NULL));
  sj_tensor_destroy(c);
  sj_tensor_destroy(a);
  CHECK(sj_context_destroy(ctx));
  return 0;
}
