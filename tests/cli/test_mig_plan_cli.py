"""`wattsched mig plan|export|import-config` on catalogue GPUs; a snapshot entry the simulator runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from wattsched import WorkloadSpec, generate_jobs, load_gpu, simulate
from wattsched.cli import main
from wattsched.hardware.gpu.apply import current_layout
from wattsched.hardware.gpu.fake import FakeBackend


@pytest.fixture
def h200(repo_data: Path) -> Path:
    return repo_data / "hardware" / "h200" / "nvml_facts.json"


def test_plan_json_between_two_a100_configurations(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "plan", "--gpu", "a100-40gb", "--from", "3", "--to", "4", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert (plan["gpu"], plan["from"], plan["to"], plan["applied"]) == ("a100-40gb", 3, 4, False)
    assert plan["steps"] == [
        {"op": "destroy", "profile": "2g.10gb", "start": 4, "size": 2},
        {"op": "create", "profile": "1g.5gb", "start": 4, "size": 1},
        {"op": "create", "profile": "1g.5gb", "start": 5, "size": 1},
    ]
    assert plan["kept"] == ["4g.20gb@0", "1g.10gb@6"]


def test_plan_text_with_explicit_layouts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "plan", "--gpu", "h200-141gb", "--from", "empty", "--to", "3g.71gb@0,3g.71gb@4"]) == 0
    out = capsys.readouterr().out
    assert "2 step(s), 0 instance(s) kept, dry run" in out and "create  3g.71gb at 4 (size 4)" in out


def test_plan_applied_on_the_fake_as_root(
    h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    facts = json.loads(h200.read_text())
    facts.update(mig_mode_current_pending=[1, 1], fake_root=True,
                 mig_instances=[{"id": 1, "profile_id": 5, "start": 0, "size": 4},
                                {"id": 2, "profile_id": 9, "start": 4, "size": 4}])  # fmt: skip
    path = tmp_path / "h200_mig.json"
    path.write_text(json.dumps(facts))
    # h200-141gb's configuration 2 is 4g.71gb@0 + 3g.71gb@4, as the fake holds; 6 is 2g@0 2g@2 3g@4.
    assert main(["mig", "plan", "--gpu", "h200-141gb", "--from", "2", "--to", "6", "--apply", "--backend",
                 f"fake:{path}", "--json"]) == 0  # fmt: skip
    plan = json.loads(capsys.readouterr().out)
    assert plan["applied"] is True and plan["kept"] == ["3g.71gb@4"] and len(plan["instance_ids"]) == 3
    # Each CLI call opens its own fake, so the change is checked by carrying the plan out again in process.
    fake = FakeBackend(path)
    from wattsched.hardware.gpu.apply import apply_plan
    from wattsched.hardware.mig_plan import MigInstance, PlanStep

    steps = [PlanStep(s["op"], MigInstance(s["start"], s["size"], s["profile"])) for s in plan["steps"]]
    apply_plan(fake, 0, current_layout(fake, 0)[0], steps)
    assert [str(i) for i in current_layout(fake, 0)[0]] == ["2g.35gb@0", "2g.35gb@2", "3g.71gb@4"]


def test_export_and_import_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a100.yaml"
    assert (
        main(["mig", "export", "--gpu", "a100-40gb", "--configs", "3", "12", "no-mig", "-o", str(out)]) == 0
    )
    document = yaml.safe_load(out.read_text())
    assert list(document["mig-configs"]) == [
        "wattsched-a100-40gb-3",
        "wattsched-a100-40gb-12",
        "wattsched-a100-40gb-no-mig",
    ]
    assert document["mig-configs"]["wattsched-a100-40gb-12"][0]["mig-devices"] == {"1g.5gb": 6, "1g.10gb": 1}
    capsys.readouterr()
    assert main(["mig", "import-config", str(out), "--gpu", "a100-40gb", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["configs"]
    assert [(r["name"], r["configuration"]) for r in rows] == [
        ("wattsched-a100-40gb-3", 3),
        ("wattsched-a100-40gb-12", 12),
        ("wattsched-a100-40gb-no-mig", "no-mig"),
    ]
    assert rows[0]["layout"] == "4g.20gb@0,2g.10gb@4,1g.10gb@6"


def test_snapshot_entry_round_trip_through_the_simulator(
    h200: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "my-h200.toml"
    assert main(["gpu", "snapshot", "--backend", f"fake:{h200}", "-o", str(entry)]) == 0
    gpu = load_gpu(str(entry))
    packaged = load_gpu("h200-141gb")
    assert gpu.profiles == packaged.profiles  # the same NVML facts as the catalogue's H200
    assert gpu.derived_placements == packaged.derived_placements
    jobs = generate_jobs(WorkloadSpec(profile="alibaba-day", hours=4), 1)
    config = gpu.configurations[1].ident
    result = simulate(jobs, config, "edf-ss-restricted", gpu=gpu, horizon_s=4 * 3600.0)
    assert result.jobs == len(jobs) and result.energy_j > 0
    # The same through the CLI: --gpu FILE.toml
    assert main(["mig", "run", "--gpu", str(entry), "--config", str(config), "--policy", "edf-ss",
                 "--profile", "alibaba-day", "--hours", "4", "--seed", "1", "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["jobs"] == len(jobs)
    assert main(["mig", "plan", "--gpu", str(entry), "--from", "1", "--to", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"] == "h200-141gb"
