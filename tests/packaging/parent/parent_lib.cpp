// SPDX-License-Identifier: Apache-2.0
// The parent project's own library: its kind (static or shared) is the parent's choice alone.
int parent_answer() { return 42; }
