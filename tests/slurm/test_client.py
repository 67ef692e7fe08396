"""The Slurm client: parsing of real Slurm 22.05 JSON (captured into ``data/``), the in-memory fake, and the
real thing on the session's sandbox (jobs held at submission, given a GRES type, released, requeued)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from wattsched.slurm.client import (
    AccountingRecord,
    FakeSlurmClient,
    GresEntry,
    JobState,
    NoAccountingError,
    SlurmClient,
    SlurmError,
    SlurmJob,
    energy_tres_args,
    parse_gres,
    parse_job,
    parse_node,
)
from wattsched.slurm.sandbox import Sandbox

DATA = Path(__file__).parent / "data"
# The MIG UUIDs of the sandbox the samples were captured on (a100-40gb, configuration 3, seed 0).
UUIDS = {
    "vm": (
        "MIG-f287a6ba-8c99-4c31-882e-83efdbe5bdef",
        "MIG-6a9c8778-854e-4730-990d-b347b30801b4",
        "MIG-d0a691ac-b702-4a18-a75f-8e4c446f8902",
    )
}


def _sample(name: str) -> dict[int, SlurmJob]:
    data = json.loads((DATA / name).read_text())
    return {job.job_id: job for job in (parse_job(raw, UUIDS) for raw in data["jobs"])}


# ---------------------------------------------------------------------- parsing (no Slurm needed)
def test_gres_lists_parse_with_types_counts_and_index_ranges() -> None:
    assert parse_gres("gpu:a100_4g.20gb:1(S:0),gpu:a100_2g.10gb:0(IDX:N/A)") == (
        GresEntry("gpu", "a100_4g.20gb", 1),
        GresEntry("gpu", "a100_2g.10gb", 0),
    )
    assert parse_gres("gpu:a100:3(IDX:0,2-3),gpu:1g.5gb:0(IDX:)") == (
        GresEntry("gpu", "a100", 3, (0, 2, 3)),
        GresEntry("gpu", "1g.5gb", 0),
    )
    assert parse_gres("gres:gpu:a100_3g.20gb:1") == (GresEntry("gpu", "a100_3g.20gb", 1),)
    assert parse_gres("gres/gpu:a100_3g.20gb=2") == (GresEntry("gpu", "a100_3g.20gb", 2),)
    assert parse_gres("gpu") == (GresEntry("gpu", None, 1),)
    assert parse_gres("(null)") == parse_gres("") == ()
    assert str(GresEntry("gpu", "a100_3g.20gb", 1)) == "gpu:a100_3g.20gb:1"


def test_real_squeue_json_of_22_05_parses_every_state() -> None:
    jobs = _sample("squeue-22.05.json")
    ok, failed, cancelled, running, held = (jobs[i] for i in (1, 2, 3, 4, 5))
    assert ok.state is JobState.COMPLETED and ok.exit_code == 0 and ok.end_s == 1796179567.0
    assert failed.state is JobState.FAILED and failed.exit_code == 3  # raw wait status 768
    # Cancelled while pending: Slurm stamps a start time, but it never ran.
    assert cancelled.state is JobState.CANCELLED and cancelled.start_s is None and cancelled.nodes == ""
    assert running.state is JobState.RUNNING and running.end_s is None and running.exit_code is None
    assert running.gres == "gpu:a100_2g.10gb:1" and running.gpu_indices == (1,)
    assert running.gpu_uuids == (UUIDS["vm"][1],)
    assert running.time_limit_s == 600.0 and running.comment == "wattsched: kind=training work=90s"
    assert running.nodes == running.required_nodes == "vm" and running.user == "root"
    assert held.held and held.reason == "JobHeldAdmin" and held.priority == 0 and held.start_s is None
    assert held.admin_comment == "wattsched: no 4g.20gb slice free before the deadline"
    assert held.gres == "gpu:a100_4g.20gb:1" and held.time_limit_s is None
    assert not any(job.held for job in (ok, failed, cancelled, running))


def test_23_shapes_parse_like_22_05() -> None:
    assert _sample("squeue-23-shapes.json") == _sample("squeue-22.05.json")


def test_real_sinfo_json_parses_gres_and_use() -> None:
    (node,) = [parse_node(raw) for raw in json.loads((DATA / "sinfo-22.05.json").read_text())["nodes"]]
    assert node.name == "vm" and node.state == "mixed" and node.available
    assert [str(e) for e in node.gres] == ["gpu:a100_4g.20gb:1", "gpu:a100_2g.10gb:1", "gpu:a100_1g.10gb:1"]
    assert [e.indices for e in node.gres_used] == [(), (1,), ()]
    assert parse_node({"name": "n", "state": ["IDLE", "DRAIN"]}).state_flags == ("DRAIN",)
    assert not parse_node({"name": "n", "state": ["IDLE", "DRAIN"]}).available


def test_a_missing_command_and_a_failing_one_name_the_command(tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match="slurm command not found: 'squeue'"):
        SlurmClient(bin_dir=tmp_path).jobs()
    failing = tmp_path / "scontrol"
    failing.write_text("#!/bin/sh\necho 'scontrol: error: Invalid job id specified' >&2\nexit 1\n")
    failing.chmod(0o755)
    with pytest.raises(SlurmError, match=r"^'scontrol hold 7' failed: scontrol: error: Invalid job id"):
        SlurmClient(bin_dir=tmp_path).hold(7)
    down = tmp_path / "squeue"
    down.write_text(
        "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller' >&2\nexit 1\n"
    )
    down.chmod(0o755)
    with pytest.raises(SlurmError, match=r"^slurm is not running: 'squeue --json --states=all' failed: "):
        SlurmClient(bin_dir=tmp_path).jobs()
    slow = tmp_path / "sinfo"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    with pytest.raises(SlurmError, match=r"^'sinfo --json' timed out after 0.2 s"):
        SlurmClient(bin_dir=tmp_path, timeout_s=0.2).nodes()


def _command(folder: Path, name: str, out: str, err: str = "", status: int = 0) -> None:
    """A stand-in for Slurm command ``name`` that prints ``out`` and ``err`` and exits with ``status``."""
    (folder / f"{name}.out").write_text(out)
    (folder / f"{name}.err").write_text(err)
    script = folder / name
    script.write_text(f"#!/bin/sh\ncat '{script}.out'\ncat '{script}.err' >&2\nexit {status}\n")
    script.chmod(0o755)


def test_accounting_commands_as_slurm_22_05_answers_them(tmp_path: Path) -> None:
    """The outputs are Slurm 22.05.8's (the sandbox with and without slurmdbd)."""
    client = SlurmClient(bin_dir=tmp_path)
    _command(tmp_path, "scontrol", "AccountingStorageType   = accounting_storage/slurmdbd\n")
    assert client.accounting_enabled()
    _command(
        tmp_path, "sacct", "7|CANCELLED by 0|billing=1,cpu=1,node=1|wattsched_energy_j=1.500|a|b\n"
    )  # a |
    assert client.accounting_job(7) == AccountingRecord(7, JobState.CANCELLED, "wattsched_energy_j=1.500|a|b")
    _command(tmp_path, "sacct", "")
    assert client.accounting_job(8) is None  # the database has no record (yet)
    _command(tmp_path, "sacctmgr", " Modified jobs...\n  7 submitted at 2026-12-07T02:16:53\n")
    client.set_accounting_comment(7, "wattsched_energy_j=1.500")
    _command(
        tmp_path,
        "sacctmgr",
        " Nothing modified\n",
        "sacctmgr: accounting_storage/slurmdbd: acct_storage_p_modify_job: Request didn't affect anything\n",
        1,
    )
    with pytest.raises(SlurmError, match=r"^job 9 has no record in the accounting database \(yet\)"):
        client.set_accounting_comment(9, "wattsched_energy_j=1.500")
    # Without slurmdbd.
    _command(tmp_path, "scontrol", "AccountingStorageType   = accounting_storage/none\n")
    assert not client.accounting_enabled()
    _command(tmp_path, "sacct", "", "Slurm accounting storage is disabled\n", 1)
    with pytest.raises(NoAccountingError, match="accounting storage is disabled"):
        client.accounting_job(7)
    _command(
        tmp_path,
        "sacctmgr",
        "",
        "You are not running a supported accounting_storage plugin\nOnly 'accounting_storage/slurmdbd' is "
        "supported.\n",
        1,
    )
    with pytest.raises(NoAccountingError):
        client.set_accounting_comment(7, "wattsched_energy_j=1.500")
    # slurmdbd down: a plain SlurmError (tried again later).
    _command(tmp_path, "sacct", "", "sacct: error: Problem talking to the database: Connection refused\n", 1)
    with pytest.raises(SlurmError, match="Problem talking to the database") as caught:
        client.accounting_job(7)
    assert not isinstance(caught.value, NoAccountingError)
    with pytest.raises(SlurmError, match="one line"):
        client.set_accounting_comment(7, "two\nlines")


