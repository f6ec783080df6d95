// Needs a symbol nothing defines: dlopen (RTLD_NOW) must fail and say which.
#include "oomlab/registry.hpp"

extern "C" void oomlab_symbol_that_does_not_exist();

extern "C" void oomlab_register(oomlab::Registry& /*registry*/) {
  oomlab_symbol_that_does_not_exist();
}
