"""Context, Tensor (scipy arrays borrowed without copying), Plan and the operations."""
import ctypes
import json
import operator
import threading

import numpy as np
import scipy.sparse as sp

from . import _lib
from ._coo_tensor import CooTensor
from ._errors import Error, IndexOverflowError, check

# sj_index_type, sj_value_type, sj_op, sj_format and option names, as in sparsejit.h.
INT32, INT64 = 0, 1
_VALUE_TYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.bool_): 2}
_DTYPE_OF_VALUE = {0: np.float32, 1: np.float64, 2: np.bool_}
_DTYPE_OF_INDEX = {INT32: np.int32, INT64: np.int64}
_OPS = {"spgemm": 0, "spgemm_masked": 1, "spmspv": 2, "spmv": 3, "ewise_mult": 4, "ewise_add": 5, "transpose": 6}
FORMAT_CSR, FORMAT_CSC, FORMAT_SPARSE_VECTOR, FORMAT_DENSE = 0, 1, 4, 5
_FORMAT_NAMES = {FORMAT_CSR: "csr", FORMAT_CSC: "csc", FORMAT_SPARSE_VECTOR: "sparse_vector", FORMAT_DENSE: "dense"}
_SEMIRINGS = {"plus_times": 0, "min_plus": 1, "max_times": 2, "or_and": 3, "plus_pair": 4}
_SCHEDULES = {"auto": 0, "reference": 1, "gustavson_dense": 2, "gustavson_hash": 3, "inner": 4, "transpose": 5,
              "search": 6, "densify": 7, "push": 8, "fused": 9}
_ISAS = {"auto": 0, "avx512": 1, "avx2": 2, "scalar": 3}
_METHODS = {"auto": 0, "broadcast": 1, "rotate": 2, "native": 3}
LOG_LEVELS = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "error": 4, "off": 5}


def version():
    """The library's version string ("MAJOR.MINOR.PATCH+BUILDID")."""
    return _lib.sj_version(None, None, None).decode()


class Context:
    """A library context (threads, cache, log level, log callback). Tensors and plans keep the
    context they were made with alive; the context is destroyed when the last of them goes."""

    def __init__(self, threads=0, log_level=None, log_callback=None, cache_dir=None, disable_disk_cache=False,
                 memory_cap_bytes=0):
        scratch = ctypes.create_string_buffer(_lib.INIT_SCRATCH)
        check(_lib.sj_config_init(scratch))
        cfg = _lib.Config.from_buffer_copy(scratch.raw[:ctypes.sizeof(_lib.Config)])
        cfg.struct_size = ctypes.sizeof(_lib.Config)
        cfg.threads = int(threads)
        if log_level is not None:
            if log_level not in LOG_LEVELS:
                raise ValueError(f"log_level must be one of {sorted(LOG_LEVELS)}, not {log_level!r}")
            cfg.log_level = LOG_LEVELS[log_level]
        self._callback = None
        if log_callback is not None:
            names = {v: k for k, v in LOG_LEVELS.items()}

            def trampoline(level, message, _user):
                try:
                    log_callback(names.get(level, str(level)), message.decode("utf-8", "replace"))
                except Exception:  # an exception must not unwind into C
                    pass

            self._callback = _lib.LOG_CALLBACK(trampoline)  # kept alive with the context
            cfg.log_callback = self._callback
        self._cache_dir = cache_dir.encode() if isinstance(cache_dir, str) else cache_dir
        cfg.cache_dir = self._cache_dir
        cfg.disable_disk_cache = 1 if disable_disk_cache else 0
        cfg.memory_cap_bytes = int(memory_cap_bytes)
        h = _lib.handle()
        check(_lib.sj_context_create(ctypes.byref(cfg), ctypes.byref(h)))
        self._handle = h

    @property
    def handle(self):
        return self._handle

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h and _lib is not None and _lib.sj_context_destroy is not None:  # None during interpreter exit
            _lib.sj_context_destroy(h)
            self._handle = None


_default = None
_default_lock = threading.Lock()


