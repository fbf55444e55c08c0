#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/mpi/mpi_test.sh CHECK MPIEXEC CASE — one MPI test case: mpirun -np 4 --oversubscribe of
# vgpu-mpi-check (tests/mpi/mpi_check_main.cpp) over the CPU and software devices, in a private
# cache directory. CASE: warm-directory, warm-bundle, warm-fail, batch, stall, die.
set -uo pipefail
check=$1 mpiexec=$2 case=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(-np 4 --oversubscribe --mca btl_vader_single_copy_mechanism none)
# Open MPI refuses root without this (CI runs as root); the variables do the same for old ones.
if [[ $(id -u) == 0 ]]; then args+=(--allow-run-as-root); export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export VGPU_CACHE_DIR=$dir/cache VGPU_BACKGROUND=0 MESA_SHADER_CACHE_DIR=$dir/mesa
unset VGPU_DEVICE VGPU_CACHE_DISABLE
run() { timeout 60 "$mpiexec" "${args[@]}" "$@" >"$dir/out" 2>&1; rc=$?; cat "$dir/out"; }
case $case in
  warm-directory) run "$check" warm directory; [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
  warm-bundle)
    # Each rank its own cache directory (hosts that share nothing): the bundle carries it.
    run bash -c 'VGPU_CACHE_DIR=$VGPU_CACHE_DIR/rank$OMPI_COMM_WORLD_RANK exec "$0" warm bundle' "$check"
    [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
  warm-fail) run "$check" warm-fail; [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
  batch) run "$check" batch; [[ $rc == 0 ]] && grep -q '^PASSED' "$dir/out" ;;
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
  *) echo "unknown case $case"; exit 2 ;;
esac
