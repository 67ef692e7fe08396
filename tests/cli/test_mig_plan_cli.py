"""`wattsched mig plan|export|import-config` on catalogue GPUs; a snapshot entry the simulator runs."""

from __future__ import annotations

import importlib.util
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


def test_rehearsal_on_a_fake_state_file_keeps_the_state_between_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wattsched.hardware.gpu.fake_state import FakeGpuState

    path = tmp_path / "a100s.json"
    assert main(["gpu", "fake-snapshot", "--gpu", "a100-40gb", "--count", "2", "--config", "3",
                 "-o", str(path)]) == 0  # fmt: skip
    assert f"wrote 2 fake a100-40gb GPU(s) in configuration 3 to {path}" in capsys.readouterr().err
    backend = ["--backend", f"fake:{path}"]
    layout_3 = ["4g.20gb@0", "2g.10gb@4", "1g.10gb@6"]

    def layout(index: int) -> list[str]:
        return [f"{i.profile}@{i.start}" for i in FakeGpuState(path).instances(index)]

    assert layout(0) == layout(1) == layout_3
    # Apply 3 -> 4 on GPU 1 in one call; the file holds the new layout afterwards, GPU 0 is untouched.
    assert main(["mig", "plan", "--gpu", "a100-40gb", "--from", "3", "--to", "4", "--apply", "--index", "1",
                 *backend, "--json"]) == 0  # fmt: skip
    plan = json.loads(capsys.readouterr().out)
    assert plan["applied"] is True and len(plan["steps"]) == 3
    assert layout(1) == ["4g.20gb@0", "1g.5gb@4", "1g.5gb@5", "1g.10gb@6"] and layout(0) == layout_3
    # A second call reads the GPU's layout from the file: configuration 4, nothing left to do.
    assert main(["mig", "plan", "--gpu", "a100-40gb", "--from", "current", "--to", "4", "--index", "1",
                 *backend, "--json"]) == 0  # fmt: skip
    again = json.loads(capsys.readouterr().out)
    assert (again["from"], again["steps"], again["applied"]) == (4, [], False)
    assert main(["mig", "plan", "--gpu", "a100-40gb", "--from", "current", "--to", "4", "--index", "1",
                 *backend]) == 0  # fmt: skip
    assert "no change needed" in capsys.readouterr().out
    # Applying the old plan again is refused: the GPU is no longer in configuration 3.
    code = main(["mig", "plan", "--gpu", "a100-40gb", "--from", "3", "--to", "4", "--apply", "--index", "1",
                 *backend])  # fmt: skip
    assert code == 2 and "not the plan's source" in capsys.readouterr().err
    # --from current on GPU 0 still sees configuration 3.
    assert main(["mig", "plan", "--gpu", "a100-40gb", "--from", "current", "--to", "3", *backend,
                 "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["from"] == 3


@pytest.mark.parametrize("name", ["a100-40gb", "h100-80gb", "h200-141gb"])
def test_fake_snapshot_of_each_gpu_is_a_backend(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fake.json"
    assert main(["gpu", "fake-snapshot", "--gpu", name, "--count", "4", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["gpu", "info", "--backend", f"fake:{path}", "--index", "3", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["gpu_count"] == 4 and info["name"] == gpu_product(name)
    gpu = load_gpu(name)
    static = [f"{s.profile}@{s.start}" for s in gpu.configuration(gpu.role("static")).slices]
    assert main(["mig", "plan", "--gpu", name, "--from", "current", "--to", str(gpu.role("static")),
                 "--index", "3", "--backend", f"fake:{path}", "--json"]) == 0  # fmt: skip
    plan = json.loads(capsys.readouterr().out)
    # Made in the GPU's static configuration (the default): planning to it needs no step.
    assert plan["steps"] == [] and plan["from"] == gpu.role("static")
    assert sorted(plan["from_layout"].split(",")) == sorted(static)


def gpu_product(name: str) -> str:
    return load_gpu(name).product


def test_fake_snapshot_and_from_current_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WATTSCHED_GPU_BACKEND", raising=False)
    out = str(tmp_path / "f.json")
    for argv, pieces in (
        (["gpu", "fake-snapshot", "--gpu", "b200", "-o", out], ["b200"]),
        (["gpu", "fake-snapshot", "--gpu", "a100-40gb", "--count", "0", "-o", out], ["--count"]),
        (
            ["gpu", "fake-snapshot", "--gpu", "a100-40gb", "--config", "13", "-o", out],
            ["unknown configuration '13'", "valid: 1, 2"],
        ),
        (["gpu", "fake-snapshot", "--gpu", "a100-40gb", "--config", "no-mig", "-o", out], ["MIG off"]),
        (["gpu", "fake-snapshot", "--gpu", "a100-40gb", "-o", str(tmp_path / "f.txt")], [".json"]),
    ):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("wattsched: error:"), err
        assert all(piece in err for piece in pieces), (pieces, err)
    assert not (tmp_path / "f.json").exists()
    if importlib.util.find_spec("pynvml") is None:  # --from current reads the default backend, NVML: absent
        code = main(["mig", "plan", "--gpu", "a100-40gb", "--from", "current", "--to", "4"])
        out, err = capsys.readouterr()
        assert code == 2 and err.count("\n") == 1 and "--backend fake:FILE" in err


def test_export_per_gpu_writes_one_entry_per_device_and_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "per-gpu.yaml"
    assert main(["mig", "export", "--gpu", "a100-40gb", "--per-gpu", "3", "3", "12", "no-mig",
                 "-o", str(out)]) == 0  # fmt: skip
    document = yaml.safe_load(out.read_text())
    (name,) = document["mig-configs"]
    assert name == "wattsched-a100-40gb-3-3-12-no-mig"
    entries = document["mig-configs"][name]
    assert [e["devices"] for e in entries] == [[0], [1], [2], [3]]
    assert [e["mig-enabled"] for e in entries] == [True, True, True, False]
    assert entries[2]["mig-devices"] == {"1g.5gb": 6, "1g.10gb": 1} and "mig-devices" not in entries[3]
    capsys.readouterr()
    assert main(["mig", "import-config", str(out), "--gpu", "a100-40gb", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["configs"]
    assert [(r["devices"], r["configuration"]) for r in rows] == [
        ([0], 3),
        ([1], 3),
        ([2], 12),
        ([3], "no-mig"),
    ]


def test_export_per_gpu_with_one_layout_keeps_devices_all(tmp_path: Path) -> None:
    out = tmp_path / "same.yaml"
    assert main(["mig", "export", "--gpu", "h100-80gb", "--per-gpu", "5", "5", "-o", str(out)]) == 0
    document = yaml.safe_load(out.read_text())
    assert document["mig-configs"] == {
        "wattsched-h100-80gb-5": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}]
    }


def test_export_per_gpu_rejects_an_unknown_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mig", "export", "--gpu", "a100-40gb", "--per-gpu", "3", "99", "-o",
                 str(tmp_path / "x.yaml")]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--per-gpu" in err and "99" in err
    assert not (tmp_path / "x.yaml").exists()
