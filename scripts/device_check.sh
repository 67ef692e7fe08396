#!/usr/bin/env bash
# Read-only check of the NVML paths on a real NVIDIA GPU.
#
# It reads the GPU and runs kernels at the card's own settings; it never changes MIG mode, clocks or power
# limits, and every `mig plan` here is a dry run (no --apply anywhere in this script).
#
#   scripts/device_check.sh [OUT]        # default OUT: benchmarks/out/device/<UTC date>
#
# Needs: wattsched with the [nvml] extra, PyTorch with CUDA (the 10 s matmul) and CuPy or PyTorch
# (gpu calibrate). A smoke run of the script's own logic without a GPU (the CPU tests do this):
#   WATTSCHED_GPU_BACKEND=fake:SNAPSHOT.json WORKLOAD="sleep 2" scripts/device_check.sh OUT Writes into OUT: info.json, record.json, snapshot.toml, measure.json, counter_check.json,
# calibrate.csv, snapshot_calibrated.toml, plan_*.json, mig-parted.yaml, and a log of every command.
set -euo pipefail

OUT=${1:-benchmarks/out/device/$(date -u +%Y-%m-%d)}
WATTSCHED=${WATTSCHED:-wattsched}
PYTHON=${PYTHON:-python}
export WATTSCHED_GPU_BACKEND=${WATTSCHED_GPU_BACKEND:-nvml}   # fake:FILE: a smoke run of this script's logic
export CUDA_DEVICE_ORDER=PCI_BUS_ID   # CUDA numbers the GPUs as NVML does
mkdir -p "$OUT"
LOG="$OUT/device_check.log"
: > "$LOG"

step() {  # run one command, keep its stderr in the log, stop at the first failure
    echo "+ $*" | tee -a "$LOG" >&2
    "$@" 2>> "$LOG"
}

step "$WATTSCHED" gpu info --json > "$OUT/info.json"
step "$WATTSCHED" gpu info >> "$LOG"
step "$WATTSCHED" gpu record -o "$OUT/record.json"
step "$WATTSCHED" gpu snapshot -o "$OUT/snapshot.toml"

# measure a 10-second PyTorch matmul, and read the energy counter around it independently
MATMUL='import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
torch.cuda.synchronize(); end = time.monotonic() + 10.0; n = 0
while time.monotonic() < end:
    for _ in range(10): a @ b
    torch.cuda.synchronize(); n += 10
print(f"{n} matmuls of 8192^3 bf16 in 10 s")'
COUNTER='import json, sys; print(json.load(sys.stdin)["energy_counter_j"])'
before_j=$("$WATTSCHED" gpu info --json | "$PYTHON" -c "$COUNTER")
if [ -n "${WORKLOAD:-}" ]; then   # a smoke run on the fake replaces the matmul (e.g. WORKLOAD="sleep 2")
    read -r -a command <<< "$WORKLOAD"
else
    command=("$PYTHON" -c "$MATMUL")
fi
step "$WATTSCHED" measure --gpus 0 --json -o "$OUT/measure.json" -- "${command[@]}" >> "$LOG"
after_j=$("$WATTSCHED" gpu info --json | "$PYTHON" -c "$COUNTER")
"$PYTHON" - "$OUT" "$before_j" "$after_j" <<'PY' | tee -a "$LOG"
import json, sys
out, before_j, after_j = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
measured = json.load(open(f"{out}/measure.json"))
info = json.load(open(f"{out}/info.json"))
record = json.load(open(f"{out}/record.json"))
facts = record["devices"][0] if "devices" in record else record
outside_j = after_j - before_j
idle_w, limit_w = facts["power_usage_idle_mw"] / 1000.0, info["power_limit_w"]
gpu = measured["gpus"][0]
checks = {
    # The measured interval lies inside the outer counter reading; the rest is wattsched's start and stop.
    "energy_from_counter": gpu["energy_source"] == "counter",
    "energy_within_outer_counter_difference": 0 < measured["energy_j"] <= outside_j,
    "outer_minus_measured_below_5s_at_the_limit": outside_j - measured["energy_j"] < 5 * limit_w,
    "mean_power_between_idle_and_limit": 0.99 * idle_w <= measured["avg_power_w"] <= 1.02 * limit_w,
    "exit_status_0": measured["exit_status"] == 0,
}
result = {"measured_energy_j": measured["energy_j"], "outer_counter_difference_j": outside_j,
          "time_s": measured["time_s"], "avg_power_w": measured["avg_power_w"],
          "max_power_w": measured["max_power_w"], "idle_w": idle_w, "power_limit_w": limit_w, "checks": checks}
json.dump(result, open(f"{out}/counter_check.json", "w"), indent=1)
print(json.dumps(result))
sys.exit(0 if all(checks.values()) else 1)
PY

step "$WATTSCHED" gpu calibrate --quick -o "$OUT/calibrate.csv"
step "$WATTSCHED" gpu snapshot --power-curve "$OUT/calibrate.csv" -o "$OUT/snapshot_calibrated.toml"

# MIG plans on this GPU's own entry, dry runs only (no --apply)
step "$WATTSCHED" mig configs --gpu "$OUT/snapshot.toml" --json > "$OUT/configs.json"
read -r FIRST LAST < <("$PYTHON" -c "import json,sys; c=json.load(open(sys.argv[1]))['configurations']; \
print(c[0]['id'], c[-1]['id'])" "$OUT/configs.json")
step "$WATTSCHED" mig plan --gpu "$OUT/snapshot.toml" --from "$FIRST" --to "$LAST" --json > "$OUT/plan_${FIRST}_${LAST}.json"
step "$WATTSCHED" mig plan --gpu "$OUT/snapshot.toml" --from "$LAST" --to "$FIRST" --json > "$OUT/plan_${LAST}_${FIRST}.json"
step "$WATTSCHED" mig export --gpu "$OUT/snapshot.toml" -o "$OUT/mig-parted.yaml"
echo "device check passed; outputs in $OUT" | tee -a "$LOG"
