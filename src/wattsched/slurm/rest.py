""":class:`~wattsched.slurm.client.SlurmApi` through slurmrestd (Slurm 26.05, ``data_parser/v0.0.45``) on a
unix socket, with JSON web token authentication.

Facts of slurmrestd 26.05.5 this relies on, checked by running it (the sandbox's ``rest=True``):

- It refuses to run as root or SlurmUser: it is started with ``-u``/``-g`` of an unprivileged user, which
  must own the folder of its socket (it binds the socket after changing user). With ``-a rest_auth/jwt`` it
  passes each request's ``X-SLURM-USER-TOKEN`` on to slurmctld, which needs ``AuthAltTypes=auth/jwt`` and
  ``AuthAltParameters=jwt_key=FILE``; slurmrestd itself runs with ``SLURM_JWT=daemon`` (else it rejects
  every token: "Rejecting thread config token"). ``scontrol token lifespan=S`` (as root: a token for root)
  prints ``SLURM_JWT=<token>``.
- ``GET /slurm/v0.0.45/jobs/`` lists every job slurmctld holds, ended ones within ``MinJobAge`` too, in the
  same data_parser shape as ``squeue --json`` of that release: each job is read by the same
  :func:`~wattsched.slurm.client.parse_job`, after its response is validated by the models generated from
  the release's OpenAPI spec (:mod:`wattsched.slurm.rest_models`). Nodes likewise (``scontrol show nodes
  --json``, :func:`~wattsched.slurm.client.parse_node`).
- ``POST /slurm/v0.0.45/job/{id}`` with a job description changes a job (``hold``, ``admin_comment``,
  ``tres_per_node``, ``required_nodes`` as a list): the same update as ``scontrol update``, so
  :meth:`RestClient.set_gres` clears ``tres_per_node`` first as :class:`SlurmClient` does. Failures come
  back as ``errors`` in the JSON body (an unknown job: error 2017, "Invalid job id specified").
- ``DELETE /slurm/v0.0.45/job/{id}`` cancels; with ``signal=`` and ``flags=`` it signals instead.

- ``GET /slurm/v0.0.45/job/{id}/requeue?Hold`` requeues a running job held (``scontrol requeuehold``), and
  ``POST /slurm/v0.0.45/node/{name}`` with ``{"state": ["POWER_UP"]}`` asks Slurm to power a node up (tried on
  the sandbox: a powered-down node is up again 1.4 s later; a node that is up is refused, "Invalid power
  action").

Through the commands still (:attr:`RestClient.cli`): :meth:`~RestClient.renew` (it resubmits a job's script
and environment from slurmctld's state files: ``sbatch``), and the accounting calls (``sacct``/``sacctmgr``,
the energy TRES included, and the release from ``sacctmgr -V``): slurmrestd answers slurmdbd's endpoints
only with ``openapi/slurmdbd`` loaded and a slurmdbd behind it, which the REST sandbox does not start yet.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from wattsched.errors import ConfigError
from wattsched.slurm import rest_models
from wattsched.slurm.client import (
    AccountingRecord,
    SignalScope,
    SlurmApi,
    SlurmClient,
    SlurmError,
    SlurmJob,
    SlurmNode,
    parse_job,
    parse_node,
)

__all__ = ["API_VERSION", "RestClient", "open_client", "rest_answers"]

log = logging.getLogger(__name__)

#: The data_parser version the client speaks (the paths' ``/slurm/v0.0.45/``).
API_VERSION = "v0.0.45"
_INVALID_JOB = 2017
# A token is asked for again this long before it expires.
_TOKEN_MARGIN_S = 60.0
_SCOPE_FLAGS = {"full": "FULL_JOB", "batch": "BATCH_JOB", "steps": "FULL_STEPS_ONLY"}

Model = TypeVar("Model", bound=BaseModel)


class _UnixConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a unix socket (the standard library's client with its connect replaced)."""

    def __init__(self, path: str, timeout_s: float) -> None:
        super().__init__("localhost", timeout=timeout_s)
        self.socket_path = path

    def connect(self) -> None:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(self.timeout)
        try:
            connection.connect(self.socket_path)
        except OSError:
            connection.close()
            raise
        self.sock = connection


