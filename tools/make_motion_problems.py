"""Generate the bundled motion-planning problems (``configs/world/motion_problems.yml``).

For each scene, start configurations are drawn from a seeded Sobol sequence inside the
Franka's position limits (clear of the world and of itself by ``--clearance``, hand in front
of the robot). Goals are hand poses drawn uniformly in the scene's region of interest (inside
a shelf bay, a cubby, through the wall's slot, low over the table), the hand pointing into the
scene (forward, or down over the table), solved by the collision-free IK and kept when the
solution is clear by ``--clearance``. A pair is kept only when it is **solvable**: OMPL's
RRTConnect with the same collision model finds a path within ``--time-limit`` seconds. The
goal is stored as a pose (``goal_pose``), so the planner under test finds its own IK solution;
``goal_config`` records the one used here.

Usage::

    python tools/make_motion_problems.py [--per-scene 8] [--seed 0]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
import yaml

from curobo_lite.types import Pose
from curobo_lite.wrap import IKSolver, RobotWorld
from curobo_lite.wrap.motion.graph_planner import OmplPlanner

REPO = Path(__file__).resolve().parents[1]

#: hand-position regions ((x, y, z) lower, upper) where the goals of each scene lie, and the
#: hand orientation there (wxyz): pointing down over the table, forward into the others
GOAL_REGIONS = {
    "table": ((0.35, -0.45, 0.18), (0.7, 0.45, 0.35)),
    "bookshelf": ((0.52, -0.3, 0.34), (0.64, 0.3, 0.42)),  # fingers into the middle bay
    "cubbies": ((0.56, -0.35, 0.48), (0.64, 0.35, 0.54)),  # fingers into an upper cubby
    "narrow_gap": ((0.48, -0.15, 0.40), (0.54, 0.15, 0.44)),  # fingers into the slot
}
DOWN = [0.0, 1.0, 0.0, 0.0]
FORWARD = [0.7071068, 0.0, 0.7071068, 0.0]  # hand z along +x (approach), fingers along y
GOAL_ORIENTATION = {"table": DOWN, "bookshelf": FORWARD, "cubbies": FORWARD, "narrow_gap": FORWARD}
START_REGION = ((0.15, -0.6, 0.2), (0.55, 0.6, 0.8))


def _in_region(points: torch.Tensor, region) -> torch.Tensor:
    low, high = (points.new_tensor(v) for v in region)
    return ((points >= low) & (points <= high)).all(-1)


def candidates(checker: RobotWorld, n: int, seed: int, clearance: float) -> torch.Tensor:
    """``[M, D]`` configurations clear of the world and of the robot by ``clearance``."""
    low, high = checker.robot_config.joint_limits.position.to(torch.float32)
    sobol = torch.quasirandom.SobolEngine(low.shape[0], scramble=True, seed=seed)
    q = low + (high - low) * (0.02 + 0.96 * sobol.draw(n))
    with torch.no_grad():
        world = checker.collision_distance(q, max_distance=clearance + 0.01)
        own = checker.self_collision_distance(q)
    return q[(world >= clearance) & (own >= clearance)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-scene", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=40000)
    parser.add_argument("--clearance", type=float, default=0.01)
    parser.add_argument("--time-limit", type=float, default=5.0)
    parser.add_argument("--goal-samples", type=int, default=48)
    parser.add_argument("--out", default=str(REPO / "configs" / "world" / "motion_problems.yml"))
    args = parser.parse_args()
    problems = []
    for scene_index, (scene, region) in enumerate(GOAL_REGIONS.items()):
        checker = RobotWorld.from_config("franka", scene)
        planner = OmplPlanner(checker, time_limit=args.time_limit, seed=args.seed)
        q = candidates(checker, args.samples, args.seed + scene_index, args.clearance)
        with torch.no_grad():
            hand = checker.kinematics.forward(q).ee_position
        starts = q[_in_region(hand, START_REGION)]
        gen = torch.Generator().manual_seed(args.seed + scene_index)
        low, high = (torch.tensor(v) for v in region)
        targets = low + (high - low) * torch.rand(args.goal_samples, 3, generator=gen)
        quat = torch.tensor(GOAL_ORIENTATION[scene]).expand(args.goal_samples, 4)
        ik = IKSolver.from_config("franka", checker.world_collision, num_seeds=64)
        solved = ik.solve_batch(Pose(targets, quat.clone()))
        with torch.no_grad():
            clear = (
                checker.collision_distance(solved.solution, max_distance=0.1) >= args.clearance
            ) & (checker.self_collision_distance(solved.solution) >= args.clearance)
        usable = solved.success & clear
        goals = solved.solution[usable]
        goal_pose = torch.cat((targets, quat), -1)[usable]
        print(f"{scene}: {len(starts)} starts, {len(goals)} goals of {args.goal_samples}")
        if len(goals) == 0 or len(starts) == 0:
            continue
        kept, tried = 0, 0
        while kept < args.per_scene and tried < 20 * args.per_scene:
            tried += 1
            start = starts[torch.randint(len(starts), (1,), generator=gen)][0]
            g = int(torch.randint(len(goals), (1,), generator=gen))
            result = planner.plan(start, goals[g])
            if not result.success:
                continue
            problems.append(
                {
                    "name": f"{scene}_{kept:02d}",
                    "world": scene,
                    "start": [round(float(v), 6) for v in start],
                    "goal_pose": [round(float(v), 6) for v in goal_pose[g]],
                    "goal_config": [round(float(v), 6) for v in goals[g]],
                }
            )
            kept += 1
            print(f"{scene}: kept {kept} (tried {tried}), OMPL {result.plan_time:.2f} s")
    header = (
        "# Motion-planning problems for the Franka in the bundled scenes, generated by\n"
        f"# tools/make_motion_problems.py --per-scene {args.per_scene} --seed {args.seed}: "
        "starts and goals clear\n"
        f"# of the world and the robot by {args.clearance} m, each checked solvable "
        "(OMPL RRTConnect, same\n"
        "# collision model). goal_pose: [x, y, z, qw, qx, qy, qz] of panda_hand in the base "
        "frame;\n"
        "# goal_config: the configuration it came from (one solution among others).\n"
    )
    with open(args.out, "w") as f:
        f.write(header)
        yaml.safe_dump({"problems": problems}, f, default_flow_style=None, sort_keys=False)
    print(f"wrote {len(problems)} problems to {args.out}")


if __name__ == "__main__":
    main()
