"""`wattsched slurm gres` (gres.conf from the GPUs as they are) and node power states (the break-even
SuspendTime, the SuspendProgram / ResumeProgram journal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wattsched.errors import ConfigError, InputError
from wattsched.hardware.catalogue import load_gpu
from wattsched.hardware.gpu.backend import GpuIdentity
from wattsched.hardware.gpu.fake_state import FakeGpuState, FakeStateBackend
from wattsched.slurm.config import load_config
from wattsched.slurm.gres import node_gres, read_mig_minors
from wattsched.slurm.power import expand_hostlist, power_settings, run_power_program
from wattsched.slurm.repartition import carry_out
from wattsched.slurm.state import StateStore

REPO = Path(__file__).resolve().parents[2]


def _minors(state: FakeGpuState, path: Path) -> Path:
    """A driver capability list for the fake GPUs' instances, numbered as the driver would (GI then CI)."""
    lines = ["config 1", "monitor 2"]
    minor = 3
    for gpu in range(len(state.gpus())):
        for instance in state.instances(gpu):
            lines.append(f"gpu{gpu}/gi{instance.gpu_instance_id}/access {minor}")
            lines.append(f"gpu{gpu}/gi{instance.gpu_instance_id}/ci0/access {minor + 1}")
            minor += 2
    path.write_text("\n".join(lines) + "\n")
    return path


def test_gres_lines_follow_the_instances_and_the_driver_minors(tmp_path: Path) -> None:
    state = FakeGpuState.create(tmp_path / "gpus.json", [("a100-40gb", 3), ("a100-40gb", 1)])
    minors = _minors(state, tmp_path / "mig-minors")
    found = node_gres(FakeStateBackend(state.path), "gpu01", minors_path=minors)
    caps = read_mig_minors(minors)
    expected = []
    for gpu in (0, 1):
        for instance in sorted(state.instances(gpu), key=lambda i: i.start):
            gi = caps[f"gpu{gpu}/gi{instance.gpu_instance_id}/access"]
            ci = caps[f"gpu{gpu}/gi{instance.gpu_instance_id}/ci0/access"]
            expected.append(
                f"NodeName=gpu01 Name=gpu Type=a100_{instance.profile} MultipleFiles=/dev/nvidia{gpu},"
                f"/dev/nvidia-caps/nvidia-cap{gi},/dev/nvidia-caps/nvidia-cap{ci}"
            )
    lines = found.gres_conf().splitlines()
    assert [line for line in lines if not line.startswith("#")] == expected
    # configuration 3 of the A100-40GB: 4g + 2g + 1g; configuration 1: one 7g slice
    assert found.gres_spec() == "gpu:a100_4g.20gb:1,gpu:a100_2g.10gb:1,gpu:a100_1g.10gb:1,gpu:a100_7g.40gb:1"
    assert f"Gres={found.gres_spec()}" in lines[1]


class _MigOff(FakeStateBackend):
    def mig_mode(self, index: int) -> tuple[bool, bool]:
        return False, False

    def identity(self, index: int) -> GpuIdentity:
        return GpuIdentity(index, "NVIDIA H200", "570", 141 * 2**30 - 2**28, 132)


def test_a_gpu_with_mig_off_is_one_whole_gpu_line_and_needs_no_minors(tmp_path: Path) -> None:
    state = FakeGpuState.create(tmp_path / "gpus.json", [("h200-141gb", 3)])
    found = node_gres(_MigOff(state.path), "n1", minors_path=tmp_path / "absent")
    assert found.gres_conf().splitlines()[2:] == ["NodeName=n1 Name=gpu Type=h200 File=/dev/nvidia0"]
    assert found.gres_spec() == "gpu:h200:1"


