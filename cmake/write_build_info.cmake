# Writes generated/sparsejit_build_id.cpp (at configure time and before every build; see
# src/build_id.hpp). The build id is GIT-CONFIGURETIME-SOURCEHASH: the git commit and time of
# the last configure, and a hash of the library's sources taken again here, so that rebuilding
# after an edit, without configuring again, never trusts kernels that the cache holds from the
# code before the edit. The file is rewritten only when its text changes, so an unchanged tree
# recompiles nothing.
# Inputs (-D): SOURCE_DIR; FOLDERS (comma-separated, under SOURCE_DIR); OUTPUT; TEMPLATE;
# BUILD_ID_PREFIX; PROJECT_VERSION.
string(REPLACE "," ";" folders "${FOLDERS}")
set(patterns "")
foreach(d IN LISTS folders)
  foreach(ext IN ITEMS c cpp h hpp inc)
    list(APPEND patterns "${SOURCE_DIR}/${d}/*.${ext}")
  endforeach()
endforeach()
file(GLOB_RECURSE sources LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}" ${patterns})
list(SORT sources)
set(digests "")
foreach(f IN LISTS sources)
  # Editors' files (Emacs lock links ".#x.cpp" pointing nowhere, files gone since the glob) are
  # not sources.
  get_filename_component(name "${f}" NAME)
  if(name MATCHES "^\\." OR NOT EXISTS "${SOURCE_DIR}/${f}" OR IS_DIRECTORY "${SOURCE_DIR}/${f}")
    continue()
  endif()
  file(SHA256 "${SOURCE_DIR}/${f}" h)
  string(APPEND digests "${f} ${h}\n")
endforeach()
string(SHA256 tree "${digests}")
string(SUBSTRING "${tree}" 0 12 tree)
set(SPARSEJIT_BUILD_ID "${BUILD_ID_PREFIX}-${tree}")
string(LENGTH "${SPARSEJIT_BUILD_ID}" length)
if(length GREATER 47)
  message(FATAL_ERROR "build id '${SPARSEJIT_BUILD_ID}' is over 47 characters (src/build_id.hpp)")
endif()
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
