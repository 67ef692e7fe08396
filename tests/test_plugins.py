"""Plug-ins from outside the package: ``--plugin``, a sweep file's ``plugins``, entry points, fingerprints."""

from __future__ import annotations

import concurrent.futures as futures
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from wattsched import plugins
from wattsched.cli import main
from wattsched.cluster.placement import PLACEMENTS
from wattsched.errors import ConfigError
from wattsched.hardware import catalogue
from wattsched.hardware.catalogue import PLUGIN_GPUS, available, load_gpu, register_gpu
from wattsched.mig.checks import check_policy
from wattsched.mig.partition.base import PARTITIONERS
from wattsched.mig.policies import POLICIES
from wattsched.mig.simulator import simulate
from wattsched.workload.generators import WorkloadSpec, generate_jobs

SRC = Path(__file__).resolve().parents[1] / "src"
REGISTRIES = (POLICIES, PARTITIONERS, PLACEMENTS, PLUGIN_GPUS)


def policy_module(name: str, policy: str, *, deadline_first: bool = False) -> str:
    """A shortest-job-first policy registered as ``policy`` (``deadline_first``: EDF order instead)."""
    rank = "view.deadline_s[job]" if deadline_first else "view.remaining[job] * min(view.durations_s[job])"
    return textwrap.dedent(f'''\
        """{name}: a test plug-in."""
        import math

        from wattsched.mig.policies import POLICIES
        from wattsched.mig.view import Assignment


        class ShortestJobFirst:
            name = "{policy}"
            critical_laxity_s = None
            max_critical_events = 0

            def on_configuration(self, view):
                return None

            def rank(self, view, job):
                return {rank}

            def critical_time_s(self, view, job, key):
                return math.inf

            def assign(self, view):
                n = len(view.running)
                running = [(self.rank(view, j), j) for j in view.running if j >= 0]
                chosen = sorted(running + list(view.waiting[:n]))[:n]
                free = list(view.scan_order)
                out = [-1] * n
                for _, job in chosen:
                    durations = view.durations_s[job]
                    best = min(free, key=lambda s: durations[view.slice_duration_index[s]])
                    out[best] = job
                    free.remove(best)
                return None if out == list(view.running) else Assignment(out)


        POLICIES.register("{policy}")(ShortestJobFirst)
        ''')


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Registries, loaded plug-ins and imported modules as they were before the test."""
    saved = [(r, dict(r._factories), r._entry_points_loaded) for r in REGISTRIES]
    loaded = dict(plugins._LOADED)
    gpu_cache = dict(catalogue._PLUGIN_CACHE)
    modules = set(sys.modules)
    path = list(sys.path)
    yield
    for registry, factories, flag in saved:
        registry._factories.clear()
        registry._factories.update(factories)
        registry._entry_points_loaded = flag
    plugins._LOADED.clear()
    plugins._LOADED.update(loaded)
    catalogue._PLUGIN_CACHE.clear()
    catalogue._PLUGIN_CACHE.update(gpu_cache)
    for name in set(sys.modules) - modules:
        if name.startswith(("plug_", "ep_")):  # the test's plug-ins only: other modules stay imported
            del sys.modules[name]
    sys.path[:] = path


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    return path


def test_plugin_option_before_and_after_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], isolated: None
) -> None:
    _write(tmp_path, "plug_sjf_a", policy_module("plug_sjf_a", "sjf-a"))
    monkeypatch.chdir(tmp_path)  # a bare module name is also looked for in the current folder
    argv = [
        "mig",
        "run",
        "--config",
        "3",
        "--policy",
        "sjf-a",
        "--rate",
        "0.5",
        "--hours",
        "1",
        "--seed",
        "1",
        "--json",
    ]
    assert main(["--plugin", "plug_sjf_a", *argv]) == 0
    before = json.loads(capsys.readouterr().out)
    assert main([*argv[:2], "--plugin=plug_sjf_a", *argv[2:]]) == 0  # after the command, as --plugin=M
    after = json.loads(capsys.readouterr().out)
    assert before == after and before["policy"] == "sjf-a" and before["unfinished_jobs"] == 0
    # The same jobs under the library call: the CLI ran the plug-in's policy, not another.
    jobs = [
        j.with_sizes(load_gpu().compute_sizes)
        for j in generate_jobs(WorkloadSpec(rate_per_min=0.5, hours=1), 1)
    ]
    direct = simulate(jobs, 3, "sjf-a", horizon_s=3600.0)
    assert direct.energy_j == before["energy_j"] and direct.avg_tardiness_s == before["avg_tardiness_s"]
    check_policy("sjf-a")  # the tutorial's policy keeps the checker's rules


def test_bad_plugins_are_one_line_errors_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], isolated: None
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "plug_empty", "VALUE = 1\n")
    _write(tmp_path, "plug_broken", "import not_a_module_anywhere\n")
    _write(tmp_path, "plug_raises", "raise ValueError('bad config\\nsecond line')\n")
    cases = {
        "plug_missing": "--plugin plug_missing: cannot import module 'plug_missing': ModuleNotFoundError: "
        "No module named 'plug_missing'",
        "plug_broken": "--plugin plug_broken: cannot import module 'plug_broken': ModuleNotFoundError: "
        "No module named 'not_a_module_anywhere'",
        "plug_empty": "--plugin plug_empty: module 'plug_empty' registered nothing",
        "plug_raises": "--plugin plug_raises: importing module 'plug_raises' failed: ValueError: bad config",
        "no/such.py": "--plugin no/such.py: no such plug-in file 'no/such.py'",
        "1bad": "--plugin 1bad: '1bad' is not a module name",
    }
    for module, message in cases.items():
        assert main(["--plugin", module, "mig", "configs"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"wattsched: error: {message}"), err
        assert err.count("\n") == 1


def test_plugin_as_a_file_path_and_a_plugin_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated: None
) -> None:
    gpu_toml = tmp_path / "mygpu.toml"
    gpu_toml.write_text(
        (SRC / "wattsched/hardware/data/gpus/a100-40gb.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    folder = tmp_path / "plug"
    folder.mkdir()
    _write(
        folder,
        "plug_gpu",
        "from wattsched.hardware.catalogue import register_gpu\n"
        f"register_gpu('lab-a100', {str(gpu_toml)!r})\n",
    )
    assert main(["--plugin", str(folder / "plug_gpu.py"), "mig", "configs", "--list-gpus"]) == 0
    assert "lab-a100" in capsys.readouterr().out
    assert "lab-a100" in available("gpu") and load_gpu("lab-a100") == load_gpu("a100-40gb")
    with pytest.raises(ConfigError, match="packaged catalogue entry"):
        register_gpu("a100-40gb", gpu_toml)


def _dist_info(folder: Path, package: str, entry_points: str) -> None:
    info = folder / f"{package}-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.2\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def test_entry_points_load_lazily_once_and_a_broken_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: None
) -> None:
    _write(tmp_path, "ep_sjf_module", policy_module("ep_sjf_module", "ep-sjf"))
    _write(
        tmp_path,
        "ep_objects",
        policy_module("ep_objects", "ep-registered-by-import").replace(
            'POLICIES.register("ep-registered-by-import")(ShortestJobFirst)',
            "Unregistered = ShortestJobFirst",
        ),
    )
    _dist_info(
        tmp_path,
        "labpolicies",
        "[wattsched.policies]\nep-sjf = ep_sjf_module\nep-object = ep_objects:Unregistered\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    POLICIES._entry_points_loaded = False
    assert "ep_sjf_module" not in sys.modules  # nothing is imported before a name is looked up
    assert {"ep-sjf", "ep-object"} <= set(POLICIES.available())
    assert POLICIES.make("ep-object").name == "ep-registered-by-import"  # an object: registered by its name
    assert plugins.loaded_plugins()["ep_sjf_module"].startswith("entry point wattsched.policies:ep-sjf")
    POLICIES.available()  # loaded once: a second look-up registers nothing twice

    broken = tmp_path / "broken"
    broken.mkdir()
    _dist_info(broken, "brokenpkg", "[wattsched.placements]\nbad = not_installed_module:Thing\n")
    monkeypatch.syspath_prepend(str(broken))
    PLACEMENTS._entry_points_loaded = False
    with pytest.raises(ConfigError) as info:
        PLACEMENTS.make("best-fit")
    message = str(info.value)
    assert message.startswith(
        "entry point 'bad = not_installed_module:Thing' (group wattsched.placements) of "
        "package brokenpkg 1.2 does not load: ModuleNotFoundError"
    )
    assert "\n" not in message


def _sweep_file(folder: Path, plugin: str, policy: str) -> Path:
    file = folder / "sweep.toml"
    file.write_text(
        textwrap.dedent(f"""\
        plugins = ["{plugin}"]
        gpus = ["a100-40gb"]
        configurations = [3]
        policies = ["{policy}", "edf-ss"]
        seeds = [1, 2]
        [workload]
        rate_per_min = 0.5
        hours = 1
        """),
        encoding="utf-8",
    )
    return file


def _cli(*argv: str, cwd: Path, extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (SRC, extra_path) if p is not None)}
    return subprocess.run(
        [sys.executable, "-m", "wattsched", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )


def test_sweep_plugins_run_in_workers_and_an_edit_recomputes(tmp_path: Path) -> None:
    """Subprocess runs, as a user runs them: worker processes resolve the plug-in's policy, and the store
    reuses rows only while the plug-in's source is unchanged."""
    work = tmp_path / "work"
    work.mkdir()
    plugin = _write(work, "plug_sweep_sjf", policy_module("plug_sweep_sjf", "sjf-sweep"))
    sweep = _sweep_file(work, "plug_sweep_sjf", "sjf-sweep")
    out = tmp_path / "out"
    elsewhere = tmp_path  # not the plug-in's folder: the sweep file's folder is where it is found

    first = _cli("sweep", str(sweep), "--out", str(out), "--workers", "2", cwd=elsewhere)
    assert first.returncode == 0, first.stderr
    assert "sweep: 4 runs (4 ran, 0 reused)" in first.stderr
    runs = pd.read_parquet(out / "runs.parquet")
    assert set(runs.policy) == {"sjf-sweep", "edf-ss"} and set(runs.unfinished_jobs) == {0}
    summary = json.loads((out / "sweep.json").read_text())
    assert [p["module"] for p in summary["plugins"]] == ["plug_sweep_sjf"]

    again = _cli("sweep", str(sweep), "--out", str(out), "--workers", "2", cwd=elsewhere)
    assert "sweep: 4 runs (0 ran, 4 reused)" in again.stderr, again.stderr

    plugin.write_text(policy_module("plug_sweep_sjf", "sjf-sweep", deadline_first=True), encoding="utf-8")
    edited = _cli("sweep", str(sweep), "--out", str(out), "--workers", "2", cwd=elsewhere)
    assert "sweep: 4 runs (4 ran, 0 reused)" in edited.stderr, edited.stderr
    rerun = pd.read_parquet(out / "runs.parquet")
    # In EDF order the edited policy is another policy: its rows changed, edf-ss's did not (but for et,
    # whose pool changed with them).
    sjf_before = runs[runs.policy == "sjf-sweep"].energy_j.to_numpy()
    sjf_after = rerun[rerun.policy == "sjf-sweep"].energy_j.to_numpy()
    assert (sjf_before != sjf_after).any()
    pd.testing.assert_frame_equal(
        runs[runs.policy == "edf-ss"].drop(columns="et"), rerun[rerun.policy == "edf-ss"].drop(columns="et")
    )

    plugin.write_text("VALUE = 1\n", encoding="utf-8")
    bad = _cli("sweep", str(sweep), "--out", str(out), cwd=elsewhere)
    assert bad.returncode == 2
    assert bad.stderr == (
        f"wattsched: error: {sweep}: key 'plugins': plug_sweep_sjf: module 'plug_sweep_sjf' "
        "registered nothing (a plug-in registers policies, partitioners, placements or GPUs "
        'when imported, e.g. with @POLICIES.register("name"))\n'
    )