def test_padded_gres_keep_the_node_device_count_through_a_mig_change(tmp_path: Path) -> None:
    """Each MIG GPU padded to its 7 compute slices with null-device spares, after its instances: the count
    is the same before and after a change 3 -> 4 of the first GPU; a MIG-off GPU gets none."""
    state = FakeGpuState.create(tmp_path / "gpus.json", [("a100-40gb", 3), ("a100-40gb", 1)])
    backend = FakeStateBackend(state.path)
    before = node_gres(backend, "gpu01", minors_path=_minors(state, tmp_path / "m3"), pad=True)
    carry_out(backend, 0, load_gpu("a100-40gb"), load_gpu("a100-40gb").configuration(4))
    after = node_gres(backend, "gpu01", minors_path=_minors(state, tmp_path / "m4"), pad=True)
    for found, instances in ((before, 3), (after, 4)):
        assert len(found.devices) == 14
        first = [d.type for d in found.devices if d.gpu == 0]
        assert first[:instances] != ["spare"] * instances and first[instances:] == ["spare"] * (7 - instances)
        assert [d.type for d in found.devices if d.gpu == 1] == ["a100_7g.40gb"] + ["spare"] * 6
    assert (
        before.gres_spec()
        == "gpu:a100_4g.20gb:1,gpu:a100_2g.10gb:1,gpu:a100_1g.10gb:1,gpu:spare:10,gpu:a100_7g.40gb:1"
    )
    assert after.gres_spec().endswith("gpu:spare:9,gpu:a100_7g.40gb:1")
    conf = after.gres_conf().splitlines()
    assert "NodeName=gpu01 Name=gpu Type=spare File=/dev/wattsched-spare-gpu0-2" in conf
    assert "mknod -m 0666 $f c 1 3" in conf[2] and "/dev/wattsched-spare-gpu0-6 " in conf[2]  # any layout's
    assert "NodeName=gpu01 Name=gpu Type=spare File=/dev/wattsched-spare-gpu0-3" not in conf
    off = node_gres(_MigOff(state.path), "n1", minors_path=tmp_path / "absent", pad=True)
    assert off.gres_spec() == "gpu:h200:2" and not off.spare_pool


def test_gres_errors_name_the_file_and_what_is_missing(tmp_path: Path) -> None:
    state = FakeGpuState.create(tmp_path / "gpus.json", [("a100-40gb", 3)])
    with pytest.raises(InputError, match="no MIG capability list"):
        node_gres(FakeStateBackend(state.path), "n1", minors_path=tmp_path / "absent")
    partial = tmp_path / "partial"
    partial.write_text("config 1\n")
    with pytest.raises(InputError, match=r"no capability minor for gpu0/gi\d+/access"):
        node_gres(FakeStateBackend(state.path), "n1", minors_path=partial)
    bad = tmp_path / "bad"
    bad.write_text("gpu0/gi1/access twelve\n")
    with pytest.raises(InputError, match="row 1"):
        read_mig_minors(bad)


def test_a_fake_backend_numbers_its_own_minors_as_the_driver_would(tmp_path: Path) -> None:
    """Without --mig-minors a fake:FILE backend (given or from the config) needs no driver list: its lines
    are those a driver list numbered as the driver does gives; an explicit --mig-minors still wins."""
    state = FakeGpuState.create(tmp_path / "gpus.json", [("a100-40gb", 3), ("a100-40gb", 1)])
    carry_out(
        FakeStateBackend(state.path), 0, load_gpu("a100-40gb"), load_gpu("a100-40gb").configuration(4)
    )  # instance ids no longer in placement order
    minors = _minors(state, tmp_path / "mig-minors")
    expected = node_gres(FakeStateBackend(state.path), "gpu01", minors_path=minors).gres_conf()
    given = _cli("gres", "--node", "gpu01", "--backend", f"fake:{state.path}")
    assert given.returncode == 0, given.stderr
    assert given.stdout == expected
    caps = [line.split("MultipleFiles=")[1].split(",")[1:] for line in given.stdout.splitlines()[2:]]
    numbers = [int(cap.removeprefix("/dev/nvidia-caps/nvidia-cap")) for pair in caps for cap in pair]
    assert numbers == list(range(3, 3 + 2 * (len(state.instances(0)) + 1)))  # GI then CI, from 3
    config = tmp_path / "node.toml"
    config.write_text(
        '[slurm]\npartition = "mig"\nstate = "state.db"\n[[nodes]]\nname = "gpu01"\n'
        'gpus = ["a100-40gb", "a100-40gb"]\nconfiguration = 3\nbackend = "fake:gpus.json"\n'
    )
    from_config = _cli("gres", "--node", "gpu01", "--config", str(config))
    assert from_config.returncode == 0, from_config.stderr
    assert from_config.stdout == expected
    shifted = tmp_path / "shifted"
    shifted.write_text(
        "".join(f"{name} {int(minor) + 100}\n" for name, minor in (line.split() for line in minors.open()))
    )
    explicit = _cli("gres", "--node", "gpu01", "--config", str(config), "--mig-minors", str(shifted))
    assert explicit.returncode == 0, explicit.stderr
    assert explicit.stdout != expected and "/dev/nvidia-caps/nvidia-cap103," in explicit.stdout
    absent = _cli("gres", "--node", "gpu01", "--config", str(config), "--mig-minors", str(tmp_path / "no"))
    assert absent.returncode != 0 and "no MIG capability list" in absent.stderr


