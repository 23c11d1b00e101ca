/* CHECK(call) for the plain C test programs (c_api_smoke.c, llvm_on_demand.c): a call that does
 * not return SJ_OK prints its status and message and makes main return 1. */
#ifndef SPARSEJIT_TESTS_C_CHECK_H
#define SPARSEJIT_TESTS_C_CHECK_H
#include <stdio.h>

#include "sparsejit/sparsejit.h"

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    sj_status s_ = (call);                                                                           \
    if (s_ != SJ_OK) {                                                                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call, sj_status_string(s_), sj_last_error_message()); \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

#endif
