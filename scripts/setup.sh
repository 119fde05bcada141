#!/usr/bin/env bash
# Installs everything Parity needs on a fresh Debian 12 machine, pinned, and does nothing when
# it is already there (so `make demo` and `make test` can call it every time).
#
#   1. Debian packages listed in scripts/apt-packages.txt
#   2. Python packages from scripts/requirements.txt into .venv/ (the repository's own venv)
#      (among them `openvino`, whose wheel also holds the C++ SDK the --openvino backend builds against)
#   3. ONNX's C++ library (schemas, shape inference, checker, onnx-ml.proto) built from the
#      pinned `onnx` source distribution into a cached prefix outside the repository:
#      ${PARITY_DEPS_DIR:-$HOME/.cache/parity/deps}/onnx-<version>
#   4. ONNX Runtime's C API headers (Debian 13's libonnxruntime-dev, unpacked, not installed) into
#      ${PARITY_DEPS_DIR:-$HOME/.cache/parity/deps}/onnxruntime-headers-<version>
#   5. Records .venv's interpreter in ${XDG_CACHE_HOME:-$HOME/.cache}/parity/setup-python, where a
#      built `parity` looks for ONNX Runtime (the venv's onnxruntime package) when the Python on
#      PATH has none, so it runs from a plain shell without a path baked in at build time.
#   6. Points .venv at the Python package the release build assembles (build/release/python/parity,
#      the extension module parity._parity beside python/parity's modules) with a .pth file, so
#      `import parity` works in .venv once `make build` ran, and nothing is compiled a second time.
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

# --- 4. ONNX Runtime's C API headers (added by the ONNX Runtime runner) ---------------------
# Parity compiles its `--onnxrt` backend against ONNX Runtime's official C API headers from
# Debian 13 (trixie)'s libonnxruntime-dev, and loads the runtime library itself with dlopen at
# activation (the one inside the `onnxruntime` Python package by default). The .deb is fetched
# with a PRIVATE apt configuration (its own sources list, lists and cache under $deps_dir), then
# unpacked with `dpkg -x`: nothing from trixie is installed system-wide and the system's apt
# state is untouched. CMake (src/runtime/CMakeLists.txt) reads ort_headers_version from here.
ort_headers_version=1.21.0
ort_headers_deb_version=1.21.0+dfsg-1
ort_headers_deb_sha256=14f7d959d5deacbcf1504830d4189f91fc67382b399ed9ae9d3aa9c4050ced08
fetch_onnxruntime_headers() {
  local prefix="$deps_dir/onnxruntime-headers-$ort_headers_version" stamp want apt_dir deb
  stamp="$prefix/.parity-stamp"
  want="libonnxruntime-dev $ort_headers_deb_version recipe-1"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
     && [ -f "$prefix/usr/include/onnxruntime/onnxruntime_c_api.h" ]; then
    say "ONNX Runtime C API headers $ort_headers_version: cached at $prefix"; return
  fi
  say "ONNX Runtime C API headers $ort_headers_version: fetching trixie's libonnxruntime-dev (private apt config)"
  command -v apt-get >/dev/null && command -v dpkg >/dev/null || die "apt-get and dpkg are needed to fetch libonnxruntime-dev"
  apt_dir="$deps_dir/.apt-trixie"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/download"
  echo 'deb http://deb.debian.org/debian trixie main' > "$apt_dir/sources.list"
  local apt_options=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
                     -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
                     -o "APT::Get::List-Cleanup=0" -o "Debug::NoLocking=1")
  # As root apt drops to the _apt user for downloads, who cannot write into our private folders.
  [ "$(id -u)" -eq 0 ] && apt_options+=(-o "APT::Sandbox::User=root")
  apt-get "${apt_options[@]}" -q update >"$apt_dir/update.log" 2>&1 \
    || { tail -20 "$apt_dir/update.log" >&2; die "apt-get update of the private trixie list failed (log: $apt_dir/update.log)"; }
  rm -f "$apt_dir/download/"*.deb
  if ! (cd "$apt_dir/download" && apt-get "${apt_options[@]}" -q download \
          "libonnxruntime-dev=$ort_headers_deb_version" >"$apt_dir/download.log" 2>&1); then
    # A trixie point release may have replaced the Debian revision; the C API of the same
    # upstream version is what matters.
    local candidate
    candidate="$(apt-cache "${apt_options[@]}" policy libonnxruntime-dev | sed -n 's/^ *Candidate: //p')"
    case "$candidate" in
      "$ort_headers_version"+*) say "libonnxruntime-dev $ort_headers_deb_version is gone from trixie; using $candidate" ;;
      *) die "trixie has libonnxruntime-dev '${candidate:-none}', not upstream $ort_headers_version: update ort_headers_version in scripts/setup.sh" ;;
    esac
    (cd "$apt_dir/download" && apt-get "${apt_options[@]}" -q download "libonnxruntime-dev=$candidate" \
       >"$apt_dir/download.log" 2>&1) \
      || { tail -20 "$apt_dir/download.log" >&2; die "apt-get download libonnxruntime-dev failed"; }
  fi
  deb="$(ls "$apt_dir/download/"libonnxruntime-dev_*.deb | head -1)"
  [ -f "$deb" ] || die "apt-get download left no libonnxruntime-dev .deb in $apt_dir/download"
  case "$(basename "$deb")" in
    "libonnxruntime-dev_${ort_headers_deb_version/+/%2b}_"*|"libonnxruntime-dev_${ort_headers_deb_version}_"*)
      [ "$(sha256sum "$deb" | cut -d' ' -f1)" = "$ort_headers_deb_sha256" ] \
        || die "$deb does not match the pinned SHA-256 $ort_headers_deb_sha256" ;;
  esac
  rm -rf "$prefix"
  mkdir -p "$prefix"
  dpkg -x "$deb" "$prefix" || die "dpkg -x $deb failed"
  [ -f "$prefix/usr/include/onnxruntime/onnxruntime_c_api.h" ] \
    || die "libonnxruntime-dev has no usr/include/onnxruntime/onnxruntime_c_api.h"
  echo "$want" > "$stamp"
}

