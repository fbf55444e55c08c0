// SPDX-License-Identifier: Apache-2.0
// tests/support/pch_host.cpp — the source of the program that makes the tests' precompiled header
// (tests/CMakeLists.txt: vgpu-pch-host-internal). It has no test of its own: run, it reports
// that no test case exists.