def _config(tmp_path: Path, power: str = "") -> Path:
    FakeGpuState.create(tmp_path / "a.json", [("a100-40gb", 3), ("a100-40gb", 3)])
    FakeGpuState.create(tmp_path / "b.json", [("h200-141gb", 3)])
    path = tmp_path / "wattsched.toml"
    path.write_text(f"""
[slurm]
partition = "mig"
state = "state.db"
[[nodes]]
name = "gpu01"
gpus = ["a100-40gb", "a100-40gb"]
configuration = 3
backend = "fake:a.json"
[[nodes]]
name = "gpu02"
gpus = ["h200-141gb"]
configuration = 3
backend = "fake:b.json"
{power}
""")
    return path


def test_suspend_time_is_the_longest_break_even_wait(tmp_path: Path) -> None:
    settings = power_settings(load_config(_config(tmp_path)))
    # gpu01: 2 x 40 W idle, 2 x 5400 J to turn on: floor(10800 / (80 x 60)) = 2 slots = 120 s
    # gpu02: 84.4 W idle, 5400 J: floor(5400 / (84.4 x 60)) = 1 slot = 60 s
    assert [(n.node, n.idle_slots, n.suspend_after_s) for n in settings.nodes] == [
        ("gpu01", 2, 120.0),
        ("gpu02", 1, 60.0),
    ]
    assert settings.suspend_time_s == 120
    assert (settings.suspend_timeout_s, settings.resume_timeout_s) == (45, 90)
    assert settings.resume_rate == 2
    host = power_settings(load_config(_config(tmp_path, "[power]\nhost_idle_w = 20\nturn_on_s = 200")))
    # gpu01: floor(10800 / (100 x 60)) = 1; gpu02: floor(5400 / (104.4 x 60)) = 0 -> at least one slot
    assert [n.idle_slots for n in host.nodes] == [1, 0]
    assert (host.suspend_time_s, host.resume_timeout_s) == (60, 300)


def test_power_config_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"power\.suspend_command must be a list"):
        load_config(_config(tmp_path, '[power]\nsuspend_command = "poweroff"'))
    with pytest.raises(ConfigError, match=r"unknown key power\.turn_on_w"):
        load_config(_config(tmp_path, "[power]\nturn_on_w = 3"))
    with pytest.raises(ConfigError, match=r"power\.idle_slots must be an integer"):
        load_config(_config(tmp_path, "[power]\nidle_slots = 1.5"))


def test_hostlists_expand_as_slurm_writes_them() -> None:
    assert expand_hostlist("gpu[01-03,07],login1") == ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]
    assert expand_hostlist("r[1-2]n[8-9]") == ["r1n8", "r1n9", "r2n8", "r2n9"]
    for bad in ("gpu[01-", "gpu[3-1]", "gpu[a-b]", ""):
        with pytest.raises(InputError, match="host list"):
            expand_hostlist(bad)


def test_suspend_and_resume_run_the_configured_command_and_journal_it(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    script = tmp_path / "power.sh"
    script.write_text(
        f'#!/bin/sh\necho "$@" >> {log}\n[ "$2" != gpu02 ] || {{ echo "bmc busy" >&2; exit 3; }}\n'
    )
    script.chmod(0o755)
    config = load_config(_config(tmp_path, f'[power]\nsuspend_command = ["{script}", "off", "{{node}}"]\n'))
    results = run_power_program(config, "suspend", "gpu[01-02]", clock=lambda: 100.0)
    assert results == [("gpu01", "done", ""), ("gpu02", "failed", "exit 3: bmc busy")]
    assert log.read_text().splitlines() == ["off gpu01", "off gpu02"]
    resumed = run_power_program(config, "resume", "gpu01", clock=lambda: 200.0)
    assert resumed == [("gpu01", "recorded", "no command configured: journaled only")]
    store = StateStore(config.state_path)
    journal = [
        (a["time_s"], a["node"], a["action"], a["status"], a["command"]) for a in store.power_actions()
    ]
    store.close()
    assert journal == [
        (100.0, "gpu01", "suspend", "done", [str(script), "off", "gpu01"]),
        (100.0, "gpu02", "suspend", "failed", [str(script), "off", "gpu02"]),
        (200.0, "gpu01", "resume", "recorded", []),
    ]
    with pytest.raises(ConfigError, match="gpu09 are not in the config"):
        run_power_program(config, "suspend", "gpu[01,09]")
    assert log.read_text().count("\n") == 2  # nothing ran for a list naming an unknown node


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wattsched", "slurm", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), **(env or {})},
        check=False,
    )


