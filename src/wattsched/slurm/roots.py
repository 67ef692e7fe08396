"""Newer Slurm releases for the sandbox: a root filesystem per release, made from Debian's own packages.

The host runs the Slurm its distribution ships (Debian 12: 22.05). For another release the sandbox runs that
release's daemons, commands and accounting database (slurmdbd, MariaDB) inside a root filesystem with
Debian's packages of them — Debian 13 "trixie" for 24.11, Debian unstable "sid" for 26.05 — made once with
``debootstrap`` (about a minute and 360 MB) and
cached in ``$WATTSCHED_CACHE_DIR/slurm-roots/<release>`` (default ``~/.cache/wattsched``; elsewhere with
``$WATTSCHED_SLURM_ROOTS``). Nothing of it goes
into the repository.

The daemons run with ``chroot`` in a private mount namespace (:class:`Namespace`) held open by one process: in
it ``/proc``, ``/dev`` and ``/sys`` (slurmd from 23.x on refuses to start without a cgroup filesystem, even
with ``proctrack/linuxproc``), ``/tmp``, the sandbox directory, this Python (its prefix and its virtual
environment) and the wattsched sources are bound into the root at their own paths, so that the fake GPU file,
state files and job scripts are where the host sees them and the Prolog, the Epilog and the sandbox's jobs run
the host's interpreter unchanged. When the namespace's last process ends its mounts go with it: nothing stays
mounted. The sandbox's Slurm commands are small wrappers in ``DIR/bin`` that enter the namespace (``nsenter``)
and run the release's own command in the root (a Slurm client talks only to daemons of nearby releases).
"""

from __future__ import annotations

import contextvars
import fcntl
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from wattsched._files import cache_dir
from wattsched.slurm.client import SlurmError, release_of

__all__ = [
    "RELEASES",
    "Namespace",
    "Release",
    "holder_pid",
    "host_release",
    "prepare_root",
    "release_of",
    "releases",
]


@dataclass(frozen=True)
class Release:
    """A Slurm release a root filesystem can hold: the Debian suite that packages it and what to install."""

    version: str
    suite: str
    distribution: str
    packages: tuple[str, ...]
    #: Packages added since roots of this release were first made: installed into a cached root in place
    #: (``apt-get`` in the root) rather than making it again, which would pull a root from under a sandbox
    #: running on it.
    extras: tuple[str, ...] = ()


#: Every root's packages: the daemons, the commands, munge, and the accounting database (slurmdbd and the
#: suite's own MariaDB: its server and client programs only, half the size of ``mariadb-server``'s).
_BASE = (
    "slurmctld",
    "slurmd",
    "slurm-client",
    "munge",
    "slurmdbd",
    "mariadb-server-core",
    "mariadb-client-core",
)

#: The host interpreter's shared libraries that a minimal root lacks (``ctypes``, ``sqlite3``): the sandbox's
#: power programs, which slurmctld runs inside the root, are the host's Python.
_HOST_PYTHON_LIBRARIES = ("libffi8", "libsqlite3-0")

#: The releases the sandbox can make, by ``major.minor``.
RELEASES: dict[str, Release] = {
    "24.11": Release("24.11", "trixie", "Debian 13", _BASE, _HOST_PYTHON_LIBRARIES),
    # slurmrestd, and the auth/jwt plugin that lets slurmctld take its JSON web tokens.
    "26.05": Release(
        "26.05",
        "sid",
        "Debian unstable",
        (*_BASE, "slurmrestd"),
        ("slurm-wlm-jwt-plugin", *_HOST_PYTHON_LIBRARIES),
    ),
}

#: The commands a root's wrappers cover (those the sandbox, the controller and users call).
COMMANDS = (
    "mariadb",
    "mariadbd",
    "mariadb-install-db",
    "munged",
    "mungekey",
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "slurmrestd",
    "sacct",
    "sacctmgr",
    "salloc",
    "sbatch",
    "scancel",
    "scontrol",
    "sinfo",
    "squeue",
    "srun",
    "sstat",
)

_READY = ".wattsched-root"

#: While a sandbox of another release than the host's is started or reloaded: the folder of its command
#: wrappers, where the sandbox's modules look for every Slurm, munge and MariaDB program.
COMMAND_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar("COMMAND_DIR", default=None)


