"""`wattsched slurm controller|status|jobs` as a user meets them: one pass on an in-memory Slurm, the job
table, and every bad input as one line with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.cli import main
from wattsched.hardware.gpu.fake_state import FakeGpuState, gres_type
from wattsched.slurm import client as client_module
from wattsched.slurm.client import FakeSlurmClient

CONFIG = """
[slurm]
partition = "mig"
state = "state.db"
[scheduling]
policy = "{policy}"
[[nodes]]
name = "{node}"
gpus = ["{gpu}"]
configuration = 3
backend = "fake:gpu.json"
"""


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeSlurmClient:
    """An in-memory Slurm with node0 offering configuration 3's slices, in place of the real CLIs."""
    state = FakeGpuState.create(tmp_path / "gpu.json", [("a100-40gb", 3)])
    fake = FakeSlurmClient({"node0": [gres_type(state.gpu(0), i.profile) for i in state.instances(0)]})
    monkeypatch.setattr(client_module, "SlurmClient", lambda *args, **kwargs: fake)
    return fake


def _config(
    tmp_path: Path, policy: str = "edf-ss-restricted", node: str = "node0", gpu: str = "a100-40gb"
) -> str:
    path = tmp_path / "wattsched.toml"
    path.write_text(CONFIG.format(policy=policy, node=node, gpu=gpu))
    return str(path)


