"""The Slurm controller's cost: latency it adds, CPU and memory it uses, decision time at scale.

    python benchmarks/bench_slurm.py [--events 24] [--jobs 1000] [--repartitions 6] [--skip-live]
    python benchmarks/bench_slurm.py --live-nodes 8 --events 96 --jobs 10   # (a), (b) on 8 nodes x 2 GPUs
    python benchmarks/bench_slurm.py --slurm 26.05 --jobs 10                 # (a), (b) on another release
    python benchmarks/bench_slurm.py --slurm 26.05 --rest --jobs 10          # ... through slurmrestd
    python benchmarks/bench_slurm.py --scale [--scale-nodes 1,8,64] [--scale-queued 10000] [--repeats 5]

(a) A slice freeing to the next job running on it, in the real sandbox (needs root and Slurm): queued
    1-second jobs released by the controller (poll 0.5 s), against the same jobs submitted to the
    sandbox's unmanaged ``debug`` partition with a GRES type, which Slurm alone starts. p50/p99 over the
    events (a job's script starting on a MIG instance after the previous job's script there ended).
(b) The controller's CPU time (its own, and its Slurm commands') and peak Python memory per job over (a).
    ``--live-nodes N``: (a) and (b) on a many-node sandbox, N nodes (one slurmd each) of two fake A100s at
    configuration 3, every slice of the cluster taking jobs; ``--slurm RELEASE``: on that Slurm release
    (the sandbox's root filesystem, its commands through the sandbox's wrappers); ``--rest``: the controller
    reads and acts through slurmrestd (26.05) instead, and (b)'s command CPU is then what the calls that stay
    commands cost (tokens; slurmrestd's own CPU, another process, is read from /proc apart);
    (d), (e) only on one node of the host's Slurm.
(c) ``--jobs`` jobs queued at once against the in-memory FakeSlurmClient (no daemons): the time of each
    pass and per job event (arrival, start, end, release) in it; the target is 50 ms per event. A cProfile
    of the slowest passes follows when the target is missed.
(d) Live repartitions in the sandbox (needs root and Slurm; its node keeps its device count): the GPU
    switched between configurations 3 and 4 ``--repartitions`` times by a partitioner that asks for the
    other one at every decision epoch (a 0.2 s job's arrival), the controller polling every 0.5 s; the
    seconds of each phase (drain: to the next pass; wait: the jobs on held slices; apply: the MIG change on
    the fake GPU; gres: the sandbox's reload command, a fresh Python process; resume: the model rebuilt),
    then the steps of the sandbox's reload itself (drain the node, files, slurmctld restart + reconfigure +
    resume, the node back with its new GRES), called directly.
(e) Renewals in the same sandbox: the time :meth:`SlurmClient.renew` takes to replace a held job that was
    given a GRES type by a copy that asks for none (read its script and environment, ``sbatch`` the copy,
    mark it, cancel the original) — what a job that changes slice type, e.g. one requeued off a slice a
    repartition destroyed, waits for before it is released again.
(f) ``--scale`` (alone): nodes of 8 A100-40GBs (configuration 2, two slices a GPU), 8, 64 and 512 GPUs against
    the in-memory FakeSlurmClient, ``--scale-queued`` jobs waiting at 512 GPUs (in proportion below) and every
    slice running one, energy counters in memory. The process CPU time (``time.process_time``: the machine
    is shared) of the pass in which every job arrives, of the pass that sees them start, of steady passes
    (nothing happens; target ``poll_s`` = 2 s) and of passes with a few events on top (5 jobs end, 5 arrive,
    the last pass's releases start; target 50 ms per event, the pass divided by its events), best and median
    of ``--repeats``; and the memory per queued job (tracemalloc over a fresh controller's arrival pass, and
    the RSS growth over the timed one).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import os
import platform
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type
from wattsched.mig.results import SimSnapshot
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import FakeSlurmClient, JobState
from wattsched.slurm.config import load_config
from wattsched.slurm.controller import Controller
from wattsched.slurm.sandbox import NodeSpec
from wattsched.slurm.state import StateStore

_TARGET_S = 0.050


def _quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    median = statistics.median(ordered)
    return f"p50 {median * 1000:8.1f} ms  p99 {p99 * 1000:8.1f} ms  max {ordered[-1] * 1000:8.1f} ms"


def _script(folder: Path, name: str) -> Path:
    script = folder / f"{name}.sh"
    script.write_text(
        '#!/bin/sh\necho "began $(date +%s.%N) $CUDA_VISIBLE_DEVICES"\nsleep 1\necho "ended $(date +%s.%N)"\n'
    )
    script.chmod(0o755)
    return script


def _gaps(outputs: list[Path]) -> list[float]:
    """Per MIG instance, each job's start minus the end of the job before it there."""
    runs: dict[str, list[tuple[float, float]]] = {}
    for out in outputs:
        words = out.read_text().split()
        runs.setdefault(words[2], []).append((float(words[1]), float(words[4])))
    gaps = []
    for spans in runs.values():
        spans.sort()
        gaps += [start - spans[n - 1][1] for n, (start, _) in enumerate(spans) if n]
    return gaps


