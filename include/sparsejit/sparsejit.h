/*
 * libsparsejit — a JIT runtime for sparse tensor algebra on x86-64, with a plain C API.
 *
 * Conventions that hold for every function below:
 *  - Every function returns an sj_status (a few pure queries return a value instead, and say so).
 *    SJ_OK is 0. On failure, sj_last_error_message() returns a message for the calling thread
 *    that says what was wrong and where (e.g. "row 17: column 5 follows 9 (coordinates must be
 *    sorted)").
 *  - No function throws, aborts or reads out of bounds on bad input: null pointers, mismatched
 *    shapes, invalid tensors and corrupt files are errors, not crashes.
 *  - Out-parameters (sj_tensor **out and the like) are written only on success. A failed call
 *    leaves the caller's outputs untouched and allocates nothing that outlives the call.
 *  - Handles returned through out-parameters are owned by the caller and released with the
 *    matching *_destroy function. Destroying NULL is allowed and does nothing.
 *  - Thread safety: a context may be used from many threads at once. A tensor handle may be read
 *    (used as an operand) from many threads at once; destroying it while another thread uses it
 *    is the caller's error. A plan may be executed from many threads at once.
 *  - A tensor created over caller arrays without SJ_TENSOR_COPY borrows them (zero-copy): the
 *    arrays must stay valid and unchanged until the tensor and everything derived from it that
 *    still refers to them (plans) are destroyed.
 *  - The operands of an operation, plan or index-notation call belong to the context of that
 *    call (or of the plan): a handle of another context is refused with SJ_ERR_INVALID_ARGUMENT,
 *    since what a call keeps on its operands comes from its own context's allocator.
 *    sj_tensor_convert, whose input may come from any context, copies a tensor into another.
 */
#ifndef SPARSEJIT_SPARSEJIT_H
#define SPARSEJIT_SPARSEJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In C++ the enums get a fixed underlying type (int, as in C), so any value a C caller passes
 * is representable and can be checked instead of being undefined behaviour. */
#ifdef __cplusplus
#define SJ_ENUM(name) enum name : int
#else
#define SJ_ENUM(name) enum name
#endif

#if defined(SPARSEJIT_BUILDING)
#define SJ_API __attribute__((visibility("default")))
#else
#define SJ_API
#endif

/* ------------------------------------------------------------------------------------------ */
/* Status codes                                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef SJ_ENUM(sj_status) {
  SJ_OK = 0,
  SJ_ERR_NULL_POINTER = 1,     /* a required pointer argument or handle was NULL */
  SJ_ERR_INVALID_ARGUMENT = 2, /* an argument is out of its range or an unknown name */
  SJ_ERR_INVALID_TENSOR = 3,   /* tensor arrays fail validation (unsorted, out of range, ...) */
  SJ_ERR_SHAPE_MISMATCH = 4,   /* operand shapes do not fit the operation */
  SJ_ERR_TYPE_MISMATCH = 5,    /* operand value types differ, or do not fit the semiring */
  SJ_ERR_FORMAT = 6,           /* the tensor's format does not fit (e.g. a 3-D tensor to SpGEMM) */
  SJ_ERR_OVERFLOW = 7,         /* a size or count does not fit the index or size type */
  SJ_ERR_OUT_OF_MEMORY = 8,    /* an allocation failed or would exceed the memory cap */
  SJ_ERR_IO = 9,               /* a file could not be opened, read or written */
  SJ_ERR_PARSE = 10,           /* a file or expression is malformed (message has the line) */
  SJ_ERR_UNSUPPORTED = 11,     /* a valid request this build cannot serve (e.g. complex) */
  SJ_ERR_JIT = 12,             /* code generation failed where no fallback was allowed, or the
                                  LLVM backend could not be loaded (sj_einsum_backend_load) */
  SJ_ERR_CACHE = 13,           /* the cache folder is unsafe or unusable */
  SJ_ERR_INTERNAL = 14         /* a bug: please report with the message */
} sj_status;

/* A static English name for `status` ("SJ_ERR_PARSE: malformed input"); never NULL, also for an
 * unknown value. The text is static (owned by the library, never freed). Never fails.
 * Thread-safe. */
SJ_API const char *sj_status_string(sj_status status);

/* The message of the last failed call on this thread; "" if none. The text is owned by the
 * library; the pointer stays valid until the next sj_* call on this thread. Never fails (never
 * NULL) and never changes the message itself. Thread-safe: each thread has its own message. */
SJ_API const char *sj_last_error_message(void);

/* Library version as "MAJOR.MINOR.PATCH+BUILDID"; never NULL, static (owned by the library).
 * *major, *minor and *patch receive the numbers; any of them may be NULL. Never fails.
 * Thread-safe. */
SJ_API const char *sj_version(int *major, int *minor, int *patch);

/* ------------------------------------------------------------------------------------------ */
/* Vocabulary                                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef SJ_ENUM(sj_level_kind) {
  SJ_LEVEL_DENSE = 0,      /* every coordinate 0..dim-1 is present */
  SJ_LEVEL_COMPRESSED = 1, /* pos[p]..pos[p+1] index a segment of sorted coordinates crd[] */
  SJ_LEVEL_SINGLETON = 2,  /* exactly one coordinate per parent entry (COO's second level) */
  SJ_LEVEL_COMPRESSED_NONUNIQUE = 3 /* compressed, coordinates sorted but may repeat (COO) */
} sj_level_kind;

typedef SJ_ENUM(sj_index_type) { SJ_INDEX_INT32 = 0, SJ_INDEX_INT64 = 1 } sj_index_type;
typedef SJ_ENUM(sj_value_type) { SJ_VALUE_F32 = 0, SJ_VALUE_F64 = 1, SJ_VALUE_BOOL = 2 } sj_value_type;

