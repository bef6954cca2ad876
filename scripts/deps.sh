#!/usr/bin/env bash
# Install every Debian package iverd needs to build, test and demo.
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config
  libssl-dev check libsubunit-dev
  libtss2-dev libsystemd-dev libaudit-dev libkeyutils-dev libjson-c-dev libarchive-dev zlib1g-dev
  swtpm swtpm-tools tpm2-tools ima-evm-utils
  e2fsprogs xfsprogs btrfs-progs attr keyutils util-linux openssl strace
  python3 curl bc vim
  systemd-container mandoc auditd prometheus-node-exporter
  qemu-system-x86 busybox-static cpio
  clang clang-14 libclang-rt-14-dev
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  # Packages such as auditd and prometheus-node-exporter would start their
  # services on install; tests start their own private instances instead.
  # policy-rc.d exit 101 is Debian's way to say "do not start anything".
  own_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  trap '[ -n "$own_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
