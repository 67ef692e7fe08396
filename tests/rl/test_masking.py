"""The idle-slice action mask: hand-derived rows, reading the mask back from observations, the partitioner."""

from __future__ import annotations

import numpy as np
import pytest

from wattsched.hardware.catalogue import load_gpu
from wattsched.rl.masking import ActionMask
from wattsched.rl.observation import ObservationSpec, QueueFeatures, encode_observation

GPU = load_gpu("a100-40gb")
SPEC = ObservationSpec.for_gpu(GPU, count_bins=8)
ALL = GPU.configuration_ids  # 1..12
# slices per configuration (mig configs): 1:1 2:2 3:3 4:4 5:2 6:3 7:4 8:5 9:4 10:5 11:6 12:7


def _allowed(mask: ActionMask, configuration: int, jobs: int, actions: tuple[int | str, ...]) -> set[object]:
    obs = encode_observation(configuration, 0.0, [], SPEC, QueueFeatures(jobs, 0, 0))
    return {actions[k] for k in np.flatnonzero(mask.of(obs))}


def test_hand_derived_rows() -> None:
    mask = ActionMask.idle_slices(GPU, SPEC, ALL)
    # in cfg 3 with 2 jobs: the configurations of <= 2 slices (1, 2, 5), and staying in 3
    assert _allowed(mask, 3, 2, ALL) == {1, 2, 3, 5}
    # no job: only the one-slice configuration, or stay
    assert _allowed(mask, 12, 0, ALL) == {1, 12}
    assert _allowed(mask, 1, 1, ALL) == {1}
    # 4 jobs: up to four slices
    assert _allowed(mask, 2, 4, ALL) == {1, 2, 3, 4, 5, 6, 7, 9}
    # 7 jobs is the overflow bin of count_bins = 8 (7 or more): everything
    assert _allowed(mask, 2, 7, ALL) == set(ALL)
    assert _allowed(mask, 2, 30, ALL) == set(ALL)


def test_restricted_action_set_and_a_current_configuration_outside_it() -> None:
    actions: tuple[int | str, ...] = (1, 2, 6, 9)
    mask = ActionMask.idle_slices(GPU, SPEC, actions)
    assert mask.n_actions == 4
    assert _allowed(mask, 3, 0, actions) == {1}  # 3 is not an action: staying is not one of the choices
    assert _allowed(mask, 6, 0, actions) == {1, 6}
    assert _allowed(mask, 3, 3, actions) == {1, 2, 6}


def test_batch_of_observations() -> None:
    mask = ActionMask.idle_slices(GPU, SPEC, ALL)
    rows = [
        encode_observation(c, 0.0, [], SPEC, QueueFeatures(n, 0, 0)) for c, n in ((3, 2), (12, 0), (1, 1))
    ]
    batch = mask.of(np.stack(rows))
    assert batch.shape == (3, 12)
    np.testing.assert_array_equal(batch[1], mask.of(rows[1]))
    assert batch.sum(axis=1).tolist() == [4, 2, 1]


def test_needs_the_count_block() -> None:
    with pytest.raises(ValueError, match="count_bins"):
        ActionMask.idle_slices(GPU, ObservationSpec.for_gpu(GPU), ALL)


def test_partitioner_never_chooses_a_masked_configuration() -> None:
    from wattsched.mig.partition.runner import run_day
    from wattsched.rl.config import EnvConfig
    from wattsched.rl.partitioner import DQNPartitioner, QNetwork
    from wattsched.workload.generators import WorkloadSpec, generate_jobs

    env = EnvConfig(count_bins=8, mask_idle_slices=True)
    size = env.observation_spec(GPU).size
    # A network that prefers configuration 12 (seven slices) everywhere, then 11, 10, ...: the mask must
    # overrule it, so each choice is the highest-numbered allowed configuration.
    weights = (np.zeros((4, size)), np.zeros((12, 4)))
    biases = (np.zeros(4), np.arange(12, dtype=float))
    policy = DQNPartitioner(QNetwork(weights, biases), env=env)
    seen: list[tuple[int, int | str, int | str]] = []
    decide = policy.decide

    ranked: list[list[int | str]] = []

    def recording(snapshot):  # type: ignore[no-untyped-def]
        choice = decide(snapshot)
        seen.append((len(snapshot.jobs), snapshot.configuration, choice))
        ranked.append(policy.ranked(snapshot))
        return choice

    policy.decide = recording  # type: ignore[method-assign]
    spec = WorkloadSpec(profile="alibaba-day", hours=3.0, rate_multiplier=2.5)
    run_day(generate_jobs(spec, 11), policy, horizon_s=spec.horizon_s)
    assert len(seen) > 20
    slices = {c: len(GPU.configuration(c).slices) for c in ALL}
    for (jobs, current, choice), order in zip(seen, ranked, strict=True):
        limit = 7 if jobs >= 7 else max(1, jobs)
        allowed = {c for c in ALL if slices[c] <= limit} | {current}
        assert choice == max(allowed, key=int), (jobs, current, choice)
        # What a rollout tries: the allowed configurations, best Q-value (here: highest number) first.
        assert order == sorted(allowed, key=int, reverse=True) and order[0] == choice
