// Its entry point throws before registering anything.
#include <stdexcept>

#include "oomlab/registry.hpp"

extern "C" void oomlab_register(oomlab::Registry& /*registry*/) {
  throw std::runtime_error("this plugin refuses to register");
}
