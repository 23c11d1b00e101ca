// The safe wrapper against hand-computed results, a naive SpGEMM on real matrices, and the
// library's error messages.
use std::collections::BTreeMap;
use std::path::PathBuf;

use sparsejit::{status, Context, Indices, Layout, Op, OpOptions, Plan, Schedule, Semiring, Tensor, Values};

// A = [[1, 0, 2], [0, 3, 0]]  (2 x 3)
const A_PTR: [i64; 3] = [0, 2, 3];
const A_IDX: [i32; 3] = [0, 2, 1];
const A_VAL: [f64; 3] = [1.0, 2.0, 3.0];
// B = [[1, 0], [0, 1], [4, 0]]  (3 x 2)
const B_PTR: [i64; 4] = [0, 1, 2, 3];
const B_IDX: [i64; 3] = [0, 1, 0];
const B_VAL: [f64; 3] = [1.0, 1.0, 4.0];

#[test]
fn spgemm_matches_the_hand_computed_product() {
    let ctx = Context::new().unwrap();
    let a = Tensor::csr(&ctx, 2, 3, &A_PTR, &A_IDX, &A_VAL).unwrap();
    let b_idx32: Vec<i32> = B_IDX.iter().map(|&x| x as i32).collect();
    let b = Tensor::csr(&ctx, 3, 2, &B_PTR, &b_idx32, &B_VAL).unwrap();
    // A * B = [[1*1 + 2*4, 0], [0, 3*1]] = [[9, 0], [0, 3]]
    let c = ctx.spgemm(&a, &b, &OpOptions::new()).unwrap();
    assert_eq!(c.shape(), (2, 2));
    let (pos, crd) = c.compressed_level::<i32>(1).unwrap();
    assert_eq!(pos, &[0, 1, 2]);
    assert_eq!(crd, &[0, 1]);
    assert_eq!(c.values::<f64>().unwrap(), &[9.0, 3.0]);
    // The same through a plan into Rust-owned Vecs, with every schedule that serves it.
    for s in [Schedule::Auto, Schedule::Reference, Schedule::GustavsonDense, Schedule::GustavsonHash] {
        let plan = Plan::new(&ctx, Op::Spgemm, &[&a, &b], &OpOptions::new().schedule(s)).unwrap();
        let r = plan.execute_owned(&[&a, &b]).unwrap();
        assert_eq!(r.layout, Layout::Csr);
        assert_eq!(r.dims, vec![2, 2]);
        assert_eq!(r.pos, vec![0, 1, 2]);
        assert_eq!(r.crd_i64(), vec![0, 1]);
        assert_eq!(r.values_f64(), vec![9.0, 3.0]);
    }
    // Repeated executions (the plan keeps the product's structure from its second on), and
    // with recompute_structure: the same result every time.
    for recompute in [false, true] {
        let plan = Plan::new(&ctx, Op::Spgemm, &[&a, &b], &OpOptions::new().recompute_structure(recompute)).unwrap();
        for _ in 0..4 {
            let r = plan.execute_owned(&[&a, &b]).unwrap();
            assert_eq!(r.pos, vec![0, 1, 2]);
            assert_eq!(r.crd_i64(), vec![0, 1]);
            assert_eq!(r.values_f64(), vec![9.0, 3.0]);
        }
    }
}

#[test]
fn masked_spgemm_and_its_complement() {
    let ctx = Context::new().unwrap();
    let a = Tensor::csr(&ctx, 2, 3, &A_PTR, &A_IDX, &A_VAL).unwrap();
    let b_idx32: Vec<i32> = B_IDX.iter().map(|&x| x as i32).collect();
    let b = Tensor::csr(&ctx, 3, 2, &B_PTR, &b_idx32, &B_VAL).unwrap();
    // A * B = [[9, 0], [0, 3]]; the mask M = [[1, 1], [0, 0]] keeps row 0, its complement row 1.
    let m = Tensor::csr(&ctx, 2, 2, &[0i64, 2, 2], &[0i32, 1], &[1.0f64, 1.0]).unwrap();
    let c = ctx.spgemm_masked(&m, &a, &b, &OpOptions::new()).unwrap();
    let (pos, crd) = c.compressed_level::<i32>(1).unwrap();
    assert_eq!((pos, crd), (&[0i64, 1, 1][..], &[0i32][..]));
    assert_eq!(c.values::<f64>().unwrap(), &[9.0]);
    let c = ctx.spgemm_masked(&m, &a, &b, &OpOptions::new().mask_complement(true)).unwrap();
    let (pos, crd) = c.compressed_level::<i32>(1).unwrap();
    assert_eq!((pos, crd), (&[0i64, 0, 1][..], &[1i32][..]));
    assert_eq!(c.values::<f64>().unwrap(), &[3.0]);
}

