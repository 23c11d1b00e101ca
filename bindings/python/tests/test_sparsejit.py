"""The Python binding against scipy: random and real matrices, every operation, error cases.
Run with the system interpreter: /usr/bin/python3 -m unittest discover bindings/python/tests"""
import gc
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sparsejit  # noqa: E402
from sparsejit import _lib  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def data_dir():
    env = os.environ.get("SPARSEJIT_DATA_DIR")
    if env and Path(env, "matrices").is_dir():
        return Path(env)
    p = REPO.parent / "shared" / "data"
    return p if (p / "matrices").is_dir() else None


def random_csr(rows, cols, density, seed, dtype=np.float64, index=np.int32):
    m = sp.random(rows, cols, density=density, format="csr", random_state=seed, dtype=np.float64)
    m.data = np.round(m.data * 8) / 4 + 0.25  # exact sums in any order
    m = sp.csr_array(m.astype(dtype))
    m.indices = m.indices.astype(index)
    m.indptr = m.indptr.astype(index)
    return m


def assert_close_sparse(test, got, want, rtol=1e-9):
    """Equal up to rounding (summation order differs), compared without densifying."""
    test.assertEqual(got.shape, want.shape)
    diff = sp.csr_array(got) - sp.csr_array(want)
    scale = max(1.0, float(np.abs(sp.csr_array(want).data).max()) if want.nnz else 1.0)
    worst = float(np.abs(diff.data).max()) if diff.nnz else 0.0
    test.assertLessEqual(worst, rtol * scale)


def assert_same(test, got, want):
    """Equal values (small matrices, compared densely)."""
    test.assertEqual(got.shape, want.shape)
    np.testing.assert_allclose(sp.csr_array(got).toarray(), sp.csr_array(want).toarray(), rtol=1e-6, atol=1e-6)


