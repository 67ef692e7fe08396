"""The slurmrestd client against responses captured from a Slurm 26.05 sandbox (``data/rest-26.05/``: the
REST answers and, for the same cluster state, ``squeue --json`` and ``scontrol show nodes --json``), through
a fake unix socket connection; and the ``[slurm] api`` / ``rest_socket`` settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from wattsched.errors import ConfigError
from wattsched.slurm import rest
from wattsched.slurm.client import SlurmClient, SlurmError, parse_job, parse_node
from wattsched.slurm.config import parse_config
from wattsched.slurm.rest import RestClient, open_client

DATA = Path(__file__).parent / "data" / "rest-26.05"
# The sandbox the samples come from: node vm, a100-40gb at configuration 3 (devices in Slurm's index order).
UUIDS = {
    "vm": (
        "MIG-f287a6ba-8c99-4c31-882e-83efdbe5bdef",
        "MIG-6a9c8778-854e-4730-990d-b347b30801b4",
        "MIG-d0a691ac-b702-4a18-a75f-8e4c446f8902",
    )
}
PREFIX = f"/slurm/{rest.API_VERSION}/"


class FakeConnection:
    """Stands in for the unix socket connection: answers from :attr:`routes`, logs each request."""

    routes: ClassVar[dict[tuple[str, str], list[tuple[int, bytes]]]] = {}
    sent: ClassVar[list[tuple[str, str, Any, dict[str, str]]]] = []

    def __init__(self, path: str, timeout_s: float) -> None:
        self.path = path

    def request(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> None:
        self.sent.append((method, target.removeprefix(PREFIX), json.loads(body) if body else None, headers))
        self.key = (method, target.removeprefix(PREFIX))

    def getresponse(self) -> FakeConnection:
        answers = self.routes[self.key]
        self.status, self.content = answers.pop(0) if len(answers) > 1 else answers[0]
        return self

    def read(self) -> bytes:
        return self.content

    def close(self) -> None:
        pass


class FakeCommands(SlurmClient):
    """The CLI client with ``scontrol token`` answered here (and nothing else run)."""

    def __init__(self) -> None:
        super().__init__("/nonexistent/slurm.conf", gpu_uuids=UUIDS)
        self.tokens = 0

    def run(self, *args: str, environment: Any = None) -> str:
        assert args[:2] == ("scontrol", "token"), args
        self.tokens += 1
        return f"SLURM_JWT=token{self.tokens}\n"


def _sample(name: str) -> bytes:
    return (DATA / name).read_bytes()


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[RestClient]:
    monkeypatch.delenv("SLURM_JWT", raising=False)
    monkeypatch.setattr(rest, "_UnixConnection", FakeConnection)
    FakeConnection.sent = []
    FakeConnection.routes = {
        ("GET", "jobs/"): [(200, _sample("jobs.json"))],
        ("GET", "nodes/"): [(200, _sample("nodes.json"))],
        ("GET", "ping/"): [(200, _sample("ping.json"))],
        ("GET", "job/99999"): [(500, _sample("job-unknown.json"))],
    }
    for job_id in (2, 99999):
        FakeConnection.routes[("POST", f"job/{job_id}")] = [(200, _sample("job-update.json"))]
    yield RestClient("/run/slurmrestd.socket", FakeCommands())


def test_jobs_and_nodes_are_the_ones_the_commands_give_for_the_same_cluster(client: RestClient) -> None:
    squeue = json.loads(_sample("squeue.json"))["jobs"]
    assert client.jobs() == sorted((parse_job(raw, UUIDS) for raw in squeue), key=lambda job: job.job_id)
    running = client.jobs()[0]
    assert running.state.value == "RUNNING" and running.gpu_uuids == (UUIDS["vm"][2],)
    assert [job.job_id for job in client.jobs(partition="mig")] == [2]
    scontrol = json.loads(_sample("scontrol-nodes.json"))["nodes"]
    assert client.nodes() == [parse_node(raw) for raw in scontrol]
    assert client.job(99999) is None
    assert client.ping()


def test_a_token_comes_from_scontrol_and_is_renewed_once_when_refused(client: RestClient) -> None:
    FakeConnection.routes[("GET", "ping/")] = [(401, b"Authentication failure"), (200, _sample("ping.json"))]
    assert client.ping()
    tokens = [headers["X-SLURM-USER-TOKEN"] for _, _, _, headers in FakeConnection.sent]
    assert tokens == ["token1", "token2"]


def test_changes_are_job_updates_with_the_gres_cleared_first(client: RestClient) -> None:
    client.hold_with_reason(2, "waits  for a slice")
    client.release(2)
    client.set_gres(2, "gpu:a100_2g.10gb:1", node="vm")
    bodies = [body for method, path, body, _ in FakeConnection.sent if method == "POST"]
    assert bodies == [
        {"hold": True},
        {"admin_comment": "wattsched: waits for a slice"},
        {"hold": False},
        {"tres_per_node": ""},
        {"tres_per_node": "gres/gpu:a100_2g.10gb:1", "required_nodes": ["vm"]},
    ]


def test_signal_and_cancel_are_deletes_and_errors_name_the_call(client: RestClient) -> None:
    FakeConnection.routes[("DELETE", "job/1?signal=USR1&flags=BATCH_JOB")] = [
        (200, _sample("job-update.json"))
    ]
    client.signal(1, "SIGUSR1", scope="batch")
    FakeConnection.routes[("POST", "job/99999")] = [(500, _sample("job-unknown.json"))]
    with pytest.raises(SlurmError, match=r"slurmrestd POST job/99999 failed: Invalid job id specified"):
        client.hold(99999)
    FakeConnection.routes[("GET", "nodes/")] = [(502, b"<html>bad gateway</html>")]
    with pytest.raises(SlurmError, match=r"GET nodes/: HTTP 502, not the expected JSON"):
        client.nodes()


def test_a_socket_nobody_answers_is_a_slurm_error_and_ping_says_no(tmp_path: Path) -> None:
    client = RestClient(tmp_path / "none.socket", FakeCommands(), token="given")
    with pytest.raises(SlurmError, match="did not answer GET"):
        client.jobs()
    assert not client.ping()
    assert open_client("auto", tmp_path / "none.socket", client.cli) is client.cli


def _config(tmp_path: Path, slurm: str) -> dict[str, Any]:
    text = (
        f'[slurm]\npartition = "mig"\nstate = "s.db"\n{slurm}\n[[nodes]]\nname = "n"\ngpus = ["a100-40gb"]\n'
    )
    import tomllib

    return tomllib.loads(text)


def test_the_api_setting_picks_the_client_and_bad_values_name_the_key(tmp_path: Path) -> None:
    where = str(tmp_path / "c.toml")
    assert parse_config(_config(tmp_path, ""), base=tmp_path, where=where).api == "auto"
    config = parse_config(
        _config(tmp_path, 'api = "rest"\nrest_socket = "r.sock"'), base=tmp_path, where=where
    )
    assert config.api == "rest" and config.rest_socket == tmp_path / "r.sock"
    commands = FakeCommands()
    assert isinstance(open_client(config.api, config.rest_socket, commands), RestClient)
    assert open_client("cli", config.rest_socket, commands) is commands
    with pytest.raises(ConfigError, match=r"c.toml: slurm.api: expected 'auto', 'cli' or 'rest', got 'http'"):
        parse_config(_config(tmp_path, 'api = "http"'), base=tmp_path, where=where)
    with pytest.raises(ConfigError, match=r"slurm.api = 'rest' needs slurm.rest_socket"):
        parse_config(_config(tmp_path, 'api = "rest"'), base=tmp_path, where=where)
