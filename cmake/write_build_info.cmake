# Writes generated/sparsejit_build_info.hpp (run at configure time and before every build).
# The build id is GIT-CONFIGURETIME-SOURCEHASH: the hash covers every source of the library and
# of its LLVM module, so that rebuilding after an edit, without configuring again, never trusts
# kernels that the cache holds from the code before the edit. The header is rewritten only when
# its text changes, so an unchanged tree recompiles nothing.
# Inputs (-D): SOURCE_DIR, OUTPUT, TEMPLATE, BUILD_ID_PREFIX, and the PROJECT_VERSION* values.
file(GLOB_RECURSE sources LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}"
     "${SOURCE_DIR}/capi/*" "${SOURCE_DIR}/src/*" "${SOURCE_DIR}/jit/*" "${SOURCE_DIR}/kernels/*"
     "${SOURCE_DIR}/cache/*" "${SOURCE_DIR}/include/*")
list(SORT sources)
set(digests "")
foreach(f IN LISTS sources)
  file(SHA256 "${SOURCE_DIR}/${f}" h)
  string(APPEND digests "${f} ${h}\n")
endforeach()
string(SHA256 tree "${digests}")
string(SUBSTRING "${tree}" 0 12 tree)
set(SPARSEJIT_BUILD_ID "${BUILD_ID_PREFIX}-${tree}")
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
