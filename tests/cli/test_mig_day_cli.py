"""`wattsched mig day [--live [--apply]]`: the day runner; its repartitions planned for or applied on GPUs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wattsched.cli import main


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def test_day_without_live_lists_the_changes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "day", "--partitioner", "static", "--config", "5", "--profile", "alibaba-day",
                 "--hours", "2", "--seed", "1", "--json"]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert summary["initial_configuration"] == 5 and summary["changes"] == [] and "live" not in summary


def test_live_dry_run_logs_a_plan_per_repartition(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "day", "--partitioner", "day-night", "--profile", "alibaba-day", "--seed", "1",
                 "--live", "--json"]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    events = summary["live"]["events"]
    assert summary["live"]["applied"] is False and len(events) == len(summary["changes"]) == 2
    assert [(e["from"], e["to"], e["outcome"]) for e in events] == [(2, 6, "logged"), (6, 2, "logged")]
    assert [e["time_s"] for e in events] == [c["time_s"] for c in summary["changes"]]
    # 2 -> 6 on the A100-40GB: 4g.20gb@0 gives way to two 2g.10gb; the 3g.20gb@4 stays.
    assert [(s["op"], s["profile"], s["start"]) for s in events[0]["steps"]] == [
        ("destroy", "4g.20gb", 0),
        ("create", "2g.10gb", 0),
        ("create", "2g.10gb", 2),
    ]


def test_live_apply_on_the_fake(h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    facts = json.loads(h200.read_text())
    facts.update(mig_mode_current_pending=[1, 1], fake_root=True)  # MIG on, no instance yet
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(facts))
    argv = [
        "mig",
        "day",
        "--partitioner",
        "day-night",
        "--gpu",
        "h200-141gb",
        "--profile",
        "alibaba-day",
        "--seed",
        "1",
        "--live",
        "--apply",
        "--backend",
        f"fake:{path}",
        "--json",
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["live"]["applied"] is True
    assert [e["outcome"] for e in summary["live"]["events"]] == ["applied", "applied"]


def test_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "day", "--partitioner", "day-night", "--profile", "alibaba-day", "--seed", "1",
                 "--live"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "2 repartition(s) from configuration 2" in out and "[logged: destroy 4g.20gb@0" in out


def test_repartition_s_sets_the_blackout_from_seconds_or_a_state_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wattsched.slurm.state import StateStore

    day = ["mig", "day", "--partitioner", "day-night", "--profile", "alibaba-day", "--seed", "1", "--json"]
    blackouts = {}
    for value in ("0", "100"):
        assert main([*day, "--repartition-s", value]) == 0
        blackouts[value] = json.loads(capsys.readouterr().out)
    # Two repartitions a day; 100 s without slices each costs tardiness that none does not.
    assert blackouts["100"]["repartitions"] == blackouts["0"]["repartitions"] == 2
    assert blackouts["100"]["avg_tardiness_s"] > blackouts["0"]["avg_tardiness_s"]
    state = tmp_path / "state.db"
    store = StateStore(state)
    entry = store.add_repartition(
        "n1", 0, ("6", "2"), ("2g.10gb@0,2g.10gb@2,3g.20gb@4", "4g.20gb@0,3g.20gb@4"), 0.0
    )
    entry.phase, entry.phase_s = "done", {"wait": 7.0, "apply": 60.0, "gres": 30.0, "resume": 10.0}
    store.put_repartition(entry)
    store.close()
    assert main([*day, "--repartition-s", f"measured:{state}"]) == 0
    assert json.loads(capsys.readouterr().out) == blackouts["100"]  # 60 + 30 + 10 s out of service
    for bad in ("-1", "measured:", f"measured:{tmp_path / 'missing.db'}", f"measured:{tmp_path}"):
        try:
            status = main([*day, "--repartition-s", bad])
        except SystemExit as exc:  # argparse's own refusal
            status = exc.code
        err = capsys.readouterr().err.strip()
        assert status == 2 and len(err.splitlines()) == 1, (bad, err)