/* Named formats: shorthand for common level lists. */
typedef SJ_ENUM(sj_format) {
  SJ_FORMAT_CSR = 0,           /* dense(i), compressed(j) */
  SJ_FORMAT_CSC = 1,           /* dense(j), compressed(i) */
  SJ_FORMAT_DCSR = 2,          /* compressed(i), compressed(j) */
  SJ_FORMAT_COO = 3,           /* compressed-nonunique(i), singleton(j); sorted by (i, j) */
  SJ_FORMAT_SPARSE_VECTOR = 4, /* compressed(i) */
  SJ_FORMAT_DENSE = 5,         /* dense in every level, row-major (vectors and matrices) */
  SJ_FORMAT_CSF = 6,           /* 3-D: dense(i), compressed(j), compressed(k) (mode order may vary) */
  SJ_FORMAT_DENSE_COL_MAJOR = 7 /* dense matrix, column-major: dense(j), dense(i) */
} sj_format;

/* Semirings: (add, multiply). Sparse outputs are structural: an entry exists where at least one
 * product was formed, even if its value equals the additive identity. An element-wise add (and
 * an index-notation sum of terms) copies an entry present in only one operand unchanged, as
 * GraphBLAS's eWiseAdd does: the semiring's add applies where both have one. */
typedef SJ_ENUM(sj_semiring) {
  SJ_SEMIRING_PLUS_TIMES = 0, /* (+, *), identity 0 */
  SJ_SEMIRING_MIN_PLUS = 1,   /* (min, +), identity +inf; a NaN product makes the entry NaN */
  SJ_SEMIRING_MAX_TIMES = 2,  /* (max, *), identity -inf; a NaN product makes the entry NaN */
  SJ_SEMIRING_OR_AND = 3,     /* (or, and) on truth values (nonzero = true); products and sums
                                 are 0/1 (a one-sided entry of an add is copied, as above) */
  SJ_SEMIRING_PLUS_PAIR = 4   /* (+, 1): counts matched pairs (an index-notation term of one
                                 factor keeps its value) */
} sj_semiring;

/* Schedules (DESIGN.md "Schedule names"). SJ_SCHEDULE_AUTO lets the runtime choose. Forcing a
 * schedule that cannot serve the call is SJ_ERR_INVALID_ARGUMENT, never a silent fallback. */
typedef SJ_ENUM(sj_schedule) {
  SJ_SCHEDULE_AUTO = 0,
  SJ_SCHEDULE_REFERENCE = 1,
  SJ_SCHEDULE_GUSTAVSON_DENSE = 2,
  SJ_SCHEDULE_GUSTAVSON_HASH = 3,
  SJ_SCHEDULE_INNER = 4,
  SJ_SCHEDULE_TRANSPOSE = 5,
  SJ_SCHEDULE_SEARCH = 6,
  SJ_SCHEDULE_DENSIFY = 7,
  SJ_SCHEDULE_PUSH = 8,
  SJ_SCHEDULE_FUSED = 9
} sj_schedule;

typedef SJ_ENUM(sj_isa) { SJ_ISA_AUTO = 0, SJ_ISA_AVX512 = 1, SJ_ISA_AVX2 = 2, SJ_ISA_SCALAR = 3 } sj_isa;

/* How the SIMD coiteration compares two blocks of coordinates. */
typedef SJ_ENUM(sj_coiter_method) {
  SJ_METHOD_AUTO = 0,
  SJ_METHOD_BROADCAST = 1, /* all pairs by broadcasts (the Splyce paper) */
  SJ_METHOD_ROTATE = 2,    /* rotations of one block (emulated VP2INTERSECT) */
  SJ_METHOD_NATIVE = 3     /* the VP2INTERSECT instruction where the CPU has it, else rotate */
} sj_coiter_method;

typedef SJ_ENUM(sj_op) {
  SJ_OP_SPGEMM = 0,        /* C = A*B */
  SJ_OP_SPGEMM_MASKED = 1, /* C<M> = A*B (operands M, A, B) */
  SJ_OP_SPMSPV = 2,        /* y = A*x, x a sparse vector */
  SJ_OP_SPMV = 3,          /* y = A*x, x a dense vector */
  SJ_OP_EWISE_MULT = 4,    /* C = A .* B (B optionally transposed) */
  SJ_OP_EWISE_ADD = 5,     /* C = A .+ B (B optionally transposed) */
  SJ_OP_TRANSPOSE = 6      /* C = A^T */
} sj_op;

typedef SJ_ENUM(sj_log_level) {
  SJ_LOG_TRACE = 0, SJ_LOG_DEBUG = 1, SJ_LOG_INFO = 2, SJ_LOG_WARN = 3, SJ_LOG_ERROR = 4, SJ_LOG_OFF = 5
} sj_log_level;

/* ------------------------------------------------------------------------------------------ */
/* Context                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Allocator hooks for every buffer the library allocates for a caller-visible result.
 * alloc returns memory aligned to at least `align` bytes or NULL on failure (reported as
 * SJ_ERR_OUT_OF_MEMORY); free receives the size that was asked for. Both must be thread-safe. */
typedef struct sj_allocator {
  void *(*alloc)(size_t size, size_t align, void *user);
  void (*free)(void *ptr, size_t size, void *user);
  void *user;
} sj_allocator;

/* Receives every log message at or above the configured level. Called from any thread; the
 * message is valid only during the call. */
typedef void (*sj_log_callback)(sj_log_level level, const char *message, void *user);

