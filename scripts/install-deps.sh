#!/usr/bin/env bash
# Installs gangbridge's Debian (bookworm) build and test dependencies when any
# is missing.  Safe to run repeatedly: it does nothing when all are present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libyaml-dev libjson-c-dev libcurl4-openssl-dev
  libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
  libgrpc-dev grpc-proto
  libmicrohttpd-dev libgnutls28-dev
  check libsubunit-dev
  clang libclang-rt-14-dev
  valgrind openssl
  python3 python3-grpcio python3-protobuf python3-yaml
  curl git
  chromium
)
# kubectl: use the machine's if present, else Debian's kubernetes-client.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
