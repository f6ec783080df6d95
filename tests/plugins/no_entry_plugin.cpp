// A shared library that is not an oomlab plugin: it exports no oomlab_register.
extern "C" int some_other_library_function() {
  return 42;
}