class RestClient:
    """slurmrestd on the unix socket ``socket_path``; see the module docstring for what goes through the
    commands instead (``cli``, also the source of tokens). ``token``: a JSON web token (default
    ``SLURM_JWT`` of the environment, else one from ``scontrol token``, asked for again before it expires
    and when slurmrestd refuses it). Device UUIDs come from ``cli.gpu_uuids`` (the same mapping, shared)."""

    def __init__(
        self,
        socket_path: str | Path,
        cli: SlurmClient,
        *,
        token: str | None = None,
        token_lifespan_s: int = 3600,
        timeout_s: float = 30.0,
    ) -> None:
        self.socket_path = str(socket_path)
        self.cli = cli
        self.timeout_s = timeout_s
        self.token_lifespan_s = token_lifespan_s
        self._token = token or os.environ.get("SLURM_JWT") or None
        self._fixed_token = self._token is not None
        self._token_expires = float("inf")

    @property
    def gpu_uuids(self) -> dict[str, tuple[str, ...]]:
        """Per node, its GPU devices' UUIDs in Slurm's index order (the CLI client's mapping)."""
        return self.cli.gpu_uuids

    # ------------------------------------------------------------------ HTTP
    def _token_now(self, renew: bool = False) -> str:
        if self._token is None or renew or time.time() > self._token_expires:
            if self._fixed_token and not renew:
                assert self._token is not None
                return self._token
            out = self.cli.run("scontrol", "token", f"lifespan={self.token_lifespan_s}")
            token = out.strip().partition("SLURM_JWT=")[2].split()
            if not token:
                raise SlurmError(f"'scontrol token' printed no SLURM_JWT=: {' '.join(out.split())}")
            self._token, self._fixed_token = token[0], False
            self._token_expires = time.time() + self.token_lifespan_s - _TOKEN_MARGIN_S
        return self._token

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        """One request to ``/slurm/<API_VERSION>/<path>``; the status and body. A refused token is renewed
        once; :class:`SlurmError` when slurmrestd does not answer."""
        target = f"/slurm/{API_VERSION}/{path}"
        for attempt in range(2):
            headers = {"X-SLURM-USER-TOKEN": self._token_now(renew=attempt > 0), "Accept": "application/json"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            connection = _UnixConnection(self.socket_path, self.timeout_s)
            try:
                connection.request(method, target, body=data, headers=headers)
                answer = connection.getresponse()
                status, content = answer.status, answer.read()
            except (OSError, http.client.HTTPException) as exc:
                raise SlurmError(
                    f"slurmrestd at {self.socket_path} did not answer {method} {target}: {exc}"
                ) from None
            finally:
                connection.close()
            if status != 401 or attempt > 0:
                break
            log.debug("slurmrestd refused the token; asking for a new one")
        log.debug("%s %s: %d", method, target, status)
        return status, content

    def _call(
        self, method: str, path: str, model: type[Model], body: dict[str, Any] | None = None
    ) -> tuple[Model, list[rest_models.OpenapiError]]:
        """The response validated by ``model``, and the errors it lists."""
        status, content = self.request(method, path, body)
        what = f"slurmrestd {method} {path}"
        try:
            parsed = model.model_validate_json(content)
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {"msg": "?", "loc": ()}
            detail = content[:120].decode(errors="replace") if status != 200 else first["msg"]
            raise SlurmError(f"{what}: HTTP {status}, not the expected JSON ({detail})") from None
        errors = getattr(parsed, "errors", None)
        found = list(errors.root) if errors is not None else []
        if status >= 400 and not found:
            raise SlurmError(f"{what}: HTTP {status}")
        return parsed, found

    def _change(self, method: str, path: str, body: dict[str, Any] | None = None) -> None:
        """A change; its response is read for the ``errors`` (and ``meta``, ``warnings``) every slurmrestd
        response has, with the job update's model (whose other fields are optional)."""
        _, errors = self._call(method, path, rest_models.OpenapiJobPostResponse, body)
        if errors:
            raise SlurmError(f"slurmrestd {method} {path} failed: {_describe(errors)}")

    # ------------------------------------------------------------------ reading
    def ping(self) -> bool:
        """Whether slurmctld answers slurmrestd (and slurmrestd answers); never raises."""
        try:
            parsed, errors = self._call("GET", "ping/", rest_models.OpenapiPingArrayResp)
        except SlurmError:
            return False
        return not errors and any(ping.responding for ping in parsed.pings.root)

    def jobs(self, partition: str | None = None) -> list[SlurmJob]:
        """Every job slurmctld holds, by job id; only those of ``partition`` when given."""
        parsed, errors = self._call("GET", "jobs/", rest_models.OpenapiJobInfoResp)
        if errors:
            raise SlurmError(f"slurmrestd GET jobs/ failed: {_describe(errors)}")
        found = [parse_job(_raw(job), self.gpu_uuids) for job in parsed.jobs.root]
        if partition is not None:
            found = [job for job in found if partition in job.partition.split(",")]
        return sorted(found, key=lambda job: job.job_id)

    def job(self, job_id: int) -> SlurmJob | None:
        """One job, ``None`` when slurmctld does not know it."""
        parsed, errors = self._call("GET", f"job/{job_id}", rest_models.OpenapiJobInfoResp)
        if any(error.error_number == _INVALID_JOB for error in errors):
            return None
        if errors:
            raise SlurmError(f"slurmrestd GET job/{job_id} failed: {_describe(errors)}")
        found = [parse_job(_raw(job), self.gpu_uuids) for job in parsed.jobs.root]
        return next((job for job in found if job.job_id == job_id), None)

    def nodes(self) -> list[SlurmNode]:
        """Every node, once each, by name."""
        parsed, errors = self._call("GET", "nodes/", rest_models.OpenapiNodesResp)
        if errors:
            raise SlurmError(f"slurmrestd GET nodes/ failed: {_describe(errors)}")
        seen: dict[str, SlurmNode] = {}
        for raw in parsed.nodes.root:
            node = parse_node(_raw(raw))
            seen.setdefault(node.name, node)
        return [seen[name] for name in sorted(seen)]

    # ------------------------------------------------------------------ changing
    def hold(self, job_id: int) -> None:
        """Hold a pending job (as ``scontrol hold``: priority 0, reason ``JobHeldAdmin``)."""
        self._change("POST", f"job/{job_id}", {"hold": True})

    def hold_with_reason(self, job_id: int, reason: str) -> None:
        """Hold a job; its AdminComment becomes ``wattsched: <reason>``
        (:meth:`SlurmClient.hold_with_reason`)."""
        self.hold(job_id)
        self.set_admin_comment(job_id, f"wattsched: {' '.join(reason.split())}")

    def release(self, job_id: int) -> None:
        self._change("POST", f"job/{job_id}", {"hold": False})

    def set_gres(self, job_id: int, gres: str, node: str | None = None) -> None:
        """Make a pending job ask for exactly ``gres`` per node and, with ``node``, run only there (cleared
        first: an update adds to what the job asked before, :mod:`wattsched.slurm.client`)."""
        self._change("POST", f"job/{job_id}", {"tres_per_node": ""})
        items = [item.strip() for item in gres.split(",") if item.strip()]
        value = ",".join(item if item.startswith("gres") else f"gres/{item}" for item in items)
        body: dict[str, Any] = {"tres_per_node": value} if value else {}
        if node is not None:
            body["required_nodes"] = [node]
        if body:
            self._change("POST", f"job/{job_id}", body)

    def set_admin_comment(self, job_id: int, text: str) -> None:
        self._change("POST", f"job/{job_id}", {"admin_comment": text})

    def signal(self, job_id: int, signal: str = "USR1", scope: SignalScope = "full") -> None:
        """Send ``signal`` to a running job's processes (:data:`~wattsched.slurm.client.SignalScope`)."""
        name = signal.upper().removeprefix("SIG")
        self._change("DELETE", f"job/{job_id}?signal={name}&flags={_SCOPE_FLAGS[scope]}")

    def cancel(self, job_id: int) -> None:
        self._change("DELETE", f"job/{job_id}")

    def requeue_hold(self, job_id: int) -> None:
        """:meth:`SlurmClient.requeue_hold` (``scontrol requeuehold``): slurmrestd's job requeue with its
        ``Hold`` flag (a GET, as the spec has it)."""
        self._change("GET", f"job/{job_id}/requeue?Hold")

    def power_up(self, node: str) -> None:
        """:meth:`SlurmClient.power_up` (``scontrol update NodeName=NODE State=POWER_UP``): the node update
        with state ``POWER_UP``."""
        self._change("POST", f"node/{node}", {"state": ["POWER_UP"]})

    # ------------------------------------------------------------------ through the commands
    def renew(self, job_id: int, marker: str) -> int:
        """:meth:`SlurmClient.renew` (``sbatch`` of the job's kept script and environment)."""
        return self.cli.renew(job_id, marker)

    def accounting_enabled(self) -> bool:
        return self.cli.accounting_enabled()

    def accounting_job(self, job_id: int) -> AccountingRecord | None:
        return self.cli.accounting_job(job_id)

    def set_accounting_comment(self, job_id: int, text: str) -> None:
        self.cli.set_accounting_comment(job_id, text)

    def set_accounting_energy(self, job_id: int, energy_j: int) -> None:
        self.cli.set_accounting_energy(job_id, energy_j)

    def slurm_release(self) -> str | None:
        return self.cli.slurm_release()


def _raw(model: BaseModel) -> dict[str, Any]:
    """A validated job or node in the JSON shape :func:`parse_job` / :func:`parse_node` read."""
    return model.model_dump(mode="json", exclude_unset=True, by_alias=True)


def _describe(errors: list[rest_models.OpenapiError]) -> str:
    return "; ".join(
        f"{error.error or 'error'}{f' ({error.description})' if error.description else ''}"
        for error in errors
    )


def rest_answers(socket_path: str | Path, cli: SlurmClient) -> bool:
    """Whether slurmrestd answers on ``socket_path`` (a socket there, and a ping through it)."""
    path = Path(socket_path)
    if not path.is_socket():
        return False
    try:
        return RestClient(path, cli, timeout_s=5.0).ping()
    except SlurmError:
        return False


def open_client(api: str, rest_socket: str | Path | None, cli: SlurmClient) -> SlurmApi:
    """The client ``[slurm] api`` asks for: ``cli`` (the commands), ``rest`` (slurmrestd on ``rest_socket``)
    or ``auto`` (slurmrestd where it answers on ``rest_socket``, else the commands)."""
    if api == "cli":
        return cli
    if api == "rest":
        if rest_socket is None:
            raise ConfigError("slurm.api = 'rest' needs slurm.rest_socket (slurmrestd's unix socket)")
        return RestClient(rest_socket, cli)
    if api == "auto":
        if rest_socket is not None and rest_answers(rest_socket, cli):
            return RestClient(rest_socket, cli)
        return cli
    raise ConfigError(f"slurm.api: expected 'auto', 'cli' or 'rest', got '{api}'")
