"""Loading libsparsejit and declaring the C functions the binding calls (ctypes, no compiled code).

The library is found, in order: $SPARSEJIT_LIBRARY (a path to libsparsejit.so), a copy next to
this package, the `build` folder of the source tree this package sits in, then the system's
library path. Index-notation plans that compile a loop nest also need the LLVM module,
libsparsejit-llvm.so, beside that library (or named by $SPARSEJIT_LLVM_MODULE); without it they
run the reference evaluator and explain says why.
"""
import ctypes
import ctypes.util
import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _candidates():
    env = os.environ.get("SPARSEJIT_LIBRARY")
    if env:
        yield Path(env)
        return
    for name in ("libsparsejit.so", "libsparsejit.so.0"):
        yield _HERE / name
    repo = _HERE.parent.parent.parent  # bindings/python/sparsejit -> the source tree
    for build in ("build", "build-release"):
        yield repo / build / "libsparsejit.so"
    found = ctypes.util.find_library("sparsejit")
    if found:
        yield Path(found)


def _load():
    tried = []
    for path in _candidates():
        if path.is_absolute() and not path.exists():
            tried.append(str(path))
            continue
        try:
            return ctypes.CDLL(str(path))
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("sparsejit: libsparsejit.so not found; set SPARSEJIT_LIBRARY to its path "
                      "(tried: " + ", ".join(tried) + ")")


lib = _load()

c_int64_p = ctypes.POINTER(ctypes.c_int64)
c_void_pp = ctypes.POINTER(ctypes.c_void_p)
status = ctypes.c_int
handle = ctypes.c_void_p  # sj_context*, sj_tensor*, sj_plan*, sj_pending*

LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class Allocator(ctypes.Structure):
    _fields_ = [("alloc", ctypes.c_void_p), ("free", ctypes.c_void_p), ("user", ctypes.c_void_p)]


class Config(ctypes.Structure):
    """sj_config, field for field (the tests check the size against the library's)."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("threads", ctypes.c_int),
                ("cache_dir", ctypes.c_char_p), ("disable_disk_cache", ctypes.c_int),
                ("log_level", ctypes.c_int), ("allocator", Allocator),
                ("log_callback", LOG_CALLBACK), ("log_user", ctypes.c_void_p),
                ("memory_cap_bytes", ctypes.c_size_t), ("kernel_cache_capacity", ctypes.c_size_t)]


class OpOptions(ctypes.Structure):
    """sj_op_options, field for field."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("semiring", ctypes.c_int), ("schedule", ctypes.c_int),
                ("isa", ctypes.c_int), ("vector_width", ctypes.c_int), ("phases", ctypes.c_char * 4),
                ("threads", ctypes.c_int), ("dense_output", ctypes.c_int), ("transpose_a", ctypes.c_int),
                ("transpose_b", ctypes.c_int), ("output_index_type", ctypes.c_int), ("method", ctypes.c_int),
                ("calibrate", ctypes.c_int), ("recompute_structure", ctypes.c_int),
                ("mask_complement", ctypes.c_int)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("order", ctypes.c_int), ("dims", ctypes.c_int64 * 4), ("mode_order", ctypes.c_int * 4),
                ("levels", ctypes.c_int * 4), ("index_type", ctypes.c_int), ("value_type", ctypes.c_int),
                ("nnz", ctypes.c_int64), ("format", ctypes.c_int), ("owns_arrays", ctypes.c_int)]


class OutputSizes(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("format", ctypes.c_int), ("order", ctypes.c_int),
                ("dims", ctypes.c_int64 * 2), ("index_type", ctypes.c_int), ("value_type", ctypes.c_int),
                ("pos_len", ctypes.c_int64), ("crd_len", ctypes.c_int64), ("values_len", ctypes.c_int64)]


class OutputBuffers(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("pos", ctypes.c_void_p), ("pos_capacity", ctypes.c_int64),
                ("crd", ctypes.c_void_p), ("crd_capacity", ctypes.c_int64),
                ("values", ctypes.c_void_p), ("values_capacity", ctypes.c_int64)]


