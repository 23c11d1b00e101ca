# Checks cmake/write_build_info.cmake on a scratch tree: an edit to any library source changes
# the build id (so the cache never serves kernels of the code before the edit), an unchanged
# tree leaves the header untouched (so a build without edits recompiles nothing), and a file
# outside the library's folders does not count. Inputs (-D): SCRIPT, TEMPLATE, WORK.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/src/deep" "${WORK}/include" "${WORK}/docs")
file(WRITE "${WORK}/src/deep/a.cpp" "int a() { return 1; }\n")
file(WRITE "${WORK}/include/b.h" "int a();\n")
file(WRITE "${WORK}/docs/notes.md" "notes\n")
set(out "${WORK}/generated/info.hpp")

function(build_id var)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${WORK} -DOUTPUT=${out} -DTEMPLATE=${TEMPLATE}
                          -DBUILD_ID_PREFIX=test-prefix -DPROJECT_VERSION=1.2.3 -DPROJECT_VERSION_MAJOR=1
                          -DPROJECT_VERSION_MINOR=2 -DPROJECT_VERSION_PATCH=3 -P ${SCRIPT}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "write_build_info.cmake failed: ${rc}")
  endif()
  file(STRINGS "${out}" line REGEX "SPARSEJIT_BUILD_ID ")
  if(NOT line MATCHES "\"test-prefix-[0-9a-f]+\"")
    message(FATAL_ERROR "no build id of the form PREFIX-HASH in ${out}: ${line}")
  endif()
  set(${var} "${line}" PARENT_SCOPE)
endfunction()

build_id(first)
file(TIMESTAMP "${out}" stamp_first "%s%f")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
build_id(again)
file(TIMESTAMP "${out}" stamp_again "%s%f")
if(NOT again STREQUAL first OR NOT stamp_again STREQUAL stamp_first)
  message(FATAL_ERROR "an unchanged tree rewrote the header: ${first} / ${again}, ${stamp_first} / ${stamp_again}")
endif()

file(WRITE "${WORK}/docs/notes.md" "other notes\n")
build_id(docs)
if(NOT docs STREQUAL first)
  message(FATAL_ERROR "a file outside the library's folders changed the build id")
endif()

file(WRITE "${WORK}/src/deep/a.cpp" "int a() { return 2; }\n")
build_id(edited)
if(edited STREQUAL first)
  message(FATAL_ERROR "an edit to src/deep/a.cpp left the build id at ${first}")
endif()

file(WRITE "${WORK}/include/c.h" "\n")
build_id(added)
if(added STREQUAL edited)
  message(FATAL_ERROR "a new header left the build id at ${edited}")
endif()
message(STATUS "build ids: ${first} -> ${edited} -> ${added}")
