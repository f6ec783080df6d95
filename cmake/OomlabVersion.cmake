# Writes version.hpp with the git SHA and dirty flag; run at every build (cmake -P), and only
# touches the file when the text changes, so nothing rebuilds needlessly.
# Inputs: SOURCE_DIR, OUTPUT, TEMPLATE, OOMLAB_VERSION.
find_package(Git QUIET)
set(OOMLAB_GIT_SHA "unknown")
set(OOMLAB_GIT_DIRTY "false")
if(GIT_FOUND AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
                  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE sha
                  RESULT_VARIABLE sha_result OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(sha_result EQUAL 0 AND NOT sha STREQUAL "")
    set(OOMLAB_GIT_SHA "${sha}")
  endif()
  execute_process(COMMAND "${GIT_EXECUTABLE}" status --porcelain --untracked-files=no
                  WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE dirty
                  RESULT_VARIABLE dirty_result ERROR_QUIET)
  if(dirty_result EQUAL 0 AND NOT dirty STREQUAL "")
    set(OOMLAB_GIT_DIRTY "true")
  endif()
endif()
configure_file("${TEMPLATE}" "${OUTPUT}.tmp" @ONLY)
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
