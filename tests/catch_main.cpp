// tests/catch_main.cpp — Catch2's implementation and default main(), compiled once into the
// static library vgpu_catch_main (compiling it takes ~40 s; each test file then only includes
// the header). main is weak, and run_catch_session() is exported, so that vgpu-conformance
// can link this library and still supply its own main() (which reports unavailable backends
// as skips before handing over to Catch).
#pragma weak main
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "support/catch_session.hpp"

int vgpu_test::run_catch_session(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
