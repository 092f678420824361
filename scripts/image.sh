#!/usr/bin/env bash
# Builds the gangbridge container image from Containerfile with podman (or docker).
# Usage: scripts/image.sh [IMAGE]   (default ghcr.io/gangbridge/gangbridge:VERSION, VERSION
# from CMakeLists.txt's project(VERSION), the tag deploy/kustomization.yaml uses)
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(sed -nE 's/^project\(gangbridge VERSION ([0-9.]+) .*/\1/p' CMakeLists.txt)"
image="${1:-ghcr.io/gangbridge/gangbridge:$version}"
if command -v podman >/dev/null 2>&1; then
  tool=podman
elif command -v docker >/dev/null 2>&1; then
  tool=docker
else
  echo "image.sh: neither podman nor docker is installed (apt-get install podman)" >&2
  exit 1
fi
"$tool" build -f Containerfile -t "$image" .
echo "image.sh: built $image with $tool"