def default_context():
    """The context used when a call names none (made on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Context()
        return _default


def _array(a, name, dtypes):
    """A 1-D C-contiguous array of one of `dtypes`; refuses anything else before the library."""
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got {a.ndim}-D")
    if a.dtype not in dtypes:
        raise TypeError(f"{name} has dtype {a.dtype}; sparsejit takes {', '.join(str(np.dtype(d)) for d in dtypes)}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} is not contiguous; pass np.ascontiguousarray({name})")
    return a


def _ptr(a):
    return a.ctypes.data if a.size else None


_VALUE_DTYPES = tuple(_VALUE_TYPES)
_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


class Tensor:
    """A library tensor handle. Made from a scipy CSR or CSC matrix it borrows the indices and
    data arrays (zero-copy; int32 or int64 indices) and keeps them alive as long as it lives;
    the row/column pointer array is borrowed when it is int64 and widened once otherwise (the
    library's positions are int64). The library validates the arrays (sorted, in range)."""

    def __init__(self, handle, ctx, keep=()):
        self._handle = handle
        self._ctx = ctx
        self._keep = keep  # the numpy arrays the library reads

    @property
    def handle(self):
        return self._handle

    @classmethod
    def from_scipy(cls, m, ctx=None):
        ctx = ctx or default_context()
        if not sp.issparse(m):
            raise TypeError(f"expected a scipy.sparse CSR or CSC matrix, got {type(m).__name__}")
        if m.format not in ("csr", "csc"):
            raise TypeError(f"expected a scipy.sparse CSR or CSC matrix, got format {m.format!r} "
                            f"(convert with .tocsr() first)")
        rows, cols = m.shape
        indices = _array(m.indices, "indices", _INDEX_DTYPES)
        data = _array(m.data, "data", _VALUE_DTYPES)
        indptr = np.asarray(m.indptr)
        if indptr.dtype not in _INDEX_DTYPES:
            raise TypeError(f"indptr has dtype {indptr.dtype}; sparsejit takes int32 or int64")
        indptr = _array(indptr.astype(np.int64, copy=False), "indptr", (np.dtype(np.int64),))
        outer = rows if m.format == "csr" else cols
        if indptr.size != outer + 1:
            raise ValueError(f"indptr has {indptr.size} entries, expected {outer + 1}")
        if indptr[-1] > indices.size or indptr[-1] > data.size:
            raise ValueError(f"indptr[-1] = {indptr[-1]} but indices has {indices.size} and data {data.size} entries")
        it = INT32 if indices.dtype == np.int32 else INT64
        create = _lib.sj_tensor_create_csr if m.format == "csr" else _lib.sj_tensor_create_csc
        h = _lib.handle()
        check(create(ctx.handle, rows, cols, it, _VALUE_TYPES[data.dtype], _ptr(indptr), _ptr(indices), _ptr(data),
                     0, ctypes.byref(h)))
        return cls(h, ctx, (indptr, indices, data))

    @classmethod
    def sparse_vector(cls, indices, values, n, ctx=None):
        """A sparse vector of length n over sorted unique `indices` (borrowed)."""
        ctx = ctx or default_context()
        indices = _array(indices, "indices", _INDEX_DTYPES)
        values = _array(values, "values", _VALUE_DTYPES)
        if indices.size != values.size:
            raise ValueError(f"indices has {indices.size} entries but values {values.size}")
        it = INT32 if indices.dtype == np.int32 else INT64
        n = _length(n)
        h = _lib.handle()
        check(_lib.sj_tensor_create_sparse_vector(ctx.handle, n, indices.size, it, _VALUE_TYPES[values.dtype],
                                                  _ptr(indices), _ptr(values), 0, ctypes.byref(h)))
        return cls(h, ctx, (indices, values))

    @classmethod
    def from_vector(cls, x, ctx=None):
        """A sparse vector from an n x 1 or 1 x n scipy sparse matrix (a CSC column or CSR row
        is borrowed), or from a Tensor."""
        if isinstance(x, Tensor):
            return _as_tensor(x, ctx) if ctx is not None else x
        if not sp.issparse(x) or 1 not in x.shape:
            raise TypeError("x must be a scipy.sparse matrix with one row or one column")
        n = x.shape[0] if x.shape[1] == 1 else x.shape[1]  # 0 x 1 and 1 x 0 have length 0
        if x.shape[1] == 1 and x.format != "csc":
            x = x.tocsc()
        elif x.shape[1] != 1 and x.format != "csr":
            x = x.tocsr()
        end = int(x.indptr[-1])
        return cls.sparse_vector(x.indices[:end], x.data[:end], n, ctx)

    @classmethod
    def read(cls, path, ctx=None):
        """Reads a Matrix Market (.mtx) or FROSTT (.tns) file."""
        ctx = ctx or default_context()
        h = _lib.handle()
        check(_lib.sj_tensor_read_file(ctx.handle, str(path).encode(), ctypes.byref(h)))
        return cls(h, ctx)

    def info(self):
        info = _lib.TensorInfo()
        check(_lib.sj_tensor_get_info(self._handle, ctypes.byref(info)))
        return info

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h and _lib is not None and _lib.sj_tensor_destroy is not None:  # None during interpreter exit
            _lib.sj_tensor_destroy(h)
            self._handle = None


def _length(n):
    """n as an int the C API's int64 holds: ctypes would wrap a larger one silently (2**64 + 5
    became 5). A negative one is the library's to refuse, with its message."""
    n = operator.index(n)
    if n >= 2**63:
        raise IndexOverflowError(f"a length of {n} does not fit in int64")
    return n


def _sparse(cls, values, crd, pos, shape):
    """A scipy CSR/CSC array over the filled arrays, keeping int64 coordinates int64: scipy
    downcasts index arrays whose values fit int32, which lost a requested int64 result type
    (output_index_type, int64 operands) and copied both arrays."""
    m = cls((values, crd, pos), shape=shape)
    if crd.dtype == np.int64:
        m.indices, m.indptr = crd, pos
    return m


def _as_tensor(m, ctx):
    if not isinstance(m, Tensor):
        return Tensor.from_scipy(m, ctx)
    if m._ctx is not ctx:  # the library refuses operands of another context
        raise ValueError("this Tensor belongs to another Context than the call's; make it in that "
                         "context, or leave ctx out to use the operands' own")
    return m


def _context_for(ctx, operands):
    """The call's context: the one given, else that of the first Tensor operand (so tensors
    made in a context of the caller's need no ctx= at every call), else the default one."""
    if ctx is not None:
        return ctx
    return next((m._ctx for m in operands if isinstance(m, Tensor)), None) or default_context()


def _options(semiring="plus_times", schedule="auto", isa="auto", vector_width=0, phases="", threads=0,
             dense_output=False, transpose_a=False, transpose_b=False, output_index_type=None, method="auto",
             calibrate=False, recompute_structure=False, mask_complement=False):
    scratch = ctypes.create_string_buffer(_lib.INIT_SCRATCH)
    check(_lib.sj_op_options_init(scratch))
    o = _lib.OpOptions.from_buffer_copy(scratch.raw[:ctypes.sizeof(_lib.OpOptions)])
    # A library older than this binding reads only the fields it knows.
    library_size = o.struct_size
    o.struct_size = min(library_size, ctypes.sizeof(_lib.OpOptions))
    if calibrate and library_size <= _lib.OpOptions.calibrate.offset:
        raise ValueError("this libsparsejit has no calibrate option")
    if recompute_structure and library_size <= _lib.OpOptions.recompute_structure.offset:
        raise ValueError("this libsparsejit has no recompute_structure option")
    if mask_complement and library_size <= _lib.OpOptions.mask_complement.offset:
        raise ValueError("this libsparsejit has no mask_complement option")

    def pick(table, value, what):
        if isinstance(value, str):
            value = value.replace("-", "_")  # the library prints "gustavson-dense"
        if value not in table:
            raise ValueError(f"{what} must be one of {sorted(table)}, not {value!r}")
        return table[value]

    o.semiring = pick(_SEMIRINGS, semiring, "semiring")
    o.schedule = pick(_SCHEDULES, schedule, "schedule")
    o.isa = pick(_ISAS, isa, "isa")
    o.method = pick(_METHODS, method, "method")
    if len(phases) > 3:
        raise ValueError(f"phases is at most 3 characters, got {phases!r}")
    o.phases = phases.encode()
    o.vector_width = int(vector_width)
    o.threads = int(threads)
    o.dense_output = int(bool(dense_output))
    o.transpose_a = int(bool(transpose_a))
    o.transpose_b = int(bool(transpose_b))
    o.calibrate = int(bool(calibrate))
    if o.struct_size > _lib.OpOptions.recompute_structure.offset:
        o.recompute_structure = int(bool(recompute_structure))
    if o.struct_size > _lib.OpOptions.mask_complement.offset:
        o.mask_complement = int(bool(mask_complement))
    if output_index_type is None:
        o.output_index_type = -1
    else:
        o.output_index_type = pick({"int32": INT32, "int64": INT64}, output_index_type, "output_index_type")
    return o


def _handles(tensors):
    return (_lib.handle * len(tensors))(*[t.handle for t in tensors])


class Plan:
    """An operation inspected and scheduled once for operands of these shapes, formats and
    types; execute() runs it on matching operands and returns scipy / numpy arrays whose memory
    numpy owns (the library fills them through the caller-owned output calls)."""

    def __init__(self, op, *operands, ctx=None, **options):
        self._ctx = _context_for(ctx, operands)
        if op not in _OPS:
            raise ValueError(f"op must be one of {sorted(_OPS)}, not {op!r}")
        self.op = op
        tensors = [_as_tensor(m, self._ctx) if op != "spmspv" or i == 0 else Tensor.from_vector(m, self._ctx)
                   for i, m in enumerate(operands)]
        self._vector_shape = _vector_shape(operands[1]) if op == "spmspv" and len(operands) > 1 else None
        opts = _options(**options)
        h = _lib.handle()
        check(_lib.sj_plan_create(self._ctx.handle, _OPS[op], _handles(tensors), len(tensors), ctypes.byref(opts),
                                  ctypes.byref(h)))
        self._handle = h
        self._result_dtypes = None

    @classmethod
    def _from_handle(cls, handle, ctx, op):
        self = cls.__new__(cls)
        self._ctx, self._handle, self.op, self._vector_shape = ctx, handle, op, None
        self._result_dtypes = None
        return self

    def _tensors(self, operands):
        if self.op == "spmspv":
            tensors = [_as_tensor(operands[0], self._ctx)] + [Tensor.from_vector(x, self._ctx) for x in operands[1:]]
            self._vector_shape = _vector_shape(operands[1]) if len(operands) > 1 else None
            return tensors
        return [_as_tensor(m, self._ctx) for m in operands]

    def execute(self, *operands):
        return _execute_into_numpy(self._handle, self._tensors(operands), self._vector_shape)

    def execute_into(self, *operands, values, indices=None, indptr=None):
        """Executes into arrays the caller keeps across calls (sj_plan_execute_into): one pass
        and no result allocated, e.g. an iterative solver's SpMSpV. The result's entries land at
        the start of `values`, and for a sparse result of `indices` (a sparse vector's indices, a
        CSR/CSC matrix's column/row indices) and `indptr` (a matrix's pointers, int64); returns
        the number of stored entries. Arrays with room for every possible result always fit
        (SpMSpV: A's row count). The dtypes are the result's (`result_dtypes()`); a wrong dtype,
        a read-only or non-contiguous array raises before the library runs. An array too short
        gets nothing written and raises InvalidArgumentError naming it."""
        tensors = self._tensors(operands)
        fmt, index, value = self.result_dtypes(*operands, _tensors=tensors)
        arrays = {"values": (values, value)}
        if fmt != "dense":
            arrays["indices"] = (indices, index)
        if fmt in ("csr", "csc"):
            arrays["indptr"] = (indptr, np.dtype(np.int64))
        for name, other in (("indices", indices), ("indptr", indptr)):
            if name not in arrays and other is not None:
                raise ValueError(f"this plan's result has no {name} (pass values only)")
        bufs = _lib.OutputBuffers()
        bufs.struct_size = ctypes.sizeof(bufs)
        for name, (a, dtype) in arrays.items():
            if a is None:
                raise ValueError(f"this plan's result needs {name}= (a writable {np.dtype(dtype)} array)")
            if not isinstance(a, np.ndarray) or a.dtype != dtype:
                got = a.dtype if isinstance(a, np.ndarray) else type(a).__name__
                raise TypeError(f"{name} must be a numpy array of dtype {np.dtype(dtype)}, got {got}")
            if not a.flags.c_contiguous or not a.flags.writeable:
                raise ValueError(f"{name} must be writable and C-contiguous")
            field = {"values": "values", "indices": "crd", "indptr": "pos"}[name]
            setattr(bufs, field, _ptr(a))
            setattr(bufs, field + "_capacity", a.size)
        sizes = _lib.OutputSizes()
        sizes.struct_size = ctypes.sizeof(sizes)
        try:
            check(_lib.sj_plan_execute_into(self._handle, _handles(tensors), len(tensors), ctypes.byref(bufs),
                                            ctypes.byref(sizes)))
        except Error as e:  # the library names its C fields: name the arguments instead
            text = e.message
            for c_name, py_name in (("buffers.crd", "indices"), ("buffers.pos", "indptr"), ("buffers.values", "values")):
                text = text.replace(c_name, py_name)
            raise type(e)(text, e.status) from None
        return int(sizes.values_len)

    def result_dtypes(self, *operands, _tensors=None):
        """(format, index dtype, value dtype) of this plan's results, format being "csr",
        "csc", "sparse_vector" or "dense". Fixed for the plan: found once (by one execution on
        these operands) and remembered."""
        if self._result_dtypes is None:
            if not operands:
                raise ValueError("result_dtypes() needs the operands the first time (it executes the plan once)")
            tensors = _tensors if _tensors is not None else self._tensors(operands)
            sizes = _lib.OutputSizes()
            sizes.struct_size = ctypes.sizeof(sizes)
            pending = _lib.handle()
            check(_lib.sj_plan_execute_sizes(self._handle, _handles(tensors), len(tensors), ctypes.byref(sizes),
                                             ctypes.byref(pending)))
            _lib.sj_pending_destroy(pending)
            if sizes.order >= 3:
                raise ValueError(f"a result of order {sizes.order} has per-level arrays: use execute()")
            self._result_dtypes = (_FORMAT_NAMES[sizes.format], np.dtype(_DTYPE_OF_INDEX[sizes.index_type]),
                                   np.dtype(_DTYPE_OF_VALUE[sizes.value_type]))
        return self._result_dtypes

    def explain(self):
        """The plan's explanation as a dict (operand statistics, candidates, choice, timings)."""
        text = ctypes.c_char_p()
        check(_lib.sj_plan_explain(self._handle, ctypes.byref(text)))
        return json.loads(text.value.decode())

    def explain_text(self):
        text = ctypes.c_char_p()
        check(_lib.sj_plan_explain_text(self._handle, ctypes.byref(text)))
        return text.value.decode()

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h and _lib is not None and _lib.sj_plan_destroy is not None:  # None during interpreter exit
            _lib.sj_plan_destroy(h)
            self._handle = None


def _vector_shape(x):
    return x.shape if sp.issparse(x) else None


def _fill_levels(pending):
    """Pass 2 per level (results of order 3 and 4): a CooTensor whose arrays numpy owns."""
    if _lib.sj_pending_fill_levels is None:
        raise NotImplementedError("this libsparsejit cannot hand out results of order 3 or more")
    lv = _lib.OutputLevels()
    lv.struct_size = ctypes.sizeof(lv)
    check(_lib.sj_pending_get_levels(pending, ctypes.byref(lv)))
    index = _DTYPE_OF_INDEX[lv.index_type]
    pos = [np.empty(lv.pos_len[l], dtype=np.int64) for l in range(lv.order)]
    crd = [np.empty(lv.crd_len[l], dtype=index) for l in range(lv.order)]
    values = np.empty(lv.values_len, dtype=_DTYPE_OF_VALUE[lv.value_type])
    bufs = _lib.OutputLevelBuffers()
    bufs.struct_size = ctypes.sizeof(bufs)
    for l in range(lv.order):
        bufs.pos[l], bufs.pos_capacity[l] = _ptr(pos[l]), pos[l].size
        bufs.crd[l], bufs.crd_capacity[l] = _ptr(crd[l]), crd[l].size
    bufs.values, bufs.values_capacity = _ptr(values), values.size
    check(_lib.sj_pending_fill_levels(pending, ctypes.byref(bufs)))
    return CooTensor.from_levels(list(lv.dims[:lv.order]), list(lv.mode_order[:lv.order]),
                                 list(lv.levels[:lv.order]), pos, crd, values)


def _execute_into_numpy(plan, tensors, vector_shape=None):
    """Pass 1 sizes the result, numpy allocates, pass 2 fills; returns scipy / numpy arrays
    (a CooTensor for a result of order 3 or 4)."""
    sizes = _lib.OutputSizes()
    sizes.struct_size = ctypes.sizeof(sizes)
    pending = _lib.handle()
    check(_lib.sj_plan_execute_sizes(plan, _handles(tensors), len(tensors), ctypes.byref(sizes),
                                     ctypes.byref(pending)))
    if sizes.order >= 3:
        try:
            return _fill_levels(pending)
        finally:
            _lib.sj_pending_destroy(pending)
    try:
        values = np.empty(sizes.values_len, dtype=_DTYPE_OF_VALUE[sizes.value_type])
        crd = np.empty(sizes.crd_len, dtype=_DTYPE_OF_INDEX[sizes.index_type])
        pos = np.empty(sizes.pos_len, dtype=np.int64)
        bufs = _lib.OutputBuffers(ctypes.sizeof(_lib.OutputBuffers), _ptr(pos), pos.size, _ptr(crd), crd.size,
                                  _ptr(values), values.size)
        check(_lib.sj_pending_fill(pending, ctypes.byref(bufs)))
    finally:
        _lib.sj_pending_destroy(pending)
    shape = tuple(sizes.dims[:sizes.order])
    if sizes.format == FORMAT_DENSE:
        return values.reshape(shape)
    if sizes.format == FORMAT_SPARSE_VECTOR:
        n = sizes.dims[0]
        ptr = np.array([0, crd.size], dtype=np.int64)
        if vector_shape is not None and vector_shape[0] == 1 and vector_shape != (1, 1):
            return _sparse(sp.csr_array, values, crd, ptr, (1, n))  # a row in, a row out
        return _sparse(sp.csc_array, values, crd, ptr, (n, 1))
    cls = sp.csr_array if sizes.format == FORMAT_CSR else sp.csc_array
    return _sparse(cls, values, crd, pos, shape)


def _run(op, operands, ctx, options):
    # Each scipy operand is borrowed (and validated by the library) once, for plan and run.
    ctx = _context_for(ctx, operands)
    shape = _vector_shape(operands[1]) if op == "spmspv" else None
    tensors = [Tensor.from_vector(m, ctx) if op == "spmspv" and i == 1 else _as_tensor(m, ctx)
               for i, m in enumerate(operands)]
    plan = Plan(op, *tensors, ctx=ctx, **options)
    return _execute_into_numpy(plan._handle, tensors, shape)


def spgemm(A, B, ctx=None, **options):
    """C = A @ B over a semiring (options: semiring, schedule, isa, threads, dense_output,
    transpose_a, transpose_b, output_index_type, ...). A CSR array, or a dense ndarray with
    dense_output=True."""
    return _run("spgemm", (A, B), ctx, options)


def spgemm_masked(M, A, B, ctx=None, **options):
    """C<M> = A @ B: only the positions stored in M."""
    return _run("spgemm_masked", (M, A, B), ctx, options)


def spmspv(A, x, ctx=None, **options):
    """y = A @ x with x a sparse vector (an n x 1 or 1 x n scipy sparse matrix). y is an m x 1
    CSC array (1 x m CSR when x was a row), or a dense vector with dense_output=True."""
    return _run("spmspv", (A, x), ctx, options)


def ewise_mult(A, B, transpose_b=False, ctx=None, **options):
    """C = A .* B (the intersection), B transposed first when transpose_b."""
    return _run("ewise_mult", (A, B), ctx, dict(options, transpose_b=transpose_b))


def ewise_add(A, B, transpose_b=False, ctx=None, **options):
    """C = A .+ B (the union)."""
    return _run("ewise_add", (A, B), ctx, dict(options, transpose_b=transpose_b))


def transpose(A, ctx=None):
    """A^T in A's format (CSR in, CSR out; CSC in, CSC out)."""
    return _run("transpose", (A,), ctx, {})


def explain(op, *operands, ctx=None, as_json=False, **options):
    """What the planner decided for `op` on these operands: readable text, or a dict with
    as_json=True."""
    plan = Plan(op, *operands, ctx=ctx, **options)
    return plan.explain() if as_json else plan.explain_text()


def _index_notation(expression, n):
    """numpy-style "ik,kj->ij" as the library's index notation "OUT(i,j) = T0(i,k) * T1(k,j)";
    an expression that already has an '=' is passed through."""
    if "=" in expression:
        return expression
    if "->" not in expression:
        raise ValueError(f"einsum expression {expression!r} needs '->' (\"ik,kj->ij\") or index notation "
                         f"(\"C(i,j) = A(i,k) * B(k,j)\")")
    lhs, out = (part.strip() for part in expression.split("->", 1))
    terms = [t.strip() for t in lhs.split(",")]
    if len(terms) != n:
        raise ValueError(f"einsum expression {expression!r} has {len(terms)} operands but {n} tensors were given")
    for t in terms + [out]:
        if not all(c.isalpha() for c in t):
            raise ValueError(f"einsum subscripts must be letters, got {t!r} in {expression!r}")
    access = lambda name, idx: f"{name}({','.join(idx)})"  # noqa: E731
    return f"{access('OUT', out)} = " + " * ".join(access(f"T{i}", t) for i, t in enumerate(terms))


def einsum_plan(expression, *tensors, formats=None, output_format=None, ctx=None, **options):
    """Plans an einsum expression over the tensors: numpy style ("ik,kj->ij", operands in the
    given order) or the library's index notation ("C(i,j) = A(i,k) * B(k,j)", operands in order
    of first appearance on the right-hand side). `formats` names each operand's format ("csr",
    "csc", ..., or a level list), `output_format` the result's."""
    if _lib.sj_einsum_plan is None:
        raise NotImplementedError("this libsparsejit has no einsum (sj_einsum_plan is missing)")
    expression = _index_notation(expression, len(tensors))
    ctx = _context_for(ctx, tensors)
    ts = [_as_tensor(t, ctx) for t in tensors]
    fmts = None
    if formats is not None:
        if len(formats) != len(ts):
            raise ValueError(f"formats names {len(formats)} operands but {len(ts)} were given")
        fmts = (ctypes.c_char_p * len(ts))(*[f.encode() if f else None for f in formats])
    opts = _options(**options)
    h = _lib.handle()
    check(_lib.sj_einsum_plan(ctx.handle, expression.encode(), _handles(ts), len(ts), fmts,
                              output_format.encode() if output_format else None, ctypes.byref(opts),
                              ctypes.byref(h)))
    return Plan._from_handle(h, ctx, "einsum"), ts


def load_einsum_backend():
    """Loads the LLVM backend that compiles einsum loop nests now (~55 ms), rather than in the
    first einsum plan that needs it; safe from any thread. Raises JitError saying where it was
    looked for when it cannot be loaded (einsum plans then run the reference evaluator)."""
    if _lib.sj_einsum_backend_load is None:
        raise NotImplementedError("this libsparsejit has no sj_einsum_backend_load (its first einsum plan loads LLVM)")
    check(_lib.sj_einsum_backend_load())


def einsum(expression, *tensors, formats=None, output_format=None, ctx=None, **options):
    """Evaluates an einsum expression over sparse matrices and tensors (Tensor.read of a .tns);
    returns scipy / numpy arrays, or a sparsejit.CooTensor for a result of order 3 or 4."""
    plan, ts = einsum_plan(expression, *tensors, formats=formats, output_format=output_format, ctx=ctx, **options)
    return _execute_into_numpy(plan._handle, ts)
