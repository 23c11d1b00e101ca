// Links libsparsejit.so from $SPARSEJIT_LIB_DIR (scripts/ci-bindings.sh sets it), else from the
// `build` folder of the source tree this crate sits in; the path is recorded as an rpath so
// the tests run without LD_LIBRARY_PATH.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=SPARSEJIT_LIB_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let dir = match env::var("SPARSEJIT_LIB_DIR") {
        Ok(d) => PathBuf::from(d),
        Err(_) => PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../../build"),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    if !dir.join("libsparsejit.so").exists() {
        println!(
            "cargo:warning=libsparsejit.so not found in {} (set SPARSEJIT_LIB_DIR to the folder that has it)",
            dir.display()
        );
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=sparsejit");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}
