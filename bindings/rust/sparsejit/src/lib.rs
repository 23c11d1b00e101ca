//! Safe Rust wrapper over libsparsejit's C API.
//!
//! ```no_run
//! use sparsejit::{Context, Tensor, OpOptions};
//! let ctx = Context::new()?;
//! let (ptr, idx, val) = (vec![0i64, 1, 2], vec![1i32, 0], vec![2.0f64, 3.0]);
//! let a = Tensor::csr(&ctx, 2, 2, &ptr, &idx, &val)?;   // borrows the Vecs, no copy
//! let c = ctx.spgemm(&a, &a, &OpOptions::new())?;
//! assert_eq!(c.values::<f64>()?, &[6.0, 6.0]);
//! # Ok::<(), sparsejit::Error>(())
//! ```
//!
//! Handles are freed on drop. Lifetimes tie each tensor to its context and to the slices it
//! borrows. Errors carry the library's message.
pub mod sys;

mod context;
mod error;
mod ops;
mod options;
mod plan;
mod tensor;

pub use context::{Config, Context};
pub use error::{status, Error, Result};
pub use options::{OpOptions, Schedule, Semiring};
pub use plan::{Indices, Layout, Op, OwnedLevels, OwnedResult, Plan, Values};
pub use tensor::{Index, Tensor, Value};