def test_one_pass_then_the_job_table(
    slurm: FakeSlurmClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = slurm.submit(comment="wattsched: work=60s deadline=+1h kind=inference")
    bad = slurm.submit(comment="wattsched: kind=batch")
    config = _config(tmp_path)
    assert main(["slurm", "controller", "--config", config, "--once"]) == 0
    capsys.readouterr()
    assert main(["slurm", "jobs", "--config", config, "--json"]) == 0
    rows = {row["job_id"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows[first]["state"] == "released" and rows[first]["slice"] == "1g.10gb@6"  # slowest in time
    assert rows[bad]["state"] == "rejected" and "kind" in rows[bad]["error"]
    assert {
        "job_id",
        "user",
        "state",
        "submit_s",
        "deadline_s",
        "start_s",
        "end_s",
        "node",
        "gpu",
        "slice",
        "tardiness_s",
        "energy_j",
        "preemptions",
    } <= set(rows[first])
    assert main(["slurm", "status", "--config", config, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    slices = status["nodes"][0]["gpus"][0]["slices"]
    assert [s["slice"] for s in slices] == ["4g.20gb@0", "2g.10gb@4", "1g.10gb@6"]
    assert [q["job_id"] for q in status["queue"]] == [first]
    assert any("released" in d["text"] for d in status["decisions"])
    assert status["accounting"] == {"slurm": "slurmdbd", "written": 0, "waiting": 0}


def test_status_says_when_slurm_keeps_no_accounting(
    slurm: FakeSlurmClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slurm.accounting = False
    config = _config(tmp_path)
    assert main(["slurm", "controller", "--config", config, "--once"]) == 0
    capsys.readouterr()
    assert main(["slurm", "status", "--config", config]) == 0
    out = capsys.readouterr().out
    assert "accounting: Slurm keeps none here; final job energies stay in this state file\n" in out


def test_a_dry_run_changes_nothing(slurm: FakeSlurmClient, tmp_path: Path) -> None:
    job = slurm.submit(comment="wattsched: work=60s")
    assert main(["slurm", "controller", "--config", _config(tmp_path), "--once", "--dry-run"]) == 0
    assert slurm.job(job).held  # type: ignore[union-attr]
    assert [c for c in slurm.calls if c[0] != "submit"] == []
    assert not (tmp_path / "state.db").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"policy": "edf-xx"}, "unknown policy 'edf-xx'"),
        ({"gpu": "a100-41gb"}, "a100-41gb"),
        ({"node": "node9"}, "node 'node9' is not a node of this Slurm"),
    ],
)
def test_a_bad_config_is_one_line(
    slurm: FakeSlurmClient,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, str],
    message: str,
) -> None:
    assert main(["slurm", "controller", "--config", _config(tmp_path, **change), "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


@pytest.mark.parametrize(
    ("partitioner", "valid"),
    [
        ("day-night", " (did you mean 'day_configuration'?); valid: day_configuration, night_configuration"),
        ("static", "; valid: configuration, scheduler"),
    ],
)
def test_a_misspelled_partitioner_option_is_one_line_at_load(
    slurm: FakeSlurmClient, tmp_path: Path, capsys: pytest.CaptureFixture[str], partitioner: str, valid: str
) -> None:
    path = Path(_config(tmp_path))
    path.write_text(
        path.read_text() + f'partitioner = "{partitioner}"\npartitioner_options = {{ day_config = 3 }}\n'
    )
    assert main(["slurm", "controller", "--config", str(path), "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "keyword argument" not in err
    wanted = f"unknown option 'day_config' for repartitioning policy '{partitioner}'{valid}"
    assert f"nodes[0]: partitioner_options: {wanted}" in err
    assert slurm.calls == []  # refused when the config is loaded


def test_a_node_without_the_slices_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    FakeGpuState.create(tmp_path / "gpu.json", [("a100-40gb", 3)])
    fake = FakeSlurmClient({"node0": ["a100_7g.40gb"]})
    monkeypatch.setattr(client_module, "SlurmClient", lambda *args, **kwargs: fake)
    assert main(["slurm", "controller", "--config", _config(tmp_path), "--once"]) == 2
    assert "has no GRES gpu:a100_4g.20gb" in capsys.readouterr().err


def test_slurm_down_and_an_unreadable_state_are_one_line(
    slurm: FakeSlurmClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    slurm.up = False
    assert main(["slurm", "controller", "--config", config, "--once"]) == 2
    assert "slurm is not running" in capsys.readouterr().err
    slurm.up = True
    (tmp_path / "state.db").write_bytes(b"not a database" * 100)
    assert main(["slurm", "controller", "--config", config, "--once"]) == 2
    err = capsys.readouterr().err
    assert "state file" in err and "state.db" in err
    assert main(["slurm", "jobs", "--config", config]) == 2


def test_status_before_any_run_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    FakeGpuState.create(tmp_path / "gpu.json", [("a100-40gb", 3)])
    assert main(["slurm", "status", "--config", _config(tmp_path)]) == 2
    assert "no controller state yet" in capsys.readouterr().err


def test_an_unknown_partition_is_refused(
    slurm: FakeSlurmClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = Path(_config(tmp_path))
    config.write_text(config.read_text().replace('partition = "mig"', 'partition = "gpu"'))
    assert main(["slurm", "controller", "--config", str(config), "--once"]) == 2
    assert "slurm.partition 'gpu' is not a partition of this Slurm (it has: mig)" in capsys.readouterr().err


def test_the_job_table_as_text(
    slurm: FakeSlurmClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = slurm.submit(comment="wattsched: work=60s")
    config = _config(tmp_path)
    assert main(["slurm", "controller", "--config", config, "--once"]) == 0
    capsys.readouterr()
    assert main(["slurm", "jobs", "--config", config]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "job",
        "user",
        "state",
        "slurm",
        "node/gpu",
        "slice",
        "tardiness_s",
        "energy_J",
        "preempt",
    ]
    # work 60 s, deadline 120 s after submission (the default: twice the work): only the 4g slice is in time.
    assert lines[1].split()[:6] == [str(job), "user", "released", "PENDING", "node0/0", "4g.20gb@0"]


def test_prolog_and_epilog_mark_the_jobs_instances(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = FakeGpuState.create(tmp_path / "gpu.json", [("a100-40gb", 3)])
    first, second, _ = state.instances(0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"{first.uuid},{second.uuid}")
    assert main(["slurm", "prolog", "--state", str(tmp_path / "gpu.json"), "--kind", "inference"]) == 0
    assert [i.kind for i in state.instances(0)] == ["inference", "inference", None]
    assert main(["slurm", "epilog", "--state", str(tmp_path / "gpu.json")]) == 0
    assert [i.busy for i in state.instances(0)] == [False, False, False]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # a job without a MIG slice: nothing to mark
    assert main(["slurm", "prolog", "--state", str(tmp_path / "gpu.json"), "--kind", "training"]) == 0
    assert not any(i.busy for i in state.instances(0))
