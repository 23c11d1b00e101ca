# sparsejit_build_id(NAME <target> SOURCE_DIR <dir> FOLDERS <folder>... PREFIX <text>
#                    VERSION <version> OUTPUT <file.cpp> TARGETS <target>...)
# The build id's source (src/build_id.hpp): OUTPUT is written now, from build_id.cpp.in with
# PREFIX and a hash of the C/C++ files under SOURCE_DIR/FOLDERS (write_build_info.cmake), and a
# custom target NAME writes it again before every build of TARGETS, which compile it. So an
# edit, built without configuring again, changes the id. tests/build_id_tracks_sources.cmake
# builds a scratch project with this function.
function(sparsejit_build_id)
  cmake_parse_arguments(ARG "" "NAME;SOURCE_DIR;PREFIX;VERSION;OUTPUT" "FOLDERS;TARGETS" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sparsejit_build_id: unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required NAME SOURCE_DIR PREFIX VERSION OUTPUT FOLDERS TARGETS)
    if(NOT ARG_${required})
      message(FATAL_ERROR "sparsejit_build_id: ${required} is missing")
    endif()
  endforeach()
  list(JOIN ARG_FOLDERS "," folders)
  set(args -DSOURCE_DIR=${ARG_SOURCE_DIR} -DFOLDERS=${folders} -DOUTPUT=${ARG_OUTPUT}
           -DTEMPLATE=${CMAKE_CURRENT_FUNCTION_LIST_DIR}/build_id.cpp.in -DBUILD_ID_PREFIX=${ARG_PREFIX}
           -DPROJECT_VERSION=${ARG_VERSION} -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/write_build_info.cmake)
  execute_process(COMMAND ${CMAKE_COMMAND} ${args} COMMAND_ERROR_IS_FATAL ANY)
  add_custom_target(${ARG_NAME} COMMAND ${CMAKE_COMMAND} ${args} BYPRODUCTS ${ARG_OUTPUT}
                    COMMENT "Hashing the sources for the build id" VERBATIM)
  foreach(t IN LISTS ARG_TARGETS)
    target_sources(${t} PRIVATE ${ARG_OUTPUT})
    add_dependencies(${t} ${ARG_NAME})
  endforeach()
endfunction()
