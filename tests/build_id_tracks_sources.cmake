cmake_minimum_required(VERSION 3.20)  # (script mode: IN_LIST, file(CREATE_LINK))
# Checks cmake/write_build_info.cmake. On a scratch tree: an edit to a source in any of the
# library's folders changes the build id (so the cache never serves kernels of the code before
# the edit), an unchanged tree leaves the generated file untouched (so a build without edits
# recompiles nothing), and neither files outside those folders nor editors' files (an Emacs lock
# link pointing nowhere, a swap file) count or break it. Then, on the real tree: the id the
# built CLI reports is the one the sources give now, so the build hashed them again.
# Inputs (-D): SCRIPT, TEMPLATE, FOLDERS (as the build passes them), WORK, SOURCE_DIR, CLI.
string(REPLACE "," ";" folders "${FOLDERS}")
file(REMOVE_RECURSE "${WORK}")
foreach(d IN LISTS folders)
  file(WRITE "${WORK}/tree/${d}/deep/a.cpp" "int a() { return 1; }\n")
endforeach()
file(WRITE "${WORK}/tree/docs/notes.md" "notes\n")
set(out "${WORK}/generated/id.cpp")

function(build_id var source_dir)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${source_dir} -DFOLDERS=${FOLDERS} -DOUTPUT=${out}
                          -DTEMPLATE=${TEMPLATE} -DBUILD_ID_PREFIX=test-prefix -DPROJECT_VERSION=1.2.3
                          -P ${SCRIPT}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "write_build_info.cmake failed (${rc}): ${err}")
  endif()
  file(STRINGS "${out}" line REGEX "kBuildId\\[\\] = ")
  if(NOT line MATCHES "\"test-prefix-([0-9a-f]+)\"")
    message(FATAL_ERROR "no build id of the form PREFIX-HASH in ${out}: ${line}")
  endif()
  set(${var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

build_id(first "${WORK}/tree")
file(TIMESTAMP "${out}" stamp_first "%s%f")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
build_id(again "${WORK}/tree")
file(TIMESTAMP "${out}" stamp_again "%s%f")
if(NOT again STREQUAL first OR NOT stamp_again STREQUAL stamp_first)
  message(FATAL_ERROR "an unchanged tree rewrote the file: ${first} / ${again}, ${stamp_first} / ${stamp_again}")
endif()

file(WRITE "${WORK}/tree/docs/notes.md" "other notes\n")
list(GET folders 0 first_folder)
file(CREATE_LINK "${WORK}/tree/nowhere.cpp" "${WORK}/tree/${first_folder}/.#a.cpp" SYMBOLIC)
file(WRITE "${WORK}/tree/${first_folder}/.a.cpp.swp" "swap\n")
build_id(others "${WORK}/tree")
if(NOT others STREQUAL first)
  message(FATAL_ERROR "a file outside the folders or an editor's file changed the build id")
endif()

set(seen "${first}")
foreach(d IN LISTS folders)
  file(WRITE "${WORK}/tree/${d}/deep/a.cpp" "int a() { return 2; }\n")
  build_id(edited "${WORK}/tree")
  if(edited IN_LIST seen)
    message(FATAL_ERROR "an edit to ${d}/deep/a.cpp left the build id at ${edited}")
  endif()
  list(APPEND seen "${edited}")
endforeach()
file(WRITE "${WORK}/tree/${first_folder}/b.hpp" "\n")
build_id(added "${WORK}/tree")
if(added IN_LIST seen)
  message(FATAL_ERROR "a new header left the build id at ${added}")
endif()

# The real tree against what the built CLI prints ("sparsejit <version>+<prefix>-<hash>  op").
build_id(now "${SOURCE_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env SPARSEJIT_CACHE_DIR=${WORK}/cache ${CLI} run spgemm ${SOURCE_DIR}/data/cage8.mtx --repeat 1
                OUTPUT_VARIABLE printed RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT printed MATCHES "sparsejit [^ ]*-([0-9a-f]+) ")
  message(FATAL_ERROR "no build id in the CLI's output (${rc}): ${printed}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL now)
  message(FATAL_ERROR "the library's build id ends in ${CMAKE_MATCH_1}, the sources now hash to ${now}: "
                      "the build did not hash them again")
endif()
message(STATUS "scratch build ids: ${seen};${added}; the library's: ${now}")
