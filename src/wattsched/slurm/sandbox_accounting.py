"""The sandbox's accounting database: a private MariaDB and a slurmdbd in the sandbox's folder.

:mod:`wattsched.slurm.sandbox` starts them before slurmctld (when asked, and where the programs are
installed) and stops them after it::

    DIR/db/data                 MariaDB's data directory (mariadb-install-db, at the first start)
    DIR/db/mysqld.sock          its only way in: a unix socket (skip-networking: no TCP port at all)
    DIR/etc/slurmdbd.conf       slurmdbd's config (mode 600, as slurmdbd requires), beside slurm.conf
    DIR/run/mariadbd.pid, slurmdbd.pid; DIR/log/mariadbd.log, slurmdbd.log, mariadb-install-db.log

MariaDB's root logs in through the socket as the system's root (``unix_socket`` authentication): slurmdbd
runs as root and finds the socket by ``MYSQL_UNIX_PORT`` (MariaDB's client library reads it), so there is
no password anywhere. slurmdbd listens on a free loopback port (``DbdPort``), which slurm.conf names as
``AccountingStoragePort``; the cluster is registered with ``sacctmgr -i add cluster`` (which also makes the
``root`` account and user) before slurmctld starts. MariaDB runs without durable flushes (the sandbox's
data is thrown away with it), which makes slurmdbd's first start — creating its tables — a few seconds.
The database itself is made before slurmdbd starts (:func:`start_database`: slurmdbd's own way fails with
MariaDB's client library 3.4, see :func:`_create_database`). On another Slurm release than the host's every
program here is the release root's (:func:`wattsched.slurm.roots.command`): its slurmdbd and its MariaDB.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from wattsched.slurm.client import SlurmError

__all__ = [
    "ACCOUNTING_BINARIES",
    "ACCOUNTING_DAEMONS",
    "dbd_conf",
    "layout",
    "missing_binaries",
    "register_cluster",
    "slurm_conf_settings",
    "start_database",
    "start_dbd",
]

#: The daemons of the accounting, in start order (stopped in reverse, after slurmctld).
ACCOUNTING_DAEMONS = ("mariadbd", "slurmdbd")
#: What the accounting needs installed (Debian: apt-get install slurmdbd mariadb-server).
ACCOUNTING_BINARIES = ("mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "sacctmgr", "sacct")
#: The name of the accounting database in the private MariaDB.
DATABASE = "slurm_acct_db"


def missing_binaries() -> list[str]:
    """The programs of :data:`ACCOUNTING_BINARIES` not installed here."""
    return [name for name in ACCOUNTING_BINARIES if _which(name) is None]


def layout(top: Path) -> dict[str, Path]:
    """Where the accounting's files are in the sandbox ``top`` (module docstring); makes ``DIR/db``."""
    database = top / "db"
    database.mkdir(mode=0o700, exist_ok=True)
    paths = {
        "db": database,
        "datadir": database / "data",
        "db_socket": database / "mysqld.sock",
        "dbd_conf": top / "etc" / "slurmdbd.conf",
    }
    if len(str(paths["db_socket"])) > 100:
        raise SlurmError(f"sandbox directory path too long for a unix socket: {paths['db_socket']}")
    return paths


def slurm_conf_settings(port: int, munge_socket: Path, gres_types: Sequence[str] = ()) -> dict[str, object]:
    """What slurm.conf says to keep accounting in the sandbox's slurmdbd on ``port``: job records with
    their comments (``AccountingStoreFlags=job_comment``, so that ``sacct`` shows the annotation), and the
    steps' usage (``jobacct_gather/linux``, every 30 s). ``AccountingStoragePass`` names the munge socket
    that Slurm's commands and slurmctld sign their messages to slurmdbd with (they do not take AuthInfo's:
    without it, ``sacctmgr`` fails with "Protocol authentication error"). ``AccountingStorageTRES`` counts
    GPUs by GRES type (``gres_types``), so that a job's ``AllocTRES`` says which slice it held
    (``gres/gpu:a100_3g.20gb=1``), as :mod:`wattsched.slurm.sacct` reads it."""
    tres = ",".join(["gres/gpu", *(f"gres/gpu:{kind}" for kind in sorted(set(gres_types)))])
    return {
        "AccountingStorageType": "accounting_storage/slurmdbd",
        "AccountingStorageHost": "127.0.0.1",
        "AccountingStoragePort": port,
        "AccountingStoragePass": munge_socket,
        "AccountingStoreFlags": "job_comment",
        "AccountingStorageTRES": tres,
        "JobAcctGatherType": "jobacct_gather/linux",
        "JobAcctGatherFrequency": 30,
    }