class Binding(unittest.TestCase):
    def test_version_and_struct_sizes_match_the_library(self):
        self.assertRegex(sparsejit.version(), r"^\d+\.\d+\.\d+")
        import ctypes
        for init, cls in ((_lib.sj_config_init, _lib.Config), (_lib.sj_op_options_init, _lib.OpOptions)):
            scratch = ctypes.create_string_buffer(_lib.INIT_SCRATCH)
            self.assertEqual(init(scratch), 0)
            size = ctypes.c_uint32.from_buffer(scratch).value
            # sj_op_options may predate its `calibrate`, `recompute_structure` and
            # `mask_complement` fields; anything else is drift.
            known = {ctypes.sizeof(cls)} | ({cls.calibrate.offset, cls.recompute_structure.offset,
                                             cls.mask_complement.offset}
                                            if cls is _lib.OpOptions else set())
            self.assertIn(size, known, f"{cls.__name__} no longer matches the header")

    def test_operations_against_scipy_on_random_matrices(self):
        for index in (np.int32, np.int64):
            for dtype in (np.float64, np.float32):
                with self.subTest(index=index, dtype=dtype):
                    A = random_csr(60, 45, 0.1, 1, dtype, index)
                    B = random_csr(45, 70, 0.1, 2, dtype, index)
                    C = random_csr(60, 45, 0.2, 3, dtype, index)
                    assert_same(self, sparsejit.spgemm(A, B), A @ B)
                    assert_same(self, sparsejit.spgemm(A, sp.csc_array(B)), A @ B)
                    assert_same(self, sparsejit.ewise_mult(A, C), A.multiply(C))
                    assert_same(self, sparsejit.ewise_add(A, C), A + C)
                    assert_same(self, sparsejit.ewise_mult(A, sp.csr_array(C.T), transpose_b=True), A.multiply(C))
                    assert_same(self, sparsejit.transpose(A), A.T)
                    dense = sparsejit.spgemm(A, B, dense_output=True)
                    self.assertIsInstance(dense, np.ndarray)
                    np.testing.assert_allclose(dense, (A @ B).toarray())

    def test_results_are_scipy_arrays_owned_by_numpy(self):
        A = random_csr(30, 30, 0.2, 4)
        C = sparsejit.spgemm(A, A)
        self.assertIsInstance(C, sp.csr_array)
        self.assertTrue(C.data.flags.owndata or C.data.base is not None)
        del A
        gc.collect()
        self.assertGreaterEqual(float(np.abs(C.data).sum()), 0.0)  # still readable
        Ct = sparsejit.transpose(sp.csc_array(random_csr(10, 20, 0.3, 5)))
        self.assertIsInstance(Ct, sp.csc_array)
        self.assertEqual(Ct.shape, (20, 10))

    def test_spmspv_against_scipy(self):
        A = random_csr(50, 40, 0.1, 6)
        x = sp.random(40, 1, density=0.3, format="csc", random_state=7)
        y = sparsejit.spmspv(A, x)
        self.assertEqual(y.shape, (50, 1))
        np.testing.assert_allclose(y.toarray(), (A @ x).toarray())
        xr = sp.csr_array(x.T)
        yr = sparsejit.spmspv(A, xr)
        self.assertEqual(yr.shape, (1, 50))
        np.testing.assert_allclose(yr.toarray().ravel(), (A @ x).toarray().ravel())
        yd = sparsejit.spmspv(A, x, dense_output=True)
        np.testing.assert_allclose(yd, (A @ x).toarray().ravel())

    def test_execute_into_arrays_the_caller_keeps(self):
        A = random_csr(60, 50, 0.08, 21)
        x0 = sp.random(50, 1, density=0.2, format="csc", random_state=23)
        plan = sparsejit.Plan("spmspv", A, x0)
        self.assertEqual(plan.result_dtypes(A, x0), ("sparse_vector", np.dtype(np.int32), np.dtype(np.float64)))
        self.assertEqual(plan.result_dtypes()[0], "sparse_vector")  # remembered
        yi = np.full(60, -7, dtype=np.int32)  # room for every row: always fits
        yv = np.full(60, np.nan)
        for seed in range(5):  # new x each call, the same arrays
            x = sp.random(50, 1, density=0.2, format="csc", random_state=30 + seed)
            yi.fill(-7)
            yv.fill(np.nan)
            k = plan.execute_into(A, x, indices=yi, values=yv)
            want = plan.execute(A, x)
            self.assertEqual(k, want.nnz)
            np.testing.assert_array_equal(yi[:k], want.indices)
            np.testing.assert_array_equal(yv[:k], want.data)  # the same bits as execute()
            self.assertTrue((yi[k:] == -7).all() and np.isnan(yv[k:]).all())  # nothing past the result
        # A dense y: values only.
        dense = sparsejit.Plan("spmspv", A, x, dense_output=True)
        y = np.empty(60)
        self.assertEqual(dense.execute_into(A, x, values=y), 60)
        np.testing.assert_array_equal(y, dense.execute(A, x))
        # A CSR product: pointers, indices and values.
        B = random_csr(50, 40, 0.1, 24)
        prod = sparsejit.Plan("spgemm", A, B)
        want = prod.execute(A, B)
        ptr, ind, val = np.empty(61, np.int64), np.empty(want.nnz + 3, np.int32), np.empty(want.nnz + 3)
        self.assertEqual(prod.execute_into(A, B, indptr=ptr, indices=ind, values=val), want.nnz)
        np.testing.assert_array_equal(ptr, want.indptr)
        np.testing.assert_array_equal(ind[:want.nnz], want.indices)
        np.testing.assert_array_equal(val[:want.nnz], want.data)
        # Mistakes are refused before the library writes anything.
        x = sp.random(50, 1, density=0.2, format="csc", random_state=40)
        with self.assertRaises(TypeError):
            plan.execute_into(A, x, indices=yi.astype(np.int64), values=yv)
        with self.assertRaises(TypeError):
            plan.execute_into(A, x, indices=yi, values=yv.astype(np.float32))
        with self.assertRaises(TypeError):
            plan.execute_into(A, x, indices=list(yi), values=yv)
        with self.assertRaises(ValueError):
            plan.execute_into(A, x, values=yv)  # indices missing
        with self.assertRaises(ValueError):
            plan.execute_into(A, x, indices=np.zeros(120, np.int32)[::2], values=yv)  # not contiguous
        frozen = yv.copy()
        frozen.flags.writeable = False
        with self.assertRaises(ValueError):
            plan.execute_into(A, x, indices=yi, values=frozen)
        with self.assertRaises(ValueError):
            dense.execute_into(A, x, values=y, indices=yi)  # a dense result has no indices
        # Too short: nothing written, the library names the array.
        need = plan.execute(A, x).nnz
        short_i, short_v = np.full(need - 1, -7, np.int32), np.full(need - 1, np.nan)
        with self.assertRaises(sparsejit.InvalidArgumentError) as err:
            plan.execute_into(A, x, indices=short_i, values=short_v)
        self.assertIn("indices_capacity is %d" % (need - 1), str(err.exception))
        self.assertTrue((short_i == -7).all() and np.isnan(short_v).all())

    def test_masked_spgemm_and_semirings(self):
        A = random_csr(30, 30, 0.15, 8)
        M = random_csr(30, 30, 0.3, 9)
        full = (A @ A).toarray()
        got = sparsejit.spgemm_masked(M, A, A).toarray()
        np.testing.assert_allclose(got, np.where(M.toarray() != 0, full, 0))
        # Complemented: the entries of A*A where M stores nothing, and none where it does.
        comp = sparsejit.spgemm_masked(M, A, A, mask_complement=True)
        np.testing.assert_allclose(comp.toarray(), np.where(M.toarray() != 0, 0, full))
        self.assertEqual(comp.multiply(M != 0).nnz, 0)
        pattern = sparsejit.spgemm(A, A, semiring="plus_pair").toarray()
        Ab = (A != 0).astype(np.float64)
        np.testing.assert_allclose(pattern, (Ab @ Ab).toarray())

    def test_plan_reuse_and_explain(self):
        A = random_csr(40, 40, 0.1, 10)
        plan = sparsejit.Plan("spgemm", A, A)
        for seed in (11, 12, 13, 14):
            A2 = A.copy()
            A2.data = np.random.default_rng(seed).integers(1, 4, A2.data.size).astype(np.float64)
            assert_same(self, plan.execute(A2, A2), A2 @ A2)
        info = plan.explain()
        self.assertEqual(info["op"], "spgemm")
        self.assertIn("chosen", info)
        # New values over the same structure: from the third execution on only the values.
        self.assertIn("2 execution(s) on operands of the same structure computed only the values", info["kernel"]["variant"])
        # Another structure is recomputed; recompute_structure keeps nothing.
        B = random_csr(40, 40, 0.1, 15)
        assert_same(self, plan.execute(B, B), B @ B)
        fresh = sparsejit.Plan("spgemm", A, A, recompute_structure=True)
        for _ in range(3):
            assert_same(self, fresh.execute(A, A), A @ A)
        self.assertNotIn("structure kept", fresh.explain()["kernel"].get("variant", ""))
        text = sparsejit.explain("spgemm", A, A, schedule="reference")
        self.assertIn("chosen: reference", text)

    def test_inputs_are_borrowed_not_copied(self):
        A = random_csr(20, 20, 0.2, 13, index=np.int32)
        t = sparsejit.Tensor.from_scipy(A)
        self.assertEqual(t.info().owns_arrays, 0)
        self.assertIs(t._keep[1], A.indices)  # the very array, no copy
        self.assertIs(t._keep[2], A.data)
        A64 = random_csr(20, 20, 0.2, 13, index=np.int64)
        t64 = sparsejit.Tensor.from_scipy(A64)
        self.assertIs(t64._keep[0], A64.indptr)
        self.assertIs(t64._keep[1], A64.indices)
        self.assertEqual(t64.info().index_type, 1)
        self.assertEqual(t64.info().owns_arrays, 0)  # int64 indptr, indices and data all borrowed
        self.assertIs(t64._keep[2], A64.data)
        # A CSC input is borrowed the same way, and results equal scipy's.
        Acsc = sp.csc_array(A64)
        tc = sparsejit.Tensor.from_scipy(Acsc)
        self.assertIs(tc._keep[1], Acsc.indices)
        assert_same(self, sparsejit.spgemm(A64, Acsc), A64 @ Acsc)

    def test_int64_results_keep_int64_indices(self):
        # scipy downcasts index arrays that fit int32; a result asked for in int64 stays int64.
        A = random_csr(30, 30, 0.2, 21)
        want = (A @ A).tocsr()
        for C in (sparsejit.Plan("spgemm", A, A, output_index_type="int64").execute(A, A),
                  sparsejit.spgemm(random_csr(30, 30, 0.2, 21, index=np.int64),
                                   random_csr(30, 30, 0.2, 21, index=np.int64))):
            self.assertEqual(C.indices.dtype, np.int64)
            self.assertEqual(C.indptr.dtype, np.int64)
            assert_close_sparse(self, C, want)
        y = sparsejit.spmspv(random_csr(30, 30, 0.2, 22, index=np.int64), sp.csc_array(np.ones((30, 1))))
        self.assertEqual(y.indices.dtype, np.int64)
        self.assertEqual(sparsejit.spgemm(A, A).indices.dtype, np.int32)  # int32 in, int32 out

    def test_empty_vectors_have_length_zero(self):
        for x in (sp.csc_array((0, 1)), sp.csr_array((1, 0))):
            self.assertEqual(sparsejit.Tensor.from_vector(x).info().dims[0], 0)
        y = sparsejit.spmspv(sp.csr_array((3, 0)), sp.csc_array((0, 1)))
        self.assertEqual(y.shape, (3, 1))
        self.assertEqual(y.nnz, 0)
        with self.assertRaises(sparsejit.ShapeMismatchError):  # A has a column, x none
            sparsejit.spmspv(sp.csr_array((3, 1)), sp.csc_array((0, 1)))

    def test_vector_lengths_past_int64_are_refused(self):
        for n in (2**63, 2**64 + 5):
            with self.assertRaises(sparsejit.IndexOverflowError):
                sparsejit.Tensor.sparse_vector(np.array([0], np.int64), np.array([1.0]), n)

    def test_tensors_of_a_context_need_no_ctx_and_another_context_is_refused(self):
        ctx = sparsejit.Context()
        A = random_csr(30, 30, 0.1, 21)
        X = sparsejit.Tensor.from_scipy(A, ctx)
        expected = (A @ A).toarray()
        np.testing.assert_allclose(sparsejit.spgemm(X, X).toarray(), expected)  # X's context
        np.testing.assert_allclose(sparsejit.Plan("spgemm", X, X).execute(X, X).toarray(), expected)
        with self.assertRaisesRegex(ValueError, "another Context"):
            sparsejit.spgemm(X, X, ctx=sparsejit.default_context())

    def test_log_callback_receives_messages(self):
        messages = []
        ctx = sparsejit.Context(log_level="debug", log_callback=lambda level, msg: messages.append((level, msg)))
        A = random_csr(20, 20, 0.2, 14)
        sparsejit.spgemm(A, A, ctx=ctx)
        if "SPARSEJIT_LOG" not in os.environ:
            self.assertTrue(any("plan spgemm" in m for _, m in messages), messages)
            self.assertTrue(all(level == "debug" for level, _ in messages))