def test_energy_tres_as_slurm_26_05_answers_it(tmp_path: Path) -> None:
    """The outputs are Slurm 26.05.5's (the sandbox on Debian unstable's packages)."""
    assert energy_tres_args(7, 1234) == [
        "sacctmgr",
        "--immediate",
        "modify",
        "job",
        "where",
        "jobid=7",
        "set",
        "TRES=energy=1234",
    ]
    with pytest.raises(SlurmError, match=r"count of joules, not -1 \(job 7\)"):
        energy_tres_args(7, -1)
    client = SlurmClient(bin_dir=tmp_path)
    _command(tmp_path, "sacctmgr", "slurm-wlm 26.05.5\n")
    assert client.slurm_release() == "26.05"
    _command(tmp_path, "sacctmgr", "slurm 22.05.8\n")
    assert client.slurm_release() == "26.05"  # asked once
    _command(
        tmp_path, "sacct", "7|COMPLETED|billing=1,cpu=1,energy=1234,node=1|wattsched_energy_j=1234.000\n"
    )
    assert client.accounting_job(7) == AccountingRecord(
        7, JobState.COMPLETED, "wattsched_energy_j=1234.000", 1234
    )
    _command(tmp_path, "sacctmgr", " Modified jobs...\n  7 submitted at 2026-12-07T09:10:47\n")
    client.set_accounting_energy(7, 1234)
    _command(
        tmp_path,
        "sacctmgr",
        " Modified jobs...\n",
        "Error with request: Data has not changed since time specified\n",
        1,
    )
    with pytest.raises(SlurmError, match=r"^job 99 has no record in the accounting database \(yet\)"):
        client.set_accounting_energy(99, 1500)


