"""Progress of long work on stderr: a bar on a terminal, a plain line every few seconds elsewhere.

On a terminal a tqdm bar redraws itself in place. In a log file, a CI job or a batch system's output file a
bar is either invisible or hundreds of carriage-return frames, so there :class:`Progress` writes one plain
line every ``interval_s`` seconds (5 by default) instead::

    sweep: 120/400 cells, 30 %, 1m12s elapsed, about 2m48s left

Work that ends within the first interval writes nothing; work that wrote a line writes a last one when it
ends, so a log shows that it finished. The elapsed time is read from ``clock`` (monotonic seconds), which a
test replaces.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["INTERVAL_S", "Progress", "duration_text"]

#: Seconds between two plain progress lines.
INTERVAL_S = 5.0


def duration_text(seconds: float) -> str:
    """``45s``, ``1m12s``, ``2h05m``: whole seconds, the two largest units."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Progress:
    """Progress of ``total`` units of work (``unit``: "cell", "job", "day"...) labelled ``label``.

    ``bar``: a tqdm bar (``None``: when ``stream`` is a terminal); otherwise plain lines every
    ``interval_s`` seconds (default :data:`INTERVAL_S`). ``done`` units were done before this started (a
    resumed sweep); they count towards the share but not towards the rate behind the time left."""

    def __init__(
        self,
        label: str,
        total: int,
        unit: str,
        *,
        done: int = 0,
        bar: bool | None = None,
        interval_s: float | None = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.done = self._start_done = done
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._interval_s = INTERVAL_S if interval_s is None else interval_s
        self._started = self._last_line = clock()
        self._lines = 0
        self._line_done = -1  # ``done`` at the last line
        self._closed = False
        use_bar = bar if bar is not None else _is_terminal(self._stream)
        self._bar: Any = None
        if use_bar:
            from tqdm import tqdm  # deferred: only a terminal draws a bar

            self._bar = tqdm(total=total, initial=done, desc=label, unit=unit, file=self._stream)

    def update(self, done: int) -> None:
        """``done`` units are done so far (closes the progress when it reaches ``total``)."""
        if self._closed:
            return
        if self._bar is not None:
            self._bar.update(done - self.done)
        self.done = done
        if self._bar is None and self._clock() - self._last_line >= self._interval_s:
            self._line()
        if done >= self.total:
            self.close()

    def advance(self, count: int = 1) -> None:
        """``count`` more units are done."""
        self.update(self.done + count)

    def close(self) -> None:
        """End the bar, or write the last line if any line was written."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self._lines and self._line_done != self.done:
            self._line()

    def _line(self) -> None:
        now = self._clock()
        self._last_line = now
        self._lines += 1
        self._line_done = self.done
        elapsed = now - self._started
        share = 100.0 * self.done / self.total if self.total else 100.0
        text = (f"{self.label}: {self.done:,}/{self.total:,} {self.unit}s, {share:.0f} %, "
                f"{duration_text(elapsed)} elapsed")  # fmt: skip
        rate = (self.done - self._start_done) / elapsed if elapsed > 0 else 0.0
        if 0 < self.done < self.total and rate > 0 and math.isfinite(rate):
            text += f", about {duration_text((self.total - self.done) / rate)} left"
        self._stream.write(text + "\n")
        self._stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False