typedef struct sj_config {
  uint32_t struct_size;      /* set by sj_config_init; lets the struct grow compatibly */
  int threads;               /* worker threads, at most 4096; 0 = SPARSEJIT_THREADS if set, else
                                the CPUs this process may use: its affinity mask, capped by a
                                cgroup CPU quota (a container's), not the machine's CPU count */
  const char *cache_dir;     /* persistent cache folder; NULL = SPARSEJIT_CACHE_DIR or default */
  int disable_disk_cache;    /* nonzero: keep kernels in memory only */
  sj_log_level log_level;    /* default SJ_LOG_ERROR (SPARSEJIT_LOG overrides when set) */
  sj_allocator allocator;    /* alloc == NULL: the C library's aligned allocation */
  sj_log_callback log_callback; /* NULL: messages go to stderr */
  void *log_user;
  size_t memory_cap_bytes;   /* 0 = no cap; an output estimated larger fails before allocating */
  size_t kernel_cache_capacity; /* kernels kept in memory (LRU). The kernel cache is one for the
                                   process, shared by every context: a nonzero value sets its
                                   capacity for all of them; 0 (sj_config_init's default)
                                   leaves it as it is (1024 at start) */
} sj_config;

/* Fills *config with the defaults (struct_size = sizeof(sj_config), threads 0, log level
 * SJ_LOG_ERROR, default allocator, no callback, kernel_cache_capacity 0: the process-wide
 * kernel cache as it is). Errors: SJ_ERR_NULL_POINTER.
 * Thread-safe. */
SJ_API sj_status sj_config_init(sj_config *config);

typedef struct sj_context sj_context;

/* Creates a context. config may be NULL for defaults; it is copied (cache_dir included), so it
 * may be freed after the call; the allocator hooks, callback and their user pointers must stay
 * valid for the context's life. *out receives the handle, owned by the caller.
 * Errors: SJ_ERR_NULL_POINTER (out); SJ_ERR_INVALID_ARGUMENT (struct_size 0 or larger than this
 * header's, negative threads, unknown log level, only one of allocator.alloc/free);
 * SJ_ERR_CACHE (a named cache folder that is unsafe). Thread-safe. */
SJ_API sj_status sj_context_create(const sj_config *config, sj_context **out);
/* Destroys the context `ctx` (NULL is allowed and does nothing). Every tensor, plan and pending
 * result made with it must be destroyed first; otherwise SJ_ERR_INVALID_ARGUMENT and the
 * context stays valid. Must not race with other calls that use the context. */
SJ_API sj_status sj_context_destroy(sj_context *ctx);

/* ------------------------------------------------------------------------------------------ */
/* Tensors                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct sj_tensor sj_tensor;

/* Flags for tensor creation. */
#define SJ_TENSOR_COPY 1u    /* copy the caller's arrays (default: borrow them, zero-copy) */
#define SJ_TENSOR_TRUSTED 2u /* skip validation: the caller vouches that the arrays are valid */

/* A general tensor description: `order` modes (1..4), per-level storage.
 * Level l stores mode mode_order[l] (NULL = identity). For each level:
 *   dense:      nothing stored; its size is dims[mode_order[l]];
 *   compressed: pos[l] has (parent entries + 1) int64 positions, crd[l] has pos[l][last]
 *               coordinates of index_type, sorted and unique within each segment;
 *   singleton:  crd[l] has one coordinate per parent entry; pos[l] is ignored.
 * values has one entry per stored leaf (value_type; bool is one byte, 0 or 1). */
typedef struct sj_tensor_desc {
  int order;
  const int64_t *dims;           /* logical dimension of each mode */
  const int *mode_order;         /* level -> mode, or NULL for 0,1,2,... */
  const sj_level_kind *levels;   /* kind of each level */
  sj_index_type index_type;
  sj_value_type value_type;
  const int64_t *const *pos;     /* per level; entries for non-compressed levels ignored */
  const void *const *crd;        /* per level; entries for dense levels ignored */
  const void *values;
} sj_tensor_desc;

/* Creates a tensor from a description (see flags). Validation (unless SJ_TENSOR_TRUSTED):
 * monotone positions starting at 0, coordinates in range, sorted and unique within a segment,
 * and, where a level is SJ_LEVEL_COMPRESSED_NONUNIQUE, whole entries sorted and unique by their
 * coordinates in level order; sizes that fit, non-NULL arrays wherever a level needs them. Without SJ_TENSOR_COPY the
 * arrays are borrowed (see the zero-copy rule at the top); desc itself may be freed after the
 * call. *out receives a handle owned by the caller (sj_tensor_destroy).
 * Errors: SJ_ERR_NULL_POINTER (ctx, desc, out, a needed array); SJ_ERR_INVALID_ARGUMENT (order
 * outside 1..4, unknown kind/type/flag, a bad mode_order, negative dims); SJ_ERR_INVALID_TENSOR
 * (the first violation, with its position); SJ_ERR_OVERFLOW; SJ_ERR_OUT_OF_MEMORY (a copy).
 * Thread-safe. The same flags, validation and errors apply to the create_* shorthands below. */
SJ_API sj_status sj_tensor_create(sj_context *ctx, const sj_tensor_desc *desc, uint32_t flags,
                                  sj_tensor **out);

/* CSR (rows × cols): row_ptr has rows+1 entries, col_ind (index_type: int32 or int64, borrowed
 * zero-copy either way) and values (value_type) have row_ptr[rows]. */
SJ_API sj_status sj_tensor_create_csr(sj_context *ctx, int64_t rows, int64_t cols,
                                      sj_index_type index_type, sj_value_type value_type,
                                      const int64_t *row_ptr, const void *col_ind,
                                      const void *values, uint32_t flags, sj_tensor **out);
/* CSC (rows × cols): col_ptr has cols+1 entries, row_ind (index_type, borrowed zero-copy for
 * int32 and int64) and values (value_type) have col_ptr[cols]. */
SJ_API sj_status sj_tensor_create_csc(sj_context *ctx, int64_t rows, int64_t cols,
                                      sj_index_type index_type, sj_value_type value_type,
                                      const int64_t *col_ptr, const void *row_ind,
                                      const void *values, uint32_t flags, sj_tensor **out);
/* COO triplets (rows × cols, nnz entries of row_ind and col_ind of index_type and of values of
 * value_type) in any order, possibly with duplicates: always copied, sorted by (row, col);
 * duplicates are summed when sum_duplicates is nonzero, else refused with their position. The
 * result is CSR. */
