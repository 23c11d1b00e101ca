"""Python bindings of libsparsejit through ctypes (no compiled extension).

    import sparsejit, scipy.sparse as sp
    C = sparsejit.spgemm(A, B)            # A, B: scipy CSR/CSC arrays, borrowed without copying
    print(sparsejit.explain("spgemm", A, B))

Results are scipy.sparse arrays (or numpy arrays for dense results) whose memory numpy owns:
the library sizes each result, numpy allocates, the library fills. Failures raise
sparsejit.Error subclasses carrying the library's message.
"""
from ._coo_tensor import CooTensor
from ._core import (Context, Plan, Tensor, default_context, einsum, einsum_plan, ewise_add, ewise_mult, explain,
                    load_einsum_backend, spgemm, spgemm_masked, spmspv, transpose, version)
from ._errors import (CacheError, Error, FormatError, IndexOverflowError, InternalError, InvalidArgumentError,
                      InvalidTensorError, IOFailedError, JitError, NullPointerError, OutOfMemoryError, ParseError,
                      ShapeMismatchError, TypeMismatchError, UnsupportedError)

__all__ = ["Context", "CooTensor", "Plan", "Tensor", "default_context", "einsum", "einsum_plan", "ewise_add", "ewise_mult",
           "explain", "load_einsum_backend", "spgemm", "spgemm_masked", "spmspv", "transpose", "version", "Error", "CacheError",
           "FormatError", "IndexOverflowError", "InternalError", "InvalidArgumentError", "InvalidTensorError",
           "IOFailedError", "JitError", "NullPointerError", "OutOfMemoryError", "ParseError", "ShapeMismatchError",
           "TypeMismatchError", "UnsupportedError"]
