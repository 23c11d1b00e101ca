//! Tensors over borrowed slices (zero-copy, int32 or int64 coordinates) or owned by the library.
use std::ffi::CString;
use std::marker::PhantomData;
use std::os::raw::c_void;
use std::path::Path;
use std::ptr;

use crate::context::Context;
use crate::error::{check, Error, Result, INVALID_ARGUMENT, INVALID_TENSOR};
use crate::sys;

/// Coordinate types the library takes: i32 and i64.
pub trait Index: Copy + 'static {
    const KIND: sys::sj_index_type;
}
impl Index for i32 {
    const KIND: sys::sj_index_type = sys::SJ_INDEX_INT32;
}
impl Index for i64 {
    const KIND: sys::sj_index_type = sys::SJ_INDEX_INT64;
}

/// Value types the library takes: f32, f64 and bool (one byte, 0 or 1).
pub trait Value: Copy + 'static {
    const KIND: sys::sj_value_type;
}
impl Value for f32 {
    const KIND: sys::sj_value_type = sys::SJ_VALUE_F32;
}
impl Value for f64 {
    const KIND: sys::sj_value_type = sys::SJ_VALUE_F64;
}
impl Value for bool {
    const KIND: sys::sj_value_type = sys::SJ_VALUE_BOOL;
}

/// A tensor handle. `'a` covers the context and any slices the tensor borrows: the borrow
/// checker keeps them alive and unchanged while the tensor (or anything made from it) lives.
/// Dropping it destroys the handle.
pub struct Tensor<'a> {
    pub(crate) raw: *mut sys::sj_tensor,
    pub(crate) ctx: &'a Context,
    _borrows: PhantomData<&'a [u8]>,
}

// The C API allows a tensor to be read from many threads at once.
unsafe impl Send for Tensor<'_> {}
unsafe impl Sync for Tensor<'_> {}

fn len_i64(n: usize) -> i64 {
    n as i64
}

fn data_ptr<T>(s: &[T]) -> *const c_void {
    if s.is_empty() { ptr::null() } else { s.as_ptr() as *const c_void }
}

// Lengths checked here so that the library never reads past a slice: pointers must have
// outer + 1 entries, and indices and values at least as many as the last pointer says.
fn check_compressed<I: Index, V: Value>(what: &str, outer: i64, ptrs: &[i64], idx: &[I], vals: &[V]) -> Result<()> {
    if outer < 0 {
        return Err(Error::new(INVALID_ARGUMENT, format!("{what}: negative dimension {outer}")));
    }
    if len_i64(ptrs.len()) != outer + 1 {
        return Err(Error::new(INVALID_TENSOR, format!("{what}: pointer array has {} entries, expected {}", ptrs.len(), outer + 1)));
    }
    let nnz = ptrs[ptrs.len() - 1];
    if nnz < 0 || nnz > len_i64(idx.len()) || nnz > len_i64(vals.len()) {
        return Err(Error::new(
            INVALID_TENSOR,
            format!("{what}: the last pointer is {nnz} but there are {} indices and {} values", idx.len(), vals.len()),
        ));
    }
    Ok(())
}

