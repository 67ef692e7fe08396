"""Other Slurm releases than the host's: the release names, the refusal of one Debian does not package, the
command wrappers into a root filesystem, and the host paths bound into it."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from wattsched.slurm import roots
from wattsched.slurm import sandbox as sandbox_module
from wattsched.slurm.client import SlurmError


@pytest.mark.parametrize(
    ("text", "release"),
    [("slurm-wlm 24.11.5", "24.11"), ("slurm 22.05.8\n", "22.05"), ("slurm 26.5.0", "26.05"), ("", None)],
)
def test_the_release_of_a_version_line(text: str, release: str | None) -> None:
    assert roots.release_of(text) == release


def test_a_release_no_debian_suite_packages_is_refused_naming_those_it_can() -> None:
    with pytest.raises(
        SlurmError, match=r"^Slurm 23\.02 cannot be made here; the releases it can run: "
    ) as info:
        roots.prepare_root("23.02")
    assert "24.11 (Debian 13)" in str(info.value) and "26.05 (Debian unstable)" in str(info.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox command refuses to run but as root")
def test_the_sandbox_command_refuses_an_unknown_release_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sandbox_module.main(["start", str(tmp_path / "box"), "--slurm", "23.02"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("slurm sandbox: Slurm 23.02 cannot be made here") and err.count("\n") == 1


def test_the_wrappers_run_the_roots_own_commands_in_the_namespace(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for name in ("usr/sbin/slurmctld", "usr/bin/squeue", "usr/sbin/munged"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    top = tmp_path / "box"
    namespace = roots.Namespace(root, top)
    namespace._write_wrappers(4321)
    made = sorted(p.name for p in namespace.bin_dir.iterdir())
    assert made == ["munged", "slurmctld", "squeue"]  # only what the root holds
    text = (namespace.bin_dir / "squeue").read_text()
    assert f"exec nsenter --target 4321 --mount -- chroot {root} " in text
    assert text.rstrip().endswith('"$PWD" /usr/bin/squeue "$@"')  # run where it was called from
    assert "/usr/sbin/slurmctld" in (namespace.bin_dir / "slurmctld").read_text()
    assert (namespace.bin_dir / "squeue").stat().st_mode & stat.S_IXUSR


def test_no_holder_is_recorded_for_a_folder_never_started_or_with_a_stale_pid(tmp_path: Path) -> None:
    assert roots.holder_pid(tmp_path) is None
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "namespace.pid").write_text(f"{os.getpid()}\n")  # a live pid, not a holder
    assert roots.holder_pid(tmp_path) is None


def test_the_bound_paths_are_this_python_the_sources_and_tmp_none_inside_another(tmp_path: Path) -> None:
    top = Path("/tmp/wattsched-box")
    top.mkdir(exist_ok=True)
    try:
        binds = roots._binds(top)
    finally:
        top.rmdir()
    assert Path("/tmp") in binds and top not in binds  # inside /tmp: bound with it
    assert Path(sys.base_prefix).resolve() in binds or any(
        Path(sys.base_prefix).resolve().is_relative_to(b) for b in binds
    )
    assert all(not a.is_relative_to(b) for a in binds for b in binds if a != b)


def test_extras_are_marked_on_their_own_line_so_a_root_stays_ready_for_code_that_knows_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = roots.Release("26.05", "sid", "Debian unstable", ("slurmctld",), ("slurm-wlm-jwt-plugin",))
    (tmp_path / ".wattsched-root").write_text("slurm-wlm 26.05.5\npackages: slurmctld\n", encoding="utf-8")
    assert roots._ready(tmp_path, release) and not roots._has_extras(tmp_path, release)
    ran: list[list[str]] = []

    def in_root(root: Path, args: list[str], what: str, timeout_s: float) -> str:
        ran.append(args)
        return "26.05.5-1"

    monkeypatch.setattr(roots, "_in_root", in_root)
    monkeypatch.setattr(roots.os, "geteuid", lambda: 0)
    roots._install_extras(release, tmp_path, 60.0)
    assert ran[-1][-1] == "slurm-wlm-jwt-plugin=26.05.5-1"  # the root's own Slurm version, never an upgrade
    lines = (tmp_path / ".wattsched-root").read_text(encoding="utf-8").splitlines()
    assert "packages: slurmctld" in lines and roots._has_extras(tmp_path, release)