#[test]
fn int64_coordinates_transpose_ewise_and_spmspv() {
    let ctx = Context::new().unwrap();
    let a_idx64: Vec<i64> = A_IDX.iter().map(|&x| x as i64).collect();
    let a = Tensor::csr(&ctx, 2, 3, &A_PTR, &a_idx64, &A_VAL).unwrap();
    assert_eq!(a.info().owns_arrays, 0, "borrowed, not copied");
    let at = ctx.transpose(&a).unwrap();  // [[1, 0], [0, 3], [2, 0]]
    let (pos, crd) = at.compressed_level::<i64>(1).unwrap();
    assert_eq!((pos, crd), (&[0i64, 1, 2, 3][..], &[0i64, 1, 0][..]));
    assert_eq!(at.values::<f64>().unwrap(), &[1.0, 3.0, 2.0]);
    let sq = ctx.ewise_mult(&a, &a, &OpOptions::new()).unwrap();
    assert_eq!(sq.values::<f64>().unwrap(), &[1.0, 4.0, 9.0]);
    let sum = ctx.ewise_add(&a, &a, &OpOptions::new()).unwrap();
    assert_eq!(sum.values::<f64>().unwrap(), &[2.0, 4.0, 6.0]);
    // y = A * x with x = e_2 * 5  ->  y = [10, 0], stored at index 0 only.
    let (xi, xv) = ([2i64], [5.0f64]);
    let x = Tensor::sparse_vector(&ctx, 3, &xi, &xv).unwrap();
    let y = ctx.spmspv(&a, &x, &OpOptions::new()).unwrap();
    assert_eq!(y.values::<f64>().unwrap(), &[10.0]);
    let plan = Plan::new(&ctx, Op::Spmspv, &[&a, &x], &OpOptions::new()).unwrap();
    let r = plan.execute_owned(&[&a, &x]).unwrap();
    assert_eq!((r.layout, r.crd_i64(), r.values_f64()), (Layout::SparseVector, vec![0], vec![10.0]));
    // min-plus: shortest two-hop paths of A with itself transposed.
    let mp = ctx.spgemm(&a, &a, &OpOptions::new().semiring(Semiring::MinPlus).transpose_b(true)).unwrap();
    assert_eq!(mp.values::<f64>().unwrap(), &[2.0, 6.0]);  // (0,0): min(1+1, 2+2); (1,1): 3+3
    let text = plan.explain_text().unwrap();
    assert!(text.contains("chosen:"), "{text}");
    assert!(plan.explain_json().unwrap().starts_with('{'));
}

#[test]
fn errors_carry_the_library_message() {
    let ctx = Context::new().unwrap();
    let a = Tensor::csr(&ctx, 2, 3, &A_PTR, &A_IDX, &A_VAL).unwrap();
    let e = ctx.spgemm(&a, &a, &OpOptions::new()).err().expect("2x3 * 2x3 must fail");
    assert_eq!(e.status, status::SHAPE_MISMATCH);
    assert!(e.message.contains("spgemm"), "{}", e.message);
    assert!(e.to_string().contains("SJ_ERR_SHAPE_MISMATCH"), "{e}");
    let unsorted = [2i32, 0, 1];
    let e = Tensor::csr(&ctx, 2, 3, &A_PTR, &unsorted, &A_VAL).err().expect("unsorted columns");
    assert_eq!(e.status, status::INVALID_TENSOR);
    assert!(e.message.contains("sorted"), "{}", e.message);
    let short = [0i64, 2];
    let e = Tensor::csr(&ctx, 2, 3, &short, &A_IDX, &A_VAL).err().expect("short pointers");
    assert_eq!(e.status, status::INVALID_TENSOR);
    let e = Plan::new(&ctx, Op::Spgemm, &[&a], &OpOptions::new()).err().expect("one operand for spgemm");
    assert_eq!(e.status, status::INVALID_ARGUMENT);
    let e = Tensor::read_file(&ctx, "/nonexistent/m.mtx").err().expect("missing file");
    assert_eq!(e.status, status::IO);
}