impl<'a> Tensor<'a> {
    pub(crate) fn from_raw(raw: *mut sys::sj_tensor, ctx: &'a Context) -> Tensor<'a> {
        Tensor { raw, ctx, _borrows: PhantomData }
    }

    /// A CSR matrix over the caller's slices, borrowed without copying and validated
    /// (sorted unique columns in range, monotone pointers).
    pub fn csr<I: Index, V: Value>(ctx: &'a Context, rows: i64, cols: i64, row_ptr: &'a [i64], col_ind: &'a [I],
                                   values: &'a [V]) -> Result<Tensor<'a>> {
        check_compressed("csr", rows, row_ptr, col_ind, values)?;
        let mut raw = ptr::null_mut();
        check(unsafe {
            sys::sj_tensor_create_csr(ctx.raw, rows, cols, I::KIND, V::KIND, row_ptr.as_ptr(), data_ptr(col_ind),
                                      data_ptr(values), 0, &mut raw)
        })?;
        Ok(Tensor::from_raw(raw, ctx))
    }

    /// A CSC matrix over the caller's slices (borrowed, validated).
    pub fn csc<I: Index, V: Value>(ctx: &'a Context, rows: i64, cols: i64, col_ptr: &'a [i64], row_ind: &'a [I],
                                   values: &'a [V]) -> Result<Tensor<'a>> {
        check_compressed("csc", cols, col_ptr, row_ind, values)?;
        let mut raw = ptr::null_mut();
        check(unsafe {
            sys::sj_tensor_create_csc(ctx.raw, rows, cols, I::KIND, V::KIND, col_ptr.as_ptr(), data_ptr(row_ind),
                                      data_ptr(values), 0, &mut raw)
        })?;
        Ok(Tensor::from_raw(raw, ctx))
    }

    /// A CSR matrix copied into library memory (the slices may be dropped afterwards).
    pub fn csr_copied<I: Index, V: Value>(ctx: &'a Context, rows: i64, cols: i64, row_ptr: &[i64], col_ind: &[I],
                                          values: &[V]) -> Result<Tensor<'a>> {
        check_compressed("csr", rows, row_ptr, col_ind, values)?;
        let mut raw = ptr::null_mut();
        check(unsafe {
            sys::sj_tensor_create_csr(ctx.raw, rows, cols, I::KIND, V::KIND, row_ptr.as_ptr(), data_ptr(col_ind),
                                      data_ptr(values), sys::SJ_TENSOR_COPY, &mut raw)
        })?;
        Ok(Tensor::from_raw(raw, ctx))
    }

    /// A sparse vector of length n over sorted unique indices (borrowed).
    pub fn sparse_vector<I: Index, V: Value>(ctx: &'a Context, n: i64, indices: &'a [I], values: &'a [V])
                                             -> Result<Tensor<'a>> {
        if indices.len() != values.len() {
            return Err(Error::new(INVALID_TENSOR, format!("sparse vector: {} indices but {} values", indices.len(), values.len())));
        }
        let mut raw = ptr::null_mut();
        check(unsafe {
            sys::sj_tensor_create_sparse_vector(ctx.raw, n, len_i64(indices.len()), I::KIND, V::KIND,
                                                data_ptr(indices), data_ptr(values), 0, &mut raw)
        })?;
        Ok(Tensor::from_raw(raw, ctx))
    }

    /// A dense vector (borrowed).
    pub fn dense_vector<V: Value>(ctx: &'a Context, values: &'a [V]) -> Result<Tensor<'a>> {
        let dims = [len_i64(values.len())];
        let mut raw = ptr::null_mut();
        check(unsafe { sys::sj_tensor_create_dense(ctx.raw, 1, dims.as_ptr(), V::KIND, data_ptr(values), 0, &mut raw) })?;
        Ok(Tensor::from_raw(raw, ctx))
    }

    /// Reads a Matrix Market (.mtx) or FROSTT (.tns) file.
    pub fn read_file(ctx: &'a Context, path: impl AsRef<Path>) -> Result<Tensor<'a>> {
        let p = CString::new(path.as_ref().to_string_lossy().as_bytes())
            .map_err(|_| Error::new(INVALID_ARGUMENT, "path has a NUL byte"))?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::sj_tensor_read_file(ctx.raw, p.as_ptr(), &mut raw) })?;
        Ok(Tensor::from_raw(raw, ctx))
    }

    pub fn info(&self) -> sys::sj_tensor_info {
        let mut info = sys::sj_tensor_info::default();
        // Cannot fail for a live handle.
        unsafe { sys::sj_tensor_get_info(self.raw, &mut info) };
        info
    }

    /// Rows and columns (a vector: its length and 1).
    pub fn shape(&self) -> (i64, i64) {
        let i = self.info();
        (i.dims[0], if i.order >= 2 { i.dims[1] } else { 1 })
    }

    /// The stored values, when they are of type V.
    pub fn values<V: Value>(&self) -> Result<&[V]> {
        let info = self.info();
        if info.value_type != V::KIND {
            return Err(Error::new(INVALID_ARGUMENT, format!("values are of type {}, not the one asked for", info.value_type)));
        }
        let mut p = ptr::null();
        let mut n = 0i64;
        check(unsafe { sys::sj_tensor_get_values(self.raw, &mut p, &mut n) })?;
        Ok(if n == 0 { &[] } else { unsafe { std::slice::from_raw_parts(p as *const V, n as usize) } })
    }

    /// Positions and coordinates of a compressed level (for CSR, level 1: row pointers and
    /// column indices), when the coordinates are of type I.
    pub fn compressed_level<I: Index>(&self, level: i32) -> Result<(&[i64], &[I])> {
        let info = self.info();
        if info.index_type != I::KIND {
            return Err(Error::new(INVALID_ARGUMENT, "coordinates are of the other index type"));
        }
        let (mut pos, mut crd) = (ptr::null(), ptr::null());
        let (mut pos_len, mut crd_len) = (0i64, 0i64);
        check(unsafe { sys::sj_tensor_get_level(self.raw, level, &mut pos, &mut pos_len, &mut crd, &mut crd_len) })?;
        let pos = if pos.is_null() || pos_len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(pos, pos_len as usize) } };
        let crd = if crd.is_null() || crd_len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(crd as *const I, crd_len as usize) } };
        Ok((pos, crd))
    }

    pub fn context(&self) -> &'a Context {
        self.ctx
    }
}

impl Drop for Tensor<'_> {
    fn drop(&mut self) {
        unsafe { sys::sj_tensor_destroy(self.raw) };
    }
}