def dbd_conf(top: Path, node: str, port: int, munge_socket: Path) -> str:
    """slurmdbd.conf for the sandbox ``top``: root, the private MariaDB by its socket, loopback ``port``."""
    settings: dict[str, object] = {
        "AuthType": "auth/munge",
        "AuthInfo": f"socket={munge_socket}",
        "DbdHost": node,
        "DbdAddr": "127.0.0.1",
        "DbdPort": port,
        "SlurmUser": "root",
        "PidFile": top / "run" / "slurmdbd.pid",
        "LogFile": top / "log" / "slurmdbd.log",
        "StorageType": "accounting_storage/mysql",
        "StorageHost": "localhost",
        "StorageLoc": DATABASE,
        "StorageUser": "root",
    }
    lines = ["# written by wattsched.slurm.sandbox"] + [f"{key}={value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def start_database(top: Path, env: dict[str, str], timeout_s: float = 60.0) -> None:
    """Make MariaDB's data directory (first start only) and start mariadbd on its socket; returns once it
    takes connections. :class:`SlurmError` with its log's last lines when it does not."""
    paths = layout(top)
    log_dir = top / "log"
    if not (paths["datadir"] / "mysql").is_dir():
        shutil.rmtree(paths["datadir"], ignore_errors=True)
        install_log = log_dir / "mariadb-install-db.log"
        with install_log.open("w", encoding="utf-8") as out:
            done = subprocess.run(
                [
                    _need("mariadb-install-db"),
                    "--no-defaults",
                    f"--datadir={paths['datadir']}",
                    "--user=root",
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                    "--skip-name-resolve",
                    "--force",  # no host name lookup (a Slurm root filesystem has no /etc/hosts entry)
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                timeout=timeout_s,
                check=False,
            )
        if done.returncode != 0:
            raise SlurmError(f"could not make MariaDB's data directory{_tail(install_log)}")
    paths["db_socket"].unlink(missing_ok=True)
    server_log = log_dir / "mariadbd.log"
    with server_log.open("a", encoding="utf-8") as out:
        subprocess.Popen(
            [
                _need("mariadbd"),
                "--no-defaults",
                f"--datadir={paths['datadir']}",
                f"--socket={paths['db_socket']}",
                f"--pid-file={top / 'run' / 'mariadbd.pid'}",
                f"--log-error={server_log}",
                "--skip-networking",
                "--skip-name-resolve",
                "--user=root",
                # The sandbox's data is thrown away with it: no durable flushes (slurmdbd's table creation
                # at the first start takes seconds instead of a minute on a slow disk).
                "--innodb-flush-log-at-trx-commit=0",
                "--innodb-doublewrite=0",
                "--innodb-flush-method=nosync",
                "--innodb-buffer-pool-size=64M",
                # MariaDB 11.8's default, which slurmdbd warns would make it stop at a write conflict
                # ("loose": MariaDB 10.11 has no such option)
                "--loose-innodb-snapshot-isolation=OFF",
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # not in the caller's process group: a Ctrl-C there leaves it running
        )
    deadline = time.monotonic() + timeout_s
    while not paths["db_socket"].exists():
        if time.monotonic() > deadline:
            raise SlurmError(
                f"mariadbd did not open {paths['db_socket']} within {timeout_s:g} s{_tail(server_log)}"
            )
        time.sleep(0.05)
    _create_database(paths["db_socket"], env, timeout_s)


def _create_database(db_socket: Path, env: dict[str, str], timeout_s: float) -> None:
    """Make slurmdbd's database before slurmdbd's first start. Without it slurmdbd's first connection fails
    (no such database), it makes the database on another one and connects again on the same handle; with
    MariaDB's client library 3.4 (Debian 13 and unstable) that handle's limit on a result's columns is then
    0, and slurmdbd stops at its first query (error 5027, "Number of columns in result (=1) set exceeds
    maximum allowed number of columns (=0)")."""
    _run_or_fail(
        [
            _need("mariadb"),
            "--no-defaults",
            f"--socket={db_socket}",
            "--user=root",
            f"--execute=CREATE DATABASE IF NOT EXISTS {DATABASE}",
        ],
        env,
        timeout_s,
        f"could not create the database {DATABASE} through {db_socket}",
    )


def start_dbd(top: Path, env: dict[str, str], timeout_s: float = 60.0) -> None:
    """Start slurmdbd (its config written already) and wait until it answers ``sacctmgr``."""
    paths = layout(top)
    dbd_env = dict(env, MYSQL_UNIX_PORT=str(paths["db_socket"]))
    log_file = top / "log" / "slurmdbd.log"
    done = subprocess.run(
        [_need("slurmdbd")], env=dbd_env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if done.returncode != 0:
        detail = " ".join((done.stderr or done.stdout).split())[-300:]
        raise SlurmError(f"could not start slurmdbd: {detail}{_tail(log_file)}")
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        answer = subprocess.run(
            [_need("sacctmgr"), "--noheader", "--parsable2", "show", "cluster", "format=cluster"],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if answer.returncode == 0:
            return
        last = " ".join((answer.stderr or answer.stdout).split())[-200:]
        time.sleep(0.2)
    raise SlurmError(f"slurmdbd did not answer within {timeout_s:g} s ({last}){_tail(log_file)}")


def register_cluster(cluster: str, env: dict[str, str], timeout_s: float = 30.0) -> None:
    """Add ``cluster`` to the accounting database (with its ``root`` account and user) unless it is there."""
    sacctmgr = _need("sacctmgr")
    shown = subprocess.run(
        [sacctmgr, "--noheader", "--parsable2", "show", "cluster", "format=cluster"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if cluster in shown.stdout.split():
        return
    _run_or_fail(
        [sacctmgr, "--immediate", "add", "cluster", cluster],
        env,
        timeout_s,
        f"could not register cluster {cluster} with slurmdbd",
    )


def _run_or_fail(args: list[str], env: dict[str, str], timeout_s: float, failure: str) -> None:
    """Run a command; :class:`SlurmError` ``failure: <the end of its output>`` when it fails."""
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        detail = " ".join((done.stderr or done.stdout).split())[-300:]
        raise SlurmError(f"{failure}: {detail}")


def _which(name: str) -> str | None:
    from wattsched.slurm.roots import command

    return command(name)


def _need(name: str) -> str:
    found = _which(name)
    if found is None:
        raise SlurmError(f"'{name}' not found (Debian: apt-get install slurmdbd mariadb-server)")
    return found


def _tail(log_file: Path, count: int = 8) -> str:
    if not log_file.exists():
        return ""
    lines = log_file.read_text(encoding="utf-8", errors="replace").splitlines()[-count:]
    return f"; last lines of {log_file}: " + " | ".join(line.strip() for line in lines)