def _wait_done(client: object, ids: list[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs = {job.job_id: job for job in client.jobs()}  # type: ignore[attr-defined]
        if all(jobs[i].state is JobState.COMPLETED for i in ids if i in jobs):
            return
        time.sleep(0.5)
    raise RuntimeError(f"jobs did not finish within {timeout_s:g} s")


def _daemon_cpu_s(name: str) -> float:
    """The user + system CPU seconds of every running process called ``name`` (``/proc``), 0 if none."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, tail = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        if head.split("(", 1)[1] == name:
            fields = tail.split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def live(events: int, folder: Path, nodes: int = 1, slurm: str | None = None, rest: bool = False) -> None:
    if nodes > 1:  # a many-node sandbox: one slurmd per node, two fake A100s each
        specs = [NodeSpec(f"b{n + 1}", (("a100-40gb", 3), ("a100-40gb", 3))) for n in range(nodes)]
        box = sandbox_module.start(folder / "box", nodes=specs, slurm=slurm, rest=rest)
        types = [kind for member in box.nodes for kind in member.gres_types]
    else:
        box = sandbox_module.start(folder / "box", gpus=[("a100-40gb", 3)], slurm=slurm, rest=rest)
        types = list(box.gres_types)
    try:
        client = box.client()
        slices = len(types)
        jobs = max(2, events // slices + 2)  # per slice: jobs - 1 events
        print(f"sandbox: {nodes} node(s), {slices} MIG slices, {jobs * slices} jobs of 1 s")
        version = subprocess.run(
            [str(box.bin_dir / "sinfo") if box.bin_dir else "sinfo", "--version"],
            env=dict(os.environ, **box.env),
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        print(f"sinfo --version: {version}")
        # Slurm alone: the unmanaged partition, each job asking for one slice type.
        total = slices * jobs
        control = [
            client.submit(
                _script(folder, f"c{n}"),
                partition=box.unmanaged_partition,
                output=folder / f"c{n}.out",
                extra=[f"--gres=gpu:{types[n % slices]}:1"],
            )
            for n in range(total)
        ]
        _wait_done(client, control, 120 + total * 2)
        alone = _gaps([folder / f"c{n}.out" for n in range(total)])
        # The controller: the same jobs held in the managed partition, released one per free slice.
        config_path = sandbox_module.write_controller_config(box, folder / "wattsched.toml")
        config_path.write_text(config_path.read_text().replace("[slurm]\n", "[slurm]\npoll_s = 0.5\n"))
        config = load_config(config_path)
        managed = [
            client.submit(
                _script(folder, f"m{n}"),
                output=folder / f"m{n}.out",
                comment="wattsched: work=1s deadline=+3600s",
            )
            for n in range(total)
        ]
        api = box.rest_client() if rest else client
        print(f"controller through: {'slurmrestd' if rest else 'the commands'}")
        controller = Controller(config, api, StateStore(config.state_path))
        rest_cpu = _daemon_cpu_s("slurmrestd")
        tracemalloc.start()
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.time()
        while time.time() - began < 120 + total * 3:
            tick = time.time()
            controller.run_once()
            rows = controller.store.jobs()
            if len(rows) == len(managed) and all(row.phase == "done" for row in rows):
                break
            time.sleep(max(0.0, config.poll_s - (time.time() - tick)))
        own_end = resource.getrusage(resource.RUSAGE_SELF)
        children_end = resource.getrusage(resource.RUSAGE_CHILDREN)
        rest_cpu = _daemon_cpu_s("slurmrestd") - rest_cpu
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        managed_gaps = _gaps([folder / f"m{n}.out" for n in range(total)])
        count = len(managed)
        cpu = (own_end.ru_utime + own_end.ru_stime) - (own.ru_utime + own.ru_stime)
        cmd = (children_end.ru_utime + children_end.ru_stime) - (children.ru_utime + children.ru_stime)
        print(f"\n(a) slice free -> next job running ({len(managed_gaps)} / {len(alone)} events)")
        print(f"    controller + Slurm: {_quantiles(managed_gaps)}")
        print(f"    Slurm alone:        {_quantiles(alone)}")
        print(f"\n(b) controller over {count} jobs, {time.time() - began:.0f} s")
        print(f"    CPU, controller process: {cpu:.2f} s ({cpu / count * 1000:.0f} ms per job)")
        print(
            f"    CPU, its Slurm commands (squeue, scontrol): {cmd:.2f} s "
            f"({cmd / count * 1000:.0f} ms per job)"
        )
        if rest:
            per_job = rest_cpu / count * 1000
            print(f"    CPU, slurmrestd (its process): {rest_cpu:.2f} s ({per_job:.0f} ms per job)")
        print(
            f"    peak Python memory (tracemalloc): {peak / 1024:.0f} KiB "
            f"({peak / count / 1024:.1f} KiB per job); max RSS {own_end.ru_maxrss / 1024:.0f} MiB"
        )
    finally:
        sandbox_module.stop(folder / "box")


class _Toggle:
    """Asks for configuration 4 when the GPU has 3, and 3 when it has 4."""

    name = "toggle"
    scheduler = "edf-ss-restricted"

    def reset(self, gpu: object, seed: int | None = None) -> None:
        del gpu, seed

    def initial_configuration(self) -> int:
        return 3

    def decide(self, snapshot: SimSnapshot) -> int:
        return 4 if snapshot.configuration == 3 else 3


def repartitions(count: int, folder: Path) -> None:
    box = sandbox_module.start(folder / "rbox", gpus=[("a100-40gb", 3)], spare_devices=True)
    try:
        client = box.client()
        config_path = sandbox_module.write_controller_config(
            box, folder / "rbox.toml", partitioner="day-night", repartition={"requeue": False}
        )
        config_path.write_text(config_path.read_text().replace("[slurm]\n", "[slurm]\npoll_s = 0.5\n"))
        config = load_config(config_path)
        controller = Controller(
            config, client, StateStore(config.state_path), partitioners={f"{box.node}/0": _Toggle()}
        )
        script = folder / "tick.sh"
        script.write_text("#!/bin/sh\nsleep 0.2\n")
        script.chmod(0o755)
        for n in range(count):
            note = "wattsched: work=0.2s deadline=+600s"
            client.submit(script, output=folder / f"tick{n}.out", comment=note)
            began = time.time()
            while time.time() - began < 60:
                tick = time.time()
                controller.run_once()
                done = [e for e in controller.store.repartitions() if not e.open]
                if len(done) > n:
                    break
                time.sleep(max(0.0, config.poll_s - (time.time() - tick)))
        entries = controller.store.repartitions()
        print(f"\n(d) {len(entries)} live repartitions (3 <-> 4) on the sandbox, poll 0.5 s")
        for entry in entries:
            spent = "  ".join(f"{phase} {seconds:6.3f}" for phase, seconds in entry.phase_s.items())
            change = f"{entry.from_config} -> {entry.to_config}"
            print(f"    {change} {entry.phase:<8} {spent}  waited {entry.waited}  requeued {entry.requeued}")
        for phase in ("drain", "wait", "apply", "gres", "resume"):
            values = [e.phase_s[phase] for e in entries if phase in e.phase_s]
            if values:
                print(f"    {phase:<7} p50 {statistics.median(values):6.3f} s  max {max(values):6.3f} s")
        steps: dict[str, list[float]] = {}
        for _ in range(5):
            for key, value in sandbox_module.reload_gres(box.directory).items():
                steps.setdefault(key, []).append(value)
        print(
            "    the sandbox's reload alone (5 calls): "
            + "  ".join(
                f"{key.removesuffix('_s')} {statistics.median(values):.3f} s" for key, values in steps.items()
            )
        )
        renewals(box, folder, 10)
    finally:
        sandbox_module.stop(folder / "rbox")


def renewals(box: sandbox_module.Sandbox, folder: Path, count: int) -> None:
    client = box.client()
    script = folder / "renew.sh"
    script.write_text("#!/bin/sh\nsleep 1\n")
    script.chmod(0o755)
    times = []
    for n in range(count):
        job = client.submit(script, output=folder / f"renew{n}.out", comment="wattsched: work=1s")
        client.set_gres(job, f"gpu:{box.gres_types[0]}:1", box.node)
        began = time.perf_counter()
        copy = client.renew(job, f"wattsched: renewal of job {job}")
        times.append(time.perf_counter() - began)
        client.cancel(copy)
    print(f"\n(e) {count} renewals on the sandbox: {_quantiles(times)}")


class _Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def in_memory(count: int, folder: Path, max_passes: int) -> None:
    clock = _Clock()
    gpu_file = folder / "gpu.json"
    fake = FakeGpuState.create(gpu_file, [("a100-40gb", 3)], clock=clock)
    (folder / "fake.toml").write_text(
        f'[slurm]\npartition = "mig"\nstate = "fake.db"\n[[nodes]]\nname = "node0"\n'
        f'gpus = ["a100-40gb"]\nconfiguration = 3\nbackend = "fake:{gpu_file}"\n'
    )
    config = load_config(folder / "fake.toml")
    instances = fake.instances(0)
    slurm = FakeSlurmClient(
        {"node0": [gres_type(fake.gpu(0), i.profile) for i in instances]},
        uuids={"node0": [i.uuid for i in instances]},
        clock=clock,
    )
    controller = Controller(
        config,
        slurm,
        StateStore(config.state_path),
        clock=clock,
        meters={"node0": FakeGpuState(gpu_file, clock=clock)},
    )
    for n in range(count):
        slurm.submit(comment=f"wattsched: work={1 + n % 5}s deadline=+{100000 + n}s")
    passes: list[tuple[float, int]] = []
    profiler = cProfile.Profile()
    end_of: dict[int, float] = {}
    for _ in range(max_passes):
        profiler.enable()
        started = time.perf_counter()
        report = controller.run_once()
        spent = time.perf_counter() - started
        profiler.disable()
        events = sum(len(x) for x in (report.arrived, report.started, report.finished, report.released))
        passes.append((spent, events))
        for job_id in slurm.schedule():
            row = controller.store.job(job_id)
            small = row is not None and (row.slice or "").startswith("1g")
            end_of[job_id] = clock.now + (1 + (job_id - 1) % 5) * (7.42 if small else 1.9)
        for job_id, end in list(end_of.items()):
            if clock.now >= end:
                slurm.finish(job_id)
                del end_of[job_id]
        clock.now += 1.0
        if all(row.phase == "done" for row in controller.store.jobs()):
            break
    done = sum(1 for row in controller.store.jobs() if row.phase == "done")
    busy = [(spent, events) for spent, events in passes if events]
    print(f"\n(c) {count} jobs queued at once, in-memory Slurm: {len(passes)} passes, {done} jobs done")
    print(f"    per pass:      {_quantiles([spent for spent, _ in passes])}")
    per_event = [spent / events for spent, events in busy]
    print(f"    per job event: {_quantiles(per_event)}  (target {_TARGET_S * 1000:.0f} ms)")
    first_spent, first_events = passes[0]
    print(f"    first pass: {first_events} events in {first_spent * 1000:.0f} ms")
    if max(per_event) > _TARGET_S or max(spent for spent, _ in passes) > _TARGET_S:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(15)
        print("    over target somewhere: cProfile of every pass, top 15 by cumulative time")
        print("\n".join("      " + line for line in text.getvalue().splitlines() if line.strip()))


class _Meter:
    """The energy counters of a node's GPUs in memory: each GPU draws a constant 150 W (the scale runs time
    the controller, not a fake GPU's state file)."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.began = clock.now

    def energy_mj(self, gpu_index: int) -> int:
        return round((self.clock.now - self.began) * 150_000.0)


def _scale_cluster(nodes: int, folder: Path, clock: _Clock) -> tuple[Controller, FakeSlurmClient]:
    """``nodes`` nodes of 8 A100s, each GPU in configuration 2 (4g.20gb + 3g.20gb: two slices)."""
    folder.mkdir(exist_ok=True)
    text = f'[slurm]\npartition = "mig"\nstate = "scale{nodes}.db"\npoll_s = 2.0\ntime_origin = "start"\n'
    names = [f"gpu{n:03d}" for n in range(nodes)]
    gpus = ", ".join(['"a100-40gb"'] * 8)
    for name in names:
        text += f'[[nodes]]\nname = "{name}"\ngpus = [{gpus}]\nconfiguration = 2\nbackend = "nvml"\n'
    (folder / f"scale{nodes}.toml").write_text(text)
    config = load_config(folder / f"scale{nodes}.toml")
    types = []
    for gpu, configuration in zip(config.nodes[0].gpus, config.nodes[0].configurations, strict=True):
        types += [gres_type(gpu, s.profile) for s in configuration.slices]
    slurm = FakeSlurmClient({name: types for name in names}, clock=clock)
    meters = {name: _Meter(clock) for name in names}
    store = StateStore(config.state_path)
    return Controller(config, slurm, store, clock=clock, meters=meters), slurm  # type: ignore[arg-type]


def _timed_pass(controller: Controller) -> tuple[float, int, int]:
    """One pass: its process CPU time (s), the job events it handled and the jobs that arrived in it."""
    began = time.process_time()
    report = controller.run_once()
    spent = time.process_time() - began
    events = (report.arrived, report.started, report.finished, report.released)
    return spent, sum(len(x) for x in events), len(report.arrived)


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _traced_per_job(nodes: int, waiting: int, folder: Path) -> float:
    """The Python memory (KiB, tracemalloc) a fresh controller holds per job after their arrival pass (its
    own run: tracemalloc slows the pass it traces)."""
    clock = _Clock()
    controller, slurm = _scale_cluster(nodes, folder / "traced", clock)
    for n in range(waiting):
        slurm.submit(comment=f"wattsched: work=86400s deadline=+{172_800 + n}s")
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    controller.run_once()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    controller.store.close()
    return (after - before) / waiting / 1024


def scale(sizes: list[int], queued: int, repeats: int, folder: Path) -> None:
    """The controller's cost at 8 .. 512 GPUs: jobs queued in proportion to the GPUs (``queued`` at 512),
    every slice running a job; one pass's CPU time cold (every job arriving), steady (nothing happens) and
    with a few events on top (5 jobs end, 5 arrive, the released ones start), and the memory per queued
    job."""
    print("\n(f) scale: nodes of 8 A100-40GB (configuration 2: two slices each), in-memory Slurm, poll 2 s")
    print("    process CPU time (time.process_time) of one pass; best and median of the repeats")
    for nodes in sizes:
        clock = _Clock()
        controller, slurm = _scale_cluster(nodes, folder, clock)
        gpus = len(controller.gpus)
        slices = sum(len(model.labels) for model in controller.gpus)
        waiting = round(queued * gpus / 512)
        work = 86_400  # nobody ends by itself: the steady state stays
        for n in range(waiting + slices):
            slurm.submit(comment=f"wattsched: work={work}s deadline=+{2 * work + n}s")
        rss = _rss_kib()
        arrival, arrival_events, arrived = _timed_pass(controller)
        rss = _rss_kib() - rss
        started = slurm.schedule()
        clock.now += 2.0
        first_start, start_events, _ = _timed_pass(controller)
        steady = []
        for _ in range(repeats):
            clock.now += 2.0
            steady.append(_timed_pass(controller)[0])
        few: list[tuple[float, int]] = []
        for r in range(repeats):
            running = [j for j in slurm.jobs() if j.state is JobState.RUNNING]
            for job in running[:5]:
                slurm.finish(job.job_id)
            for n in range(5):
                slurm.submit(comment=f"wattsched: work={work}s deadline=+{3 * work + r * 5 + n}s")
            clock.now += 2.0
            spent, events, _ = _timed_pass(controller)
            few.append((spent, events))
            slurm.schedule()
        clock.now += 2.0
        controller.run_once()  # the last starts seen
        rows = controller._rows.values()
        queued_now = sum(row.phase == "queued" for row in rows)
        running_now = sum(row.phase == "running" for row in rows)
        print(
            f"    {gpus:4d} GPUs, {queued_now:6d} queued, {running_now:5d} running "
            f"({len(started)} started at once):"
        )
        print(
            f"      arrival pass ({arrival_events} events): {arrival:7.3f} s = "
            f"{arrival / arrival_events * 1000:6.2f} ms "
            f"per event; start pass ({start_events} events): {first_start:7.3f} s "
            f"= {first_start / max(start_events, 1) * 1000:6.2f} ms per event"
        )
        print(
            f"      steady pass: best {min(steady):7.3f} s  median {statistics.median(steady):7.3f} s "
            f"(target {2.0:.0f} s)"
        )
        few_s = [spent for spent, _ in few]
        per_event = [spent / events for spent, events in few if events]
        print(
            f"      a few events on top ({few[0][1]}-{few[-1][1]} events): best {min(few_s):7.3f} s  "
            f"median {statistics.median(few_s):7.3f} s; per event median "
            f"{statistics.median(per_event) * 1000:6.2f} ms (target {_TARGET_S * 1000:.0f} ms)"
        )
        controller.store.close()
        traced = _traced_per_job(nodes, waiting + slices, folder)
        print(
            f"      memory per queued job: {traced:5.2f} KiB traced by tracemalloc (a fresh controller's "
            f"arrival pass), {rss / arrived:5.2f} KiB of RSS (the timed one)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=24, help="slice-free events per live run (>= 20)")
    parser.add_argument(
        "--slurm", default=None, help="(a), (b) on this Slurm release (24.11, 26.05; default: the host's)"
    )
    parser.add_argument("--rest", action="store_true", help="(a), (b): the controller through slurmrestd")
    parser.add_argument(
        "--live-nodes", type=int, default=1, help="(a), (b) on this many nodes of 2 fake A100s (1: one GPU)"
    )
    parser.add_argument("--jobs", type=int, default=1000, help="queued jobs for the in-memory run")
    parser.add_argument("--passes", type=int, default=30, help="most passes of the in-memory run")
    parser.add_argument("--repartitions", type=int, default=6, help="live repartitions for (d)")
    parser.add_argument("--skip-live", action="store_true", help="only (c) (and (f) with --scale)")
    parser.add_argument("--scale", action="store_true", help="only (f): the controller at 8 .. 512 GPUs")
    parser.add_argument("--scale-nodes", default="1,8,64", help="(f)'s sizes, in nodes of 8 GPUs")
    parser.add_argument("--scale-queued", type=int, default=10_000, help="(f)'s queued jobs at 512 GPUs")
    parser.add_argument("--repeats", type=int, default=5, help="(f)'s passes of each kind")
    args = parser.parse_args()
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    print(f"date {stamp}; {os.cpu_count()} CPUs; Python {platform.python_version()}; {platform.platform()}")
    folder = Path(tempfile.mkdtemp(prefix="wattsched-bench-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        if args.scale:
            sizes = [int(n) for n in args.scale_nodes.split(",")]
            scale(sizes, args.scale_queued, args.repeats, folder)
            return 0
        if not args.skip_live:
            if os.geteuid() != 0 or not shutil.which("slurmctld"):
                print("(a), (b) skipped: the sandbox needs root and Slurm")
            else:
                live(args.events, folder, args.live_nodes, args.slurm, args.rest)
                if args.live_nodes == 1 and args.slurm is None:
                    repartitions(args.repartitions, folder)
        in_memory(args.jobs, folder, args.passes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
