#!/usr/bin/env bash
# Installs everything Parity needs on a fresh Debian 12 machine, pinned, and does nothing when
# it is already there (so `make demo` and `make test` can call it every time).
#
#   1. Debian packages listed in scripts/apt-packages.txt
#   2. Python packages from scripts/requirements.txt into .venv/ (the repository's own venv)
#   3. ONNX's C++ library (schemas, shape inference, checker, onnx-ml.proto) built from the
#      pinned `onnx` source distribution into a cached prefix outside the repository:
#      ${PARITY_DEPS_DIR:-$HOME/.cache/parity/deps}/onnx-<version>
#
# Each step writes a stamp holding the hash of its inputs; a step whose stamp matches is skipped.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
deps_dir="${PARITY_DEPS_DIR:-$HOME/.cache/parity/deps}"
venv="$root/.venv"
onnx_version="$(sed -n 's/^onnx==\([0-9.]*\)$/\1/p' scripts/requirements.txt)"
start=$(date +%s)

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }
hash_of() { cat "$@" | sha256sum | cut -c1-16; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    die "need root (or sudo) to install Debian packages: $*"; fi
}

# --- 1. Debian packages ------------------------------------------------------------------
install_debian_packages() {
  local missing=() wanted=() line name version have
  while IFS= read -r line; do
    line="${line%%#*}"; line="$(echo "$line" | xargs)"; [ -n "$line" ] || continue
    name="${line%%=*}"; version="${line#*=}"
    have="$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)"
    case "$have" in
      "install ok installed $version") ;;
      "install ok installed "*) say "$name is installed at ${have##* }, pinned $version: keeping the installed one" ;;
      *) missing+=("$name"); wanted+=("$name=$version") ;;
    esac
  done < scripts/apt-packages.txt
  [ ${#missing[@]} -eq 0 ] && { say "Debian packages: all present"; return; }
  say "Debian packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -q >/dev/null
  if ! as_root apt-get install -y -q --no-install-recommends "${wanted[@]}" >/tmp/parity-apt.log 2>&1; then
    say "pinned versions not all available (Debian point release?); installing the archive's candidates"
    as_root apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/parity-apt.log 2>&1 \
      || { tail -20 /tmp/parity-apt.log >&2; die "apt-get install failed (log: /tmp/parity-apt.log)"; }
  fi
}

# --- 2. Python virtual environment ---------------------------------------------------------
install_python_packages() {
  local stamp="$venv/.parity-stamp" want
  want="$(hash_of scripts/requirements.txt)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
    say "Python packages: up to date (.venv)"; return
  fi
  say "Python packages: installing scripts/requirements.txt into .venv"
  command -v python3 >/dev/null || die "python3 is required"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r scripts/requirements.txt \
    || die "pip install -r scripts/requirements.txt failed"
  echo "$want" > "$stamp"
}

# --- 3. ONNX's C++ library -----------------------------------------------------------------
build_onnx_cpp() {
  local prefix="$deps_dir/onnx-$onnx_version" stamp want work
  stamp="$prefix/.parity-stamp"
  # Bump the recipe tag when the build flags below change.
  want="onnx-$onnx_version recipe-1"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "ONNX C++ library $onnx_version: cached at $prefix"; return
  fi
  say "ONNX C++ library $onnx_version: building from the source distribution (several minutes, once)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --no-binary onnx \
    "onnx==$onnx_version" -d "$work" || die "could not download the onnx==$onnx_version sdist"
  tar -xzf "$work/onnx-$onnx_version.tar.gz" -C "$work"
  rm -rf "$prefix"
  PATH="$venv/bin:$PATH" cmake -S "$work/onnx-$onnx_version" -B "$work/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DONNX_ML=ON -DONNX_USE_PROTOBUF_SHARED_LIBS=ON -DONNX_BUILD_TESTS=OFF \
    -DONNX_BUILD_PYTHON=OFF -DONNX_GEN_PB_TYPE_STUBS=OFF -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON >"$work/configure.log" 2>&1 \
    || { tail -30 "$work/configure.log" >&2; die "configuring ONNX failed"; }
  PATH="$venv/bin:$PATH" cmake --build "$work/build" --target install -j "$(nproc)" >"$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log" >&2; die "building ONNX failed"; }
  echo "$want" > "$stamp"
}

install_debian_packages
install_python_packages
build_onnx_cpp
say "done in $(( $(date +%s) - start ))s"