fn naive_spgemm(rows: usize, p: &[i64], c: &[i32], v: &[f64]) -> Vec<BTreeMap<i32, f64>> {
    let mut out = vec![BTreeMap::new(); rows];
    for i in 0..rows {
        for k in p[i]..p[i + 1] {
            let (kk, av) = (c[k as usize] as usize, v[k as usize]);
            for j in p[kk]..p[kk + 1] {
                *out[i].entry(c[j as usize]).or_insert(0.0) += av * v[j as usize];
            }
        }
    }
    out
}

#[test]
fn real_matrices_against_a_naive_product() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let mut files = vec![repo.join("data/karate.mtx")];
    let shared = std::env::var("SPARSEJIT_DATA_DIR").map(PathBuf::from).unwrap_or(repo.join("../shared/data"));
    for name in ["494_bus.mtx", "bcsstk06.mtx"] {
        let f = shared.join("matrices").join(name);
        if f.exists() {
            files.push(f);
        } else {
            eprintln!("skipping {} (absent)", f.display());
        }
    }
    let ctx = Context::new().unwrap();
    for f in files {
        let a = Tensor::read_file(&ctx, &f).unwrap();
        let (rows, _) = a.shape();
        let (p, c) = a.compressed_level::<i32>(1).unwrap();
        let want = naive_spgemm(rows as usize, p, c, a.values::<f64>().unwrap());
        let plan = Plan::new(&ctx, Op::Spgemm, &[&a, &a], &OpOptions::new()).unwrap();
        let got = plan.execute_owned(&[&a, &a]).unwrap();
        let (gc, gv) = (got.crd_i64(), got.values_f64());
        for i in 0..rows as usize {
            let seg = got.pos[i] as usize..got.pos[i + 1] as usize;
            let row: Vec<(i64, f64)> = seg.map(|k| (gc[k], gv[k])).collect();
            assert_eq!(row.len(), want[i].len(), "{}: row {i}", f.display());
            for ((j, x), (wj, wx)) in row.iter().zip(want[i].iter()) {
                assert_eq!(*j, *wj as i64, "{}: row {i}", f.display());
                assert!((x - wx).abs() <= 1e-9 * wx.abs().max(1.0), "{}: ({i},{j}) {x} vs {wx}", f.display());
            }
        }
    }
}

#[test]
fn plans_run_from_many_threads() {
    let ctx = Context::new().unwrap();
    let a = Tensor::csr(&ctx, 2, 3, &A_PTR, &A_IDX, &A_VAL).unwrap();
    let plan = Plan::new(&ctx, Op::Spgemm, &[&a, &a], &OpOptions::new().transpose_b(true)).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let r = plan.execute_owned(&[&a, &a]).unwrap();
                assert_eq!(r.values_f64(), vec![5.0, 9.0]);  // A A^T = [[5, 0], [0, 9]]
            });
        }
    });
}

