#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/mpi/mpi_test.sh CHECK MPIEXEC CASE — one MPI test case: mpirun -np 4 --oversubscribe of
# vgpu-mpi-check (tests/mpi/mpi_check_main.cpp) over the CPU and software devices, in a private
# cache directory. CASE: warm-directory, warm-bundle, warm-bundle-hosts, warm-fail, batch, split,
# ops, stall, die, root; or python (CHECK: the Python interpreter, then the example's path).
set -uo pipefail
check=$1 mpiexec=$2 case=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(--oversubscribe --mca btl_vader_single_copy_mechanism none)
# Open MPI refuses root without this (CI runs as root); the variables do the same for old ones.
if [[ $(id -u) == 0 ]]; then args+=(--allow-run-as-root); export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# In a sanitizer run (tools/dev.sh sanitize): Open MPI and PMIx unload their components at
# finalize, so what those keep until exit shows as leaks from an unknown module that no
# suppression can name; the ranks run with ASan and UBSan but without leak checking.
if [[ -n ${ASAN_OPTIONS:-} ]]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi
export VGPU_CACHE_DIR=$dir/cache VGPU_BACKGROUND=0 MESA_SHADER_CACHE_DIR=$dir/mesa
unset VGPU_DEVICE VGPU_CACHE_DISABLE
run() { timeout 60 "$mpiexec" -np "${NP:-4}" "${args[@]}" "$@" >"$dir/out" 2>&1; rc=$?; cat "$dir/out"; }  # NP ranks, default 4
case $case in
  warm-directory) run "$check" warm directory; [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
  warm-bundle)
    # Each rank its own cache directory (hosts that share nothing): the bundle carries it.
    run bash -c 'VGPU_CACHE_DIR=$VGPU_CACHE_DIR/rank$OMPI_COMM_WORLD_RANK exec "$0" warm bundle' "$check"
    [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
  warm-bundle-hosts)
    # Two "hosts" of two ranks each (a directory per pair): the bundle goes to ranks 0 and 2 only.
    run bash -c 'VGPU_CACHE_DIR=$VGPU_CACHE_DIR/host$((OMPI_COMM_WORLD_RANK / 2)) exec "$0" warm bundle' "$check"
    [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" && grep -q 'groups=2' "$dir/out" ;;
  warm-fail) run "$check" warm-fail; [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
  batch | ops | root) run "$check" "$case"; [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
  split)
    # Two CPU devices, so that one rank can run over a DeviceSet (cpu:0, cpu:1).
    VGPU_CPU_DEVICES=2 run "$check" split; [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
  stall)
    # Rank 2 hangs: the others throw vgpu::Error (timeout) with a Fix hint and abort the job.
    start=$SECONDS; run "$check" stall; took=$((SECONDS - start))
    echo "mpirun exit $rc after ${took} s"
    [[ $rc != 0 && $rc != 124 ]] && grep -q 'vgpu error (timeout).*did not complete in time.*Fix:' "$dir/out" && ((took < 30)) ;;
  die)
    # Rank 2 calls _exit(1) mid-run. Open MPI's mpirun then ends the whole job itself (it saw a
    # rank exit without MPI_Finalize) and says so on stderr, usually before the others' own
    # deadline; either message is a clear error, and the job must end (no hang: timeout 60).
    start=$SECONDS; run "$check" die; took=$((SECONDS - start))
    echo "mpirun exit $rc after ${took} s"
    [[ $rc != 0 && $rc != 124 ]] && grep -Eq 'exiting improperly|vgpu error \(timeout\).*Fix:|exited on signal|non-zero exit' "$dir/out" && ((took < 30)) ;;
  python)
    # CHECK is the Python interpreter, $4 the example. One rank alone in a fresh cache, then 4
    # ranks in another: the job's source compiles must equal the lone rank's.
    example=$4
    if ! "$check" -c 'import mpi4py' 2>/dev/null; then echo "SKIPPED: mpi4py is not installed for $check (Debian: python3-mpi4py)"; exit 0; fi
    compiles() { sed -n 's/^job source compiles \([0-9]*\) .*/\1/p' "$dir/out"; }
    VGPU_CACHE_DIR=$dir/one NP=1 run "$check" "$example"
    [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" || exit 1
    one=$(compiles)
    run "$check" "$example"
    [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" || exit 1
    job=$(compiles)
    echo "source compiles: one rank $one, 4 ranks $job"
    [[ -n $one && $one == "$job" ]] ;;
  *) echo "unknown case $case"; exit 2 ;;
esac
