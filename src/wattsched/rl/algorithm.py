"""Stable-baselines3's DQN with two additions: action masking and the double-DQN target.

Import this module only to train or load a model: it imports torch and stable-baselines3 at the top
(:mod:`wattsched.rl.dqn` imports it lazily).

* **Masking** (:class:`~wattsched.rl.masking.ActionMask`): the Q-network sets the Q-value of every action that
  is masked in the observed state to :data:`MASKED_Q`, so the greedy choice and the target's maximum only see
  allowed actions; exploration (the warm-up and the ε branch) draws uniformly among the allowed actions.
  Actions in the replay buffer are therefore always allowed, and the loss only ever reads allowed Q-values.
* **Double DQN** (van Hasselt et al., 2016): the online network picks the next action and the target network
  values it, which removes the max operator's upward bias on noisy rewards.

Without a mask and with ``double_q=False`` the algorithm is SB3's DQN, with one difference in where its random
numbers come from: numpy's global generator is neither seeded nor drawn from (see :class:`MaskedDQN`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from stable_baselines3 import DQN
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork
from torch.nn import functional

from wattsched.rl.masking import ActionMask

__all__ = ["MASKED_Q", "MaskedDQN", "MaskedDQNPolicy", "MaskedQNetwork"]

#: Q-value given to masked actions: far below any return the reward scale can produce.
MASKED_Q = -1e9


class MaskedQNetwork(QNetwork):
    """SB3's Q-network; with ``action_mask``, masked actions get :data:`MASKED_Q`."""

    def __init__(self, *args: Any, action_mask: ActionMask | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.action_mask = action_mask
        if action_mask is not None:
            # Not part of the state dict: the mask is rebuilt from the saved config, never learned.
            self.register_buffer("allowed", torch.as_tensor(action_mask.allowed), persistent=False)

    def allowed_actions(self, observations: torch.Tensor) -> torch.Tensor:
        """Boolean mask of shape (batch, actions) for a batch of observations."""
        assert self.action_mask is not None
        (c0, cn), (n0, nn) = self.action_mask.config_block, self.action_mask.count_block
        config = observations[:, c0 : c0 + cn].argmax(dim=1)
        count = observations[:, n0 : n0 + nn].argmax(dim=1)
        table = self.get_buffer("allowed")
        allowed: torch.Tensor = table[config, count]
        return allowed

    def forward(self, obs: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor:
        q_values: torch.Tensor = super().forward(obs)
        if self.action_mask is None:
            return q_values
        assert isinstance(obs, torch.Tensor)
        return q_values.masked_fill(~self.allowed_actions(obs.float()), MASKED_Q)


class MaskedDQNPolicy(DQNPolicy):
    """SB3's DQN policy whose Q-networks apply ``action_mask`` (``None``: no mask)."""

    def __init__(self, *args: Any, action_mask: ActionMask | None = None, **kwargs: Any) -> None:
        self.action_mask = action_mask  # read by make_q_net, which the parent's __init__ calls
        super().__init__(*args, **kwargs)

    def make_q_net(self) -> MaskedQNetwork:
        net_args = self._update_features_extractor(self.net_args, features_extractor=None)
        return MaskedQNetwork(**net_args, action_mask=self.action_mask).to(self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()
        data["action_mask"] = self.action_mask
        return data


class MaskedDQN(DQN):
    """SB3's DQN with masked exploration and an optional double-DQN target (``double_q``).

    A training is a function of its seed alone, and leaves numpy's global generator as it found it: the ε
    draw of exploration comes from a :class:`numpy.random.Generator` seeded with ``seed`` (created with the
    model, and again where SB3 reseeds, on loading a saved model; never saved), and SB3's replay buffers,
    which draw their batches from numpy's global generator, run on a state of their own (seeded with
    ``seed`` too) that is swapped in for each batch of gradient steps and the caller's put back afterwards.
    torch's generator is still seeded as SB3 does (it initialises the networks).
    """

    policy_aliases = {"MlpPolicy": MaskedDQNPolicy}  # noqa: RUF012 (SB3 convention)

    def __init__(self, *args: Any, double_q: bool = False, **kwargs: Any) -> None:
        self.double_q = double_q
        self._seed_streams(kwargs.get("seed"))
        super().__init__(*args, **kwargs)

    def _seed_streams(self, seed: int | None) -> None:
        """The exploration generator and the replay buffer's numpy state, both from ``seed``."""
        self.exploration_rng = np.random.default_rng(seed)
        self._buffer_state = np.random.RandomState(seed).get_state()

    def set_random_seed(self, seed: int | None = None) -> None:
        """SB3's seeding (torch, the action space, the environments) without seeding numpy's or Python's
        global generators."""
        if seed is None:
            return
        torch.manual_seed(seed)
        self.action_space.seed(seed)
        if self.env is not None:
            self.env.seed(seed)
        self._seed_streams(seed)

    def _excluded_save_params(self) -> list[str]:
        names: list[str] = super()._excluded_save_params()
        return [*names, "exploration_rng", "_buffer_state"]

    @contextmanager
    def _own_buffer_stream(self) -> Iterator[None]:
        """Run the block on the replay buffer's own numpy state; the caller's global state is put back."""
        saved = np.random.get_state()
        np.random.set_state(self._buffer_state)
        try:
            yield
        finally:
            self._buffer_state = np.random.get_state()
            np.random.set_state(saved)

    @property
    def action_mask(self) -> ActionMask | None:
        mask: ActionMask | None = getattr(self.policy, "action_mask", None)
        return mask

    def _random_actions(self, observations: np.ndarray) -> np.ndarray:
        """One uniformly drawn allowed action per observation (the action space's seeded generator)."""
        rng = self.action_space.np_random
        mask = self.action_mask
        if mask is None:
            return np.asarray([self.action_space.sample() for _ in range(len(observations))])
        return np.asarray([rng.choice(np.flatnonzero(row)) for row in mask.of(observations)])

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        if deterministic or self.exploration_rng.random() >= self.exploration_rate:
            return self.policy.predict(observation, state, episode_start, deterministic)
        assert isinstance(observation, np.ndarray)
        batch = observation
        if batch.ndim == 1:
            return self._random_actions(batch[None, :])[0], state
        return self._random_actions(batch), state

    def _sample_action(
        self, learning_starts: int, action_noise: Any = None, n_envs: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        if self.action_mask is None or self.num_timesteps >= learning_starts:
            return super()._sample_action(learning_starts, action_noise, n_envs)
        assert self._last_obs is not None
        action = self._random_actions(np.asarray(self._last_obs))
        return action, action

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        with self._own_buffer_stream():
            if self.double_q:
                self._train_double_q(gradient_steps, batch_size)
            else:
                super().train(gradient_steps, batch_size)

    def _train_double_q(self, gradient_steps: int, batch_size: int) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        assert self.replay_buffer is not None
        losses = []
        for _ in range(gradient_steps):
            batch = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            discounts = batch.discounts if batch.discounts is not None else self.gamma
            with torch.no_grad():
                # Double DQN: the online network chooses the next action, the target network values it.
                next_actions = self.q_net(batch.next_observations).argmax(dim=1, keepdim=True)
                next_values = self.q_net_target(batch.next_observations).gather(1, next_actions)
                targets = batch.rewards + (1 - batch.dones) * discounts * next_values
            values = self.q_net(batch.observations).gather(1, batch.actions.long())
            loss = functional.smooth_l1_loss(values, targets)
            losses.append(loss.item())
            self.policy.optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", float(np.mean(losses)))