SJ_API sj_status sj_tensor_create_coo(sj_context *ctx, int64_t rows, int64_t cols, int64_t nnz,
                                      sj_index_type index_type, sj_value_type value_type,
                                      const void *row_ind, const void *col_ind,
                                      const void *values, int sum_duplicates, sj_tensor **out);
/* Sparse vector of length n with nnz sorted unique indices (index_type) and nnz values
 * (value_type). */
SJ_API sj_status sj_tensor_create_sparse_vector(sj_context *ctx, int64_t n, int64_t nnz,
                                                sj_index_type index_type,
                                                sj_value_type value_type, const void *indices,
                                                const void *values, uint32_t flags,
                                                sj_tensor **out);
/* Dense tensor (order 1 or 2, row-major, dims[order]) over `values` of value_type. */
SJ_API sj_status sj_tensor_create_dense(sj_context *ctx, int order, const int64_t *dims,
                                        sj_value_type value_type, const void *values,
                                        uint32_t flags, sj_tensor **out);

/* Reads the Matrix Market (.mtx) or FROSTT (.tns) file at `path`; the extension decides
 * (".mtx" or ".tns", case-insensitive, optionally followed by nothing else). Matrices become
 * CSR with int32 coordinates when they fit, 3-D tensors CSF. Values are f64 (pattern files:
 * 1.0). *out receives a tensor owned by the caller whose arrays come from the context's
 * allocator. Errors: SJ_ERR_NULL_POINTER; SJ_ERR_IO (cannot open or read, with the path);
 * SJ_ERR_INVALID_ARGUMENT (another extension); SJ_ERR_PARSE (a malformed file, with the line
 * number); SJ_ERR_OVERFLOW; SJ_ERR_OUT_OF_MEMORY. Thread-safe. */
SJ_API sj_status sj_tensor_read_file(sj_context *ctx, const char *path, sj_tensor **out);
/* Writes tensor `t` to `path`: a matrix or vector (as n×1) as Matrix Market coordinate real
 * general, or a tensor of order 3+ as .tns. The file is written to a temporary name and
 * renamed; t is only read. Errors: SJ_ERR_NULL_POINTER; SJ_ERR_IO (with the path);
 * SJ_ERR_INVALID_ARGUMENT (an unknown extension); SJ_ERR_FORMAT (order 3+ to .mtx).
 * Thread-safe (distinct paths). */
SJ_API sj_status sj_tensor_write_file(sj_context *ctx, const sj_tensor *t, const char *path);

typedef struct sj_tensor_info {
  int order;
  int64_t dims[4];
  int mode_order[4];
  sj_level_kind levels[4];
  sj_index_type index_type;
  sj_value_type value_type;
  int64_t nnz;        /* stored values */
  sj_format format;   /* the named format it matches, or -1 (as int) when none does */
  int owns_arrays;    /* 1 when the library owns the arrays, 0 when it borrows the caller's */
} sj_tensor_info;

/* Describes tensor `t` in *info (a struct the caller owns; nothing is allocated).
 * Errors: SJ_ERR_NULL_POINTER. Thread-safe. */
SJ_API sj_status sj_tensor_get_info(const sj_tensor *t, sj_tensor_info *info);
/* The arrays of one level of tensor `t`: pos (int64, NULL for dense/singleton levels) with
 * *pos_len entries and crd (index_type, NULL for dense levels) with *crd_len entries. The
 * arrays are owned by the tensor (or are the caller's borrowed ones); the pointers stay valid
 * until it is destroyed. Any of the four out pointers may be NULL. */
SJ_API sj_status sj_tensor_get_level(const sj_tensor *t, int level, const int64_t **pos,
                                     int64_t *pos_len, const void **crd, int64_t *crd_len);
/* The values array (value_type) of tensor `t` and its length (len may be NULL). The pointer is
 * owned by the tensor (or is the caller's borrowed array) and valid until it is destroyed.
 * Errors of both getters: SJ_ERR_NULL_POINTER; SJ_ERR_INVALID_ARGUMENT for a level out of range.
 * Thread-safe. */
SJ_API sj_status sj_tensor_get_values(const sj_tensor *t, const void **values, int64_t *len);

/* Converts tensor `t` (only read; it may belong to another context) to a named format (for 3-D
 * CSF, mode_order may pick the level order; NULL keeps identity) and index_type. The result
 * owns its arrays (from ctx's allocator), belongs to ctx and is owned by the caller. Errors: SJ_ERR_NULL_POINTER; SJ_ERR_FORMAT
 * (a format that does not fit the order); SJ_ERR_INVALID_ARGUMENT (unknown format or index
 * type); SJ_ERR_OVERFLOW (coordinates that do not fit int32); SJ_ERR_OUT_OF_MEMORY.
 * Thread-safe. */
SJ_API sj_status sj_tensor_convert(sj_context *ctx, const sj_tensor *t, sj_format format,
                                   const int *mode_order, sj_index_type index_type,
                                   sj_tensor **out);
/* Destroys tensor `t` (NULL is allowed and does nothing). Plans made from it stay valid (they
 * keep no reference to operands); results computed from it own their arrays. Never fails
 * (returns SJ_OK). Must not race with other calls that use `t`. With the library's own
 * allocator, the calling thread may keep one destroyed small sparse-vector result (its handle
 * and its block of up to 16 KiB) for its next result, as a loop of small results would
 * otherwise allocate and free both on every call; it is freed when the thread ends. So a
 * destroyed handle's address may come back as a new result. With allocator hooks
 * (sj_config.allocator) every block still goes back through them here. */
SJ_API sj_status sj_tensor_destroy(sj_tensor *t);

