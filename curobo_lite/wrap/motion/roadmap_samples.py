"""Where :class:`~curobo_lite.wrap.motion.roadmap.RoadmapPlanner` puts its nodes: the
approach and escape chains out of each goal, and the random samples (uniform, local, the
hand's corridor, the goals' regions). See the roadmap module's docstring for the scheme."""

from __future__ import annotations

import torch

from curobo_lite.types.math import quat_multiply, quat_rotate
from curobo_lite.wrap.ik.dls import dls_steps
from curobo_lite.wrap.trajopt.approach_seeds import retreat_configs

#: the narrow scale of the local samples, a fraction of ``local_std``
_NARROW = 0.4

#: damped least-squares steps of the plain chain (each configuration from the goal's)
_CHAIN_DLS = 6
#: the largest nudge (rad per joint) of an approach-chain step's starts (chain_variants)
_CHAIN_NUDGE = 0.15

#: escape chains: where a goal's chain along the hand's axis is cut short (another object
#: behind the hand), the hand also backs off along these directions of its own frame: along
#: the gap between the fingers (x, e.g. up a can grasped from the side) and halfway between
#: that and back; from the first :data:`_ESCAPE_GOALS` such goals (nearest the start first)
_ESCAPES = ((1.0, 0.0, 0.0), (-1.0, 0.0, 0.0), (1.0, 0.0, -1.0), (-1.0, 0.0, -1.0))
_ESCAPE_GOALS = 8

#: the corridor samples: hand position noise (m) about the start-goal line, orientation
#: noise (rad per axis), joint noise of their seeds (rad), and damped least-squares steps
_CORRIDOR_POSITION = 0.12
_CORRIDOR_ROTATION = 0.6
_CORRIDOR_SEED = 0.3
_CORRIDOR_DLS = 6
#: the goal-region samples (as many as half the corridor's, from the local share): offsets
#: (m) behind a goal's hand and turns (rad per axis) in its frame
_REGION_RADIUS = 0.15
_REGION_ROTATION = 0.4
#: t = u ** power, u uniform: most corridor samples near the goal, where the way is narrow
_CORRIDOR_POWER = 2.0
#: the goals (nearest the start in joint space) whose ways out the corridor samples follow
_CORRIDOR_GOALS = 4


