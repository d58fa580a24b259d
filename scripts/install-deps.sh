#!/usr/bin/env bash
# Installs the Debian packages dtmpi needs to build and test (as root, or
# through sudo), skipping the package index update when nothing is missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libgtest-dev
      openmpi-bin libopenmpi-dev mpich libmpich-dev libmetis-dev python3)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
