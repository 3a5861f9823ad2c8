// The catalog for the build: Meson compiles this file and runs it while it configures
// (labs/meson.build, compiler.run), and reads what it prints: the labs under
// LABKIT_CATALOG_ROOT/labs as catalog_key_values writes them. compiler.run takes one source
// file and passes the program no arguments, hence the catalog's code included whole and the
// source root as a define; yaml-cpp and nlohmann-json come from the system.
#include "catalog.cpp"

#include <cstdio>

int main() {
  try {
    std::fputs(grade::catalog_key_values(grade::catalog_json(grade::load_catalog(LABKIT_CATALOG_ROOT))).c_str(),
               stdout);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
