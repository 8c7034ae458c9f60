#!/usr/bin/env bash
# Installs the real third-party components the test suite starts, when they are missing:
# Prometheus + promtool, Slurm (slurmctld/slurmd/clients), headless Chromium (Debian packages),
# and Debian's kubectl 1.20 (kubernetes-client), unpacked into .cache/ because it would clash
# with a preinstalled /usr/bin/kubectl. Idempotent and quiet when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v slurmctld >/dev/null 2>&1 || missing+=(slurm-wlm)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's kubectl 1.20 (package kubernetes-client), unpacked next to the repo, not installed.
KC_DIR=.cache/debian/kubernetes-client
if [ ! -x "$KC_DIR/usr/bin/kubectl" ]; then
    mkdir -p "$KC_DIR" .cache/debian/debs
    if (cd .cache/debian/debs && apt-get download kubernetes-client >/dev/null 2>&1) || \
       ($SUDO apt-get update -qq && cd .cache/debian/debs && apt-get download kubernetes-client >/dev/null 2>&1); then
        dpkg -x .cache/debian/debs/kubernetes-client_*.deb "$KC_DIR"
    else
        echo "warning: could not download Debian's kubernetes-client; kubectl 1.20 tests will skip" >&2
    fi
fi