def command(name: str) -> str | None:
    """Where program ``name`` is: the wrapper of the release being started (:data:`COMMAND_DIR`), else the
    host's ``PATH`` and ``/usr/sbin``."""
    wrappers = COMMAND_DIR.get()
    if wrappers is not None:
        return str(wrappers / name) if (wrappers / name).is_file() else None
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def host_release() -> str | None:
    """The release of the host's own ``slurmctld`` (``None``: not installed)."""
    program = shutil.which("slurmctld") or shutil.which("slurmctld", path="/usr/sbin:/sbin")
    if program is None:
        return None
    done = subprocess.run([program, "-V"], capture_output=True, text=True, timeout=30, check=False)
    return release_of(done.stdout + done.stderr)


def releases() -> list[str]:
    """Every release the sandbox can run here: the host's (when installed) and those a root can hold."""
    host = host_release()
    return sorted({*RELEASES, *([host] if host else [])})


def root_path(version: str) -> Path:
    """Where the root of ``version`` is kept: ``$WATTSCHED_SLURM_ROOTS/<version>``, by default
    ``$WATTSCHED_CACHE_DIR/slurm-roots/<version>``."""
    given = os.environ.get("WATTSCHED_SLURM_ROOTS")
    return (Path(given) if given else cache_dir() / "slurm-roots") / version


def prepare_root(version: str, *, timeout_s: float = 900.0) -> Path:
    """The root filesystem of Slurm ``version`` (``major.minor``), made now if it is not cached yet.

    :class:`SlurmError` in one line for a release no Debian suite here packages (naming the ones it can), no
    ``debootstrap``, not root, or a build that failed (with its last output); a failed build leaves nothing
    behind that a later call would take for a root."""
    release = RELEASES.get(version)
    if release is None:
        host = host_release()
        known = [f"{v} ({r.distribution})" for v, r in RELEASES.items()]
        if host:
            known.insert(0, f"{host} (this host)")
        raise SlurmError(f"Slurm {version} cannot be made here; the releases it can run: {', '.join(known)}")
    root = root_path(version)
    if _ready(root, release) and _has_extras(root, release):
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.with_name(f"{version}.lock"), "w") as lock:  # one build at a time, across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _ready(root, release):  # else made meanwhile by another process
            _build(release, root, timeout_s)
        if not _has_extras(root, release):
            _install_extras(release, root, timeout_s)
        return root


def _ready(root: Path, release: Release) -> bool:
    """Whether ``root`` is a finished root of ``release`` holding at least today's packages (one made with
    fewer: made again)."""
    try:
        lines = (root / _READY).read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    held = {name for line in lines if line.startswith("packages:") for name in line.split()[1:]}
    return set(release.packages) <= held


def _has_extras(root: Path, release: Release) -> bool:
    """Whether ``root`` holds the release's :attr:`Release.extras` (an ``extras:`` line of its mark; the
    ``packages:`` line is left as it was, so that a root stays ready for code that knows no extras)."""
    if not release.extras:
        return True
    lines = (root / _READY).read_text(encoding="utf-8").splitlines()
    return f"extras: {' '.join(release.extras)}" in lines


def _install_extras(release: Release, root: Path, timeout_s: float) -> None:
    """Install :attr:`Release.extras` into a cached root with its own ``apt-get``, a Slurm package at the
    version of the root's ``slurmctld`` (never an upgrade of the Slurm the root holds), from the package lists
    it was made with."""
    if os.geteuid() != 0:
        raise SlurmError(f"adding {' '.join(release.extras)} to the Slurm {release.version} root needs root")
    what = f"adding {' '.join(release.extras)} to the Slurm {release.version} root"
    version = _in_root(
        root, ["dpkg-query", "--show", "--showformat=${Version}", "slurmctld"], what, timeout_s
    )
    pinned = [f"{name}={version.strip()}" if name.startswith("slurm") else name for name in release.extras]
    _in_root(root, ["apt-get", "install", "--yes", "--no-install-recommends", *pinned], what, timeout_s)
    mark = root / _READY
    text = mark.read_text(encoding="utf-8")
    mark.write_text(f"{text.rstrip()}\nextras: {' '.join(release.extras)}\n", encoding="utf-8")