/* ------------------------------------------------------------------------------------------ */
/* Operations                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* Options of every operation; sj_op_options_init fills the defaults (all "auto"). */
typedef struct sj_op_options {
  uint32_t struct_size;
  sj_semiring semiring;   /* default plus-times */
  sj_schedule schedule;   /* default auto */
  sj_isa isa;             /* default auto (SPARSEJIT_ISA overrides auto) */
  int vector_width;       /* coiteration SIMD width; 0 = auto */
  char phases[4];         /* phase mask "001" etc. ("" = auto); phases 3,2,1, '1' = SIMD */
  int threads;            /* 0 = the context's */
  int dense_output;       /* nonzero: the result is a dense tensor */
  int transpose_a;        /* use A^T */
  int transpose_b;        /* use B^T (SpGEMM, element-wise) */
  int output_index_type;  /* -1 = like the inputs (int64 if any operand stores int64
                             indices; a dense operand stores none);
                             else an sj_index_type. Operands of mixed index types are
                             computed in the type most stored indices have (the smaller
                             operands are converted for the call), int64 only when a
                             dimension exceeds 2^31. */
  sj_coiter_method method; /* coiteration block compare; default auto */
  int calibrate;          /* nonzero (with schedule auto): time the 2-3 cheapest candidate
                             schedules on a sample of rows and keep the fastest; the decision
                             is remembered per statistics bucket (in memory and in the cache
                             folder) and used by later plans of that bucket. Default 0. */
  int recompute_structure; /* SpGEMM plans (and index-notation plans of a matrix product that
                             run the built-in SpGEMM): by default a plan keeps the structure of its
                             product from its second execution on, and later executions on
                             operands of the same structure (positions and coordinates
                             equal, values free to differ) compute only the values, into
                             results that share the kept position and coordinate arrays.
                             Nonzero: every execution computes the structure, and nothing is
                             kept. Default 0. */
  int mask_complement;    /* masked SpGEMM only: nonzero computes C<!M> = A*B, the entries
                             of A*B where M has NO stored entry (GraphBLAS's complemented
                             structural mask, e.g. a BFS frontier that skips visited nodes).
                             Served by the saxpy schedule (and the reference); the dot per
                             mask entry cannot serve it. Default 0. */
} sj_op_options;

/* Fills *options (a struct the caller owns) with the defaults. Errors: SJ_ERR_NULL_POINTER.
 * Thread-safe. */
SJ_API sj_status sj_op_options_init(sj_op_options *options);

/* Every operation below: operands are read, never modified; the result is a new tensor owned
 * by the caller whose arrays come from the context's allocator; calls on the same context and
 * operands may run concurrently. Errors: SJ_ERR_NULL_POINTER (ctx, an operand, the result
 * pointer); SJ_ERR_SHAPE_MISMATCH; SJ_ERR_TYPE_MISMATCH (value types differ or do not fit the
 * semiring); SJ_ERR_FORMAT (e.g. a 3-D operand); SJ_ERR_INVALID_ARGUMENT (bad options, a forced
 * schedule that cannot serve: the message lists those that can); SJ_ERR_OVERFLOW;
 * SJ_ERR_OUT_OF_MEMORY (the allocator failed or the memory cap would be exceeded). */

/* C = A*B over the semiring. A and B: matrices in any format (CSR, CSC, DCSR, COO, dense);
 * value types must match. The result is CSR with sorted columns, or dense row-major with
 * options->dense_output. options may be NULL. */
SJ_API sj_status sj_spgemm(sj_context *ctx, const sj_tensor *A, const sj_tensor *B,
                           const sj_op_options *options, sj_tensor **C);
/* C<M> = A*B: only positions stored in M (structure only; its values are ignored). */
SJ_API sj_status sj_spgemm_masked(sj_context *ctx, const sj_tensor *M, const sj_tensor *A,
                                  const sj_tensor *B, const sj_op_options *options,
                                  sj_tensor **C);
/* y = A*x with x a sparse vector; y sparse (default) or dense (options->dense_output). */
SJ_API sj_status sj_spmspv(sj_context *ctx, const sj_tensor *A, const sj_tensor *x,
                           const sj_op_options *options, sj_tensor **y);
/* y = A*x with x a dense vector; y dense. */
SJ_API sj_status sj_spmv(sj_context *ctx, const sj_tensor *A, const sj_tensor *x,
                         const sj_op_options *options, sj_tensor **y);
/* C = A .* B (intersection; B^T with options->transpose_b). Sparse CSR result. */
SJ_API sj_status sj_ewise_mult(sj_context *ctx, const sj_tensor *A, const sj_tensor *B,
                               const sj_op_options *options, sj_tensor **C);
/* C = A .+ B (union: where both are stored the semiring's add, else the one stored value). */
SJ_API sj_status sj_ewise_add(sj_context *ctx, const sj_tensor *A, const sj_tensor *B,
                              const sj_op_options *options, sj_tensor **C);
/* C = A^T, in the same named format as A (a CSR A gives a CSR C of the transposed matrix). */
SJ_API sj_status sj_transpose(sj_context *ctx, const sj_tensor *A, sj_tensor **C);

/* ------------------------------------------------------------------------------------------ */
/* Plans: inspect and choose once, execute many times on operands of the same structure       */
/* ------------------------------------------------------------------------------------------ */

typedef struct sj_plan sj_plan;

/* Plans `op` in context `ctx` for the n_operands operands (order as in the drop-in call:
 * SpGEMM A,B; masked M,A,B; SpMSpV A,x; SpMV A,x; ewise A,B; transpose A) with `options`
 * (NULL: defaults; see sj_op_options). The plan keeps no reference to the operands'
 * values; it records their shapes, formats and types, which later executions must match.
 * A SpGEMM plan also keeps, from its second execution on, the structure of its product and
 * of the operands it came from (references to arrays the library owns, copies of borrowed
 * ones; at most 256 MiB, a quarter of the memory cap), until it is destroyed or a later
 * execution replaces it (see sj_op_options.recompute_structure).
 * *out receives a plan owned by the caller (sj_plan_destroy). Errors: as the operations, and
 * SJ_ERR_INVALID_ARGUMENT for an unknown op or a wrong operand count. Thread-safe. */
