// Exports the entry point but registers nothing.
#include "oomlab/registry.hpp"

extern "C" void oomlab_register(oomlab::Registry& /*registry*/) {
}