#[test]
fn declared_structs_match_the_library() {
    // sj_config_init and sj_op_options_init write the library's sizeof into struct_size.
    let mut scratch = [0u64; 128];
    unsafe { sparsejit::sys::sj_config_init(scratch.as_mut_ptr() as *mut sparsejit::sys::sj_config) };
    assert_eq!(scratch[0] as u32 as usize, std::mem::size_of::<sparsejit::sys::sj_config>(), "sj_config drifted");
    let mut scratch = [0u64; 128];
    unsafe { sparsejit::sys::sj_op_options_init(scratch.as_mut_ptr() as *mut sparsejit::sys::sj_op_options) };
    // sj_op_options may predate its last fields, `calibrate`, `recompute_structure` and
    // `mask_complement` (4 bytes each); anything else is drift.
    let full = std::mem::size_of::<sparsejit::sys::sj_op_options>();
    let lib = scratch[0] as u32 as usize;
    assert!(lib == full || lib == full - 4 || lib == full - 8 || lib == full - 12, "sj_op_options drifted: library {lib}, declared {full}");
    assert!(Context::version().starts_with("0."));
    Context::load_einsum_backend().unwrap(); // beside the library in the build folder
}

#[test]
fn einsum_matrices_and_three_way_results_per_level() {
    let ctx = Context::new().unwrap();
    let a = Tensor::csr(&ctx, 2, 3, &A_PTR, &A_IDX, &A_VAL).unwrap();
    let b_idx32: Vec<i32> = B_IDX.iter().map(|&x| x as i32).collect();
    let b = Tensor::csr(&ctx, 3, 2, &B_PTR, &b_idx32, &B_VAL).unwrap();
    // The product in index notation equals the hand-computed one ([[9, 0], [0, 3]]).
    let c = ctx.einsum("C(i,j) = A(i,k) * B(k,j)", &[&a, &b], None, &OpOptions::new()).unwrap();
    let (pos, crd) = c.compressed_level::<i32>(1).unwrap();
    assert_eq!((pos, crd), (&[0i64, 1, 2][..], &[0i32, 1][..]));
    assert_eq!(c.values::<f64>().unwrap(), &[9.0, 3.0]);
    // A matrix result per level: the same arrays as the flat two-pass form.
    let plan = Plan::einsum(&ctx, "C(i,j) = A(i,k) * B(k,j)", &[&a, &b], None, &OpOptions::new()).unwrap();
    let flat = plan.execute_owned(&[&a, &b]).unwrap();
    let lv = plan.execute_levels(&[&a, &b]).unwrap();
    assert_eq!(lv.levels, vec![0, 1]);
    assert_eq!(lv.pos[1], flat.pos);
    assert_eq!(lv.crd[1], flat.crd);
    assert_eq!(lv.values, flat.values);
    // X(i,j,k) = A(i,j) * B(j,k): X[0,0,0] = 1*1, X[0,2,0] = 2*4, X[1,1,1] = 3*1, as CSF
    // (dense i, compressed j, compressed k), 2 x 3 x 2.
    let plan = Plan::einsum(&ctx, "X(i,j,k) = A(i,j) * B(j,k)", &[&a, &b], Some("csf"), &OpOptions::new()).unwrap();
    let x = plan.execute_levels(&[&a, &b]).unwrap();
    assert_eq!(x.dims, vec![2, 3, 2]);
    assert_eq!(x.mode_order, vec![0, 1, 2]);
    assert_eq!(x.levels, vec![0, 1, 1]);
    assert!(x.pos[0].is_empty());
    assert_eq!(x.crd[0], Indices::I32(vec![]));
    assert_eq!(x.pos[1], vec![0, 2, 3]);
    assert_eq!(x.crd[1], Indices::I32(vec![0, 2, 1]));
    assert_eq!(x.pos[2], vec![0, 1, 2, 3]);
    assert_eq!(x.crd[2], Indices::I32(vec![0, 0, 1]));
    assert_eq!(x.values, Values::F64(vec![1.0, 8.0, 3.0]));
    // The same as the library-owned result of the plan.
    let t = plan.execute(&[&a, &b]).unwrap();
    for l in 1..3 {
        let (p, c) = t.compressed_level::<i32>(l).unwrap();
        assert_eq!(p, &x.pos[l as usize][..]);
        assert_eq!(Indices::I32(c.to_vec()), x.crd[l as usize]);
    }
    // The flat form has no room for three levels and says what to use instead.
    let e = plan.execute_owned(&[&a, &b]).err().expect("a 3-D result has no flat layout");
    assert_eq!(e.status, status::FORMAT);
    assert!(e.message.contains("sj_pending_fill_levels"), "{}", e.message);
    // Errors of the expression carry the library's message.
    let e = ctx.einsum("C(i,j) = A(i,k) *", &[&a], None, &OpOptions::new()).err().expect("malformed");
    assert_eq!(e.status, status::PARSE);
    let e = ctx.einsum("C(i,j) = A(i,k) * B(k,j)", &[&a, &a], None, &OpOptions::new()).err().expect("2x3 * 2x3");
    assert_eq!(e.status, status::SHAPE_MISMATCH);
    let e = ctx.einsum("C(i,j) = A(i,j)\0", &[&a], None, &OpOptions::new()).err().expect("a NUL byte");
    assert_eq!(e.status, status::INVALID_ARGUMENT);
}