SJ_API sj_status sj_plan_create(sj_context *ctx, sj_op op, const sj_tensor *const *operands,
                                int n_operands, const sj_op_options *options, sj_plan **out);
/* Executes a plan on n_operands operands that match the planned ones (same shapes, formats and
 * types; values and, for sparse operands, coordinates may change). *result receives a new
 * tensor owned by the caller whose arrays come from the context's allocator. A SpGEMM plan
 * whose operands have exactly the structure of the ones its kept structure came from
 * computes only the values; that result shares the kept, read-only position and coordinate
 * arrays (they live as long as any result or the plan refers to them). Errors:
 * SJ_ERR_NULL_POINTER; SJ_ERR_INVALID_ARGUMENT (operand count); SJ_ERR_SHAPE_MISMATCH (an
 * operand unlike the planned one); SJ_ERR_OUT_OF_MEMORY. A plan may be executed from many
 * threads at once. */
SJ_API sj_status sj_plan_execute(sj_plan *plan, const sj_tensor *const *operands,
                                 int n_operands, sj_tensor **result);
/* *json receives a JSON text that explains the plan: operand statistics, candidate schedules
 * with their estimated costs, the choice, kernel source (memory, disk, compiled) and timings.
 * The text is owned by the plan and valid until the next sj_plan_explain or sj_plan_destroy on
 * it. Errors: SJ_ERR_NULL_POINTER. Calls on one plan are serialized inside, but a second call
 * replaces the text the first returned: callers sharing a plan across threads must copy the
 * text before another thread explains it. */
SJ_API sj_status sj_plan_explain(sj_plan *plan, const char **json);
/* The same explanation as readable text (what `sparsejit run --explain` prints) in *text.
 * Owned by the plan and valid until the next sj_plan_explain_text or sj_plan_destroy on it.
 * Errors: SJ_ERR_NULL_POINTER. As sj_plan_explain, calls are serialized inside and the next
 * call replaces the text: copy it before another thread explains the same plan. */
SJ_API sj_status sj_plan_explain_text(sj_plan *plan, const char **text);
/* Destroys a plan (NULL is allowed and does nothing); never fails. Must not race with other
 * calls on the same plan; tensors and pending results it produced stay valid. */
SJ_API sj_status sj_plan_destroy(sj_plan *plan);

/* ------------------------------------------------------------------------------------------ */
/* Caller-owned outputs: the sizes first, then the library fills buffers the caller allocated */
/* ------------------------------------------------------------------------------------------ */

/* The flat layout of a result, reported by sj_plan_execute_sizes. Every sparse output of every
 * operation has one: SpGEMM, masked SpGEMM, ewise mult/add give CSR; SpMSpV a sparse vector;
 * transpose the format of its operand (CSR or CSC; a DCSR or COO transpose is given as CSR);
 * dense outputs (options->dense_output, SpMV) are SJ_FORMAT_DENSE, row-major, values only.
 * Index-notation plans (sj_einsum_plan) work the same way for results of order 0 to 2. A
 * result of order 3 or 4 (e.g. CSF) has one array pair per level instead: sj_plan_execute_sizes
 * still succeeds and reports order, dims[0..1], types and values_len with pos_len = crd_len = 0
 * and format = the named format it matches (SJ_FORMAT_CSF, SJ_FORMAT_DENSE) or -1; its arrays
 * are described by sj_pending_get_levels and filled by sj_pending_fill_levels (both also work
 * for results of order 0 to 2), and sj_pending_fill refuses it with SJ_ERR_FORMAT. */
typedef struct sj_output_sizes {
  uint32_t struct_size;      /* the caller sets sizeof(sj_output_sizes) */
  sj_format format;          /* SJ_FORMAT_CSR, _CSC, _SPARSE_VECTOR or _DENSE (order 3-4: above) */
  int order;                 /* 2 for a matrix, 1 for a vector, 0 for a scalar (one value);
                                3 or 4: fill with sj_pending_fill_levels */
  int64_t dims[2];           /* logical dimensions (dims[1] is 0 for a vector) */
  sj_index_type index_type;  /* type of the crd entries (options->output_index_type picks it) */
  sj_value_type value_type;  /* type of the values (bool: one byte, 0 or 1) */
  int64_t pos_len;  /* int64 entries of pos: rows + 1 (CSR) or cols + 1 (CSC); 0 otherwise */
  int64_t crd_len;  /* index_type entries of crd (column indices of CSR, row indices of CSC,
                       indices of a sparse vector); 0 for dense results */
  int64_t values_len; /* value_type entries of values (nnz, or the dense element count) */
} sj_output_sizes;

/* The caller's arrays. Capacities count elements (not bytes). An array whose length in
 * sj_output_sizes is 0 may be NULL with capacity 0. */
typedef struct sj_output_buffers {
  uint32_t struct_size;      /* the caller sets sizeof(sj_output_buffers) */
  int64_t *pos;
  int64_t pos_capacity;
  void *crd;
  int64_t crd_capacity;
  void *values;
  int64_t values_capacity;
} sj_output_buffers;

/* A computed result held by the library (in memory from the context's allocator) between the
 * two passes. It counts as a tensor of its context: destroy it before the context. One thread
 * at a time may use a given sj_pending; different ones may be used concurrently. */
typedef struct sj_pending sj_pending;

/* Pass 1: executes the plan on n_operands operands that match the planned ones (as
 * sj_plan_execute) and reports the result's layout in *sizes. The operation runs once, here;
 * *pending receives the result for sj_pending_fill (or, any order, sj_pending_get_levels and
 * sj_pending_fill_levels). On failure nothing is written to *sizes or *pending.
 * Errors: as sj_plan_execute; SJ_ERR_NULL_POINTER for a NULL plan, sizes or pending;
 * SJ_ERR_INVALID_ARGUMENT when sizes->struct_size is not sizeof(sj_output_sizes). */
