cmake_minimum_required(VERSION 3.20)  # (script mode: IN_LIST, file(CREATE_LINK), file(RENAME))
# Checks the build id (cmake/build_id.cmake, cmake/write_build_info.cmake):
# 1. On a scratch tree, through the script: an edit to any C/C++ file (.c .cpp .h .hpp .inc) in
#    any of the library's folders, a new file and a rename each change the id (so the cache never
#    serves kernels of the code before the edit); an unchanged tree leaves the generated file
#    untouched (so a build without edits recompiles nothing); files outside those folders,
#    hidden files and editors' files (an Emacs lock link pointing nowhere, a swap file) neither
#    count nor break it.
# 2. A scratch project that uses sparsejit_build_id(): after an edit, a plain rebuild (no
#    configure) gives a program with a new id.
# 3. The real tree: the id the built CLI prints is the one its sources give now.
# Inputs (-D): SCRIPT, TEMPLATE, FOLDERS (as the build passes them), WORK, SOURCE_DIR, CLI, and
# the build's CXX and GENERATOR for the scratch project.
string(REPLACE "," ";" folders "${FOLDERS}")
set(extensions c cpp h hpp inc)
file(REMOVE_RECURSE "${WORK}")
foreach(d IN LISTS folders)
  foreach(ext IN LISTS extensions)
    file(WRITE "${WORK}/tree/${d}/deep/a.${ext}" "int a;\n")
  endforeach()
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

# 1. The script on a scratch tree.
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
file(WRITE "${WORK}/tree/${first_folder}/.hidden.cpp" "int hidden;\n")
build_id(others "${WORK}/tree")
if(NOT others STREQUAL first)
  message(FATAL_ERROR "a file outside the folders, a hidden file or an editor's file changed the build id")
endif()

set(seen "${first}")
foreach(d IN LISTS folders)
  foreach(ext IN LISTS extensions)
    file(WRITE "${WORK}/tree/${d}/deep/a.${ext}" "int b;\n")
    build_id(edited "${WORK}/tree")
    if(edited IN_LIST seen)
      message(FATAL_ERROR "an edit to ${d}/deep/a.${ext} left the build id at ${edited}")
    endif()
    list(APPEND seen "${edited}")
  endforeach()
endforeach()
file(WRITE "${WORK}/tree/${first_folder}/b.hpp" "\n")
build_id(added "${WORK}/tree")
file(RENAME "${WORK}/tree/${first_folder}/b.hpp" "${WORK}/tree/${first_folder}/c.hpp")
build_id(renamed "${WORK}/tree")
if(added IN_LIST seen OR renamed IN_LIST seen OR renamed STREQUAL added)
  message(FATAL_ERROR "a new header or a rename left the build id as it was: ${added} / ${renamed}")
endif()

# 2. A scratch project built with sparsejit_build_id(), edited, built again without configuring.
get_filename_component(repo "${SCRIPT}" DIRECTORY)  # (the checkout the script is from)
get_filename_component(repo "${repo}" DIRECTORY)
set(proj "${WORK}/project")
file(WRITE "${proj}/src/a.cpp" "int a() { return 1; }\n")
file(WRITE "${proj}/main.cpp" "#include <cstdio>\n#include \"src/build_id.hpp\"\nint main() { std::puts(sj::kBuildId); }\n")
file(WRITE "${proj}/CMakeLists.txt" "
cmake_minimum_required(VERSION 3.20)
project(build_id_probe CXX)
include(\"${repo}/cmake/build_id.cmake\")
add_executable(probe main.cpp src/a.cpp)
target_include_directories(probe PRIVATE \"${repo}\")
sparsejit_build_id(NAME probe_build_id SOURCE_DIR \${CMAKE_SOURCE_DIR} FOLDERS src PREFIX probe VERSION 1.2.3
                   OUTPUT \${CMAKE_BINARY_DIR}/id.cpp TARGETS probe)
")
function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ARGN} failed (${rc}): ${o}${e}")
  endif()
endfunction()
function(probe_id var)
  run_step(${CMAKE_COMMAND} --build "${proj}/build")
  execute_process(COMMAND "${proj}/build/probe" OUTPUT_VARIABLE id OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(${var} "${id}" PARENT_SCOPE)
endfunction()
# The build's own compiler and generator, and no flags from the environment (a developer's
# sanitizer flags would need their runtime).
set(ENV{CXXFLAGS} "")
set(ENV{LDFLAGS} "")
run_step(${CMAKE_COMMAND} -S "${proj}" -B "${proj}/build" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}"
         -DCMAKE_BUILD_TYPE=Release)
probe_id(built)
file(WRITE "${proj}/src/a.cpp" "int a() { return 2; }\n")
probe_id(rebuilt)
if(NOT built MATCHES "^probe-[0-9a-f]+$" OR rebuilt STREQUAL built)
  message(FATAL_ERROR "the scratch project's id after an edit and a rebuild: ${built} -> ${rebuilt}")
endif()

# 3. The real tree against what the built CLI prints ("sparsejit <version>+<prefix>-<hash>  op").
build_id(now "${SOURCE_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env SPARSEJIT_CACHE_DIR=${WORK}/cache ${CLI} run spgemm ${SOURCE_DIR}/data/cage8.mtx --repeat 1
                OUTPUT_VARIABLE printed RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT printed MATCHES "sparsejit [^ ]*-([0-9a-f]+) ")
  message(FATAL_ERROR "no build id in the CLI's output (${rc}): ${printed}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL now)
  message(FATAL_ERROR "the library's build id ends in ${CMAKE_MATCH_1}, the sources now hash to ${now}: "
                      "were they edited since the last build? (if a build leaves this, it does not hash them again)")
endif()
message(STATUS "scratch ids: ${seen};${added};${renamed}; project ${built} -> ${rebuilt}; the library's: ${now}")