# ---------------------------------------------------------------------- the in-memory fake
def _fake() -> FakeSlurmClient:
    clock = iter(float(t) for t in range(100, 200))
    return FakeSlurmClient(
        {"gpu01": ["a100_4g.20gb", "a100_2g.10gb", "a100_1g.10gb"]},
        uuids={"gpu01": ["MIG-a", "MIG-b", "MIG-c"]},
        clock=lambda: next(clock),
    )


def test_fake_holds_managed_jobs_and_runs_them_where_told() -> None:
    slurm = _fake()
    managed = slurm.submit(comment="wattsched: kind=training")
    other = slurm.submit(partition="debug")
    assert slurm.job(managed).held and not slurm.job(other).held  # type: ignore[union-attr]
    assert slurm.schedule() == [other]  # the held job stays; the unmanaged one runs (no GRES asked)
    slurm.set_gres(managed, "gpu:a100_2g.10gb:1", node="gpu01")
    slurm.release(managed)
    assert slurm.schedule() == [managed]
    job = slurm.job(managed)
    assert job is not None and job.state is JobState.RUNNING and job.gpu_uuids == ("MIG-b",)
    assert [e.indices for e in slurm.nodes()[0].gres_used] == [(), (1,), ()]
    slurm.finish(managed)
    done = slurm.job(managed)
    assert done is not None and done.state.finished and done.end_s is not None and done.exit_code == 0
    assert [call[0] for call in slurm.calls] == ["set_gres", "release"]


