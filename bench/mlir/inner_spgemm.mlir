// Inner-product SpGEMM in MLIR 15's sparse_tensor dialect (the Splyce paper's baseline):
// A(i,j) = sum_k B(i,k) * C(k,j), B CSR, C CSC (k innermost compressed in both), dense A.
// Lowered by scripts/bench-coiter.sh: mlir-opt-15 --sparse-compiler, mlir-translate-15
// --mlir-to-llvmir, clang-15 -O3 -march=native -c; called through its C interface.
#CSR = #sparse_tensor.encoding<{
  dimLevelType = [ "dense", "compressed" ],
  pointerBitWidth = 64,
  indexBitWidth = 32
}>
#CSC = #sparse_tensor.encoding<{
  dimLevelType = [ "dense", "compressed" ],
  dimOrdering = affine_map<(k, j) -> (j, k)>,
  pointerBitWidth = 64,
  indexBitWidth = 32
}>
#trait = {
  indexing_maps = [
    affine_map<(i, j, k) -> (i, k)>,
    affine_map<(i, j, k) -> (k, j)>,
    affine_map<(i, j, k) -> (i, j)>
  ],
  iterator_types = ["parallel", "parallel", "reduction"]
}
func.func @inner_spgemm(%b: tensor<?x?xf64, #CSR>, %c: tensor<?x?xf64, #CSC>,
                        %out: tensor<?x?xf64>) -> tensor<?x?xf64>
    attributes { llvm.emit_c_interface } {
  %0 = linalg.generic #trait
    ins(%b, %c : tensor<?x?xf64, #CSR>, tensor<?x?xf64, #CSC>)
    outs(%out : tensor<?x?xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<?x?xf64>
  return %0 : tensor<?x?xf64>
}
