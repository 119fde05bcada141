#!/usr/bin/env bash
# Packs a built `parity` and the libraries it needs that a bare machine with Python and PyTorch may
# lack (everything ldd lists except the C and C++ runtimes and the loader) into one archive, for the
# GPU machine the device tool lends (no build tools there for this project, no network):
#
#   scripts/gpu_bundle.sh [BUILD_DIR] [ARCHIVE]       default: build/release, .gpu/parity-bundle.tar.xz
#
# There:  mkdir -p /tmp/parity && tar xJf .gpu/parity-bundle.tar.xz -C /tmp/parity
#         export PARITY_BIN=/tmp/parity/bin/parity LD_LIBRARY_PATH=/tmp/parity/lib
# ONNX Runtime's library is found through that machine's python3 (its onnxruntime package), as here.
set -euo pipefail
build=${1:-build/release}
archive=${2:-.gpu/parity-bundle.tar.xz}
binary="$build/tools/parity/parity"
[[ -x "$binary" ]] || { echo "gpu_bundle: no built parity at $binary (build it first)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$(dirname "$archive")"
cp "$binary" "$stage/bin/"
ldd "$binary" | awk '/=> \// {print $3}' |
  grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r library; do cp -L "$library" "$stage/lib/"; done
tar cJf "$archive" -C "$stage" bin lib
echo "gpu_bundle: $(du -h "$archive" | cut -f1) in $archive ($(ls "$stage/lib" | wc -l) libraries)"