#[test]
fn execute_into_reuses_the_callers_vecs() {
    let ctx = Context::new().unwrap();
    let a_idx64: Vec<i64> = A_IDX.iter().map(|&x| x as i64).collect();
    let a = Tensor::csr(&ctx, 2, 3, &A_PTR, &a_idx64, &A_VAL).unwrap();
    let x1 = Tensor::sparse_vector(&ctx, 3, &[2i64], &[5.0f64]).unwrap();  // y = [10, .]
    let x2 = Tensor::sparse_vector(&ctx, 3, &[0i64, 1], &[1.0f64, 1.0]).unwrap();  // y = [1, 3]
    let plan = Plan::new(&ctx, Op::Spmspv, &[&a, &x1], &OpOptions::new()).unwrap();
    // Start from Vecs of other types: the first call learns the result's.
    let mut out = sparsejit::OwnedResult { layout: Layout::Dense, dims: vec![], pos: vec![], crd: Indices::I32(vec![]),
                                           values: Values::F32(vec![]) };
    plan.execute_into(&[&a, &x1], &mut out).unwrap();
    assert_eq!((out.layout, out.dims.clone(), out.crd.clone(), out.values.clone()),
               (Layout::SparseVector, vec![2], Indices::I64(vec![0]), Values::F64(vec![10.0])));
    plan.execute_into(&[&a, &x2], &mut out).unwrap();  // a larger y: room is made
    assert_eq!((out.crd.clone(), out.values.clone()), (Indices::I64(vec![0, 1]), Values::F64(vec![1.0, 3.0])));
    let cap = match &out.values { Values::F64(v) => v.capacity(), _ => 0 };
    for _ in 0..5 {
        plan.execute_into(&[&a, &x1], &mut out).unwrap();
        assert_eq!(out.values, Values::F64(vec![10.0]));
        plan.execute_into(&[&a, &x2], &mut out).unwrap();
        assert_eq!(out.values, Values::F64(vec![1.0, 3.0]));
    }
    assert_eq!(match &out.values { Values::F64(v) => v.capacity(), _ => 0 }, cap, "the same memory, reused");
    // SpGEMM (copied into the Vecs) equals the two-pass result; the same `out` serves.
    let b_idx32: Vec<i32> = B_IDX.iter().map(|&x| x as i32).collect();
    let b = Tensor::csr(&ctx, 3, 2, &B_PTR, &b_idx32, &B_VAL).unwrap();
    let a32 = Tensor::csr(&ctx, 2, 3, &A_PTR, &A_IDX, &A_VAL).unwrap();
    let mm = Plan::new(&ctx, Op::Spgemm, &[&a32, &b], &OpOptions::new()).unwrap();
    mm.execute_into(&[&a32, &b], &mut out).unwrap();
    assert_eq!(out, mm.execute_owned(&[&a32, &b]).unwrap());
    assert_eq!((out.pos.clone(), out.crd_i64(), out.values_f64()), (vec![0, 1, 2], vec![0, 1], vec![9.0, 3.0]));
    // Operands unlike the planned ones: the library's error, `out` left as it was.
    let before = out.clone();
    let err = mm.execute_into(&[&b, &a32], &mut out).unwrap_err();
    assert_eq!(err.status, status::SHAPE_MISMATCH, "{err}");
    assert_eq!(out.values, before.values);
}