def test_fake_signal_requeue_hold_and_failures_mirror_slurm() -> None:
    slurm = _fake()
    job_id = slurm.submit()
    with pytest.raises(SlurmError, match="not running"):
        slurm.signal(job_id)
    slurm.set_gres(job_id, "gpu:a100_4g.20gb:1")
    slurm.release(job_id)
    slurm.start(job_id)
    slurm.signal(job_id, "SIGUSR1")
    assert slurm.signals == [(job_id, "USR1", "full")]
    slurm.requeue_hold(job_id)
    job = slurm.job(job_id)
    assert job is not None and job.state is JobState.PENDING and job.held and job.restart_count == 1
    assert job.gpu_indices == () and job.reason == "job_requeued_in_held_state"
    slurm.hold_with_reason(job_id, "waiting  for\na slice")
    assert slurm.job(job_id).admin_comment == "wattsched: waiting for a slice"  # type: ignore[union-attr]
    with pytest.raises(SlurmError, match="Invalid job id"):
        slurm.release(99)
    slurm.up = False
    assert not slurm.ping()
    with pytest.raises(SlurmError, match="slurm is not running"):
        slurm.jobs()


def test_fake_schedule_respects_busy_devices() -> None:
    slurm = _fake()
    first, second = slurm.submit(), slurm.submit()
    for job_id in (first, second):
        slurm.set_gres(job_id, "gpu:a100_1g.10gb:1")
        slurm.release(job_id)
    assert slurm.schedule() == [first]
    slurm.finish(first)
    assert slurm.schedule() == [second]


# ---------------------------------------------------------------------- the real Slurm
def _script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return path