class OutputLevels(ctypes.Structure):
    """sj_output_levels: the per-level layout of a pending result of any order."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("order", ctypes.c_int), ("dims", ctypes.c_int64 * 4),
                ("mode_order", ctypes.c_int * 4), ("levels", ctypes.c_int * 4), ("index_type", ctypes.c_int),
                ("value_type", ctypes.c_int), ("pos_len", ctypes.c_int64 * 4), ("crd_len", ctypes.c_int64 * 4),
                ("values_len", ctypes.c_int64)]


class OutputLevelBuffers(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("pos", ctypes.c_void_p * 4), ("pos_capacity", ctypes.c_int64 * 4),
                ("crd", ctypes.c_void_p * 4), ("crd_capacity", ctypes.c_int64 * 4), ("values", ctypes.c_void_p),
                ("values_capacity", ctypes.c_int64)]


# The init functions write the library's full struct, which may have grown past the fields
# above: they write into a generous scratch buffer, and the binding passes its own struct_size.
INIT_SCRATCH = 1024


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


sj_status_string = _declare("sj_status_string", ctypes.c_char_p, status)
sj_last_error_message = _declare("sj_last_error_message", ctypes.c_char_p)
sj_version = _declare("sj_version", ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                      ctypes.POINTER(ctypes.c_int))
sj_config_init = _declare("sj_config_init", status, ctypes.c_void_p)
sj_context_create = _declare("sj_context_create", status, ctypes.c_void_p, ctypes.POINTER(handle))
sj_context_destroy = _declare("sj_context_destroy", status, handle)
sj_tensor_create_csr = _declare("sj_tensor_create_csr", status, handle, ctypes.c_int64, ctypes.c_int64, ctypes.c_int,
                                ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
                                ctypes.POINTER(handle))
sj_tensor_create_csc = _declare("sj_tensor_create_csc", status, handle, ctypes.c_int64, ctypes.c_int64, ctypes.c_int,
                                ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
                                ctypes.POINTER(handle))
sj_tensor_create_sparse_vector = _declare("sj_tensor_create_sparse_vector", status, handle, ctypes.c_int64,
                                          ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                          ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(handle))
sj_tensor_create_dense = _declare("sj_tensor_create_dense", status, handle, ctypes.c_int, c_int64_p, ctypes.c_int,
                                  ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(handle))
sj_tensor_read_file = _declare("sj_tensor_read_file", status, handle, ctypes.c_char_p, ctypes.POINTER(handle))
sj_tensor_get_info = _declare("sj_tensor_get_info", status, handle, ctypes.POINTER(TensorInfo))
sj_tensor_destroy = _declare("sj_tensor_destroy", status, handle)
sj_op_options_init = _declare("sj_op_options_init", status, ctypes.c_void_p)
sj_plan_create = _declare("sj_plan_create", status, handle, ctypes.c_int, ctypes.POINTER(handle), ctypes.c_int,
                          ctypes.POINTER(OpOptions), ctypes.POINTER(handle))
sj_plan_execute_sizes = _declare("sj_plan_execute_sizes", status, handle, ctypes.POINTER(handle), ctypes.c_int,
                                 ctypes.POINTER(OutputSizes), ctypes.POINTER(handle))
sj_plan_execute_into = _declare("sj_plan_execute_into", status, handle, ctypes.POINTER(handle), ctypes.c_int,
                                ctypes.POINTER(OutputBuffers), ctypes.POINTER(OutputSizes))
sj_pending_fill = _declare("sj_pending_fill", status, handle, ctypes.POINTER(OutputBuffers))
sj_pending_destroy = _declare("sj_pending_destroy", status, handle)
sj_plan_explain = _declare("sj_plan_explain", status, handle, ctypes.POINTER(ctypes.c_char_p))
sj_plan_explain_text = _declare("sj_plan_explain_text", status, handle, ctypes.POINTER(ctypes.c_char_p))
sj_plan_destroy = _declare("sj_plan_destroy", status, handle)

# Added with einsum (absent from older libraries: the binding then has no einsum).
sj_einsum_backend_load = getattr(lib, "sj_einsum_backend_load", None)
if sj_einsum_backend_load is not None:
    sj_einsum_backend_load.restype = status
    sj_einsum_backend_load.argtypes = []
sj_einsum_plan = getattr(lib, "sj_einsum_plan", None)
if sj_einsum_plan is not None:
    sj_einsum_plan.restype = status
    sj_einsum_plan.argtypes = [handle, ctypes.c_char_p, ctypes.POINTER(handle), ctypes.c_int,
                               ctypes.POINTER(ctypes.c_char_p), ctypes.c_char_p, ctypes.POINTER(OpOptions),
                               ctypes.POINTER(handle)]

# Added with results of order 3 and 4 (absent from older libraries: such results then raise).
sj_pending_get_levels = getattr(lib, "sj_pending_get_levels", None)
sj_pending_fill_levels = getattr(lib, "sj_pending_fill_levels", None)
if sj_pending_get_levels is not None and sj_pending_fill_levels is not None:
    sj_pending_get_levels.restype = status
    sj_pending_get_levels.argtypes = [handle, ctypes.POINTER(OutputLevels)]
    sj_pending_fill_levels.restype = status
    sj_pending_fill_levels.argtypes = [handle, ctypes.POINTER(OutputLevelBuffers)]
