"""Run a command while measuring GPU energy: its exit status passes through, Ctrl-C reaches it once.

The child runs in wattsched's process group, so a Ctrl-C typed at the terminal reaches it directly, as with
``time CMD``. A SIGINT or SIGTERM sent to wattsched alone (``kill -INT <pid>``, a batch system stopping it) is
forwarded to the child. The two are told apart by the signal's origin: the terminal's comes from the kernel
(``si_code == SI_KERNEL``), which already delivered it to the child too. wattsched itself keeps running until
the child exits, so the energy of the whole run is always reported.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
from collections.abc import Sequence
from functools import partial

from wattsched.energy.measure import EnergyMeter, Measurement
from wattsched.errors import ConfigError, WattschedError

__all__ = ["CommandNotRunError", "run_measured"]

log = logging.getLogger(__name__)

#: ``si_code`` of a signal the kernel generated (a terminal's Ctrl-C), as in Linux's ``siginfo.h``.
SI_KERNEL = 0x80
_FORWARDED = (signal.SIGINT, signal.SIGTERM)
_WATCHED = {*_FORWARDED, signal.SIGCHLD}


class CommandNotRunError(WattschedError):
    """The command could not be started; ``exit_status`` is the shell's: 127 not found, 126 not executable."""

    def __init__(self, message: str, exit_status: int) -> None:
        super().__init__(message)
        self.exit_status = exit_status


def run_measured(argv: Sequence[str], meter: EnergyMeter) -> tuple[int, Measurement]:
    """Run ``argv`` under ``meter``; return its exit status (128 + N if killed by signal N) and the energy.

    Call from the main thread (signals are waited for there). Raises :class:`CommandNotRunError` when the
    command does not exist or cannot be executed.
    """
    if not argv:
        raise ConfigError(
            "no command to measure: give it after --, e.g. wattsched measure -- python train.py"
        )
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    try:
        meter.start()
        try:
            child = subprocess.Popen(  # the child gets wattsched's original signal mask back
                list(argv), preexec_fn=partial(signal.pthread_sigmask, signal.SIG_SETMASK, previous)
            )
        except FileNotFoundError:
            meter.stop()
            raise CommandNotRunError(f"command not found: {argv[0]}", 127) from None
        except (PermissionError, IsADirectoryError, NotADirectoryError):
            meter.stop()
            raise CommandNotRunError(f"command cannot be executed: {argv[0]}", 126) from None
        status = _wait(child)
        return status, meter.stop()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _wait(child: subprocess.Popen[bytes]) -> int:
    while True:
        code = child.poll()
        if code is not None:
            return code if code >= 0 else 128 - code
        info = signal.sigtimedwait(_WATCHED, 0.2)
        if info is None or info.si_signo not in _FORWARDED:
            continue
        if info.si_code == SI_KERNEL:
            log.info("signal %d from the terminal: the command got it too", info.si_signo)
            continue
        log.info("forwarding signal %d to the command (pid %d)", info.si_signo, child.pid)
        with contextlib.suppress(ProcessLookupError):  # it has just exited
            child.send_signal(info.si_signo)
