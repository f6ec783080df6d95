// fmt's formatting engine, compiled once for all of oomlab. Every other file uses fmt's headers
// without FMT_HEADER_ONLY, which would otherwise make each translation unit compile the engine
// again (most of a file's build time). A static library of our own, not the distribution's
// shared libfmt, keeps the binaries free of a run-time dependency the GPU machine may lack.
//
// The headers declare these templates `extern`; they are instantiated here for char, the only
// character type oomlab formats.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