# --- 5. The venv's interpreter, for ONNX Runtime's library search ----------------------------
record_setup_python() {
  local cache_home="${XDG_CACHE_HOME:-}" record temporary
  case "$cache_home" in /*) ;; *) cache_home="$HOME/.cache" ;; esac  # XDG: a relative value is ignored
  record="$cache_home/parity/setup-python"
  if [ -f "$record" ] && [ "$(cat "$record")" = "$venv/bin/python" ]; then
    say "ONNX Runtime library search: recorded ($record)"; return
  fi
  mkdir -p "$(dirname "$record")"
  temporary="$(mktemp "$record.XXXXXX")"
  printf '%s\n' "$venv/bin/python" > "$temporary"
  mv -f "$temporary" "$record"
  say "ONNX Runtime library search: recorded .venv's Python in $record"
}

# --- 6. The Python package (`import parity`) from the release build --------------------------
# A .pth line in .venv's site-packages naming build/release/python: the release build (make build,
# make test) puts the extension module and the package's modules there. `pip install .` builds a
# wheel instead (pyproject.toml), for environments other than this checkout's .venv.
link_python_package() {
  local site pth want
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    || die "cannot ask .venv's Python for its site-packages"
  pth="$site/parity-build.pth"
  want="$root/build/release/python"
  if [ -f "$pth" ] && [ "$(cat "$pth")" = "$want" ]; then
    say "Python package: .venv imports parity from build/release/python"; return
  fi
  printf '%s\n' "$want" > "$pth"
  say "Python package: .venv now imports parity from build/release/python ($pth)"
}

install_debian_packages
install_python_packages
build_onnx_cpp
fetch_onnxruntime_headers
record_setup_python
link_python_package
say "done in $(( $(date +%s) - start ))s"