def test_the_commands_from_the_cli(tmp_path: Path) -> None:
    config = _config(tmp_path)
    minors = _minors(FakeGpuState(tmp_path / "a.json"), tmp_path / "mig-minors")
    done = _cli("gres", "--node", "gpu01", "--config", str(config), "--mig-minors", str(minors), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["gres"] == "gpu:a100_4g.20gb:2,gpu:a100_2g.10gb:2,gpu:a100_1g.10gb:2"
    padded = _cli("gres", "--node", "gpu01", "--config", str(config), "--mig-minors", str(minors), "--pad")
    assert padded.returncode == 0, padded.stderr
    assert "Gres=gpu:a100_4g.20gb:2,gpu:a100_2g.10gb:2,gpu:a100_1g.10gb:2,gpu:spare:8" in padded.stdout
    missing = _cli("gres", "--node", "gpu07", "--config", str(config))
    assert missing.returncode == 2 and "no node 'gpu07'" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    settings = _cli("power-settings", "--config", str(config), "-o", str(tmp_path / "programs"))
    assert settings.returncode == 0, settings.stderr
    assert "SuspendTime=120" in settings.stdout.splitlines()
    suspend = tmp_path / "programs" / "suspend.sh"
    assert f"SuspendProgram={suspend.resolve()}" in settings.stdout
    assert os.access(suspend, os.X_OK)
    ran = subprocess.run(
        [str(suspend), "gpu02"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert ran.returncode == 0, ran.stderr
    assert "suspend gpu02: recorded" in ran.stderr
    unknown = _cli("resume", "nodeX", "--config", str(config))
    assert unknown.returncode == 2 and "nodeX are not in the config" in unknown.stderr
    # Slurm starts the programs with their standard streams closed: the run still succeeds, with no crash.
    closed = subprocess.run(
        ["sh", "-c", 'exec "$0" gpu02 >&- 2>&-', str(suspend)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "TMPDIR": str(tmp_path)},
    )
    assert closed.returncode == 0
    assert not list(tmp_path.glob("wattsched-crash-*"))


def test_a_jobs_mig_uuids_come_from_its_visible_devices_as_uuids_or_as_indices(tmp_path: Path) -> None:
    """Slurm 22.05 and 24.11 give a job its devices' MIG UUIDs; 26.05 their indices, which are looked up in
    the fake_gpus.conf beside SLURM_CONF (in index order)."""
    from wattsched.slurm.gres_update import visible_uuids

    uuids = ["MIG-aaaa", "MIG-bbbb", "MIG-cccc"]
    (tmp_path / "fake_gpus.conf").write_text(
        "".join(f"a100_1g.5gb|2|0-1|(null)|/dev/fake{i}|{u}|nvidia_gpu_env\n" for i, u in enumerate(uuids))
    )
    conf = str(tmp_path / "slurm.conf")
    assert visible_uuids({"CUDA_VISIBLE_DEVICES": "MIG-bbbb,MIG-cccc"}) == ["MIG-bbbb", "MIG-cccc"]
    assert visible_uuids({"CUDA_VISIBLE_DEVICES": "2,0", "SLURM_CONF": conf}) == ["MIG-cccc", "MIG-aaaa"]
    assert visible_uuids({"CUDA_VISIBLE_DEVICES": "7", "SLURM_CONF": conf}) == []  # no such device
    assert visible_uuids({"CUDA_VISIBLE_DEVICES": "1"}) == []  # no fake_gpus.conf to read
    assert visible_uuids({}) == []
