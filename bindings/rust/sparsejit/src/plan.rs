//! Plans (inspect once, execute many times) and caller-owned results (two-pass: the library
//! sizes the result, Rust allocates Vecs, the library fills them).
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::mem::size_of;
use std::ptr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use crate::context::Context;
use crate::error::{check, status, Error, Result};
use crate::options::OpOptions;
use crate::sys;
use crate::tensor::Tensor;

/// The operations (sj_op).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Spgemm = 0,
    SpgemmMasked = 1,
    Spmspv = 2,
    Spmv = 3,
    EwiseMult = 4,
    EwiseAdd = 5,
    Transpose = 6,
}

/// Coordinates of a result in the type the library produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Indices {
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// Values of a result.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
}

/// The layout of a caller-owned result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Csr,
    Csc,
    SparseVector,
    Dense,
}

/// A result in memory Rust owns: CSR/CSC (pos = outer pointers, crd = inner indices), a sparse
/// vector (crd = indices, pos empty) or dense row-major (values only).
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedResult {
    pub layout: Layout,
    pub dims: Vec<i64>,
    pub pos: Vec<i64>,
    pub crd: Indices,
    pub values: Values,
}

impl OwnedResult {
    /// Coordinates widened to i64 (for comparisons).
    pub fn crd_i64(&self) -> Vec<i64> {
        match &self.crd {
            Indices::I32(v) => v.iter().map(|&x| x as i64).collect(),
            Indices::I64(v) => v.clone(),
        }
    }
    /// Values as f64 (bool as 0/1).
    pub fn values_f64(&self) -> Vec<f64> {
        match &self.values {
            Values::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Values::F64(v) => v.clone(),
            Values::Bool(v) => v.iter().map(|&x| x as u8 as f64).collect(),
        }
    }
}

/// A result of any order (0 to 4) in memory Rust owns, one array pair per level (as
/// `sj_output_levels` describes it): level `l` stores mode `mode_order[l]` with kind
/// `levels[l]` (0 dense, 1 compressed, 2 singleton, 3 compressed non-unique); `pos[l]` is empty
/// unless the level is compressed, `crd[l]` empty for a dense level.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedLevels {
    pub dims: Vec<i64>,
    pub mode_order: Vec<i32>,
    pub levels: Vec<i32>,
    pub pos: Vec<Vec<i64>>,
    pub crd: Vec<Indices>,
    pub values: Values,
}

fn indices(index_type: sys::sj_index_type, n: usize) -> Indices {
    if index_type == sys::SJ_INDEX_INT32 { Indices::I32(vec![0; n]) } else { Indices::I64(vec![0; n]) }
}

fn values(value_type: sys::sj_value_type, n: usize) -> Values {
    match value_type {
        sys::SJ_VALUE_F32 => Values::F32(vec![0.0; n]),
        sys::SJ_VALUE_BOOL => Values::Bool(vec![false; n]),
        _ => Values::F64(vec![0.0; n]),
    }
}

fn indices_ptr(i: &mut Indices) -> *mut c_void {
    match i {
        Indices::I32(v) => v.as_mut_ptr() as *mut c_void,
        Indices::I64(v) => v.as_mut_ptr() as *mut c_void,
    }
}

fn values_ptr(v: &mut Values) -> *mut c_void {
    match v {
        Values::F32(v) => v.as_mut_ptr() as *mut c_void,
        Values::F64(v) => v.as_mut_ptr() as *mut c_void,
        Values::Bool(v) => v.as_mut_ptr() as *mut c_void,
    }
}

fn layout_of(format: sys::sj_format) -> Layout {
    match format {
        sys::SJ_FORMAT_CSR => Layout::Csr,
        sys::SJ_FORMAT_CSC => Layout::Csc,
        sys::SJ_FORMAT_SPARSE_VECTOR => Layout::SparseVector,
        _ => Layout::Dense,
    }
}

fn matches_index(i: &Indices, t: sys::sj_index_type) -> bool {
    matches!((i, t), (Indices::I32(_), sys::SJ_INDEX_INT32) | (Indices::I64(_), sys::SJ_INDEX_INT64))
}

fn matches_value(v: &Values, t: sys::sj_value_type) -> bool {
    matches!((v, t), (Values::F32(_), sys::SJ_VALUE_F32) | (Values::F64(_), sys::SJ_VALUE_F64) | (Values::Bool(_), sys::SJ_VALUE_BOOL))
}

