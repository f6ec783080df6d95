# One static library per layer of the engine, each of which sees the headers of the layers it
# links and no others: an include that goes against the layering fails to build.
#
# Sources include another layer's header by its folder ("allocators/budget_cap.hpp"). A layer's
# include folder therefore holds one link, named after the layer, to the layer's own folder, and
# a target sees a header only through the include folders of what it links (CMake's usage
# requirements carry them up the chain, never down).
#
#   oomlab_layer(NAME run DIR harness/src/run SOURCES a.cpp b.cpp DEPENDS allocators record)
#
# gives target oomlab_run, whose sources see "run/..." and what allocators and record see.

set(OOMLAB_LAYER_VIEWS "${PROJECT_BINARY_DIR}/layers")

# An include folder that shows the layer folder `dir` (relative to the project) as `as`/ (a path:
# "pytorch/model" shows a framework's room as pytorch/model/).
function(oomlab_layer_view out name dir as)
  set(view "${OOMLAB_LAYER_VIEWS}/${name}")
  get_filename_component(parent "${view}/${as}" DIRECTORY)
  file(MAKE_DIRECTORY "${parent}")
  if(NOT EXISTS "${view}/${as}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${dir}" "${view}/${as}" SYMBOLIC)
  endif()
  set(${out} "${view}" PARENT_SCOPE)
endfunction()

# A framework's room is a layer too, seen under its own path (VIEW pytorch/model: its sources are
# included as "pytorch/model/...").
function(oomlab_layer)
  cmake_parse_arguments(PARSE_ARGV 0 layer "" "NAME;DIR;VIEW" "SOURCES;DEPENDS")
  set(target "oomlab_${layer_NAME}")
  if(NOT layer_VIEW)
    set(layer_VIEW "${layer_NAME}")
  endif()
  list(TRANSFORM layer_SOURCES PREPEND "${PROJECT_SOURCE_DIR}/${layer_DIR}/")
  add_library(${target} STATIC ${layer_SOURCES})
  oomlab_layer_view(view ${layer_NAME} ${layer_DIR} ${layer_VIEW})
  target_include_directories(${target} PUBLIC "${view}")
  list(TRANSFORM layer_DEPENDS PREPEND "oomlab_")
  target_link_libraries(${target} PUBLIC oomlab_api ${layer_DEPENDS} PRIVATE oomlab_warnings)
endfunction()
