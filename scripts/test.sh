#!/usr/bin/env bash
# Set up and run every test: installs packages, builds with -Werror, runs ctest
# (unit tests, then integration tests on loop-mounted ext4/xfs/btrfs, tmpfs and swtpm).
# Needs root (loop devices, mounts, leases on any file).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
BUILD=${IVER_BUILD:-build-ci}
cmake -S . -B "$BUILD" -DIVER_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j1 "$@"
