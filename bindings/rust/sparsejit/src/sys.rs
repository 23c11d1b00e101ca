//! The C API of `include/sparsejit/sparsejit.h`, declared by hand (no bindgen, no crates).
//! Enums are plain `c_int` constants, as a C caller passes them.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub type sj_status = c_int;
pub const SJ_OK: sj_status = 0;

pub type sj_index_type = c_int;
pub const SJ_INDEX_INT32: sj_index_type = 0;
pub const SJ_INDEX_INT64: sj_index_type = 1;

pub type sj_value_type = c_int;
pub const SJ_VALUE_F32: sj_value_type = 0;
pub const SJ_VALUE_F64: sj_value_type = 1;
pub const SJ_VALUE_BOOL: sj_value_type = 2;

pub type sj_format = c_int;
pub const SJ_FORMAT_CSR: sj_format = 0;
pub const SJ_FORMAT_CSC: sj_format = 1;
pub const SJ_FORMAT_SPARSE_VECTOR: sj_format = 4;
pub const SJ_FORMAT_DENSE: sj_format = 5;

pub type sj_op = c_int;
pub type sj_log_level = c_int;

#[repr(C)]
pub struct sj_context {
    _private: [u8; 0],
}
#[repr(C)]
pub struct sj_tensor {
    _private: [u8; 0],
}
#[repr(C)]
pub struct sj_plan {
    _private: [u8; 0],
}
#[repr(C)]
pub struct sj_pending {
    _private: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct sj_allocator {
    pub alloc: Option<unsafe extern "C" fn(usize, usize, *mut c_void) -> *mut c_void>,
    pub free: Option<unsafe extern "C" fn(*mut c_void, usize, *mut c_void)>,
    pub user: *mut c_void,
}

pub type sj_log_callback = Option<unsafe extern "C" fn(sj_log_level, *const c_char, *mut c_void)>;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct sj_config {
    pub struct_size: u32,
    pub threads: c_int,
    pub cache_dir: *const c_char,
    pub disable_disk_cache: c_int,
    pub log_level: sj_log_level,
    pub allocator: sj_allocator,
    pub log_callback: sj_log_callback,
    pub log_user: *mut c_void,
    pub memory_cap_bytes: usize,
    pub kernel_cache_capacity: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct sj_op_options {
    pub struct_size: u32,
    pub semiring: c_int,
    pub schedule: c_int,
    pub isa: c_int,
    pub vector_width: c_int,
    pub phases: [c_char; 4],
    pub threads: c_int,
    pub dense_output: c_int,
    pub transpose_a: c_int,
    pub transpose_b: c_int,
    pub output_index_type: c_int,
    pub method: c_int,
    pub calibrate: c_int,
    pub recompute_structure: c_int,
    pub mask_complement: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct sj_tensor_info {
    pub order: c_int,
    pub dims: [i64; 4],
    pub mode_order: [c_int; 4],
    pub levels: [c_int; 4],
    pub index_type: sj_index_type,
    pub value_type: sj_value_type,
    pub nnz: i64,
    pub format: sj_format,
    pub owns_arrays: c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct sj_output_sizes {
    pub struct_size: u32,
    pub format: sj_format,
    pub order: c_int,
    pub dims: [i64; 2],
    pub index_type: sj_index_type,
    pub value_type: sj_value_type,
    pub pos_len: i64,
    pub crd_len: i64,
    pub values_len: i64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct sj_output_buffers {
    pub struct_size: u32,
    pub pos: *mut i64,
    pub pos_capacity: i64,
    pub crd: *mut c_void,
    pub crd_capacity: i64,
    pub values: *mut c_void,
    pub values_capacity: i64,
}

/// The per-level layout of a pending result of any order (sj_pending_get_levels).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct sj_output_levels {
    pub struct_size: u32,
    pub order: c_int,
    pub dims: [i64; 4],
    pub mode_order: [c_int; 4],
    pub levels: [c_int; 4],
    pub index_type: sj_index_type,
    pub value_type: sj_value_type,
    pub pos_len: [i64; 4],
    pub crd_len: [i64; 4],
    pub values_len: i64,
}

/// The caller's arrays per level (sj_pending_fill_levels).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct sj_output_level_buffers {
    pub struct_size: u32,
    pub pos: [*mut i64; 4],
    pub pos_capacity: [i64; 4],
    pub crd: [*mut c_void; 4],
    pub crd_capacity: [i64; 4],
    pub values: *mut c_void,
    pub values_capacity: i64,
}

pub const SJ_TENSOR_COPY: u32 = 1;

extern "C" {
    pub fn sj_status_string(status: sj_status) -> *const c_char;
    pub fn sj_last_error_message() -> *const c_char;
    pub fn sj_version(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) -> *const c_char;

    pub fn sj_config_init(config: *mut sj_config) -> sj_status;
    pub fn sj_context_create(config: *const sj_config, out: *mut *mut sj_context) -> sj_status;
    pub fn sj_context_destroy(ctx: *mut sj_context) -> sj_status;

    pub fn sj_tensor_create_csr(ctx: *mut sj_context, rows: i64, cols: i64, index_type: sj_index_type,
                                value_type: sj_value_type, row_ptr: *const i64, col_ind: *const c_void,
                                values: *const c_void, flags: u32, out: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_tensor_create_csc(ctx: *mut sj_context, rows: i64, cols: i64, index_type: sj_index_type,
                                value_type: sj_value_type, col_ptr: *const i64, row_ind: *const c_void,
                                values: *const c_void, flags: u32, out: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_tensor_create_sparse_vector(ctx: *mut sj_context, n: i64, nnz: i64, index_type: sj_index_type,
                                          value_type: sj_value_type, indices: *const c_void,
                                          values: *const c_void, flags: u32, out: *mut *mut sj_tensor)
                                          -> sj_status;
    pub fn sj_tensor_create_dense(ctx: *mut sj_context, order: c_int, dims: *const i64, value_type: sj_value_type,
                                  values: *const c_void, flags: u32, out: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_tensor_read_file(ctx: *mut sj_context, path: *const c_char, out: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_tensor_get_info(t: *const sj_tensor, info: *mut sj_tensor_info) -> sj_status;
    pub fn sj_tensor_get_level(t: *const sj_tensor, level: c_int, pos: *mut *const i64, pos_len: *mut i64,
                               crd: *mut *const c_void, crd_len: *mut i64) -> sj_status;
    pub fn sj_tensor_get_values(t: *const sj_tensor, values: *mut *const c_void, len: *mut i64) -> sj_status;
    pub fn sj_tensor_destroy(t: *mut sj_tensor) -> sj_status;

    pub fn sj_op_options_init(options: *mut sj_op_options) -> sj_status;
    pub fn sj_spgemm(ctx: *mut sj_context, a: *const sj_tensor, b: *const sj_tensor, options: *const sj_op_options,
                     c: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_spgemm_masked(ctx: *mut sj_context, m: *const sj_tensor, a: *const sj_tensor, b: *const sj_tensor,
                            options: *const sj_op_options, c: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_spmspv(ctx: *mut sj_context, a: *const sj_tensor, x: *const sj_tensor, options: *const sj_op_options,
                     y: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_spmv(ctx: *mut sj_context, a: *const sj_tensor, x: *const sj_tensor, options: *const sj_op_options,
                   y: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_ewise_mult(ctx: *mut sj_context, a: *const sj_tensor, b: *const sj_tensor,
                         options: *const sj_op_options, c: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_ewise_add(ctx: *mut sj_context, a: *const sj_tensor, b: *const sj_tensor,
                        options: *const sj_op_options, c: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_transpose(ctx: *mut sj_context, a: *const sj_tensor, c: *mut *mut sj_tensor) -> sj_status;

    pub fn sj_plan_create(ctx: *mut sj_context, op: sj_op, operands: *const *const sj_tensor, n_operands: c_int,
                          options: *const sj_op_options, out: *mut *mut sj_plan) -> sj_status;
    pub fn sj_plan_execute(plan: *mut sj_plan, operands: *const *const sj_tensor, n_operands: c_int,
                           result: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_plan_explain(plan: *mut sj_plan, json: *mut *const c_char) -> sj_status;
    pub fn sj_plan_explain_text(plan: *mut sj_plan, text: *mut *const c_char) -> sj_status;
    pub fn sj_plan_destroy(plan: *mut sj_plan) -> sj_status;

    pub fn sj_plan_execute_sizes(plan: *mut sj_plan, operands: *const *const sj_tensor, n_operands: c_int,
                                 sizes: *mut sj_output_sizes, pending: *mut *mut sj_pending) -> sj_status;
    pub fn sj_pending_fill(pending: *mut sj_pending, buffers: *const sj_output_buffers) -> sj_status;
    pub fn sj_plan_execute_into(plan: *mut sj_plan, operands: *const *const sj_tensor, n_operands: c_int,
                                buffers: *const sj_output_buffers, sizes: *mut sj_output_sizes) -> sj_status;
    pub fn sj_pending_destroy(pending: *mut sj_pending) -> sj_status;
    pub fn sj_pending_get_levels(pending: *mut sj_pending, levels: *mut sj_output_levels) -> sj_status;
    pub fn sj_pending_fill_levels(pending: *mut sj_pending, buffers: *const sj_output_level_buffers) -> sj_status;

    pub fn sj_einsum_plan(ctx: *mut sj_context, expression: *const c_char, operands: *const *const sj_tensor,
                          n_operands: c_int, formats: *const *const c_char, output_format: *const c_char,
                          options: *const sj_op_options, out: *mut *mut sj_plan) -> sj_status;
    pub fn sj_einsum(ctx: *mut sj_context, expression: *const c_char, operands: *const *const sj_tensor,
                     n_operands: c_int, formats: *const *const c_char, output_format: *const c_char,
                     options: *const sj_op_options, result: *mut *mut sj_tensor) -> sj_status;
    pub fn sj_einsum_backend_load() -> sj_status;
}