SJ_API sj_status sj_plan_execute_sizes(sj_plan *plan, const sj_tensor *const *operands,
                                       int n_operands, sj_output_sizes *sizes,
                                       sj_pending **pending);
/* Pass 2: copies the result into the caller's buffers, which the caller owns throughout.
 * Every buffer is checked against the sizes first (non-NULL where its length is > 0, capacity
 * >= length); on any error nothing at all is written to the caller's buffers and the pending
 * result stays fillable. On success the library releases its copy of the result at once; a
 * second fill of the same pending is SJ_ERR_INVALID_ARGUMENT. Only the first pos_len /
 * crd_len / values_len elements are written; capacity beyond them is left untouched.
 * Errors: SJ_ERR_NULL_POINTER (pending, buffers, or a needed array is NULL),
 * SJ_ERR_INVALID_ARGUMENT (a capacity too small, a wrong struct_size, already filled),
 * SJ_ERR_FORMAT (a result of order 3 or 4: use sj_pending_fill_levels). One thread at a time
 * per sj_pending; different ones may be filled concurrently. */
SJ_API sj_status sj_pending_fill(sj_pending *pending, const sj_output_buffers *buffers);
/* Releases a pending result, filled or not (NULL is allowed and does nothing); never fails.
 * Must not race with other calls on the same sj_pending. */
SJ_API sj_status sj_pending_destroy(sj_pending *pending);

/* One pass, for repeated executions: executes the plan on n_operands operands that match the
 * planned ones (as sj_plan_execute) and writes the result straight into the caller's buffers,
 * which the caller owns throughout; *sizes receives its layout (as sj_plan_execute_sizes). No handle is made, and for SpMSpV's sparse
 * result nothing is allocated per call once the plan has run (the result goes from the
 * kernel's per-thread workspace into the buffers); other results are made and then copied. A
 * SpMSpV y has at most A's row count (columns with transpose_a) entries, so buffers of that
 * capacity always fit. When a buffer is too small (or NULL where the result needs it),
 * nothing at all is written to the buffers, *sizes still receives the lengths needed and the
 * call fails: grow the buffers and execute again. Only the first pos_len / crd_len /
 * values_len elements are written. Results of order 3 or 4 have no flat layout: SJ_ERR_FORMAT
 * (use sj_plan_execute_sizes and sj_pending_fill_levels).
 * Errors: as sj_plan_execute; SJ_ERR_NULL_POINTER (plan, buffers, sizes, or a needed array);
 * SJ_ERR_INVALID_ARGUMENT (a capacity too small, a wrong struct_size); SJ_ERR_FORMAT. A plan
 * may be executed into different buffers from many threads at once. */
SJ_API sj_status sj_plan_execute_into(sj_plan *plan, const sj_tensor *const *operands,
                                      int n_operands, const sj_output_buffers *buffers,
                                      sj_output_sizes *sizes);

/* The per-level layout of a pending result of any order (0 to 4), for results whose arrays do
 * not fit sj_output_sizes (order 3 and 4, e.g. CSF from an index-notation plan). Level l
 * stores mode mode_order[l] with kind levels[l]; its arrays are as in sj_tensor_desc. For
 * results of order 0 to 2 it describes the same flat arrays sj_output_sizes does (CSR: level 1
 * holds pos and crd). */
typedef struct sj_output_levels {
  uint32_t struct_size;      /* the caller sets sizeof(sj_output_levels) */
  int order;                 /* 0 (a scalar) to 4 */
  int64_t dims[4];           /* logical dimension of each mode (0 past the order) */
  int mode_order[4];         /* level -> mode */
  sj_level_kind levels[4];   /* kind of each level */
  sj_index_type index_type;  /* type of every crd entry */
  sj_value_type value_type;  /* type of the values (bool: one byte, 0 or 1) */
  int64_t pos_len[4];        /* int64 entries of level l's pos: parent entries + 1 for a
                                compressed level, 0 for dense and singleton levels */
  int64_t crd_len[4];        /* index_type entries of level l's crd: its entries for compressed
                                and singleton levels, 0 for dense levels */
  int64_t values_len;        /* value_type entries of values (stored leaves) */
} sj_output_levels;

/* The caller's arrays, one pos/crd pair per level (entries past the order are ignored).
 * Capacities count elements; an array whose length is 0 may be NULL with capacity 0. */
typedef struct sj_output_level_buffers {
  uint32_t struct_size;      /* the caller sets sizeof(sj_output_level_buffers) */
  int64_t *pos[4];
  int64_t pos_capacity[4];
  void *crd[4];
  int64_t crd_capacity[4];
  void *values;
  int64_t values_capacity;
} sj_output_level_buffers;

/* Pass 1 for any order: writes the per-level layout of a pending result (from
 * sj_plan_execute_sizes) to *levels. Allowed before or after filling; nothing is computed.
 * Errors: SJ_ERR_NULL_POINTER (pending, levels); SJ_ERR_INVALID_ARGUMENT (levels->struct_size
 * is not sizeof(sj_output_levels)). One thread at a time per sj_pending (as sj_pending_fill). */
SJ_API sj_status sj_pending_get_levels(sj_pending *pending, sj_output_levels *levels);
/* Pass 2 for any order: copies every level's pos and crd and the values into the caller's
 * buffers, which the caller owns throughout. As sj_pending_fill: every buffer is checked first
 * (non-NULL where its length is > 0, capacity >= length) and on any error nothing is written
 * and the pending result stays fillable; on success the library releases its copy at once and
 * a second fill (by either call) is SJ_ERR_INVALID_ARGUMENT. Only the first pos_len[l] /
 * crd_len[l] / values_len elements are written.
 * Errors: SJ_ERR_NULL_POINTER (pending, buffers, or a needed array is NULL, named with its
 * level), SJ_ERR_INVALID_ARGUMENT (a capacity too small, a wrong struct_size, already filled).
 * One thread at a time per sj_pending. */
