# Writes a C++ header holding a text file as a string_view, so that the binary carries it (it is
# staged to GPU machines without the source tree). Run at build time (cmake -P); the header is
# only touched when its text changes. Inputs: INPUT, OUTPUT, NAME (the constant), SOURCE (the
# input's path as the comment names it).
file(READ "${INPUT}" text)
set(delimiter "oomlab_embed")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the raw string's end ')${delimiter}\"': choose another")
endif()
set(header "// Generated from ${SOURCE} by cmake/OomlabEmbed.cmake at build time: edit that file.
#pragma once

#include <string_view>

namespace oomlab::generated {

inline constexpr std::string_view ${NAME} = R\"${delimiter}(${text})${delimiter}\";

}  // namespace oomlab::generated
")
file(WRITE "${OUTPUT}.tmp" "${header}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