@unittest.skipIf(_lib.sj_einsum_plan is None, "this libsparsejit has no einsum")
class Einsum(unittest.TestCase):
    @unittest.skipIf(_lib.sj_einsum_backend_load is None, "this libsparsejit has no sj_einsum_backend_load")
    def test_the_backend_loads_ahead_of_need_or_says_why_not(self):
        sparsejit.load_einsum_backend()  # beside the library
        sparsejit.load_einsum_backend()  # loaded: returns at once
        code = "import sparsejit\ntry:\n    sparsejit.load_einsum_backend()\nexcept sparsejit.JitError as e:\n    print(e)"
        package = str(Path(sparsejit.__file__).resolve().parent.parent)
        env = dict(os.environ, SPARSEJIT_LLVM_MODULE="/nonexistent/libsparsejit-llvm.so",
                   PYTHONPATH=os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH")) if p))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("cannot load the LLVM module libsparsejit-llvm.so", out.stdout)
        self.assertIn("/nonexistent/libsparsejit-llvm.so", out.stdout)

    def test_einsum_against_scipy(self):
        A = random_csr(30, 20, 0.15, 30)
        B = random_csr(20, 25, 0.15, 31)
        C = random_csr(30, 20, 0.3, 32)
        assert_same(self, sparsejit.einsum("ik,kj->ij", A, B), A @ B)
        assert_same(self, sparsejit.einsum("X(i,j) = P(i,k) * Q(k,j)", A, B), A @ B)
        assert_same(self, sparsejit.einsum("ij,ij->ij", A, C), A.multiply(C))
        assert_same(self, sparsejit.einsum("ij->ji", A), A.T)
        total = sparsejit.einsum("ij,ij->", A, C)
        self.assertAlmostEqual(float(total), float(A.multiply(C).sum()))
        assert_same(self, sparsejit.einsum("ik,kj->ij", A, B, formats=["csr", "csc"]), A @ B)

    def test_three_way_results_are_coo_tensors(self):
        # A small FROSTT file (1-based coordinates) read by the library, against numpy.
        entries = {(0, 1, 2): 1.5, (0, 3, 0): 2.0, (1, 1, 1): -1.0, (2, 0, 2): 4.0, (2, 3, 1): 0.5}
        shape = (3, 4, 3)
        dense = np.zeros(shape)
        for c, v in entries.items():
            dense[c] = v
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "t.tns"
            path.write_text("".join(f"{i + 1} {j + 1} {k + 1} {v}\n" for (i, j, k), v in entries.items()))
            X = sparsejit.Tensor.read(path)
        Y = sparsejit.einsum("Y(i,j,k) = X(i,j,k) * X(i,j,k)", X)
        self.assertIsInstance(Y, sparsejit.CooTensor)
        self.assertEqual((Y.shape, Y.nnz, Y.ndim), (shape, 5, 3))
        np.testing.assert_array_equal(Y.todense(), dense * dense)
        B = random_csr(3, 5, 0.5, 40)
        Z = sparsejit.einsum("ijk,kr->ijr", X, B)
        np.testing.assert_allclose(Z.todense(), np.einsum("ijk,kr->ijr", dense, B.toarray()))
        W = sparsejit.einsum("ijk,kr->ijkr", X, B)  # order 4
        self.assertEqual(W.shape, (3, 4, 3, 5))
        np.testing.assert_allclose(W.todense(), np.einsum("ijk,kr->ijkr", dense, B.toarray()))
        # Permuted output levels and an all-dense output give the same tensor.
        P = sparsejit.einsum("Y(i,j,k) = X(i,j,k)", X, output_format="dense(i),compressed(k),compressed(j)")
        np.testing.assert_array_equal(P.todense(), dense)
        D = sparsejit.einsum("Y(i,j,k) = X(i,j,k)", X, output_format="dense")
        self.assertEqual(D.nnz, dense.size)
        np.testing.assert_array_equal(D.todense(), dense)
        # A 3-D result reduced to a matrix comes back as a scipy array again.
        M = sparsejit.einsum("M(i,j) = X(i,j,k)", X)
        np.testing.assert_allclose(sp.csr_array(M).toarray(), dense.sum(axis=2))

    def test_einsum_errors(self):
        A = random_csr(10, 10, 0.3, 33)
        with self.assertRaises(sparsejit.ParseError):
            sparsejit.einsum("C(i,j) = A(i,k) * ", A)
        with self.assertRaises(ValueError):
            sparsejit.einsum("ik,kj", A, A)
        with self.assertRaises(ValueError):
            sparsejit.einsum("ik,kj->ij", A)
        with self.assertRaises(sparsejit.ShapeMismatchError):
            sparsejit.einsum("ik,kj->ij", A, random_csr(7, 7, 0.3, 34))


class Errors(unittest.TestCase):
    def test_library_messages_become_exceptions(self):
        A = random_csr(10, 12, 0.3, 20)
        with self.assertRaises(sparsejit.ShapeMismatchError) as cm:
            sparsejit.spgemm(A, A)
        self.assertIn("spgemm", str(cm.exception))
        self.assertIsInstance(cm.exception, sparsejit.Error)
        self.assertEqual(cm.exception.status, 4)
        with self.assertRaises(sparsejit.InvalidArgumentError):
            sparsejit.spgemm(A, A.T.tocsr(), schedule="push")  # a SpMSpV schedule
        with self.assertRaises(sparsejit.TypeMismatchError):
            sparsejit.spgemm(A, sp.csr_array(A.T).astype(np.float32))

    def test_unsorted_indices_reach_the_library_validation(self):
        A = sp.csr_array((np.array([1.0, 2.0]), np.array([2, 0], dtype=np.int32), np.array([0, 2, 2])), shape=(2, 3))
        with self.assertRaises(sparsejit.InvalidTensorError) as cm:
            sparsejit.transpose(A)
        self.assertIn("sorted", str(cm.exception))
        B = sp.csr_array((np.array([1.0]), np.array([7], dtype=np.int32), np.array([0, 1, 1])), shape=(2, 3))
        with self.assertRaises(sparsejit.InvalidTensorError):
            sparsejit.transpose(B)

    def test_bad_python_inputs_are_refused_before_the_library(self):
        A = random_csr(10, 10, 0.3, 21)
        with self.assertRaises(TypeError):
            sparsejit.spgemm(A.toarray(), A)
        with self.assertRaises(TypeError):
            sparsejit.spgemm(sp.coo_array(A), A)
        Ai = A.copy()
        Ai.data = Ai.data.astype(np.int64)
        with self.assertRaises(TypeError) as cm:
            sparsejit.spgemm(Ai, A)
        self.assertIn("int64", str(cm.exception))
        Ac = A.copy()
        Ac.data = np.complex128(Ac.data)
        with self.assertRaises(TypeError):
            sparsejit.spgemm(Ac, A)
        An = A.copy()
        An.data = np.repeat(A.data, 2)[::2]  # a strided view
        with self.assertRaises(ValueError):
            sparsejit.spgemm(An, A)
        with self.assertRaises(ValueError):
            sparsejit.spgemm(A, A, semiring="nope")
        with self.assertRaises(ValueError):
            sparsejit.Plan("frobnicate", A)
        broken = sp.csr_array(A)
        broken.indptr = broken.indptr[:-1]
        with self.assertRaises((ValueError, sparsejit.Error)):
            sparsejit.transpose(broken)
        with self.assertRaises(sparsejit.IOFailedError):
            sparsejit.Tensor.read("/nonexistent/x.mtx")


class RealMatrices(unittest.TestCase):
    def test_spgemm_and_friends_match_scipy(self):
        d = data_dir()
        if d is None:
            self.skipTest("shared/data/matrices is absent")
        checked = 0
        for f in sorted((d / "matrices").glob("*.mtx")):
            m = scipy.io.mmread(str(f))
            if np.iscomplexobj(m) or m.nnz > 60000 or m.shape[0] != m.shape[1]:
                continue
            A = sp.csr_array(m, dtype=np.float64)
            A.sum_duplicates()
            want = A @ A
            if want.nnz > 1_000_000:
                continue
            with self.subTest(matrix=f.name):
                assert_close_sparse(self, sparsejit.spgemm(A, A), want)
                assert_close_sparse(self, sparsejit.spgemm(A, sp.csc_array(A)), want)
                At = sp.csr_array(A.T)
                assert_close_sparse(self, sparsejit.ewise_add(A, At), A + A.T)
                assert_close_sparse(self, sparsejit.ewise_mult(A, At), A.multiply(At))
                assert_close_sparse(self, sparsejit.ewise_mult(A, A, transpose_b=True), A.multiply(At))
                x = sp.csc_array(A[:, [0]])
                assert_close_sparse(self, sparsejit.spmspv(A, x), A @ x)
                assert_close_sparse(self, sparsejit.einsum("ik,kj->ij", A, A), want)
                assert_close_sparse(self, sparsejit.einsum("ij,ji->ij", A, A), A.multiply(At))
                self.assertIn("chosen", sparsejit.explain("spgemm", A, A))
                checked += 1
            if checked >= 12:
                break
        self.assertGreater(checked, 0)

    def test_three_way_einsum_on_real_tensors(self):
        d = data_dir()
        files = sorted((d / "tensors").glob("*.tns")) if d is not None and (d / "tensors").is_dir() else []
        if not files:
            self.skipTest("shared/data/tensors is absent")
        for f in files:
            with self.subTest(tensor=f.name):
                rows = np.loadtxt(f, ndmin=2)
                coords = rows[:, :-1].astype(np.int64) - 1
                dense = np.zeros(tuple(coords.max(axis=0) + 1))
                np.add.at(dense, tuple(coords.T), rows[:, -1])
                X = sparsejit.Tensor.read(f)
                Y = sparsejit.einsum("Y(i,j,k) = X(i,j,k) * X(i,j,k)", X)
                np.testing.assert_allclose(Y.todense(), dense * dense)


if __name__ == "__main__":
    unittest.main()