def test_a_spawned_worker_imports_the_cells_plugins(tmp_path: Path, isolated: None) -> None:
    from wattsched.experiments.sweep import load_sweep
    from wattsched.experiments.sweep_cells import run_sweep_cell
    from wattsched.experiments.sweep_expand import expand_sweep

    _write(tmp_path, "plug_spawn_sjf", policy_module("plug_spawn_sjf", "sjf-spawn"))
    spec, base = load_sweep(_sweep_file(tmp_path, "plug_spawn_sjf", "sjf-spawn"))
    cells = [c for c in expand_sweep(spec, base) if getattr(c, "policy", "") == "sjf-spawn"]
    assert cells and all(
        c.plugins == (plugins.PluginReference("plug_spawn_sjf", str(tmp_path)),) for c in cells
    )
    here = run_sweep_cell(cells[0])
    with futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        there = pool.submit(run_sweep_cell, cells[0]).result(timeout=120)
    assert there == here


def test_plugin_subprocess_cli_mig_run(tmp_path: Path) -> None:
    _write(tmp_path, "plug_cli_sjf", policy_module("plug_cli_sjf", "sjf-cli"))
    done = _cli(
        "--plugin",
        "plug_cli_sjf",
        "mig",
        "run",
        "--config",
        "3",
        "--policy",
        "sjf-cli",
        "--rate",
        "0.5",
        "--hours",
        "1",
        "--json",
        cwd=tmp_path / "..",
        extra_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["policy"] == "sjf-cli"
    unknown = _cli(
        "mig",
        "run",
        "--config",
        "3",
        "--policy",
        "sjf-cli",
        "--rate",
        "0.5",
        "--hours",
        "1",
        cwd=tmp_path,
        extra_path=tmp_path,
    )
    assert unknown.returncode == 2 and "unknown scheduling policy 'sjf-cli'" in unknown.stderr


def test_fingerprint_covers_loaded_plugin_source(tmp_path: Path, isolated: None) -> None:
    from wattsched.experiments.store import cell_fingerprint

    before = cell_fingerprint("cell")
    _write(tmp_path, "plug_fp", policy_module("plug_fp", "sjf-fp"))
    plugins.load_plugin("plug_fp", base=tmp_path)
    assert cell_fingerprint("cell") != before
    assert cell_fingerprint("cell", code="x") == cell_fingerprint("cell", code="x")


def test_a_library_warning_is_one_stderr_line_and_the_json_counts_unfinished_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], isolated: None
) -> None:
    """A cluster whose GPUs run a policy that never places a job: every job is left unfinished."""
    _write(
        tmp_path,
        "plug_never",
        "from wattsched.mig.policies import POLICIES\n"
        "from wattsched.mig.policies.base import DeadlineOrder\n\n\n"
        "class NeverAssigns(DeadlineOrder):\n"
        "    name = 'never'\n\n"
        "    def assign(self, view):\n"
        "        return None\n\n\n"
        "POLICIES.register('never')(NeverAssigns)\n",
    )
    monkeypatch.chdir(tmp_path)
    argv = [
        "cluster",
        "run",
        "--servers",
        "1",
        "--gpus-per-server",
        "1",
        "--rate",
        "0.5",
        "--hours",
        "0.2",
        "--seed",
        "3",
        "--placement",
        "first-fit",
        "--partitioner",
        "static",
        "--policy",
        "never",
    ]
    assert main(["--plugin", "plug_never", *argv, "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["unfinished_jobs"] == result["jobs"] > 0
    assert err == (
        f"wattsched: warning: {result['jobs']} of {result['jobs']} jobs did not finish in the cluster "
        "run: its tardiness and ET leave them out (ET refuses such a result)\n"
    )
    assert main(["-q", "--plugin", "plug_never", *argv, "--json"]) == 0  # -q: errors only
    assert capsys.readouterr().err == ""
    # `mig run` simulates: the starving policy is refused, in one line.
    assert (
        main(
            [
                "--plugin",
                "plug_never",
                "mig",
                "run",
                "--config",
                "3",
                "--policy",
                "never",
                "--rate",
                "0.5",
                "--hours",
                "0.2",
            ]
        )
        == 2
    )
    assert capsys.readouterr().err.startswith("wattsched: error: policy 'never' left ")


def test_entry_point_gpu_and_a_plugin_partitioner_in_a_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: None
) -> None:
    from wattsched.experiments.sweep import validate_sweep
    from wattsched.experiments.sweep_run import run_sweep

    gpu_toml = tmp_path / "lab.toml"
    gpu_toml.write_text(
        (SRC / "wattsched/hardware/data/gpus/a100-40gb.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    _write(tmp_path, "ep_gpu_module", f"GPU_FILE = {str(gpu_toml)!r}\n")
    _dist_info(tmp_path, "labgpus", "[wattsched.gpus]\nlab-gpu = ep_gpu_module:GPU_FILE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    PLUGIN_GPUS._entry_points_loaded = False
    assert load_gpu("lab-gpu") == load_gpu("a100-40gb")  # an entry point naming a catalogue .toml

    _write(
        tmp_path,
        "plug_always3",
        "from wattsched.mig.partition import PARTITIONERS\n\n\n"
        "class Always3:\n"
        "    name = 'always-3'\n"
        "    scheduler = 'edf-ss'\n\n"
        "    def reset(self, gpu, seed=None):\n"
        "        pass\n\n"
        "    def initial_configuration(self):\n"
        "        return 3\n\n"
        "    def decide(self, snapshot):\n"
        "        return 3\n\n\n"
        "PARTITIONERS.register('always-3')(Always3)\n",
    )
    spec = validate_sweep(
        {
            "plugins": ["plug_always3"],
            "gpus": ["lab-gpu"],
            "configurations": [3],
            "policies": ["edf-ss"],
            "partitioners": ["always-3"],
            "seeds": [4],
            "workload": {"rate_per_min": 0.5, "hours": 1},
        },
        "lab.toml",
    )
    runs = run_sweep(spec, tmp_path, tmp_path / "out", workers=1, progress=False).runs
    fixed = runs[runs.partitioner == "none"].iloc[0]
    day = runs[runs.partitioner == "always-3"].iloc[0]
    # A partitioner that never leaves configuration 3 runs the day exactly as the fixed (3, edf-ss) run.
    assert day.configuration == "3" and day.policy == "edf-ss" and day.gpu == "lab-gpu"
    assert day.energy_j == fixed.energy_j and day.avg_tardiness_s == fixed.avg_tardiness_s
    with pytest.raises(
        ConfigError,
        match=r"^<sweep>: key 'partitioners': unknown partitioner 'always-4' \(did you mean 'always-3'\?\); "
        "valid: no-mig, static, day-night, lookahead, always-3$",
    ):
        run_sweep(
            spec.model_copy(update={"partitioners": ["always-4"]}), tmp_path, tmp_path / "bad", workers=1
        )


def test_a_sweep_cell_covers_the_module_of_its_policy_even_imported_by_the_caller(
    tmp_path: Path, isolated: None
) -> None:
    from wattsched.experiments.sweep import load_sweep
    from wattsched.experiments.sweep_expand import expand_sweep

    plugin = _write(tmp_path, "plug_direct", policy_module("plug_direct", "sjf-direct"))
    sys.path.insert(0, str(tmp_path))
    import plug_direct  # noqa: F401  (registers "sjf-direct", as a script or notebook would)

    file = _sweep_file(tmp_path, "plug_direct", "sjf-direct")
    file.write_text(file.read_text().replace('plugins = ["plug_direct"]\n', ""))
    spec, base = load_sweep(file)
    cells = {c.policy: c for c in expand_sweep(spec, base) if c.seed == 1}
    assert cells["edf-ss"].plugin_code == "" and len(cells["sjf-direct"].plugin_code) == 16
    plugin.write_text(policy_module("plug_direct", "sjf-direct", deadline_first=True))
    edited = {c.policy: c for c in expand_sweep(spec, base) if c.seed == 1}
    assert edited["sjf-direct"].plugin_code != cells["sjf-direct"].plugin_code
    assert edited["edf-ss"] == cells["edf-ss"] and repr(edited["edf-ss"]) == repr(cells["edf-ss"])
    assert plugins.plugin_references() == ()  # workers are not asked to import it


def test_a_plugin_file_named_like_another_module_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated: None
) -> None:
    _write(tmp_path, "json", policy_module("json", "sjf-json"))
    assert main(["--plugin", str(tmp_path / "json.py"), "mig", "configs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"wattsched: error: --plugin {tmp_path / 'json.py'}: module name 'json' is taken by "
    )
    assert err.rstrip().endswith("; rename the plug-in")


@pytest.mark.ray
def test_ray_workers_resolve_a_sweep_files_plugin(tmp_path: Path) -> None:
    """The plug-in lives only in the sweep file's folder (on no worker's path): Ray's workers import it from
    the reference each cell carries, and give the local executor's rows."""
    pytest.importorskip("ray")
    work = tmp_path / "work"
    work.mkdir()
    _write(work, "plug_ray_sjf", policy_module("plug_ray_sjf", "sjf-ray"))
    sweep = _sweep_file(work, "plug_ray_sjf", "sjf-ray")
    ray_run = _cli(
        "sweep",
        str(sweep),
        "--out",
        str(tmp_path / "ray"),
        "--executor",
        "ray",
        "--workers",
        "2",
        cwd=tmp_path,
    )
    assert ray_run.returncode == 0, ray_run.stderr
    local = _cli("sweep", str(sweep), "--out", str(tmp_path / "local"), "--workers", "1", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    assert (tmp_path / "ray" / "runs.parquet").read_bytes() == (
        tmp_path / "local" / "runs.parquet"
    ).read_bytes()
