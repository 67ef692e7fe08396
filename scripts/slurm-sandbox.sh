#!/usr/bin/env bash
# A single-host Slurm with fake MIG GPUs in one directory, for trying wattsched (run as root).
#
#   scripts/slurm-sandbox.sh start DIR [CONFIG.toml] [--nodes N] [--suspend-time S] [--slurm 24.11|26.05]
#                                [--no-accounting] [--rest] [--gres-per-gpu] # then: the export lines it prints
#   scripts/slurm-sandbox.sh stop DIR
#
# CONFIG.toml is a controller config: its partition and its nodes' GPUs and configurations shape the sandbox
# (default: partition mig, one A100-40GB at configuration 3). A config with one [[nodes]] entry gives one
# node named after this host; with several, one slurmd per entry, named as there; --nodes N gives N nodes
# node1..nodeN, each a copy of the first entry (docs/slurm.md, "A many-node sandbox"); with several nodes,
# --suspend-time S lets Slurm turn a node idle S seconds off and on again for a job. DIR/wattsched.toml
# lists the sandbox's nodes with their fake GPUs as backends and keeps the config's
# [slurm] poll_s, [scheduling], [clocks], [power], [repartition] and each node's partitioner (a config
# the controller would refuse there stops the sandbox, with the controller's error). Where MariaDB and
# slurmdbd are installed the sandbox keeps accounting (a private database: sacct works), unless
# --no-accounting; where they are not it says so in one line and starts without.
#
# --rest (with --slurm 26.05) also runs slurmrestd on the unix socket DIR/rest/slurmrestd.socket, with JSON
# web tokens (scontrol token), and the controller then drives Slurm through it (docs/slurm.md).
# --gres-per-gpu gives GRES types that name their GPU (a100_1g.10gb_gpu1), so that a release names its GPU.
# --slurm runs another Slurm release than the host's, from a Debian root filesystem made once (debootstrap,
# about a minute) and cached in ~/.cache/wattsched/slurm-roots; its commands are wrappers in DIR/bin.
# Everything is done by
# `python -m wattsched.slurm.sandbox`; this script adds only the controller. PYTHON picks the interpreter
# (default: the repository's .venv, else python3).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$here/.venv/bin/python" ]]; then PYTHON="$here/.venv/bin/python"; else PYTHON=python3; fi
fi
if ! "$PYTHON" -c 'import wattsched' 2>/dev/null; then
    export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}"
fi

usage() {
    echo "usage: $0 start DIR [CONFIG.toml] [--nodes N] [--suspend-time S] [--slurm VERSION] [--no-accounting] [--rest] [--gres-per-gpu] | stop DIR" >&2
    exit 2
}

[[ $# -ge 2 ]] || usage
command=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)

case "$command" in
start)
    shift 2
    options=()
    while [[ $# -gt 0 ]]; do
        case "$1" in
        --nodes | --suspend-time | --slurm)
            [[ $# -ge 2 ]] || usage
            options+=("$1" "$2")
            shift 2
            ;;
        --no-accounting | --rest | --gres-per-gpu)
            options+=("$1")
            shift
            ;;
        -*) usage ;;
        *)
            [[ " ${options[*]-} " != *" --config "* ]] || usage
            options+=(--config "$1")
            shift
            ;;
        esac
    done
    "$PYTHON" -m wattsched.slurm.sandbox start "$dir" "${options[@]}"
    # Another release than the host's: its commands are wrappers in $dir/bin, first on the controller's PATH.
    if [[ -d "$dir/bin" ]]; then export PATH="$dir/bin:$PATH"; fi
    # ---- controller hook ------------------------------------------------------------------------------
    # The sandbox wrote $dir/wattsched.toml (its partition, node, GPUs, backend fake:$dir/fake_gpu.json,
    # state $dir/state.db). The controller runs on it when this wattsched has the command; `stop` ends it
    # (python -m wattsched.slurm.sandbox stop reads $dir/controller.pid).
    if "$PYTHON" -m wattsched slurm controller --help >/dev/null 2>&1; then
        SLURM_CONF="$dir/etc/slurm.conf" nohup "$PYTHON" -m wattsched slurm controller \
            --config "$dir/wattsched.toml" >>"$dir/log/controller.log" 2>&1 </dev/null &
        echo $! >"$dir/controller.pid"
        echo "# controller started (pid $(cat "$dir/controller.pid"), log $dir/log/controller.log)"
    else
        echo "# no 'wattsched slurm controller' in this wattsched: the controller was not started" >&2
    fi
    # ---- end of controller hook -----------------------------------------------------------------------
    ;;
stop)
    [[ $# -eq 2 ]] || usage
    "$PYTHON" -m wattsched.slurm.sandbox stop "$dir"
    ;;
*)
    usage
    ;;
esac
