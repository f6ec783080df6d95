# Writes a C++ header holding text files as string_views, so that the binary carries them (it is
# staged to GPU machines without the source tree). Run at build time (cmake -P); the header is
# only touched when its text changes. Inputs: INPUTS (files), NAMES (a constant for each, in the
# same order), both separated by '|' (a ';' would split the command's argument), OUTPUT, SOURCE
# (where the inputs are, as the comment names it).
string(REPLACE "|" ";" INPUTS "${INPUTS}")
string(REPLACE "|" ";" NAMES "${NAMES}")
list(LENGTH INPUTS count)
list(LENGTH NAMES names)
if(NOT count EQUAL names)
  message(FATAL_ERROR "OomlabEmbed: ${count} INPUTS but ${names} NAMES")
endif()
set(delimiter "oomlab_embed")
set(constants "")
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  list(GET INPUTS ${i} input)
  list(GET NAMES ${i} name)
  file(READ "${input}" text)
  string(FIND "${text}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${input} holds the raw string's end ')${delimiter}\"': choose another")
  endif()
  get_filename_component(file "${input}" NAME)
  string(APPEND constants "
// ${file}
inline constexpr std::string_view ${name} = R\"${delimiter}(${text})${delimiter}\";
")
endforeach()
set(header "// Generated from ${SOURCE} by cmake/OomlabEmbed.cmake at build time: edit those files.
#pragma once

#include <string_view>

namespace oomlab::generated {
${constants}
}  // namespace oomlab::generated
")
file(WRITE "${OUTPUT}.tmp" "${header}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
