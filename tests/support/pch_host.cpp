// SPDX-License-Identifier: Apache-2.0
// tests/support/pch_host.cpp — the source of the two programs that make the tests' precompiled
// headers (tests/CMakeLists.txt: vgpu-pch-host-internal, vgpu-pch-host-public). It has no test
// of its own: run, either program reports that no test case exists.