// Room of at least n elements in all (not n more): a Vec's elements and spare capacity are
// one buffer the library writes from its start (execute_into).
fn grow_to<T>(v: &mut Vec<T>, n: usize) {
    if v.capacity() < n {
        v.reserve(n - v.len());
    }
}

fn indices_capacity(i: &Indices) -> i64 {
    match i {
        Indices::I32(v) => v.capacity() as i64,
        Indices::I64(v) => v.capacity() as i64,
    }
}

fn values_capacity(v: &Values) -> i64 {
    match v {
        Values::F32(v) => v.capacity() as i64,
        Values::F64(v) => v.capacity() as i64,
        Values::Bool(v) => v.capacity() as i64,
    }
}

fn reserve_indices(i: &mut Indices, n: usize) {
    match i {
        Indices::I32(v) => grow_to(v, n),
        Indices::I64(v) => grow_to(v, n),
    }
}

fn reserve_values(v: &mut Values, n: usize) {
    match v {
        Values::F32(v) => grow_to(v, n),
        Values::F64(v) => grow_to(v, n),
        Values::Bool(v) => grow_to(v, n),
    }
}

// Safety: the library wrote the first n elements (n <= capacity), with valid bit patterns
// for the type (bool as bytes 0 or 1); elements past n are plain data, dropped by truncation.
unsafe fn set_indices_len(i: &mut Indices, n: usize) {
    match i {
        Indices::I32(v) => v.set_len(n),
        Indices::I64(v) => v.set_len(n),
    }
}

unsafe fn set_values_len(v: &mut Values, n: usize) {
    match v {
        Values::F32(v) => v.set_len(n),
        Values::F64(v) => v.set_len(n),
        Values::Bool(v) => v.set_len(n),
    }
}

fn c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::new(status::INVALID_ARGUMENT, format!("{what} contains a NUL byte")))
}

// Releases a pending result however the two passes end.
struct PendingGuard(*mut sys::sj_pending);
impl Drop for PendingGuard {
    fn drop(&mut self) {
        unsafe { sys::sj_pending_destroy(self.0) };
    }
}

/// A plan: an operation checked, inspected and scheduled once for operands of these shapes,
/// formats and types. Executable from many threads at once.
pub struct Plan<'a> {
    raw: *mut sys::sj_plan,
    ctx: &'a Context,
    explain_lock: Mutex<()>,  // the explanation text lives in the plan until the next call
    // The result's (index type << 8 | value type), learned by the first execute_into; -1 before.
    result_types: AtomicI64,
}

unsafe impl Send for Plan<'_> {}
unsafe impl Sync for Plan<'_> {}

