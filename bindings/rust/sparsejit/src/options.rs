//! Operation options (sj_op_options) with the library's defaults.
use std::mem::size_of;

use crate::context::init_struct;
use crate::sys;

/// Semirings (add, multiply).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Semiring {
    PlusTimes = 0,
    MinPlus = 1,
    MaxTimes = 2,
    OrAnd = 3,
    PlusPair = 4,
}

/// Schedules; forcing one that cannot serve a call is an error, never a silent fallback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    Auto = 0,
    Reference = 1,
    GustavsonDense = 2,
    GustavsonHash = 3,
    Inner = 4,
    Transpose = 5,
    Search = 6,
    Densify = 7,
    Push = 8,
    Fused = 9,
}

/// The options of an operation.
#[derive(Clone, Copy)]
pub struct OpOptions {
    pub(crate) raw: sys::sj_op_options,
}

impl Default for OpOptions {
    fn default() -> Self {
        OpOptions::new()
    }
}

impl OpOptions {
    /// The library's defaults (all "auto", plus-times).
    pub fn new() -> OpOptions {
        let mut raw: sys::sj_op_options = init_struct(sys::sj_op_options_init).expect("sj_op_options_init cannot fail");
        // A library older than these declarations reads only the fields it knows.
        raw.struct_size = raw.struct_size.min(size_of::<sys::sj_op_options>() as u32);
        OpOptions { raw }
    }
    pub fn semiring(mut self, s: Semiring) -> Self {
        self.raw.semiring = s as i32;
        self
    }
    pub fn schedule(mut self, s: Schedule) -> Self {
        self.raw.schedule = s as i32;
        self
    }
    pub fn threads(mut self, n: i32) -> Self {
        self.raw.threads = n;
        self
    }
    pub fn dense_output(mut self, on: bool) -> Self {
        self.raw.dense_output = on as i32;
        self
    }
    pub fn transpose_a(mut self, on: bool) -> Self {
        self.raw.transpose_a = on as i32;
        self
    }
    pub fn transpose_b(mut self, on: bool) -> Self {
        self.raw.transpose_b = on as i32;
        self
    }
    /// Time the cheapest candidate schedules on a sample and keep the fastest (with Auto;
    /// ignored by a library that predates the option).
    pub fn calibrate(mut self, on: bool) -> Self {
        self.raw.calibrate = on as i32;
        self
    }
    /// SpGEMM plans: recompute the product's structure on every execution instead of keeping
    /// it for executions on operands of the same structure (ignored by a library that
    /// predates the option).
    pub fn recompute_structure(mut self, on: bool) -> Self {
        // Present when the library's struct reaches past the field.
        if self.raw.struct_size as usize >= size_of::<sys::sj_op_options>() - size_of::<i32>() {
            self.raw.recompute_structure = on as i32;
        }
        self
    }
    /// Masked SpGEMM: complement the mask, C<!M> = A*B, the entries of A*B where M stores
    /// nothing (ignored by a library that predates the option).
    pub fn mask_complement(mut self, on: bool) -> Self {
        // The last field: present when the library's struct reaches its end.
        if self.raw.struct_size as usize >= size_of::<sys::sj_op_options>() {
            self.raw.mask_complement = on as i32;
        }
        self
    }
    /// The coordinate type of sparse results: `Some(false)` i32, `Some(true)` i64, None like the inputs.
    pub fn output_index_i64(mut self, wide: Option<bool>) -> Self {
        self.raw.output_index_type = match wide {
            None => -1,
            Some(false) => sys::SJ_INDEX_INT32,
            Some(true) => sys::SJ_INDEX_INT64,
        };
        self
    }
}
