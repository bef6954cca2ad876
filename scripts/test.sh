#!/usr/bin/env bash
# Set up and run every test: installs packages, builds with -Werror, runs ctest
# (unit tests, then integration tests on loop-mounted ext4/xfs/btrfs, tmpfs,
# swtpm, a real systemd in nspawn, auditd, the node exporter), then the unit
# and integration tests again under ASan+UBSan (scripts/test-sanitize.sh), and
# every fuzz target over its corpus.
# Needs root (loop devices, mounts, leases on any file).
#   IVER_SKIP_SANITIZE=1, IVER_SKIP_FUZZ=1   leave those stages out
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's tools before any version manager's shims (tests/CMakeLists.txt says why)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
bash scripts/deps.sh
BUILD=${IVER_BUILD:-build-ci}
cmake -S . -B "$BUILD" -DIVER_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
# unit tests side by side (each in its own temporary directory, keys named by
# pid); integration tests one at a time (loop devices, fanotify marks, timing)
unit_rc=0
ctest --test-dir "$BUILD" --output-on-failure -L unit -j"$(nproc)" "$@" || unit_rc=$?
ctest --test-dir "$BUILD" --output-on-failure -LE unit -j1 "$@"
[ "$unit_rc" = 0 ] || exit "$unit_rc"
if [ -z "${IVER_SKIP_FUZZ:-}" ]; then
        # every libFuzzer target over its committed corpus: a regression run
        # (only the fuzz targets: the rest of the tree under clang and the
        # sanitizers is built and tested by test-sanitize.sh below)
        CC=clang cmake -S . -B build-fuzz-ci -DIVER_FUZZ=ON -DIVER_SANITIZE=ON >/dev/null
        fuzz_targets=()
        for f in tests/fuzz/fuzz-*.c; do fuzz_targets+=("$(basename "$f" .c)"); done
        cmake --build build-fuzz-ci -j"$(nproc)" --target "${fuzz_targets[@]}" >/dev/null
        ctest --test-dir build-fuzz-ci --output-on-failure -L fuzz -j"$(nproc)"
fi
if [ -z "${IVER_SKIP_SANITIZE:-}" ]; then
        # Under ASan the long load, packaging, scale, timing and per-filesystem
        # matrix tests would push CI past its time budget; they run in the
        # normal build above (the code paths they drive run under ASan in the
        # shorter tests too). test-service is out because its seccomp filter
        # denies the ptrace LeakSanitizer needs; test-iverctl-oom because its
        # ulimit -v leaves no room for ASan's shadow memory. test-guest-* run
        # iverd inside a QEMU guest, where no sanitizer report reaches the host;
        # test-storm and test-dpkg are load tests (the code they drive runs
        # under ASan in test-alias, test-interp, test-atomic, test-from-deb).
        IVER_SAN_EXCLUDE='^integration/test-(service|deb|writerace|faults-input|faults-load|faults-disk|faults-kill|daemon|lastwriter|exec|scale|soak|logscale|tpm-slow|flood|install-prefix|evidence-churn|iverctl-oom|storm|dpkg|guest-.*)$' \
                bash scripts/test-sanitize.sh
fi
