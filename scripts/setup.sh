#!/usr/bin/env bash
# Installs what building and testing this project needs, and nothing more.
# Idempotent: when everything is present it only runs a few cheap checks.
set -euo pipefail

# Debian packages: C libraries behind the system-library modules (the Express
# service uses libmicrohttpd, SQLite and libpq, its client libcurl; media files are
# read with FFmpeg's libraries), and the
# tools the tests start (coturn for TURN, headless Chromium for browser
# interop, ffmpeg and sox to make and check media files, curl as the client
# through port forwards, PostgreSQL servers for the Express cluster tests,
# c-toxcore's tox-bootstrapd for the bootstrap-restart test, the openssl
# command for the HTTPS Express tests' throwaway certificates; flatc, whose
# Python output with PyPI's flatbuffers (the version of flatc's era) checks
# our Carrier packets independently).
DEB_PACKAGES=(
  pkg-config
  libtoxcore-dev libsodium-dev
  libssl-dev libsrtp2-dev libusrsctp-dev libnice-dev libglib2.0-dev
  libopus-dev libvpx-dev libogg-dev
  libmicrohttpd-dev libsqlite3-dev libpq-dev libcurl4-openssl-dev
  libavformat-dev libavcodec-dev libswresample-dev libswscale-dev libavutil-dev
  coturn chromium chromium-driver ffmpeg sox curl postgresql toxcore-utils openssl
  nftables iproute2 conntrack tcpdump
  flatbuffers-compiler
)

# PyPI packages the interop tests drive (pinned to the versions we test).
PIP_PACKAGES=("aiortc==1.16.0" "flatbuffers==2.0.7")

missing=()
for pkg in "${DEB_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # coturn's and PostgreSQL's packages enable system services; our tests start their own.
  if command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable --now coturn postgresql >/dev/null 2>&1 || true
  fi
fi

PYTHON=${PYTHON:-python3}
for spec in "${PIP_PACKAGES[@]}"; do
  name=${spec%%==*}
  want=${spec#*==}
  have=$("$PYTHON" -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null || true)
  if [ "$have" != "$want" ]; then
    echo "setup: installing $spec with pip" >&2
    "$PYTHON" -m pip install -q --disable-pip-version-check "$spec" >&2
  fi
done
