//! Errors: the library's status and the message it gave for the failed call.
use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// A failed library call (or an argument the wrapper refused before calling).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The `sj_status` number (1 = null pointer, 2 = invalid argument, 3 = invalid tensor,
    /// 4 = shape mismatch, 5 = type mismatch, ... as in sparsejit.h).
    pub status: i32,
    /// The library's message, e.g. "row 17: column 5 follows 9 (coordinates must be sorted)".
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

/// The `sj_status` numbers of sparsejit.h, for matching on `Error::status`.
pub mod status {
    pub const NULL_POINTER: i32 = 1;
    pub const INVALID_ARGUMENT: i32 = 2;
    pub const INVALID_TENSOR: i32 = 3;
    pub const SHAPE_MISMATCH: i32 = 4;
    pub const TYPE_MISMATCH: i32 = 5;
    pub const FORMAT: i32 = 6;
    pub const OVERFLOW: i32 = 7;
    pub const OUT_OF_MEMORY: i32 = 8;
    pub const IO: i32 = 9;
    pub const PARSE: i32 = 10;
    pub const UNSUPPORTED: i32 = 11;
    pub const JIT: i32 = 12;
    pub const CACHE: i32 = 13;
    pub const INTERNAL: i32 = 14;
}
pub(crate) use status::{INVALID_ARGUMENT, INVALID_TENSOR};

impl Error {
    pub(crate) fn new(status: i32, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    /// The status name, e.g. "SJ_ERR_SHAPE_MISMATCH: ...".
    pub fn status_name(&self) -> String {
        unsafe { CStr::from_ptr(sys::sj_status_string(self.status)) }.to_string_lossy().into_owned()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message, self.status_name())
    }
}

impl std::error::Error for Error {}

/// Turns a status into a Result, reading this thread's last error message on failure.
pub(crate) fn check(status: sys::sj_status) -> Result<()> {
    if status == sys::SJ_OK {
        return Ok(());
    }
    let message = unsafe { CStr::from_ptr(sys::sj_last_error_message()) }.to_string_lossy().into_owned();
    Err(Error::new(status, message))
}
