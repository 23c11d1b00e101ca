//! The library context.
use std::ffi::CString;
use std::mem::{size_of, MaybeUninit};
use std::ptr;

use crate::error::{check, Error, Result, INVALID_ARGUMENT};
use crate::sys;

/// A context: thread count, cache settings and log level shared by the tensors and plans made
/// with it. Thread-safe (the C API allows any number of threads to use one context).
pub struct Context {
    pub(crate) raw: *mut sys::sj_context,
}

unsafe impl Send for Context {}
unsafe impl Sync for Context {}

/// Context settings; `Config::default()` asks the library for its defaults.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Worker threads; 0 = SPARSEJIT_THREADS, else the CPUs this process may use (affinity mask, cgroup quota).
    pub threads: i32,
    /// Persistent cache folder; None = SPARSEJIT_CACHE_DIR or the default.
    pub cache_dir: Option<String>,
    /// Keep kernels in memory only.
    pub disable_disk_cache: bool,
    /// 0 trace .. 4 error (the default) .. 5 off; SPARSEJIT_LOG overrides it.
    pub log_level: Option<i32>,
    /// 0 = no cap.
    pub memory_cap_bytes: usize,
}

/// The library fills its whole struct, which may be larger than the fields declared here; it
/// writes into this scratch space and the wrapper keeps the prefix it knows.
pub(crate) fn init_struct<T: Copy>(init: unsafe extern "C" fn(*mut T) -> sys::sj_status) -> Result<T> {
    let mut scratch = MaybeUninit::<[u64; 128]>::zeroed();
    check(unsafe { init(scratch.as_mut_ptr() as *mut T) })?;
    Ok(unsafe { ptr::read(scratch.as_ptr() as *const T) })
}

impl Context {
    /// A context with the library's defaults.
    pub fn new() -> Result<Context> {
        Context::with_config(&Config::default())
    }

    pub fn with_config(config: &Config) -> Result<Context> {
        let mut c: sys::sj_config = init_struct(sys::sj_config_init)?;
        c.struct_size = size_of::<sys::sj_config>() as u32;
        c.threads = config.threads;
        c.disable_disk_cache = config.disable_disk_cache as i32;
        if let Some(level) = config.log_level {
            c.log_level = level;
        }
        c.memory_cap_bytes = config.memory_cap_bytes;
        let dir = match &config.cache_dir {
            Some(d) => Some(CString::new(d.as_str()).map_err(|_| Error::new(INVALID_ARGUMENT, "cache_dir has a NUL byte"))?),
            None => None,
        };
        c.cache_dir = dir.as_ref().map_or(ptr::null(), |d| d.as_ptr());
        let mut raw = ptr::null_mut();
        check(unsafe { sys::sj_context_create(&c, &mut raw) })?;
        Ok(Context { raw })
    }

    /// The library's version ("MAJOR.MINOR.PATCH+BUILDID").
    pub fn version() -> String {
        unsafe { std::ffi::CStr::from_ptr(sys::sj_version(ptr::null_mut(), ptr::null_mut(), ptr::null_mut())) }
            .to_string_lossy()
            .into_owned()
    }

    /// Loads the LLVM backend that compiles einsum loop nests now (~55 ms), rather than in the
    /// first einsum plan that needs it; from any thread. The error (JIT) says where it was looked
    /// for; einsum plans then run the reference evaluator.
    pub fn load_einsum_backend() -> Result<()> {
        check(unsafe { sys::sj_einsum_backend_load() })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Tensors and plans borrow the context, so none is alive here.
        unsafe { sys::sj_context_destroy(self.raw) };
    }
}