def _in_root(root: Path, args: list[str], what: str, timeout_s: float) -> str:
    """Run a command in ``root`` (``chroot``); its output, or :class:`SlurmError` naming ``what`` failed."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        done = subprocess.run(
            ["chroot", str(root), *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{what}: '{' '.join(args)}' took over {timeout_s:g} s") from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).split())[-300:]
        raise SlurmError(f"{what}: '{' '.join(args)}' failed: {tail}")
    return done.stdout


def _build(release: Release, root: Path, timeout_s: float) -> Path:
    version = release.version
    if os.geteuid() != 0:
        raise SlurmError(f"making the Slurm {version} root filesystem needs root (debootstrap, chroot)")
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if debootstrap is None:
        raise SlurmError(
            f"Slurm {version} needs a root filesystem made with debootstrap, which is not installed "
            "(Debian: apt-get install debootstrap)"
        )
    building = root.with_name(f"{version}.building")
    shutil.rmtree(building, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    command = [
        debootstrap,
        "--variant=minbase",
        f"--include={','.join((*release.packages, *release.extras))}",
        release.suite,
        str(building),
        "http://deb.debian.org/debian",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        shutil.rmtree(building, ignore_errors=True)
        raise SlurmError(
            f"debootstrap of {release.suite} for Slurm {version} took over {timeout_s:g} s"
        ) from None
    if done.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        tail = " ".join((done.stderr or done.stdout).split())[-300:]
        raise SlurmError(f"debootstrap of {release.suite} for Slurm {version} failed: {tail}")
    check = subprocess.run(
        ["chroot", str(building), "slurmctld", "-V"], capture_output=True, text=True, timeout=60, check=False
    )
    got = release_of(check.stdout + check.stderr)
    if got != version:
        shutil.rmtree(building, ignore_errors=True)
        raise SlurmError(
            f"the {release.suite} root holds Slurm {got or 'nothing'} ({check.stdout.strip()}), not {version}"
        )
    extras = f"extras: {' '.join(release.extras)}\n" if release.extras else ""
    (building / _READY).write_text(
        f"{check.stdout.strip()}\npackages: {' '.join(release.packages)}\n{extras}", encoding="utf-8"
    )
    building.rename(root)
    return root


def _binds(top: Path) -> list[Path]:
    """Host paths bound into a root at their own paths, parents first, none inside another."""
    import wattsched

    wanted = [
        Path("/tmp"),
        top,
        Path(sys.base_prefix),
        Path(sys.prefix),
        Path(wattsched.__file__).resolve().parents[1],
    ]
    kept: list[Path] = []
    for path in sorted({p.resolve() for p in wanted}, key=lambda p: len(p.parts)):
        if path.is_dir() and not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


class Namespace:
    """The private mount namespace a sandbox's daemons run in, held by one process
    (``DIR/run/namespace.pid``)."""

    def __init__(self, root: Path, top: Path) -> None:
        self.root = root
        self.top = top
        self.pid_file = top / "run" / "namespace.pid"
        self.bin_dir = top / "bin"

    def start(self) -> int:
        """Open the namespace with its mounts and write the command wrappers; returns the holder's pid."""
        root = self.root
        lines = ["set -e"]
        for name in ("proc", "dev", "sys"):
            lines.append(f"mount --rbind /{name} {shlex.quote(str(root / name))}")
        for path in _binds(self.top):
            inside = root / path.relative_to("/")
            inside.mkdir(parents=True, exist_ok=True)
            lines.append(f"mount --rbind {shlex.quote(str(path))} {shlex.quote(str(inside))}")
        lines += ["echo ready", "exec sleep infinity"]
        env = dict(os.environ, WATTSCHED_SANDBOX=str(self.top))
        holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "\n".join(lines)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
        )
        assert holder.stdout is not None and holder.stderr is not None
        first = holder.stdout.readline().strip()
        if first != "ready":
            holder.wait(timeout=10)
            detail = " ".join(holder.stderr.read().split())[-300:]
            raise SlurmError(f"could not open the mount namespace for Slurm in {root}: {detail}")
        holder.stdout.close()
        holder.stderr.close()
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
        self.pid_file.write_text(f"{holder.pid}\n", encoding="utf-8")
        self._write_wrappers(holder.pid)
        return holder.pid

    def _write_wrappers(self, pid: int) -> None:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        root = shlex.quote(str(self.root))
        for name in COMMANDS:
            inside = next((d for d in ("usr/sbin", "usr/bin") if (self.root / d / name).exists()), None)
            if inside is None:
                continue
            wrapper = self.bin_dir / name
            wrapper.write_text(
                "#!/bin/sh\n"
                f"# written by wattsched.slurm.sandbox: {name} of the Slurm root {self.root}\n"
                f"exec nsenter --target {pid} --mount -- chroot {root} /bin/sh -c "
                f'\'cd "$0" 2>/dev/null || cd /; exec "$@"\' "$PWD" /{inside}/{name} "$@"\n',
                encoding="utf-8",
            )
            wrapper.chmod(0o755)


def holder_pid(top: Path) -> int | None:
    """The pid of the process that holds sandbox ``top``'s mount namespace, while it still is that one."""
    try:
        pid = int((top / "run" / "namespace.pid").read_text(encoding="utf-8").split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    mark = f"WATTSCHED_SANDBOX={top}".encode()
    return pid if cmdline[0].endswith(b"sleep") and mark in environ else None
