#!/usr/bin/env bash
# Install every Debian package iverd needs to build, test and demo.
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config
  libssl-dev check libsubunit-dev
  libtss2-dev libsystemd-dev libaudit-dev libkeyutils-dev libjson-c-dev
  swtpm swtpm-tools tpm2-tools ima-evm-utils
  e2fsprogs xfsprogs btrfs-progs attr keyutils util-linux openssl
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