class RoadmapSamples:
    """The node makers of :class:`~curobo_lite.wrap.motion.roadmap.RoadmapPlanner` (which
    supplies ``checker``, ``config``, ``dof``, ``_bounds``, ``_checked_states`` and
    ``_segments_valid``)."""

    def approach_chains(self, goals: torch.Tensor) -> list[torch.Tensor]:
        """Per goal ``[G, D]``: ``[L, D]`` configurations from the goal backing off along the
        hand's z axis, each valid and joined to the previous one by a valid segment, up to
        the first step that no variant passes; ``L = 1`` (the goal alone) without approach.

        With ``chain_variants`` (default 0: the chain ends at its first invalid step), a step
        past the break tries that many starts for its damped least-squares steps: the
        previous configuration, and the same nudged by up to ``_CHAIN_NUDGE`` rad per joint
        (seeded). The hand's path is the same; the arm's posture differs (a 7-joint arm has a
        free elbow): where the plain step drives the forearm into a shelf board, a nudged one
        often keeps it clear."""
        config = self.config
        steps = int(config.approach_distance / config.approach_step + 1e-9)
        G, D = goals.shape
        if steps == 0:
            return [goal[None] for goal in goals]
        # the plain chain first: every step solved from the goal configuration, all in one
        # batch, checked at once
        distance = config.approach_step * torch.arange(1, steps + 1, dtype=goals.dtype)
        plain = retreat_configs(
            self.checker.kinematics,
            goals[:, None].expand(G, steps, D),
            distance.to(goals.device).expand(G, steps),
            iterations=_CHAIN_DLS,
        )
        links_plain = torch.cat((goals[:, None], plain), dim=1)  # [G, steps + 1, D]
        ok = self.checker.validate(links_plain[:, 1:], config.exact_band)
        self._checked_states += ok.numel()
        ok &= self._segments_valid(
            links_plain[:, :-1].reshape(-1, D), links_plain[:, 1:].reshape(-1, D), config.resolution
        ).view(G, steps)
        length = 1 + ok.to(torch.int64).cumprod(dim=1).sum(dim=1)
        if bool((length == steps + 1).all()):
            return list(links_plain)
        if config.chain_variants == 0:
            return [links_plain[g, : int(length[g])] for g in range(G)]
        # where it breaks: nudged starts, step by step from the last good configuration
        generator = torch.Generator().manual_seed(config.seed)
        V = config.chain_variants
        nudge = _CHAIN_NUDGE * (2.0 * torch.rand(steps, V, D, generator=generator) - 1.0)
        nudge[:, 0] = 0.0
        nudge = nudge.to(goals)
        rows = torch.arange(G, device=goals.device)
        # beyond a chain's valid prefix: its last good configuration, until a variant grows it
        links = [
            links_plain[rows, torch.minimum(length - 1, torch.full_like(length, k))]
            for k in range(steps + 1)
        ]
        alive = length < steps + 1  # the chains still to extend
        for k in range(1, steps + 1):
            extend = alive & (length == k)
            if not bool(extend.any()):
                continue
            grow = extend.nonzero()[:, 0]  # only those chains' variants are solved
            R = grow.shape[0]
            previous = links[k - 1][grow]
            candidates = retreat_configs(
                self.checker.kinematics,
                goals[grow][:, None].expand(R, V, D),
                k * config.approach_step,
                iterations=3,
                initial=previous[:, None] + nudge[k - 1],
            )
            good = self.checker.validate(candidates, config.exact_band)
            self._checked_states += good.numel()
            good &= self._segments_valid(
                previous[:, None].expand(R, V, D).reshape(-1, D),
                candidates.reshape(-1, D),
                config.resolution,
            ).view(R, V)
            pick = good.to(torch.int8).argmax(dim=1)  # the first valid variant
            grown = good.any(dim=1)
            links[k][grow] = torch.where(
                grown[:, None],
                candidates[torch.arange(R, device=goals.device), pick],
                links[k][grow],
            )
            length[grow] += grown.long()
            alive[grow] = grown
        chains = torch.stack(links, dim=1)  # [G, steps + 1, D]
        return [chains[g, : int(length[g])] for g in range(G)]

    def escape_chains(
        self, goals: torch.Tensor, chains: list[torch.Tensor]
    ) -> list[tuple[int, torch.Tensor]]:
        """``(goal index, [L, D] chain)`` for the goals ``[G, D]`` whose approach chain
        (``chains``, :meth:`approach_chains`) is cut short: the hand backing off along each
        of :data:`_ESCAPES` (orientation held), up to the first invalid step; chains that
        leave the goal (``L >= 2``) only."""
        config = self.config
        steps = int(config.approach_distance / config.approach_step + 1e-9)
        cut = [g for g, chain in enumerate(chains) if chain.shape[0] < steps + 1]
        cut = cut[:_ESCAPE_GOALS]
        if steps == 0 or not cut:
            return []
        motion = torch.tensor(_ESCAPES, dtype=goals.dtype, device=goals.device)
        motion = motion / motion.norm(dim=-1, keepdim=True)
        C, E, D = len(cut), motion.shape[0], goals.shape[1]
        base = goals[cut][:, None, None].expand(C, E, steps, D)
        distance = config.approach_step * torch.arange(1, steps + 1, dtype=goals.dtype)
        links = retreat_configs(
            self.checker.kinematics,
            base,
            distance.to(goals.device).expand(C, E, steps),
            iterations=_CHAIN_DLS,
            axis=-motion[None, :, None].expand(C, E, steps, 3),
        )
        links = torch.cat((base[:, :, :1], links), dim=2)  # [C, E, steps + 1, D]
        ok = self.checker.validate(links[:, :, 1:], config.exact_band)
        self._checked_states += ok.numel()
        ok &= self._segments_valid(
            links[:, :, :-1].reshape(-1, D), links[:, :, 1:].reshape(-1, D), config.resolution
        ).view(C, E, steps)
        length = 1 + ok.to(torch.int64).cumprod(dim=-1).sum(dim=-1)  # [C, E]
        return [
            (cut[c], links[c, e, : int(length[c, e])])
            for c in range(C)
            for e in range(E)
            if int(length[c, e]) >= 2
        ]

    def _sample(
        self,
        n: int,
        centres: torch.Tensor,
        generator: torch.Generator,
        corridor: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """``[<= n, D]`` valid configurations: uniform, Gaussian around ``centres``, and in the
        hand's corridor from ``corridor = (start [D], ends [M, D])`` (:meth:`_corridor`) and
        about the ends (:meth:`_goal_region`); the uniform ones within the plan's box
        (``_bounds``; the position limits when ``None``), the others dropped outside it."""
        tensor_args = self.checker.tensor_args
        low, high = self.checker.robot_config.joint_limits.position.to(**tensor_args.as_kwargs())
        box = (low, high) if self._bounds is None else self._bounds
        n_local = int(round(self.config.local_fraction * n))
        n_corridor = 0 if corridor is None else int(round(self.config.corridor_fraction * n))
        n_corridor = min(n_corridor, n - n_local)
        # of the local share, as many as half the corridor's go to the goals' regions
        n_region = min(n_corridor // 2, n_local)
        n_local -= n_region
        uniform = torch.rand(
            n - n_local - n_region - n_corridor, self.dof, generator=generator, dtype=low.dtype
        )
        uniform = box[0].cpu() + (box[1] - box[0]).cpu() * uniform
        pick = torch.randint(centres.shape[0], (n_local,), generator=generator)
        noise = torch.randn(n_local, self.dof, generator=generator, dtype=low.dtype)
        # two scales: wide for the way there, narrow for the last turns near a goal
        narrow = torch.rand(n_local, 1, generator=generator, dtype=low.dtype) < 0.5
        scale = self.config.local_std * torch.where(narrow, _NARROW, 1.0)
        local = centres.cpu()[pick] + scale * noise
        q = torch.cat((uniform, local)).to(low.device)
        if n_corridor > 0:
            q = torch.cat((q, self._corridor(n_corridor, *corridor, generator)))
        if n_region > 0:
            q = torch.cat((q, self._goal_region(n_region, corridor[1], generator)))
        q = torch.minimum(torch.maximum(q, low), high)
        if self._bounds is not None:
            q = q[((q >= box[0]) & (q <= box[1])).all(-1)]
        ok = self.checker.validate(q, self.config.exact_band)
        self._checked_states += q.shape[0]
        return q[ok]

    def _goal_region(self, n: int, ends: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """``[n, D]`` configurations whose hand lies near that of one of ``ends [M, D]`` (the
        goals and the chains' ends), behind it along its own axis: offsets in the hand's
        frame up to :data:`_REGION_RADIUS` with ``z <= 0``, turned by up to about
        :data:`_REGION_ROTATION`, reached by damped least-squares steps from the end's own
        configuration. A grasp boxed in by other objects leaves by a short move that backs off
        and turns at once; joint-space noise around the goal rarely finds it."""
        dtype = ends.dtype
        kinematics = self.checker.kinematics
        state = kinematics.forward(ends, spheres=False)
        position, quaternion = state.ee_position.cpu(), state.ee_quaternion.cpu()
        pick = torch.randint(ends.shape[0], (n,), generator=generator)
        offset = torch.randn(n, 3, generator=generator, dtype=dtype)
        offset = offset / offset.norm(dim=-1, keepdim=True).clamp(min=1e-9)
        offset[:, 2] = -offset[:, 2].abs()
        offset *= _REGION_RADIUS * torch.rand(n, 1, generator=generator, dtype=dtype)
        target = position[pick] + quat_rotate(quaternion[pick], offset)
        turn = _REGION_ROTATION * torch.randn(n, 3, generator=generator, dtype=dtype)
        angle = turn.norm(dim=-1, keepdim=True).clamp(min=1e-9)
        turn_q = torch.cat((torch.cos(0.5 * angle), torch.sin(0.5 * angle) * turn / angle), -1)
        target_q = quat_multiply(quaternion[pick], turn_q)  # turned in the hand's frame
        device = ends.device
        return dls_steps(
            kinematics, ends[pick.to(device)], target.to(device), target_q.to(device), _CORRIDOR_DLS
        )

    def _corridor(
        self, n: int, start: torch.Tensor, ends: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        """``[n, D]`` configurations whose hand lies about the way from one of ``ends [M, D]``
        (the goals and the approach chains' outer ends) to ``start [D]``: a point ``t`` of the
        straight line between their hand positions (noise ``_CORRIDOR_POSITION``), the
        orientation blended between theirs by ``t`` and turned by up to about
        ``_CORRIDOR_ROTATION``, reached by ``_CORRIDOR_DLS`` damped least-squares steps from the
        configuration ``t`` of the way between theirs (noise ``_CORRIDOR_SEED``)."""
        dtype = start.dtype
        kinematics = self.checker.kinematics
        state = kinematics.forward(torch.cat((start[None], ends)), spheres=False)
        position, quaternion = state.ee_position.cpu(), state.ee_quaternion.cpu()
        pick = 1 + torch.randint(ends.shape[0], (n,), generator=generator)
        t = torch.rand(n, 1, generator=generator, dtype=dtype) ** _CORRIDOR_POWER
        target = position[pick] + t * (position[0] - position[pick])
        target += _CORRIDOR_POSITION * torch.randn(n, 3, generator=generator, dtype=dtype)
        q_end, q_start = quaternion[pick], quaternion[0].expand(n, 4)
        q_start = torch.where((q_end * q_start).sum(-1, keepdim=True) < 0.0, -q_start, q_start)
        blend = q_end + t * (q_start - q_end)
        blend = blend / blend.norm(dim=-1, keepdim=True)
        turn = _CORRIDOR_ROTATION * torch.randn(n, 3, generator=generator, dtype=dtype)
        angle = turn.norm(dim=-1, keepdim=True).clamp(min=1e-9)
        turn_q = torch.cat((torch.cos(0.5 * angle), torch.sin(0.5 * angle) * turn / angle), -1)
        target_q = quat_multiply(turn_q, blend)
        seed = ends.cpu()[pick - 1] + t * (start.cpu() - ends.cpu()[pick - 1])
        seed += _CORRIDOR_SEED * torch.randn(n, self.dof, generator=generator, dtype=dtype)
        device = start.device
        return dls_steps(
            kinematics,
            seed.to(device),
            target.to(device),
            target_q.to(device),
            _CORRIDOR_DLS,
        )
