// SPDX-License-Identifier: Apache-2.0
// tests/catch_default_main.cpp — the tests' default main(), alone in its member of the static
// library vgpu_catch_main: a program that defines its own main() (vgpu-conformance, the queue
// suite) never pulls it in; every other test program gets this one.
#include "support/catch_session.hpp"

int main(int argc, char* argv[]) { return vgpu_test::run_catch_session(argc, argv); }