fn raw_operands(operands: &[&Tensor<'_>]) -> Vec<*const sys::sj_tensor> {
    operands.iter().map(|t| t.raw as *const sys::sj_tensor).collect()
}

impl<'a> Plan<'a> {
    pub fn new(ctx: &'a Context, op: Op, operands: &[&Tensor<'a>], options: &OpOptions) -> Result<Plan<'a>> {
        let ops = raw_operands(operands);
        let mut raw = ptr::null_mut();
        check(unsafe { sys::sj_plan_create(ctx.raw, op as i32, ops.as_ptr(), ops.len() as i32, &options.raw, &mut raw) })?;
        Ok(Plan { raw, ctx, explain_lock: Mutex::new(()), result_types: AtomicI64::new(-1) })
    }

    /// Plans an index-notation expression ("C(i,j) = A(i,k) * B(k,j)"; operands in the order
    /// their names first appear on the right) with the result's format (`None`: the planner's;
    /// else "csr", "csf", "dense", a level list, ...).
    pub fn einsum(ctx: &'a Context, expression: &str, operands: &[&Tensor<'a>], output_format: Option<&str>,
                  options: &OpOptions) -> Result<Plan<'a>> {
        let ops = raw_operands(operands);
        let expr = c_string("expression", expression)?;
        let out_format = output_format.map(|f| c_string("output_format", f)).transpose()?;
        let mut raw = ptr::null_mut();
        check(unsafe {
            sys::sj_einsum_plan(ctx.raw, expr.as_ptr(), ops.as_ptr(), ops.len() as i32, ptr::null(),
                                out_format.as_ref().map_or(ptr::null(), |f| f.as_ptr()), &options.raw, &mut raw)
        })?;
        Ok(Plan { raw, ctx, explain_lock: Mutex::new(()), result_types: AtomicI64::new(-1) })
    }

    /// Runs on operands that match the planned ones; the result is a library-owned tensor.
    pub fn execute(&self, operands: &[&Tensor<'a>]) -> Result<Tensor<'a>> {
        let ops = raw_operands(operands);
        let mut out = ptr::null_mut();
        check(unsafe { sys::sj_plan_execute(self.raw, ops.as_ptr(), ops.len() as i32, &mut out) })?;
        Ok(Tensor::from_raw(out, self.ctx))
    }

    /// Runs and returns the result in Vecs that Rust allocated (the library sizes, Rust
    /// allocates, the library fills; its own copy is released at once).
    pub fn execute_owned(&self, operands: &[&Tensor<'a>]) -> Result<OwnedResult> {
        let ops = raw_operands(operands);
        let mut sizes = sys::sj_output_sizes { struct_size: size_of::<sys::sj_output_sizes>() as u32, ..Default::default() };
        let mut pending = ptr::null_mut();
        check(unsafe { sys::sj_plan_execute_sizes(self.raw, ops.as_ptr(), ops.len() as i32, &mut sizes, &mut pending) })?;
        let guard = PendingGuard(pending);
        let mut pos = vec![0i64; sizes.pos_len as usize];
        let mut crd = indices(sizes.index_type, sizes.crd_len as usize);
        let mut values = values(sizes.value_type, sizes.values_len as usize);
        let buffers = sys::sj_output_buffers {
            struct_size: size_of::<sys::sj_output_buffers>() as u32,
            pos: pos.as_mut_ptr(),
            pos_capacity: pos.len() as i64,
            crd: indices_ptr(&mut crd),
            crd_capacity: sizes.crd_len,
            values: values_ptr(&mut values),
            values_capacity: sizes.values_len,
        };
        check(unsafe { sys::sj_pending_fill(guard.0, &buffers) })?;
        let layout = layout_of(sizes.format);
        Ok(OwnedResult { layout, dims: sizes.dims[..sizes.order as usize].to_vec(), pos, crd, values })
    }

    /// Runs and writes the result into `out`, reusing the memory of its Vecs (one pass,
    /// sj_plan_execute_into): a loop that executes the same plan again and again allocates
    /// nothing once `out` has grown to the largest result. The plan's first such call learns
    /// the result's types from the library (asking with no room: nothing is written, the
    /// layout comes back), and a call whose result does not fit makes room and executes again.
    /// On an error `out` is as it was. Results of order 3 and 4: `execute_levels`.
    pub fn execute_into(&self, operands: &[&Tensor<'a>], out: &mut OwnedResult) -> Result<()> {
        let ops = raw_operands(operands);
        for _ in 0..3 {
            let types = self.result_types.load(Ordering::Relaxed);
            let known = types >= 0;
            if known {  // the Vecs in the result's types
                let (it, vt) = ((types >> 8) as sys::sj_index_type, (types & 0xff) as sys::sj_value_type);
                if !matches_index(&out.crd, it) {
                    out.crd = indices(it, 0);
                }
                if !matches_value(&out.values, vt) {
                    out.values = values(vt, 0);
                }
            }
            // Each Vec's whole buffer (elements and spare capacity; none while the types are
            // unknown); its length is set once the library wrote that many elements. On an
            // error nothing is written and the lengths stay: `out` is as it was.
            let buffers = if known {
                sys::sj_output_buffers {
                    struct_size: size_of::<sys::sj_output_buffers>() as u32,
                    pos: out.pos.as_mut_ptr(),
                    pos_capacity: out.pos.capacity() as i64,
                    crd: indices_ptr(&mut out.crd),
                    crd_capacity: indices_capacity(&out.crd),
                    values: values_ptr(&mut out.values),
                    values_capacity: values_capacity(&out.values),
                }
            } else {
                sys::sj_output_buffers {
                    struct_size: size_of::<sys::sj_output_buffers>() as u32,
                    pos: ptr::null_mut(),
                    pos_capacity: 0,
                    crd: ptr::null_mut(),
                    crd_capacity: 0,
                    values: ptr::null_mut(),
                    values_capacity: 0,
                }
            };
            let mut sizes = sys::sj_output_sizes { struct_size: size_of::<sys::sj_output_sizes>() as u32, order: -1, ..Default::default() };
            let st = unsafe { sys::sj_plan_execute_into(self.raw, ops.as_ptr(), ops.len() as i32, &buffers, &mut sizes) };
            if sizes.order < 0 || sizes.order > 2 {
                check(st)?;  // failed before the layout was known (bad operands, ...), or order 3-4
            }
            if sizes.order >= 0 {
                self.result_types.store(((sizes.index_type as i64) << 8) | sizes.value_type as i64, Ordering::Relaxed);
            }
            if st == sys::SJ_OK {
                if !known {  // an empty result: nothing was written, the Vecs only need the types
                    out.crd = indices(sizes.index_type, 0);
                    out.values = values(sizes.value_type, 0);
                }
                unsafe {
                    out.pos.set_len(sizes.pos_len as usize);
                    set_indices_len(&mut out.crd, sizes.crd_len as usize);
                    set_values_len(&mut out.values, sizes.values_len as usize);
                }
                out.layout = layout_of(sizes.format);
                out.dims = sizes.dims[..sizes.order as usize].to_vec();
                return Ok(());
            }
            if known && st != status::INVALID_ARGUMENT && st != status::NULL_POINTER {
                check(st)?;
            }
            // Did not fit (or the types were unknown): room for the lengths reported.
            if !matches_index(&out.crd, sizes.index_type) {
                out.crd = indices(sizes.index_type, 0);
            }
            if !matches_value(&out.values, sizes.value_type) {
                out.values = values(sizes.value_type, 0);
            }
            grow_to(&mut out.pos, sizes.pos_len as usize);
            reserve_indices(&mut out.crd, sizes.crd_len as usize);
            reserve_values(&mut out.values, sizes.values_len as usize);
        }
        Err(Error::new(status::INTERNAL, "execute_into: the result did not fit after making room".to_string()))
    }

    /// Runs and returns a result of any order (a 3-D einsum result included) in Vecs that Rust
    /// allocated, one pos/crd pair per level (sj_pending_get_levels, sj_pending_fill_levels).
    pub fn execute_levels(&self, operands: &[&Tensor<'a>]) -> Result<OwnedLevels> {
        let ops = raw_operands(operands);
        let mut sizes = sys::sj_output_sizes { struct_size: size_of::<sys::sj_output_sizes>() as u32, ..Default::default() };
        let mut pending = ptr::null_mut();
        check(unsafe { sys::sj_plan_execute_sizes(self.raw, ops.as_ptr(), ops.len() as i32, &mut sizes, &mut pending) })?;
        let guard = PendingGuard(pending);
        let mut lv = sys::sj_output_levels { struct_size: size_of::<sys::sj_output_levels>() as u32, ..Default::default() };
        check(unsafe { sys::sj_pending_get_levels(guard.0, &mut lv) })?;
        let order = lv.order as usize;
        let mut pos: Vec<Vec<i64>> = (0..order).map(|l| vec![0i64; lv.pos_len[l] as usize]).collect();
        let mut crd: Vec<Indices> = (0..order).map(|l| indices(lv.index_type, lv.crd_len[l] as usize)).collect();
        let mut vals = values(lv.value_type, lv.values_len as usize);
        let mut buffers = sys::sj_output_level_buffers {
            struct_size: size_of::<sys::sj_output_level_buffers>() as u32,
            pos: [ptr::null_mut(); 4],
            pos_capacity: [0; 4],
            crd: [ptr::null_mut(); 4],
            crd_capacity: [0; 4],
            values: values_ptr(&mut vals),
            values_capacity: lv.values_len,
        };
        for l in 0..order {
            buffers.pos[l] = pos[l].as_mut_ptr();
            buffers.pos_capacity[l] = lv.pos_len[l];
            buffers.crd[l] = indices_ptr(&mut crd[l]);
            buffers.crd_capacity[l] = lv.crd_len[l];
        }
        check(unsafe { sys::sj_pending_fill_levels(guard.0, &buffers) })?;
        Ok(OwnedLevels {
            dims: lv.dims[..order].to_vec(),
            mode_order: lv.mode_order[..order].to_vec(),
            levels: lv.levels[..order].to_vec(),
            pos,
            crd,
            values: vals,
        })
    }

    /// The planner's explanation as JSON.
    pub fn explain_json(&self) -> Result<String> {
        self.explain_with(sys::sj_plan_explain)
    }

    /// The planner's explanation as readable text.
    pub fn explain_text(&self) -> Result<String> {
        self.explain_with(sys::sj_plan_explain_text)
    }

    fn explain_with(&self, f: unsafe extern "C" fn(*mut sys::sj_plan, *mut *const c_char) -> sys::sj_status) -> Result<String> {
        let _lock = self.explain_lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = ptr::null();
        check(unsafe { f(self.raw, &mut text) })?;
        Ok(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
    }
}

impl Drop for Plan<'_> {
    fn drop(&mut self) {
        unsafe { sys::sj_plan_destroy(self.raw) };
    }
}
