"""A lazy roadmap in joint space, built and checked in batches: the fast geometric planner.

OMPL's planners call their validity checker once per state, from C++ into Python: about a
millisecond per call with curobo_lite's kernels on a CPU, so RRTConnect needs seconds in a
cluttered shelf. :class:`RoadmapPlanner` is organised around batches instead (a Lazy PRM,
Bohlin & Kavraki 2000, the scheme cuRobo's graph planner also batches):

1. **Approach chains.** Grasp goals sit between shelf boards and objects: the only way in is
   along the hand's axis. From each goal configuration the hand backs off along its own z axis
   in ``approach_step`` steps up to ``approach_distance``
   (:func:`~curobo_lite.wrap.trajopt.approach_seeds.retreat_configs`, all steps in one batch,
   up to the first invalid one; with ``chain_variants``, past it from several nudged starts so
   that the free elbow can keep the forearm off the boards); the chain, every configuration
   and segment checked, joins the roadmap as known-good edges.
2. **Samples.** Random configurations, half uniform within the position limits, half around
   the start and the chains' outer ends (two scales), a quarter in the hand's *corridor*
   (hand poses about the line from a goal's hand to the start's, reached by a few damped
   least-squares steps from configurations between the two: in a cage the arm's way out is a
   narrow passage that uniform samples rarely hit), are validated in one batch; the valid
   ones become nodes, joined to their ``neighbors`` nearest nodes by edges that are *not*
   checked yet. The start gets a straight-shot candidate edge to every goal and chain end.
3. **Lazy search.** Dijkstra (SciPy) from the start to the nearest goal over the edges not
   known to be invalid; only the edges of that path are checked (one batched call, coarse
   samples first, then every ``resolution`` rad); invalid ones are removed and the search
   repeats, until a path is valid or the graph is cut (then more samples, up to
   ``max_samples``).
4. **Shortcuts.** The path's waypoints are joined past each other wherever the straight
   segment is valid, greedy from the start (the segments out of each node it stops at
   checked in one batch).

Every check is :meth:`RobotWorld.validate_segments` (limits, world and self-collision on the
spheres); an optional second judge (``segment_check``, MotionGen's exact mesh check) sees only
the segments of a candidate path and of its shortcuts. The result is a
:class:`~curobo_lite.wrap.motion.graph_planner.GraphPlanResult`.

Tried and left out: corridors of hand poses out of the goal (straight to the start's hand
pose, or level toward the base) as extra nodes: on MBM's bookshelf and cage problems they
solved nothing that the samples did not. Likewise chains that pull the hand back level toward
the base from 9 cm up the approach chain (a lift-then-pull grasp retreat) on MBM's cage: they
often reach 27 cm, but the hand still points down at the front bars there, and the roadmaps
needed as many samples as without them. What did help there: the corridor samples (step 2).
Also tried on MBM (first 10-12 of table_under_pick, cage, box, table_pick, interleaved in one
process, 1 thread CPU time) and left out: a scouting pass every 0.5 rad ahead of the coarse
one on long edges (a third fewer coarse samples, but the extra batched call per round ate the
saving: medians within noise, cage 10 % slower); coarse passes that skip the mesh query of
the samples the spheres are unsure of (table_under_pick 5 % faster, cage and box 10 % slower:
more edges fail only in the fine pass); after a round of samples leaves the goals cut off,
extra samples near the goals' side or on lines from it to the start's side (bookshelf_thin 23
still spends its 3 072 samples, its goals' side grows from 12 to 19 nodes; cage 2, 25, 32, 41,
70, which need 2-4 rounds, were no faster). After the pass/fail world kernel
(``kernels/collision_verdict_kernels.py``) made the world query the cheapest part of a sample
(FK ~3.5, self-collision ~5.5, world ~3 us), skipping the self-collision query of samples the
world already fails: within noise (first 10 of table_under_pick and cage, sums 4.24 vs 4.27 s
and 3.99 vs 3.74 s CPU). Cutting the swept mesh check's open pieces into pieces of at most
2 cm (or 1 cm) of motion, their new ends measured in one batch, so that fewer sequential rounds
march near the obstacles: no faster (first 10, CPU sums: table_under_pick 4.12 vs 4.05 s,
exact_check 0.64 vs 0.63 s; cage 4.03 vs 4.65 s): the extra samples cost what the rounds save.
More speculative edges per search round (:data:`_ROUND_EDGES` 64, or 128 with
:data:`_ROUND_SLACK` 1.5; first 30 of cage and table_under_pick, 15 of the other five families,
interleaved, load ~0.9): table_under_pick's rounds 14.5 -> 7 (median) and its CPU sum -4 %,
cage -7 %, but box +15 % and bookshelf_tall +17 % (the extra samples): no clear gain.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import dijkstra

from curobo_lite.opt.options import CheckedOptions, as_float, as_int, options_from_dict
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.robot_world import RobotWorld
from curobo_lite.wrap.motion.graph_planner import GraphPlanResult
from curobo_lite.wrap.motion.joint_barriers import JointBarriers
from curobo_lite.wrap.motion.roadmap_samples import (  # noqa: F401 (tests read these)
    _CORRIDOR_GOALS,
    _ESCAPES,
    _REGION_RADIUS,
    RoadmapSamples,
)

#: edge states: not checked, valid on the spheres (awaiting the segment check), valid, invalid,
#: and passed the coarse samples only (:data:`_COARSE`; the fine pass is still to come)
_UNCHECKED, _SPHERES, _VALID, _INVALID, _ROUGH = 0, 1, 2, -1, 3

#: a second judge of segments: ``(q_from [E, D], q_to [E, D]) -> (ok [E], clearance [E])``
SegmentCheck = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]

#: edge code base: ``i * _CODE + j`` (up to 2**32 nodes)
_CODE = 1 << 32

#: coarse resolution (rad) of the first pass over an edge: most invalid edges fail it, at a
#: fifth of the fine pass's samples
_COARSE = 0.1

#: the lazy search's speculative checks: with the shortest path's unchecked edges, the
#: unchecked edges of the paths up to this factor longer (cheapest through them first), up
#: to :data:`_ROUND_EDGES` per round: one batched call instead of one round per path
_ROUND_SLACK = 1.25
_ROUND_EDGES = 32

#: greedy shortcut passes over a path. One: a second pass over the kept nodes would retry only
#: pairs the first refused (from each kept node every later node was tried), the same checks
#: with the same answers: on the first 30 of MBM cage and table_under_pick the paths were the
#: same with 1 and 2, the shortcut's sphere-check calls 5 instead of 8-10 (median)
_SHORTCUT_ROUNDS = 1


@dataclass
class RoadmapConfig(CheckedOptions):
    """Options of :class:`RoadmapPlanner`.

    Attributes:
        num_samples: configurations drawn per round of sampling (the valid ones are kept).
        max_samples: roadmap size (valid samples) after which the planner gives up.
        neighbors: each node's edge candidates (nearest nodes in joint space).
        resolution: largest joint step (rad) between checked samples of an edge.
        approach_distance: metres the hand backs off along its z axis from each goal (0: no
            approach chains).
        approach_step: metres between the configurations of an approach chain.
        chain_variants: where an approach chain breaks, starts tried per further step (the
            last good configuration and the same nudged; 0: the chain ends there). Off by
            default: on the first 20 problems of each MBM family and the historically hard
            ones, the escape chains and goal-region samples found every path without them,
            and cage plans took a fifth less time (median 0.74 -> 0.60 s CPU, first 12).
        local_fraction: share of the samples drawn around the start and the chains' ends.
        corridor_fraction: share of the samples drawn in the hand's corridor: hand poses
            about the straight line from the goal's hand pose to the start's (orientations
            between theirs, turned at random), reached by a few damped least-squares steps
            from configurations between the goal and the start. In a cage or a cubby the
            way out is a narrow passage for the arm; these postures follow the hand through
            it where uniform joint samples rarely land.
        local_std: standard deviation (rad) of those samples (half of them at 0.4 of it).
        exact_band: metres: a configuration whose spheres reach at most this deep into an
            obstacle is judged on the collision meshes (:meth:`RobotWorld.validate`; 0: spheres
            only).
        time_limit: seconds for the search, a safety net: the budget is ``max_samples`` (a
            count, so that a problem's outcome does not depend on the machine's load).
        seed: seed of the sampler (each call restarts it: the same problem gives the same path).
        max_goals: goal configurations used, the first ones given (MotionGen passes its IK
            solutions nearest the start first); 0: all. Chains, samples and edge checks grow
            with their number, and the nearest few are the likely ends of a short path.
    """

    num_samples: int = 512
    max_samples: int = 3072
    neighbors: int = 10
    resolution: float = 0.02
    approach_distance: float = 0.24
    approach_step: float = 0.03
    chain_variants: int = 0
    local_fraction: float = 0.5
    corridor_fraction: float = 0.25
    local_std: float = 0.5
    exact_band: float = 0.0
    time_limit: float = 10.0
    seed: int = 0
    max_goals: int = 8

    section = "roadmap"

    def __post_init__(self) -> None:
        s = self.section
        self.num_samples = as_int(s, "num_samples", self.num_samples, 1)
        self.max_samples = as_int(s, "max_samples", self.max_samples, 1)
        self.neighbors = as_int(s, "neighbors", self.neighbors, 1)
        self.seed = as_int(s, "seed", self.seed)
        self.max_goals = as_int(s, "max_goals", self.max_goals, 0)
        self.chain_variants = as_int(s, "chain_variants", self.chain_variants, 0)
        for key in ("resolution", "approach_step", "local_std", "time_limit"):
            setattr(self, key, as_float(s, key, getattr(self, key), 0.0, low_open=True))
        self.approach_distance = as_float(s, "approach_distance", self.approach_distance, 0.0)
        self.local_fraction = as_float(s, "local_fraction", self.local_fraction, 0.0, 1.0)
        self.corridor_fraction = as_float(s, "corridor_fraction", self.corridor_fraction, 0.0, 1.0)
        self.exact_band = as_float(s, "exact_band", self.exact_band, 0.0)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RoadmapConfig:
        return options_from_dict(cls, data)


class _Graph:
    """Nodes ``[N, D]`` and the candidate edges between them, kept as arrays (the search's
    sparse matrix follows them): endpoints ``i < j``, joint-space length
    and state (:data:`_UNCHECKED`, :data:`_SPHERES`, :data:`_VALID`, :data:`_INVALID`)."""

    def __init__(self, nodes: torch.Tensor) -> None:
        self.nodes = nodes
        self.pairs = np.zeros((0, 2), dtype=np.int64)
        self.length = np.zeros(0)
        self.states = np.zeros(0, dtype=np.int8)
        self.clearance: dict[tuple[int, int], float] = {}
        self._row: dict[int, int] = {}  # edge code i * 2**32 + j -> row
        self._matrix: csr_matrix | None = None  # the search's (see _search_matrix)
        self._matrix_rows = np.zeros(0, dtype=np.int64)
        self._matrix_edges = 0

    def add_nodes(self, nodes: torch.Tensor) -> None:
        self.nodes = torch.cat((self.nodes, nodes))

    def add_edges(self, pairs: np.ndarray) -> None:
        """Candidate edges ``pairs [M, 2]`` (either order; present ones are kept as they are)."""
        if len(pairs) == 0:
            return
        pairs = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        codes = np.unique(pairs[:, 0] * _CODE + pairs[:, 1])
        codes = codes[[code not in self._row for code in codes.tolist()]]
        if len(codes) == 0:
            return
        new = np.stack((codes // _CODE, codes % _CODE), axis=1)
        ends = torch.as_tensor(new, device=self.nodes.device)
        length = (self.nodes[ends[:, 0]] - self.nodes[ends[:, 1]]).norm(dim=-1).cpu().numpy()
        first = len(self.states)
        self._row.update(zip(codes.tolist(), range(first, first + len(codes))))
        self.pairs = np.concatenate((self.pairs, new))
        self.length = np.concatenate((self.length, np.maximum(length, 1e-9)))
        self.states = np.concatenate((self.states, np.zeros(len(codes), dtype=np.int8)))

    def row(self, i: int, j: int) -> int:
        """The row of the edge between nodes ``i`` and ``j`` (it must exist)."""
        return self._row[min(i, j) * _CODE + max(i, j)]

    def state(self, i: int, j: int) -> int | None:
        row = self._row.get(min(i, j) * _CODE + max(i, j))
        return None if row is None else int(self.states[row])

    def set_state(self, i: int, j: int, state: int) -> None:
        code = min(i, j) * _CODE + max(i, j)
        if code not in self._row:
            self.add_edges(np.array([[i, j]]))
        self.states[self._row[code]] = state

    def connect_neighbors(self, k: int) -> None:
        """Candidate edges from every node to its ``k`` nearest nodes."""
        n = self.nodes.shape[0]
        k = min(k, n - 1)
        if k < 1:
            return
        distance = torch.cdist(self.nodes, self.nodes)
        distance.fill_diagonal_(math.inf)
        nearest = distance.topk(k, dim=1, largest=False).indices.cpu().numpy()
        self.add_edges(np.stack((np.repeat(np.arange(n), k), nearest.reshape(-1)), axis=1))

    def _search_matrix(self) -> csr_matrix:
        """The symmetric sparse matrix of the edges, invalid ones weighing ``inf`` (never
        relaxed). Its structure is rebuilt only when edges or nodes were added (each search
        round just rewrites the weights): SciPy's undirected search would symmetrise the
        matrix again on every call."""
        n, m = self.nodes.shape[0], len(self.states)
        if self._matrix is None or self._matrix.shape[0] != n or self._matrix_edges != m:
            a, b = self.pairs[:, 0], self.pairs[:, 1]
            tag = np.arange(1, 2 * m + 1, dtype=np.float64)  # which edge each entry is, + 1
            ends = (np.concatenate((a, b)), np.concatenate((b, a)))
            self._matrix = coo_matrix((tag, ends), shape=(n, n)).tocsr()
            self._matrix_rows = (self._matrix.data.astype(np.int64) - 1) % max(m, 1)
            self._matrix_edges = m
        rows = self._matrix_rows
        self._matrix.data = np.where(self.states[rows] >= 0, self.length[rows], np.inf)
        return self._matrix

    def shortest_path(
        self, source: int, targets: list[int], slack: float = 0.0, limit: int = 0
    ) -> tuple[list[int], np.ndarray] | None:
        """Node indices of the shortest path from ``source`` to the nearest of ``targets``
        over the edges not known to be invalid (``None`` when none is connected), and the
        rows of up to ``limit`` unchecked edges on paths at most ``1 + slack`` times its
        length, cheapest path through them first (none with ``limit = 0``)."""
        if not (self.states >= 0).any():
            return None
        graph = self._search_matrix()
        cost, previous = dijkstra(graph, directed=True, indices=source, return_predecessors=True)
        best = min(targets, key=lambda t: cost[t])
        if not math.isfinite(cost[best]):
            return None
        path = [best]
        while path[-1] != source:
            path.append(int(previous[path[-1]]))
        extra = np.zeros(0, dtype=np.int64)
        unchecked = np.flatnonzero(self.states == _UNCHECKED)
        if limit > 0 and len(unchecked):
            to_goal = dijkstra(graph, directed=True, indices=targets, min_only=True)
            a, b = self.pairs[unchecked, 0], self.pairs[unchecked, 1]
            through = self.length[unchecked] + np.minimum(
                cost[a] + to_goal[b], cost[b] + to_goal[a]
            )
            near = np.flatnonzero(through <= (1.0 + slack) * cost[best])
            extra = unchecked[near[np.argsort(through[near], kind="stable")[:limit]]]
        return path[::-1], extra


class RoadmapPlanner(RoadmapSamples):
    """Lazy roadmap planning for ``checker``'s robot in ``checker``'s (shared) world.

    Args:
        checker: the :class:`RobotWorld` whose checks the paths pass.
        config: :class:`RoadmapConfig` (default options when ``None``).
        barriers: the robot's full-turn joint barriers (:class:`JointBarriers`, shared with
            the caller's goal choice; its own when ``None``).
    """

    def __init__(
        self,
        checker: RobotWorld,
        config: RoadmapConfig | None = None,
        barriers: JointBarriers | None = None,
    ) -> None:
        self.checker = checker
        self.config = config or RoadmapConfig()
        self.dof = checker.kinematics.dof
        self._checked_states = 0
        self._checked_motions = 0
        self.barriers = barriers if barriers is not None else JointBarriers(checker)
        # the box the samples keep to in this plan (JointBarriers.piece; None: the limits)
        self._bounds: tuple[torch.Tensor, torch.Tensor] | None = None

    def _segments_valid(
        self, q_from: torch.Tensor, q_to: torch.Tensor, resolution: float
    ) -> torch.Tensor:
        self._checked_motions += q_from.shape[0]
        return self.checker.validate_segments(
            q_from, q_to, resolution, exact_band=self.config.exact_band
        )

    @torch.no_grad()
    def plan(
        self,
        start: torch.Tensor,
        goal: torch.Tensor,
        segment_check: SegmentCheck | None = None,
    ) -> GraphPlanResult:
        """A valid path from ``start [D]`` to ``goal [D]`` or to whichever of several goal
        configurations ``goal [G, D]`` is nearest along the roadmap (``goal_index``). Start and
        goals must be valid (:meth:`RobotWorld.validate`).

        ``segment_check(q_from [E, D], q_to [E, D]) -> (ok [E], clearance [E])``, e.g. the
        exact check on the collision meshes, is a second judge of the segments that passed on
        the spheres: it runs on a candidate path's segments only (and on the shortcuts), and a
        segment it refuses is removed from the roadmap like any invalid edge. The result's
        ``clearance`` is then the smallest clearance it reported along the returned path.

        The samples keep to the part of each full-turn joint's range that the start can reach,
        up to a quarter turn beyond the start's and the goals' values
        (:meth:`~curobo_lite.wrap.motion.joint_barriers.JointBarriers.sample_box`): a sample
        beyond a joint's self-collision barrier never joins the start's part of the roadmap."""
        if goal.shape[-1:] != (self.dof,) or goal.ndim not in (1, 2) or goal.numel() == 0:
            raise InputValueError(
                f"goal: expected [{self.dof}] or [G, {self.dof}], received {tuple(goal.shape)}"
            )
        if start.shape != (self.dof,):
            raise InputValueError(f"start: expected [{self.dof}], received {tuple(start.shape)}")
        config = self.config
        t_start = time.perf_counter()
        self._checked_states = self._checked_motions = 0
        self._segment_check = segment_check
        goals = goal.reshape(-1, self.dof).to(start)
        if config.max_goals > 0:
            goals = goals[: config.max_goals]
        self._bounds = self.barriers.sample_box(start, goals)
        G = goals.shape[0]
        generator = torch.Generator().manual_seed(config.seed)
        chains = self.approach_chains(goals)
        every = list(enumerate(chains)) + self.escape_chains(goals, chains)
        graph = _Graph(torch.cat([start[None], goals] + [c[1:] for _, c in every]))
        targets = list(range(1, 1 + G))
        offset = 1 + G
        links, shots = [], []
        for g, chain in every:
            previous = 1 + g
            for _ in range(1, chain.shape[0]):
                links.append((previous, offset))
                previous = offset
                offset += 1
            # the straight shot from the start to the chain's outer end (or the goal itself)
            shots.append((0, previous))
        graph.add_edges(np.array(links + shots))
        rows = [graph.row(a, b) for a, b in links]
        graph.states[rows] = _SPHERES if segment_check else _VALID
        centres = torch.cat([start[None]] + [chain[-1:] for _, chain in every])
        # the corridor from the goals nearest the start (and their chains' ends): among
        # dozens of IK solutions, most would only thin its samples out
        near = (goals - start).norm(dim=-1).argsort()[:_CORRIDOR_GOALS].tolist()
        corridor = (start, torch.cat([goals[near]] + [chains[g][-1:] for g in near]))
        samples = 0
        found = None
        while found is None and time.perf_counter() - t_start <= config.time_limit:
            path = self._lazy_search(graph, targets, t_start)
            if path is None:  # cut off: more samples, unless the budget is spent
                # (or the clock stopped the search: a round of samples would go unsearched)
                if (
                    samples >= config.max_samples
                    or time.perf_counter() - t_start > config.time_limit
                ):
                    break
                new = self._sample(config.num_samples, centres, generator, corridor)
                samples += max(1, new.shape[0])
                graph.add_nodes(new)
                graph.connect_neighbors(config.neighbors)
                continue
            found = self._shortcut_checked(graph, path, _SHORTCUT_ROUNDS)
        plan_time = time.perf_counter() - t_start
        if found is None:
            return GraphPlanResult(
                False, None, plan_time, 0.0, self._checked_states, self._checked_motions
            )
        keep, clearance = found
        return GraphPlanResult(
            True,
            graph.nodes[keep],
            plan_time,
            0.0,
            self._checked_states,
            self._checked_motions,
            targets.index(keep[-1]),
            clearance=min(clearance) if self._segment_check is not None else math.nan,
        )

    def _lazy_search(self, graph: _Graph, targets: list[int], t_start: float) -> list[int] | None:
        """Shortest paths until one is valid on the spheres, or the graph is cut (``None``).

        A round checks the shortest path's unchecked edges on the coarse samples only, in one
        call with the unchecked edges of the nearly as short paths (:data:`_ROUND_SLACK`,
        :data:`_ROUND_EDGES`): those are the edges the next rounds would check. The fine pass
        runs on the edges of a path that has passed the coarse samples everywhere: most
        invalid edges never cost it."""
        final = _SPHERES if self._segment_check is not None else _VALID
        while time.perf_counter() - t_start <= self.config.time_limit:
            found = graph.shortest_path(0, targets, _ROUND_SLACK, _ROUND_EDGES)
            if found is None:
                return None
            path, extra = found
            rows = np.array([graph.row(a, b) for a, b in zip(path[:-1], path[1:])], dtype=np.int64)
            unchecked = rows[graph.states[rows] == _UNCHECKED]
            if len(unchecked):
                rows = np.unique(np.concatenate((unchecked, extra)))
                fine = self.config.resolution >= _COARSE
                ok = self._rows_valid(graph, rows, max(_COARSE, self.config.resolution))
                graph.states[rows] = np.where(ok, final if fine else _ROUGH, _INVALID)
                continue
            rough = rows[graph.states[rows] == _ROUGH]
            if not len(rough):
                return path
            ok = self._rows_valid(graph, rough, self.config.resolution)
            graph.states[rough] = np.where(ok, final, _INVALID)
        return None

    def _rows_valid(self, graph: _Graph, rows: np.ndarray, resolution: float) -> np.ndarray:
        """``[R]`` bool: the edges ``rows`` of ``graph`` pass the samples ``resolution`` apart."""
        ends = torch.as_tensor(graph.pairs[rows], device=graph.nodes.device)
        ok = self._segments_valid(graph.nodes[ends[:, 0]], graph.nodes[ends[:, 1]], resolution)
        return ok.cpu().numpy()

    def _shortcut_checked(
        self, graph: _Graph, path: list[int], rounds: int = 2
    ) -> tuple[list[int], list[float]] | None:
        """Shortcuts of the roadmap path ``path`` (node indices), greedy from the start: the
        candidate segments out of each node the greedy choice stops at checked on the spheres
        in one batch (the farthest that passes is taken), then the segments chosen by the
        segment check (a refused shortcut is dropped and the choice redone).
        Returns the kept nodes and each segment's clearance (``inf`` without a segment
        check), or ``None`` when the segment check refuses one of the roadmap's own edges
        (it is then marked invalid: search again)."""
        nodes = list(path)
        clearance: dict[tuple[int, int], float] = {}
        for _ in range(rounds):
            q = graph.nodes[nodes]
            K = len(nodes)
            # the shortcuts from each node the greedy choice reaches on the coarse samples (one
            # batch per node: the rows of the nodes it passes by are never needed), then the
            # fine pass on the chosen ones only (a refused one is dropped and the choice redone)
            reach = torch.zeros(K, K, dtype=torch.bool)
            fine = torch.zeros(K, K, dtype=torch.bool)
            reach[torch.arange(K - 1), torch.arange(1, K)] = True
            fine[torch.arange(K - 1), torch.arange(1, K)] = True
            rows = set()
            while True:
                keep = [0]
                while keep[-1] != K - 1:
                    a = keep[-1]
                    if a not in rows and a < K - 2:
                        j = torch.arange(a + 2, K)
                        reach[a, j] = self._segments_valid(
                            q[a].expand(j.shape[0], -1),
                            q[j.to(q.device)],
                            max(_COARSE, self.config.resolution),
                        ).cpu()
                        fine[a, j] = self.config.resolution >= _COARSE
                    rows.add(a)
                    keep.append(int(reach[a].nonzero()[-1, 0]))
                coarse = [(a, b) for a, b in zip(keep[:-1], keep[1:]) if not fine[a, b]]
                if coarse:
                    index = torch.tensor(coarse, dtype=torch.long)
                    ok = self._segments_valid(
                        q[index[:, 0]], q[index[:, 1]], self.config.resolution
                    ).cpu()
                    fine[index[:, 0], index[:, 1]] = True
                    reach[index[:, 0], index[:, 1]] = ok
                    continue
                segments = [(nodes[a], nodes[b]) for a, b in zip(keep[:-1], keep[1:])]
                todo = [
                    (a, b)
                    for (a, b), key in zip(zip(keep[:-1], keep[1:]), segments)
                    if key not in clearance and graph.state(*key) != _VALID
                ]
                if not todo or self._segment_check is None:
                    break
                index = torch.tensor(todo, dtype=torch.long)
                ok, low = self._segment_check(q[index[:, 0]], q[index[:, 1]])
                # a neighbouring pair to check is a roadmap edge (later rounds' neighbours
                # were all checked in the rounds before)
                for (a, b), valid, value in zip(todo, ok.tolist(), low.tolist()):
                    key = (nodes[a], nodes[b])
                    if valid:
                        clearance[key] = value
                        if b == a + 1:
                            graph.set_state(*key, _VALID)
                            graph.clearance[_key(*key)] = value
                    elif b == a + 1:
                        graph.set_state(*key, _INVALID)  # a roadmap edge: search again
                        return None
                    else:
                        reach[a, b] = False
            nodes = [nodes[k] for k in keep]
            if len(keep) == K:
                break
        values = [
            clearance.get(key, graph.clearance.get(_key(*key), math.inf))
            for key in zip(nodes[:-1], nodes[1:])
        ]
        return nodes, values


def _key(a: int, b: int) -> tuple[int, int]:
    return (min(a, b), max(a, b))
