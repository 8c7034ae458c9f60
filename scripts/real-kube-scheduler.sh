#!/usr/bin/env bash
# Runs a real kube-scheduler against a running `gpusched serve`, with kube-scheduler's default
# configuration: a KubeSchedulerConfiguration naming only the kubeconfig, one profile for its
# schedulerName (every default plugin, protobuf, the default percentageOfNodesToScore) and
# leader election off. It schedules the pods whose spec.schedulerName is that name; gpusched's
# own scheduler keeps the others. Logs go to stderr; Ctrl-C stops it.
#
# Any kube-scheduler build works: KUBE_SCHEDULER=/path/to/kube-scheduler, else the one on PATH.
# gpusched builds none and ships none (docs: README "A real kube-scheduler against serve").
#
# usage: scripts/real-kube-scheduler.sh [--kubeconfig PATH | --port N] [--scheduler-name NAME]
#                                       [--content-type json] [-- KUBE-SCHEDULER-FLAGS...]
#   --kubeconfig PATH     the kubeconfig `gpusched serve` wrote (printed at its start when it
#                         needs a token: another address than loopback, or --require-token)
#   --port N              a loopback serve without token on port N (default 8080): the
#                         kubeconfig is `gpusched kubeconfig --port N`
#   --scheduler-name NAME the profile's schedulerName (default real-scheduler)
#   --content-type json   clientConnection.contentType application/json instead of protobuf
#   -- FLAGS              passed to kube-scheduler after the script's own (--v=4, --secure-port=10259 ...)
# Its HTTPS endpoints (healthz, metrics) are off (--secure-port=0) unless a flag turns them on.
set -euo pipefail

die() { echo "real-kube-scheduler: $*" >&2; exit 2; }

kubeconfig="" port=8080 name="real-scheduler" content_type=""
while [ $# -gt 0 ]; do
    case "$1" in
        --kubeconfig) [ $# -ge 2 ] || die "--kubeconfig needs a path"; kubeconfig="$2"; shift 2 ;;
        --port) [ $# -ge 2 ] || die "--port needs a number"; port="$2"; shift 2 ;;
        --scheduler-name) [ $# -ge 2 ] || die "--scheduler-name needs a name"; name="$2"; shift 2 ;;
        --content-type)
            [ "${2:-}" = json ] || die "--content-type: only json is an option (protobuf is the default)"
            content_type="application/json"; shift 2 ;;
        --) shift; break ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) die "unknown argument \"$1\" (kube-scheduler's own flags go after --)" ;;
    esac
done
[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] \
    || die "--port \"$port\": want a port number (1-65535)"
[[ "$name" =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] \
    || die "--scheduler-name \"$name\": want a DNS subdomain (lower case letters, digits, '-', '.')"

binary="${KUBE_SCHEDULER:-}"
if [ -z "$binary" ]; then
    binary="$(command -v kube-scheduler || true)"
    [ -n "$binary" ] || die "no kube-scheduler on PATH: set KUBE_SCHEDULER=/path/to/kube-scheduler"
fi
[ -f "$binary" ] && [ -x "$binary" ] || die "KUBE_SCHEDULER=$binary: not an executable file"

workdir="$(mktemp -d "${TMPDIR:-/tmp}/real-kube-scheduler.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT

if [ -n "$kubeconfig" ]; then
    [ -r "$kubeconfig" ] || die "--kubeconfig $kubeconfig: no such readable file"
    kubeconfig="$(cd "$(dirname "$kubeconfig")" && pwd)/$(basename "$kubeconfig")"
else
    gpusched="$(command -v gpusched || true)"
    [ -n "$gpusched" ] || die "no gpusched on PATH to write the kubeconfig: pass --kubeconfig PATH"
    kubeconfig="$workdir/kubeconfig"
    "$gpusched" kubeconfig --port "$port" > "$kubeconfig"
fi

config="$workdir/config.yaml"
{
    echo "apiVersion: kubescheduler.config.k8s.io/v1"
    echo "kind: KubeSchedulerConfiguration"
    echo "clientConnection:"
    echo "  kubeconfig: \"$kubeconfig\""
    if [ -n "$content_type" ]; then echo "  contentType: $content_type"; fi
    echo "leaderElection:"
    echo "  leaderElect: false"
    echo "profiles:"
    echo "- schedulerName: $name"
} > "$config"

echo "real-kube-scheduler: $("$binary" --version 2>/dev/null || echo "$binary"), profile $name," \
     "kubeconfig $kubeconfig" >&2
# In the background so that the EXIT trap removes the configuration when it ends: a TERM, HUP or
# INT (Ctrl-C) to this script is passed on to kube-scheduler as TERM, and its exit code is ours.
"$binary" --config "$config" --secure-port=0 "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null || true' TERM INT HUP
status=0
wait "$child" || status=$?
while kill -0 "$child" 2>/dev/null; do wait "$child" || status=$?; done
exit "$status"
