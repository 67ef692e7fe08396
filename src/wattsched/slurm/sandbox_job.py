"""A stand-in for a GPU job in the Slurm sandbox: it runs as long as its work takes on the slice it got, and
checkpoints like a well-behaved training job.

    python -m wattsched.slurm.sandbox_job --work 20s [--scaling linear] [--state DIR/fake_gpu.json]

The slice is the MIG instance in ``CUDA_VISIBLE_DEVICES`` (looked up in the fake GPU state file,
``--state`` or ``$WATTSCHED_FAKE_GPU``); a job of several GPUs (a gang) gets one on each and is done when
its work is done on every one of them, as the simulator's gang ends with its last GPU. Its run time on a
slice is what the controller's model assumes
(:func:`wattsched.slurm.jobs.engine_job`), at the speed of the SM clock locked on the fake GPU (read again
every quarter second), so a sandbox run and a simulation of it can be compared. Progress,
the fraction of the work done, is kept in a checkpoint file (``--checkpoint``, default
``$SLURM_SUBMIT_DIR/.wattsched-checkpoint-ID``, ID ``$WATTSCHED_JOB_ID`` — the first job's id in a renewed
copy — else ``$SLURM_JOB_ID``): written on ``SIGUSR1`` (the controller's signal before a requeue) and on
``SIGTERM``; a requeued run (``SLURM_RESTART_COUNT`` > 0) resumes from it.
It prints one line when it starts and one when it finishes.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from wattsched.errors import WattschedError
from wattsched.hardware.gpu.fake_state import FakeGpuState
from wattsched.slurm.annotations import parse_duration
from wattsched.slurm.client import ORIGINAL_JOB_ID
from wattsched.slurm.gres_update import visible_uuids
from wattsched.slurm.jobs import engine_job
from wattsched.workload.job import JobKind, Scaling

__all__ = ["main", "run_time_s"]

_STEP_S = 0.05
_CLOCK_READ_S = 0.25


def run_time_s(work_s: float, scaling: Scaling, uuid: str, state: FakeGpuState) -> tuple[float, str, int]:
    """Run time of ``work_s`` (on the whole GPU) on the MIG instance ``uuid`` at the default clock, the
    instance's label and its GPU's index."""
    for index, _ in enumerate(state.gpus()):
        for instance in state.instances(index):
            if instance.uuid == uuid:
                job = engine_job("job", 0.0, 0.0, JobKind.TRAINING, scaling, work_s)
                return job.duration_for_size(instance.compute), instance.label, index
    raise WattschedError(f"MIG instance {uuid} is not in the fake GPU state {state.path}")


def _say(line: str) -> None:
    """One line of the job's output (this module is a program: its output is the job's log)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m wattsched.slurm.sandbox_job",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--work", required=True, help="run time on the whole GPU (90s, 15m, 1h30m, seconds)")
    parser.add_argument(
        "--scaling", default="linear", choices=[s.value for s in Scaling if s != Scaling.MEASURED]
    )
    parser.add_argument("--state", default=os.environ.get("WATTSCHED_FAKE_GPU"), help="fake GPU state file")
    parser.add_argument("--checkpoint", help="checkpoint file (default beside the job's submission)")
    args = parser.parse_args(argv)
    try:
        work_s = parse_duration(args.work)
        uuids = list(visible_uuids(os.environ))
        if not uuids or not args.state:
            raise WattschedError("needs CUDA_VISIBLE_DEVICES=MIG-... and --state (or $WATTSCHED_FAKE_GPU)")
        gpus = FakeGpuState(args.state)
        slices = [run_time_s(work_s, Scaling(args.scaling), uuid, gpus) for uuid in uuids]
    except (WattschedError, ValueError) as exc:
        sys.stderr.write(f"sandbox_job: {exc}\n")
        return 2
    job_id = os.environ.get("SLURM_JOB_ID", "0")
    first_id = os.environ.get(ORIGINAL_JOB_ID, job_id)
    checkpoint = Path(
        args.checkpoint or Path(os.environ.get("SLURM_SUBMIT_DIR", ".")) / f".wattsched-checkpoint-{first_id}"
    )
    restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
    done = float(checkpoint.read_text()) if restarts and checkpoint.exists() else 0.0
    label = "+".join(label for _, label, _ in slices)
    _say(f"start job={job_id} slice={label} uuid={','.join(uuids)} restart={restarts} done={done:.4f}")
    state = {"done": done, "stop": False}
    progress = [done] * len(slices)  # the work done on each slice (the job's: the least of them)

    def save(signum: int, _frame: object) -> None:
        checkpoint.write_text(f"{state['done']:.6f}")
        _say(f"checkpoint job={job_id} signal={signal.Signals(signum).name} done={state['done']:.4f}")
        if signum == signal.SIGTERM:
            state["stop"] = True

    signal.signal(signal.SIGUSR1, save)
    signal.signal(signal.SIGTERM, save)
    last = read = time.monotonic()
    speeds = [gpus.speed(gpu_index) for _, _, gpu_index in slices]
    while state["done"] < 1.0 and not state["stop"]:
        left = max(
            (1.0 - p) * run_s / v for p, (run_s, _, _), v in zip(progress, slices, speeds, strict=True)
        )
        time.sleep(min(_STEP_S, left))
        now = time.monotonic()
        for i, ((run_s, _, _), speed) in enumerate(zip(slices, speeds, strict=True)):
            progress[i] = min(1.0, progress[i] + (now - last) * speed / run_s)
        state["done"] = min(progress)
        last = now
        if now - read >= _CLOCK_READ_S:
            speeds, read = [gpus.speed(gpu_index) for _, _, gpu_index in slices], now
    if state["stop"]:
        return 143
    checkpoint.unlink(missing_ok=True)
    _say(f"finish job={job_id} slice={label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