SJ_API sj_status sj_pending_fill_levels(sj_pending *pending,
                                        const sj_output_level_buffers *buffers);

/* ------------------------------------------------------------------------------------------ */
/* Index notation: general contractions such as "A(i,j) = B(i,k) * C(k,j) * D(k,j)"         */
/* ------------------------------------------------------------------------------------------ */

/* Plans an index-notation expression: "OUT(idx,...) = TERM + TERM ..." where a term is a
 * product of accesses T(i,j,...) (up to 4 indices; a bare name or "a()" is a scalar), with
 * parentheses (distributed). Indices absent from the output are reduced with the semiring's
 * add (options->semiring; '*' is its multiply). Sparse outputs are structural (an entry exists
 * where at least one product was formed).
 *   operands:      the right-hand-side tensors in the order their names first appear
 *                  ("A(i)=B(i,j)*C(j,i)": B, C). Value types must agree; the plan keeps no
 *                  reference to them, only their shapes, formats and types.
 *   formats:       NULL, or n_operands entries, each NULL (the tensor's own format) or a name
 *                  ("csr", "csc", "dcsr", "coo", "dense", "csf", "sparse-vector") or a level
 *                  list over the access's own index names ("dense(j),compressed(i)"): the
 *                  layout the kernel reads (the conversion is kept with the tensor handle).
 *   output_format: NULL = the planner's (dense when every input is dense or the output is a
 *                  scalar, else CSR / sparse vector / CSF), or the same syntax as formats.
 *   options:       may be NULL; schedule forces one alternative (inner, search, fused,
 *                  transpose, reference; gustavson-dense / gustavson-hash for a matrix
 *                  product, below), isa = SJ_ISA_SCALAR compiles without SIMD, threads
 *                  (0: the context's) splits each term's outermost loop where the level
 *                  dependence test proves it safe (an output index whose iterations own
 *                  disjoint parts of the output; a reduction stays serial, explain says why).
 *                  Results are bit-identical for any thread count.
 * A term that is a matrix product whose operands' storage orders chain into the output's
 * (CSR * CSR into CSR, CSC * CSC into CSC, e.g. C(i,j) = A(i,k) * B(k,j)) runs, with schedule
 * auto and isa not scalar, the built-in SpGEMM as sj_spgemm runs it (recompute_structure
 * applies); nothing is compiled for it, and the result is the same.
 * The loop nest is compiled with LLVM (ORC); the object is kept in the context's cache folder
 * so later processes load it instead of compiling. LLVM lives in a module of its own,
 * libsparsejit-llvm.so, loaded by the first plan that compiles or loads a loop nest: named by
 * SPARSEJIT_LLVM_MODULE, else looked for beside the library (or the program linked with the
 * static one, and in ../lib from it), in the build tree, then in the install folder; or
 * ahead of need by sj_einsum_backend_load (below). If compilation fails, or the module cannot
 * be loaded, the plan uses the portable reference evaluator (explain says so): a failure to
 * compile is not a failed call.
 * Execute with sj_plan_execute (operands as here), explain with sj_plan_explain(_text): the
 * iteration graph, the candidates with costs, the choice, the loop-nest IR and where the code
 * came from (compiled / memory / disk) with the compile time. The plan is owned by the caller
 * (sj_plan_destroy) and may be executed from many threads at once; sj_einsum_plan itself is
 * thread-safe.
 * Errors: SJ_ERR_NULL_POINTER (ctx, expression, operands or out NULL), SJ_ERR_PARSE (a
 * malformed expression: the message gives the column and a caret line), SJ_ERR_FORMAT (a format
 * that does not fit the tensor, named in the message), SJ_ERR_SHAPE_MISMATCH (an index with two
 * extents, an operand of another order), SJ_ERR_TYPE_MISMATCH, SJ_ERR_INVALID_ARGUMENT (operand
 * count, a forced schedule that cannot serve). */
SJ_API sj_status sj_einsum_plan(sj_context *ctx, const char *expression,
                                const sj_tensor *const *operands, int n_operands,
                                const char *const *formats, const char *output_format,
                                const sj_op_options *options, sj_plan **out);
/* Plans and executes once; *result receives a new tensor owned by the caller whose arrays come
 * from the context's allocator. Same arguments (ctx, expression, operands, n_operands,
 * formats, output_format, options) and errors as sj_einsum_plan, and thread-safe as it. */
SJ_API sj_status sj_einsum(sj_context *ctx, const char *expression,
                           const sj_tensor *const *operands, int n_operands,
                           const char *const *formats, const char *output_format,
                           const sj_op_options *options, sj_tensor **result);
/* Loads the backend that compiles index-notation loop nests now: the module libsparsejit-llvm.so
 * with libLLVM-16 (~55 ms; ~50 MB stay mapped), which the first sj_einsum_plan that compiles or
 * links a loop nest would otherwise load. A host may call it where that cost suits it (at
 * start-up, or on a thread of its own while it reads its data) and learn there whether the
 * backend is there. Needs no context; nothing is allocated for the caller. Returns SJ_OK once
 * loaded. Errors: SJ_ERR_JIT when the module cannot be loaded, with where it was looked for in
 * sj_last_error_message (of the calling thread); plans then run the reference evaluator. The
 * load is tried once per process, by this call or by the first plan that needs it, whichever
 * comes first: later calls return its outcome at once, failures included, and
 * SPARSEJIT_LLVM_MODULE is read only then (when set, it is the only place looked). Thread-safe:
 * concurrent calls and plans wait for the one load; do not fork() while it is in progress on
 * another thread (the child would wait for it forever). */
SJ_API sj_status sj_einsum_backend_load(void);

#ifdef __cplusplus
}
#endif
#endif /* SPARSEJIT_SPARSEJIT_H */