def test_a_job_is_held_at_submission_then_placed_released_and_run_on_its_mig_uuid(
    slurm_sandbox: Sandbox, tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    tmp_path.chmod(0o755)
    client = slurm_sandbox.client()
    assert client.ping()
    out = tmp_path / "cvd.txt"
    script = _script(tmp_path, "job.sh", f'echo "$CUDA_VISIBLE_DEVICES" > {out}\nsleep 1\n')
    job_id = client.submit(script, comment="wattsched: kind=inference", output="/dev/null", workdir=tmp_path)
    job = client.job(job_id)
    assert job is not None and job.held and job.state is JobState.PENDING and job.partition == "mig"
    kind = slurm_sandbox.gres_types[2]  # the 1g.10gb slice of configuration 3
    client.set_gres(job_id, f"gpu:{slurm_sandbox.gres_types[0]}:1", node=slurm_sandbox.node)
    client.set_gres(job_id, f"gpu:{kind}:1", node=slurm_sandbox.node)  # replaces, never adds
    assert client.job(job_id).gres == f"gpu:{kind}:1"  # type: ignore[union-attr]
    client.hold(job_id)  # the controller's own hold, as administrator
    client.release(job_id)
    running: list[SlurmJob] = []

    def is_running() -> bool:
        now = client.job(job_id)
        if now is not None and now.state is JobState.RUNNING:
            running.append(now)
        return bool(running) or (now is not None and now.state.finished)

    wait_for(is_running, 20, f"job {job_id} to run")
    wait_for(lambda: client.job(job_id).state is JobState.COMPLETED, 20, "the job to complete")  # type: ignore[union-attr]
    done = client.job(job_id)
    assert done is not None and done.exit_code == 0 and done.end_s is not None and done.start_s is not None
    uuid = slurm_sandbox.gpu_uuids[2]
    assert out.read_text().strip() == uuid
    if running:  # seen while it ran (1 s): the client maps Slurm's device index to the UUID
        assert running[0].gpu_indices == (2,) and running[0].gpu_uuids == (uuid,)


def test_a_debug_job_is_not_held_and_a_failure_reports_its_exit_code(
    slurm_sandbox: Sandbox, tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    tmp_path.chmod(0o755)
    client = slurm_sandbox.client()
    script = _script(tmp_path, "fail.sh", "exit 3\n")
    job_id = client.submit(script, partition="debug", output="/dev/null", workdir=tmp_path)
    assert not client.job(job_id).held  # type: ignore[union-attr]
    wait_for(lambda: client.job(job_id).state.finished, 20, "the debug job to end")  # type: ignore[union-attr]
    job = client.job(job_id)
    assert job is not None and job.state is JobState.FAILED and job.exit_code == 3
    assert client.job(10**8) is None


def test_hold_with_reason_is_visible_to_the_user_in_squeue(slurm_sandbox: Sandbox, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    client = slurm_sandbox.client()
    job_id = client.submit(_script(tmp_path, "wait.sh", "true\n"), output="/dev/null", workdir=tmp_path)
    client.hold_with_reason(job_id, "malformed comment: deadline=tomorrow")
    shown = subprocess.run(
        ["squeue", "-h", "-j", str(job_id), "-O", "Reason:20,admin_comment:80"],
        env=slurm_sandbox.env | {"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    reason, comment = shown.strip().split(None, 1)
    assert (reason, comment) == ("JobHeldAdmin", "wattsched: malformed comment: deadline=tomorrow")
    client.cancel(job_id)


def test_a_running_job_gets_its_checkpoint_signal_is_requeued_held_and_runs_again(
    slurm_sandbox: Sandbox, tmp_path: Path, wait_for: Callable[..., None]
) -> None:
    tmp_path.chmod(0o755)
    client = slurm_sandbox.client()
    log = tmp_path / "log.txt"
    body = (
        f'echo "start ${{SLURM_RESTART_COUNT:-0}} $CUDA_VISIBLE_DEVICES" >> {log}\n'
        f"trap 'echo checkpoint >> {log}; exit 0' USR1\n"
        '[ "${SLURM_RESTART_COUNT:-0}" -gt 0 ] && exit 0\n'
        "for i in $(seq 1 100); do sleep 0.1 & wait $!; done\n"
    )
    job_id = client.submit(_script(tmp_path, "ckpt.sh", body), output="/dev/null", workdir=tmp_path)
    client.set_gres(job_id, f"gpu:{slurm_sandbox.gres_types[1]}:1", node=slurm_sandbox.node)
    client.release(job_id)
    wait_for(lambda: log.exists() and "start 0" in log.read_text(), 20, "the job to start")
    client.signal(job_id, "USR1")  # --full: the script's own trap gets it
    wait_for(lambda: "checkpoint" in log.read_text(), 10, "the checkpoint")
    client.requeue_hold(job_id)
    assert client.job(job_id).held  # type: ignore[union-attr]  # even while still COMPLETING
    wait_for(lambda: client.job(job_id).state is JobState.PENDING, 20, "the job to be pending")  # type: ignore[union-attr]
    job = client.job(job_id)
    assert job is not None and job.state is JobState.PENDING and job.held and job.restart_count == 1
    client.release(job_id)  # eligible again after cred_expire (10 s in the sandbox)
    wait_for(lambda: "start 1" in log.read_text(), 40, "the requeued job to start again")
    lines = log.read_text().split("\n")
    uuid = slurm_sandbox.gpu_uuids[1]
    assert lines[:3] == [f"start 0 {uuid}", "checkpoint", f"start 1 {uuid}"]
