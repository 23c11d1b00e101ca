//! The drop-in operations, as methods of the context.
use std::ptr;

use crate::context::Context;
use crate::error::{check, Result};
use crate::options::OpOptions;
use crate::plan::Plan;
use crate::sys;
use crate::tensor::Tensor;

impl Context {
    fn wrap<'a>(&'a self, f: impl FnOnce(*mut *mut sys::sj_tensor) -> sys::sj_status) -> Result<Tensor<'a>> {
        let mut out = ptr::null_mut();
        check(f(&mut out))?;
        Ok(Tensor::from_raw(out, self))
    }

    /// C = A * B (CSR result; dense with `dense_output`).
    pub fn spgemm<'a>(&'a self, a: &Tensor<'a>, b: &Tensor<'a>, o: &OpOptions) -> Result<Tensor<'a>> {
        self.wrap(|out| unsafe { sys::sj_spgemm(self.raw, a.raw, b.raw, &o.raw, out) })
    }
    /// C<M> = A * B.
    pub fn spgemm_masked<'a>(&'a self, m: &Tensor<'a>, a: &Tensor<'a>, b: &Tensor<'a>, o: &OpOptions) -> Result<Tensor<'a>> {
        self.wrap(|out| unsafe { sys::sj_spgemm_masked(self.raw, m.raw, a.raw, b.raw, &o.raw, out) })
    }
    /// y = A * x, x a sparse vector.
    pub fn spmspv<'a>(&'a self, a: &Tensor<'a>, x: &Tensor<'a>, o: &OpOptions) -> Result<Tensor<'a>> {
        self.wrap(|out| unsafe { sys::sj_spmspv(self.raw, a.raw, x.raw, &o.raw, out) })
    }
    /// y = A * x, x a dense vector.
    pub fn spmv<'a>(&'a self, a: &Tensor<'a>, x: &Tensor<'a>, o: &OpOptions) -> Result<Tensor<'a>> {
        self.wrap(|out| unsafe { sys::sj_spmv(self.raw, a.raw, x.raw, &o.raw, out) })
    }
    /// C = A .* B.
    pub fn ewise_mult<'a>(&'a self, a: &Tensor<'a>, b: &Tensor<'a>, o: &OpOptions) -> Result<Tensor<'a>> {
        self.wrap(|out| unsafe { sys::sj_ewise_mult(self.raw, a.raw, b.raw, &o.raw, out) })
    }
    /// C = A .+ B.
    pub fn ewise_add<'a>(&'a self, a: &Tensor<'a>, b: &Tensor<'a>, o: &OpOptions) -> Result<Tensor<'a>> {
        self.wrap(|out| unsafe { sys::sj_ewise_add(self.raw, a.raw, b.raw, &o.raw, out) })
    }
    /// A^T in A's format.
    pub fn transpose<'a>(&'a self, a: &Tensor<'a>) -> Result<Tensor<'a>> {
        self.wrap(|out| unsafe { sys::sj_transpose(self.raw, a.raw, out) })
    }
    /// An index-notation expression ("C(i,j) = A(i,k) * B(k,j)", operands in the order their
    /// names first appear on the right), planned and run once; `output_format` as in
    /// `Plan::einsum`.
    pub fn einsum<'a>(&'a self, expression: &str, operands: &[&Tensor<'a>], output_format: Option<&str>,
                      o: &OpOptions) -> Result<Tensor<'a>> {
        let plan = Plan::einsum(self, expression, operands, output_format, o)?;
        plan.execute(operands)
    }
}
