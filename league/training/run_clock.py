"""RunClock: the lr and entropy-bonus schedules' clock when they span the run's time.

RLlib's schedules are piecewise-linear over lifetime env steps. A schedule fitted
to one machine's 15 minutes (leduc's defaults reach their floor at 2.4M env steps)
ends halfway on a machine half as fast, and a 60-minute run spends its last 45
minutes at the floor. With `anneal_over: run` the learners are handed this clock
instead of the env-step count (`SampleAheadPPO.schedule_clock`): it runs from 0 to
the schedules' span as the run's time budget runs out, so the schedules end at
their final values as the run stops, whatever the machine.

A resumed run starts from the progress its checkpoint recorded and anneals what
is left over its new budget: the rates continue where they stood instead of
jumping back to their start.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class RunClock:
    """Progress through the run's time budget, as a point on the schedules' axis."""

    def __init__(
        self,
        span_steps: int,
        budget_seconds: float,
        start_progress: float = 0.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if span_steps < 1:
            raise ValueError(f"span_steps must be >= 1, got {span_steps}")
        if not (math.isfinite(budget_seconds) and budget_seconds > 0):
            raise ValueError(f"budget_seconds must be a positive number, got {budget_seconds}")
        if not 0.0 <= start_progress <= 1.0:  # NaN fails too
            raise ValueError(f"start_progress must be in [0, 1], got {start_progress}")
        self.span_steps = span_steps
        self.budget_seconds = budget_seconds
        self.start_progress = start_progress
        self._now = now
        self._started = now()

    def progress(self) -> float:
        """0 at the start of the first run, 1 when the time budget is spent."""
        spent = min(1.0, (self._now() - self._started) / self.budget_seconds)
        return self.start_progress + (1.0 - self.start_progress) * spent

    def __call__(self) -> int:
        """The schedules' timestep now (what RLlib's learners would read as the
        lifetime env steps)."""
        return round(self.progress() * self.span_steps)
