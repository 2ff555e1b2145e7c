"""Source of the bundled notebooks: ``python notebooks/make_notebooks.py`` rewrites the ``.ipynb``
files from the cells below (outputs are never committed; the test suite executes them)."""

from __future__ import annotations

import os

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = os.path.dirname(os.path.abspath(__file__))

STEP_KERNELS = [
    new_markdown_cell(
        "# Step kernels: control spaces side by side\n\n"
        "`curobo_lite.kernels.tensor_step` turns an action sequence `[B, H, D]` and a start state into "
        "position, velocity, acceleration and jerk trajectories. Index 0 is the start state; the "
        "action at step `h-1` drives step `h`. Every map is linear and has an exact, differentiable "
        "adjoint (Warp kernels on CPU and CUDA)."
    ),
    new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "import torch\n\n"
        "from curobo_lite.kernels import tensor_step\n\n"
        "%matplotlib inline\n"
        "torch.manual_seed(0)\n"
        "H, dt = 40, 0.05\n"
        "t = torch.arange(H) * dt\n"
        "zeros = torch.zeros(1, 1, dtype=torch.float64)"
    ),
    new_markdown_cell(
        "## The same motion commanded in four control spaces\n\n"
        "We take a smooth reference `x(t) = 0.5 (1 - cos(pi t / T))` and command it as positions, "
        "velocities, accelerations and jerks (each sampled from the analytic derivative). The "
        "integrated trajectories agree up to the discretisation of each scheme."
    ),
    new_code_cell(
        "import math\n\n"
        "T = t[-1].item()\n"
        "w = math.pi / T\n"
        "t64 = t.double()\n"
        "ref = {\n"
        "    'POSITION': 0.5 * (1 - torch.cos(w * t64)),\n"
        "    'VELOCITY': 0.5 * w * torch.sin(w * t64),\n"
        "    'ACCELERATION': 0.5 * w**2 * torch.cos(w * t64),\n"
        "    'JERK': -0.5 * w**3 * torch.sin(w * t64),\n"
        "}\n"
        "outputs = {}\n"
        "for space, signal in ref.items():\n"
        "    # the action at h-1 drives step h: sample the signal at the step it drives\n"
        "    act = torch.zeros(1, H, 1, dtype=torch.float64)\n"
        "    act[0, :-1, 0] = signal[1:]\n"
        "    start_v = ref['VELOCITY'][:1].reshape(1, 1)\n"
        "    start_a = ref['ACCELERATION'][:1].reshape(1, 1)\n"
        "    outputs[space] = tensor_step(act, zeros.clone(), start_v, start_a, dt, space)\n\n"
        "fig, axes = plt.subplots(1, 4, figsize=(16, 3.2))\n"
        "names = ['position', 'velocity', 'acceleration', 'jerk']\n"
        "for k, ax in enumerate(axes):\n"
        "    for space, out in outputs.items():\n"
        "        ax.plot(t, out[k][0, :, 0], label=space)\n"
        "    ax.set_title(names[k])\n"
        "    ax.set_xlabel('t [s]')\n"
        "axes[0].legend()\n"
        "plt.tight_layout()"
    ),
    new_markdown_cell(
        "## Backward vs central differences (POSITION control)\n\n"
        "With position actions the derivatives come from finite differences. Backward differences "
        "lag by half a step per order; the five-point central stencils are exact for cubics inside "
        "the trajectory. The error of each against the analytic derivative:"
    ),
    new_code_cell(
        "act = torch.zeros(1, H, 1, dtype=torch.float64)\n"
        "act[0, :-1, 0] = ref['POSITION'][1:]\n"
        "start_v = ref['VELOCITY'][:1].reshape(1, 1)\n"
        "start_a = ref['ACCELERATION'][:1].reshape(1, 1)\n"
        "backward = tensor_step(act, zeros.clone(), start_v, start_a, dt, 'POSITION', 'BACKWARD')\n"
        "central = tensor_step(act, zeros.clone(), start_v, start_a, dt, 'POSITION', 'CENTRAL')\n"
        "fig, axes = plt.subplots(1, 3, figsize=(14, 3.2))\n"
        "for k, (ax, key) in enumerate(zip(axes, ['VELOCITY', 'ACCELERATION', 'JERK'])):\n"
        "    inner = slice(2, H - 2)\n"
        "    ax.semilogy(t[inner], (backward[k + 1][0, inner, 0] - ref[key][inner]).abs(),\n"
        "                label='backward')\n"
        "    ax.semilogy(t[inner], (central[k + 1][0, inner, 0] - ref[key][inner]).abs(),\n"
        "                label='central')\n"
        "    ax.set_title(f'|error| of {key.lower()}')\n"
        "    ax.set_xlabel('t [s]')\n"
        "axes[0].legend()\n"
        "plt.tight_layout()\n"
        "for k, key in enumerate(['VELOCITY', 'ACCELERATION', 'JERK']):\n"
        "    inner = slice(2, H - 2)\n"
        "    b = (backward[k + 1][0, inner, 0] - ref[key][inner]).abs().max().item()\n"
        "    c = (central[k + 1][0, inner, 0] - ref[key][inner]).abs().max().item()\n"
        "    print(f'{key:<13} max error  backward {b:.2e}   central {c:.2e}')\n"
        "    assert c < b"
    ),
    new_markdown_cell(
        "## Gradients are exact\n\n"
        "The backward pass is the transpose of the (linear) map, so `gradcheck` passes in float64, "
        "for the action and the start state, and so does double backward."
    ),
    new_code_cell(
        "u = torch.randn(2, 8, 3, dtype=torch.float64, requires_grad=True)\n"
        "p, v, a = (torch.randn(2, 3, dtype=torch.float64, requires_grad=True) for _ in range(3))\n"
        "traj_dt = 0.02 + 0.05 * torch.rand(8, dtype=torch.float64)  # a non-uniform schedule\n"
        "for space in ['POSITION', 'VELOCITY', 'ACCELERATION', 'JERK']:\n\n"
        "    def step(*x, space=space):\n"
        "        return tensor_step(*x, traj_dt, space)\n\n"
        "    inputs = (u, p, v, a)\n"
        "    print(space, torch.autograd.gradcheck(step, inputs),\n"
        "          torch.autograd.gradgradcheck(step, inputs))"
    ),
]


MPC = [
    new_markdown_cell(
        "# Closed-loop reaching with MPC on the Franka\n\n"
        "`MpcSolver` runs batched MPPI over the `ArmReacher` rollout every control step (20 ms), "
        "warm-started by shifting the previous plan. `IdealTracker` stands in for the robot: it "
        "follows every command exactly, so the loop runs without a simulator."
    ),
    new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "import torch\n\n"
        "from curobo_lite.robot import Kinematics\n"
        "from curobo_lite.sim import IdealTracker, run_closed_loop\n"
        "from curobo_lite.types import JointState, Pose\n"
        "from curobo_lite.wrap import MpcSolver\n\n"
        "%matplotlib inline\n"
        "torch.set_num_threads(1)  # small batches: one thread avoids contention on shared CPUs\n"
        "mpc = MpcSolver.from_config(robot='franka', task='particle_mpc')\n"
        "robot = mpc.robot_config\n"
        "mpc"
    ),
    new_markdown_cell(
        "## Reach a goal, then follow a goal change\n\n"
        "Both goals are end-effector poses of configurations inside the joint limits. The goal "
        "changes at step 150."
    ),
    new_code_cell(
        "q_goals = robot.retract_config + torch.tensor([[0.4, 0.3, -0.3, 0.3, 0.2, -0.2, 0.3],\n"
        "                                               [-0.4, 0.2, 0.3, 0.4, -0.2, 0.1, -0.3]])\n"
        "fk = Kinematics(robot).forward(q_goals)\n"
        "goal_a = Pose(fk.ee_position[:1], fk.ee_quaternion[:1])\n"
        "goal_b = Pose(fk.ee_position[1:], fk.ee_quaternion[1:])\n"
        "start = JointState.from_position(robot.retract_config[None].clone())\n"
        "record = run_closed_loop(mpc, IdealTracker(start), goal_a, 300, goal_changes={150: goal_b})\n"
        "record"
    ),
    new_code_cell(
        "t = record.time\n"
        "fig, axes = plt.subplots(1, 3, figsize=(15, 3.4))\n"
        "for j, name in enumerate(robot.joint_names):\n"
        "    axes[0].plot(t, record.position[:, j], label=name)\n"
        "    line, = axes[1].plot(t, record.velocity[:, j])\n"
        "    vmax = robot.joint_limits.velocity[1, j].item()\n"
        "    axes[1].axhline(vmax, color=line.get_color(), ls='--', lw=0.6)\n"
        "    axes[1].axhline(-vmax, color=line.get_color(), ls='--', lw=0.6)\n"
        "axes[2].semilogy(t, record.position_error, label='position [m]')\n"
        "axes[2].semilogy(t, record.rotation_error, label='rotation [rad]')\n"
        "for ax, title in zip(axes, ['joint position [rad]', 'joint velocity [rad/s]',\n"
        "                           'end-effector error']):\n"
        "    ax.axvline(150 * mpc.control_dt, color='k', lw=0.5)\n"
        "    ax.set_title(title)\n"
        "    ax.set_xlabel('t [s]')\n"
        "axes[0].legend(fontsize=6)\n"
        "axes[2].legend()\n"
        "plt.tight_layout()"
    ),
    new_code_cell(
        "limits = robot.joint_limits\n"
        "for name, values in [('position', record.position), ('velocity', record.velocity),\n"
        "                     ('acceleration', record.acceleration)]:\n"
        "    low, high = getattr(limits, name)\n"
        "    inside = bool(((values >= low - 1e-5) & (values <= high + 1e-5)).all())\n"
        "    print(f'{name:<13} within limits at every step: {inside}')\n"
        "print(f'final errors: {record.position_error[-1] * 100:.2f} cm, '\n"
        "      f'{record.rotation_error[-1]:.4f} rad; median step '\n"
        "      f'{record.solve_time.median() * 1e3:.1f} ms')"
    ),
]

TRAJOPT = [
    new_markdown_cell(
        "# Trajectory optimization on the Franka\n\n"
        "`TrajOptSolver` plans smooth, limit-respecting joint trajectories to end-effector poses: "
        "batched IK for goal configurations, seeds interpolated in joint space, batched L-BFGS over "
        "all problems x seeds at once, retiming so velocity/acceleration/jerk stay within the "
        "limits, and cubic resampling to a 100 Hz controller."
    ),
    new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "import torch\n\n"
        "from curobo_lite.robot import Kinematics\n"
        "from curobo_lite.types import JointState, Pose\n"
        "from curobo_lite.wrap import TrajOptSolver\n\n"
        "%matplotlib inline\n"
        "torch.set_num_threads(1)  # small batches: one thread avoids contention on shared CPUs\n"
        "solver = TrajOptSolver.from_config(robot='franka', task='gradient_trajopt', num_seeds=4)\n"
        "robot = solver.robot_config\n"
        "solver"
    ),
    new_markdown_cell(
        "## A batch of reachable goals\n\n"
        "Goals are the end-effector poses of random configurations inside the joint limits, so each "
        "is reachable; all problems start at the retract configuration and are solved in one batch."
    ),
    new_code_cell(
        "g = torch.Generator().manual_seed(0)\n"
        "low, high = robot.joint_limits.position\n"
        "n_goals = 8\n"
        "q_goal = low + (high - low) * (0.1 + 0.8 * torch.rand(n_goals, 7, generator=g))\n"
        "fk = Kinematics(robot).forward(q_goal)\n"
        "goals = Pose(fk.ee_position, fk.ee_quaternion)\n"
        "start = JointState.from_position(robot.retract_config.expand(n_goals, 7).clone())\n"
        "result = solver.solve_batch_pose(start, goals)\n"
        "result"
    ),
    new_code_cell(
        "print(f\"{'goal':>4} {'success':>8} {'pos err [mm]':>13} {'rot err [rad]':>14}\"\n"
        "      f\" {'motion [s]':>11}\")\n"
        "for i in range(n_goals):\n"
        "    print(f'{i:>4} {str(bool(result.success[i])):>8}'\n"
        "          f' {1e3 * result.position_error[i].item():>13.3f}'\n"
        "          f' {result.rotation_error[i].item():>14.4f}'\n"
        "          f' {result.motion_time[i].item():>11.2f}')\n"
        "print(f'solve time for all {n_goals}: {result.solve_time:.2f} s')"
    ),
    new_markdown_cell(
        "## One plan with its limits\n\n"
        "Position, velocity, acceleration and jerk of the interpolated plan, with the joint limits "
        "drawn dashed (shown for the first three joints)."
    ),
    new_code_cell(
        "plan = result.get_interpolated_plan(0)\n"
        "t = torch.arange(plan.position.shape[0]) * result.interpolation_dt\n"
        "limits = robot.joint_limits\n"
        "fig, axes = plt.subplots(1, 4, figsize=(16, 3.2))\n"
        "for ax, name in zip(axes, ['position', 'velocity', 'acceleration', 'jerk']):\n"
        "    values = getattr(plan, name)\n"
        "    for j in range(3):\n"
        "        line, = ax.plot(t, values[:, j], label=robot.joint_names[j])\n"
        "        if name != 'jerk':\n"
        "            bound = getattr(limits, name)[:, j]\n"
        "            ax.axhline(bound[0], color=line.get_color(), ls='--', lw=0.8)\n"
        "            ax.axhline(bound[1], color=line.get_color(), ls='--', lw=0.8)\n"
        "    ax.set_title(name)\n"
        "    ax.set_xlabel('t [s]')\n"
        "axes[0].legend(fontsize=7)\n"
        "plt.tight_layout()"
    ),
    new_markdown_cell(
        "## Which cost term dominates? The scale tracker\n\n"
        "Inside `track_scales()`, the rollout records the standard deviation of every cost term "
        "(forward) and of the gradient flowing into each term's inputs (backward) at every "
        "iteration. Terms whose backward scale dwarfs the others steer the optimization.\n\n"
        "`session.scales` holds each term's latest `ScalePair` (as in Graphcore's unit_scaling: "
        "the std of the last tensor and of the last gradient); `session.history(name)`, the "
        "table and the plot give the values per iteration."
    ),
    new_code_cell(
        "import os\n"
        "import tempfile\n\n"
        "from curobo_lite.debug import track_scales\n\n"
        "with track_scales() as session:\n"
        "    solver.solve_pose(start[:1], goals[0])\n"
        "for name, pair in session.scales.items():\n"
        "    print(f'{name:32s} latest {pair}')\n"
        "print(session.table())\n"
        "path = session.plot(os.path.join(tempfile.gettempdir(), 'curobo_lite_scales.png'))\n"
        "plt.figure(figsize=(10, 6))\n"
        "plt.imshow(plt.imread(path))\n"
        "plt.axis('off')"
    ),
]

VIEWER = [
    new_markdown_cell(
        "# The browser viewer in Jupyter\n\n"
        "`curobo_lite.viz.Viewer` serves a 3D scene (viser) from this kernel: the robot's "
        "collision spheres coloured by clearance (red in contact, green 10 cm or more away), the "
        "obstacles, the goal frame, plans with a frame slider and play/pause, and a live MPC "
        "view. `viewer.notebook()` embeds the live page below; it needs `pip install "
        "'curobo_lite[viz]'`."
    ),
    new_code_cell(
        "import torch\n\n"
        "from curobo_lite.sim import IdealTracker, run_closed_loop\n"
        "from curobo_lite.types import JointState, Pose\n"
        "from curobo_lite.viz import Viewer\n"
        "from curobo_lite.wrap import MpcSolver\n\n"
        "torch.set_num_threads(1)\n"
        "mpc = MpcSolver.from_config(robot='franka', world='table')\n"
        "goal = Pose.from_list([0.45, 0.25, 0.3, 0.0, 1.0, 0.0, 0.0])\n"
        "viewer = Viewer(mpc.robot_config, port=0)  # port 0: any free port\n"
        "viewer.show_goal(goal)\n"
        "viewer.notebook(height=450)"
    ),
    new_markdown_cell(
        "## Live MPC\n\n"
        "`viewer.mpc_callback(mpc)` is called after every control step. At most 10 times a "
        "second it draws the robot, MPC's predicted end-effector path (magenta) and the traces "
        "of 16 sampled particles (blue); between redraws it returns at once. The world shown is "
        "the solver's own, so obstacles moved during the run move on screen."
    ),
    new_code_cell(
        "view = viewer.mpc_callback(mpc)\n"
        "start = JointState.from_position(mpc.robot_config.retract_config[None].clone())\n"
        "record = run_closed_loop(mpc, IdealTracker(start), goal, 60, on_step=view)\n"
        "print(record)\n"
        "print('viewer overhead per step:', view.overhead_ms())"
    ),
    new_markdown_cell(
        "## Replay\n\n"
        "Any joint trajectory `[T, D]` plays back with the slider and the play button; a "
        "`MotionGenResult` or `TrajOptResult` can be passed as is. `viewer.frame` moves the "
        "slider from code. For a static copy that lives in the saved notebook, "
        "`viewer.server.scene.show()` embeds a snapshot of the scene instead of the live page."
    ),
    new_code_cell(
        "frames = viewer.show_plan(record.position, dt=record.control_dt)\n"
        "viewer.frame = frames.num_frames // 2\n"
        "print(f'{frames.num_frames} frames, smallest clearance along the run: '\n"
        "      f'{frames.clearance.min().item() * 1000:.1f} mm')"
    ),
]


DATASET = [
    new_markdown_cell(
        "# A planning dataset: success and time per family\n\n"
        "`curobo_lite.data` generates MotionBenchMaker-style problems with the seeded generator, "
        "plans them with MotionGen in Ray tasks and stores Parquet shards with a manifest "
        "(`curobo-lite dataset generate`). Here: a small dataset on a local Ray (two workers), "
        "checked with `verify_dataset`, read back with `load_dataset`, and one statistic: how "
        "often MotionGen solved the problems of each family, and how long it took. Set "
        "`FOLDER` to an existing dataset folder to look at that one instead (nothing is "
        "generated then)."
    ),
    new_code_cell(
        "import statistics\n"
        "import tempfile\n\n"
        "import matplotlib.pyplot as plt\n"
        "import ray\n\n"
        "from curobo_lite.data import DatasetConfig, generate_dataset, load_dataset, "
        "verify_dataset\n\n"
        "%matplotlib inline\n"
        "FOLDER = None  # an existing dataset folder, or None to make a small one"
    ),
    new_markdown_cell(
        "## Generate\n\n"
        "Eight problems over two bookshelf families, with a cheap generator (4 IK seeds, at most "
        "three scene draws per id: an id whose draws give no valid grasp is stored as "
        "`GENERATION_FAIL`, so none is lost). The same call again would skip every shard: the "
        "folder's manifest says they are done."
    ),
    new_code_cell(
        "if FOLDER is None:\n"
        "    FOLDER = tempfile.mkdtemp(prefix='curobo_lite_dataset_')\n"
        "    config = DatasetConfig.from_dict({\n"
        "        'families': ['bookshelf_small', 'bookshelf_thin'],\n"
        "        'problems': 8, 'seed': 0, 'shard_size': 2,\n"
        "        'generator': {'ik_seeds': 4, 'max_scenes': 3},\n"
        "    })\n"
        "    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, "
        "logging_level='ERROR')\n"
        "    try:\n"
        "        summary = generate_dataset(config, FOLDER, workers=2, progress=False)\n"
        "    finally:\n"
        "        ray.shutdown()\n"
        "    print(summary.report())\n"
        "print(verify_dataset(FOLDER).report())"
    ),
    new_markdown_cell(
        "## Success and planning time per family\n\n"
        "`to_table` gives the Arrow table of the columns asked for. Success is counted over the "
        "problems the generator made (`GENERATION_FAIL` rows have no problem to plan); time is "
        "MotionGen's wall time per problem (`plan_s`)."
    ),
    new_code_cell(
        "dataset = load_dataset(FOLDER)\n"
        "rows = dataset.to_table(['family', 'status', 'success', 'plan_s']).to_pylist()\n"
        "families = sorted({r['family'] for r in rows})\n"
        "stats = {}\n"
        "for family in families:\n"
        "    made = [r for r in rows if r['family'] == family and r['status'] != "
        "'GENERATION_FAIL']\n"
        "    stats[family] = {\n"
        "        'ids': sum(r['family'] == family for r in rows),\n"
        "        'problems': len(made),\n"
        "        'success': sum(r['success'] for r in made) / len(made) if made else "
        "float('nan'),\n"
        "        'times': [r['plan_s'] for r in made],\n"
        "    }\n"
        "print(f\"{'family':>16} {'ids':>4} {'made':>5} {'success':>8} {'median s':>9}\")\n"
        "for family, s in stats.items():\n"
        "    median = statistics.median(s['times']) if s['times'] else float('nan')\n"
        "    print(f\"{family:>16} {s['ids']:>4} {s['problems']:>5} "
        "{100 * s['success']:>7.0f}% {median:>9.2f}\")\n\n"
        "fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.2))\n"
        "left.bar(families, [100 * stats[f]['success'] for f in families])\n"
        "left.set_ylabel('solved [%]')\n"
        "left.set_ylim(0, 105)\n"
        "right.boxplot([stats[f]['times'] or [float('nan')] for f in families])\n"
        "right.set_xticks(range(1, len(families) + 1), families)\n"
        "right.set_ylabel('MotionGen time [s]')\n"
        "plt.tight_layout()"
    ),
    new_markdown_cell(
        "## One item\n\n"
        "An item is a dict of the problem (world in cuRobo's layout, start, goal pose) and its "
        "plan (`[T, D]` every `dt` seconds), ready for a `DataLoader` with a collate function "
        "that pads the plans."
    ),
    new_code_cell(
        "item = next(dataset[i] for i in range(len(dataset)) if dataset[i]['success'])\n"
        "print(item['name'], item['status'], 'obstacles:', sum(len(v) for v in "
        "item['world'].values()))\n"
        "print('start', tuple(item['start'].shape), 'goal_pose', tuple(item['goal_pose'].shape),\n"
        "      'plan', tuple(item['plan'].shape), 'dt', item['dt'])\n"
        "print({k: round(v, 3) for k, v in item['timings'].items()})"
    ),
]


PERCEPTION = [
    new_markdown_cell(
        "# Perception: plan in a world seen only through depth cameras\n\nA synthetic depth "
        "camera (`curobo_lite.geom.depth_camera.DepthCamera`, Warp ray casts of the "
        "primitives, no hardware) looks at the bundled `table` cell with a wall added. Its "
        "frames go into a `VoxelWorld` (occupancy + ESDF in Warp, on a CPU or a GPU); "
        "MotionGen plans in that grid alone, and the plan is checked against the true "
        "primitives' exact distances."
    ),
    new_code_cell(
        "import time\n"
        "\n"
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n"
        "import torch\n"
        "\n"
        "from curobo_lite.geom import Cuboid, Sphere, VoxelWorld, WorldCollision, WorldConfig\n"
        "from curobo_lite.geom.depth_camera import DepthCamera\n"
        "from curobo_lite.types import JointState, Pose\n"
        "from curobo_lite.wrap import MotionGen\n"
        "\n"
        'truth = WorldConfig.load("table")  # the bundled cell: a table and a block\n'
        'wall = Cuboid("wall", pose=[0.42, -0.16, 0.45, 1, 0, 0, 0], dims=[0.25, 0.03, 0.3])\n'
        "truth.add(wall)\n"
        "print([obstacle.name for obstacle in truth.cuboid])"
    ),
    new_markdown_cell(
        "## Frames into a voxel world\n\nFour cameras; each frame also shows the arm (drawn as "
        "its collision spheres, as a real camera sees it), which the robot self-filter drops. "
        "The conservative inflation (`sqrt(3)/2` voxel) makes the grid never report more "
        "clearance than the measured surfaces have."
    ),
    new_code_cell(
        "grid = VoxelWorld([-0.4, -0.8, -0.1], [1.2, 0.8, 1.1], 0.02)\n"
        "grid.inflation = grid.conservative_inflation()  # never more clearance than was seen\n"
        'motion_gen = MotionGen.from_config("franka", grid)  # the depth-only world\n'
        "start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())\n"
        "robot = motion_gen.checker.get_link_spheres(start.position).detach()[0]\n"
        "EYES = ([1.5, 0.8, 1.0], [1.5, -0.9, 0.9], [-0.4, -0.6, 1.2], [0.3, 0.9, 1.3])\n"
        "\n"
        "\n"
        "def observe(world: WorldConfig) -> None:\n"
        '    """One 320 x 240 frame from every eye of the scene and the arm (its spheres drawn\n'
        '    as balls), integrated with the arm filtered out."""\n'
        "    scene = world.copy()\n"
        "    for i, (x, y, z, r) in enumerate(robot.tolist()):\n"
        "        if r > 0:\n"
        '            scene.add(Sphere(f"arm_{i}", pose=[x, y, z, 1, 0, 0, 0], radius=r))\n'
        "    camera = DepthCamera(scene, width=320, height=240, fov_y_degrees=60.0)\n"
        "    for eye in EYES:\n"
        "        pose = DepthCamera.look_at(eye, [0.4, 0.0, 0.3])\n"
        "        grid.integrate_depth(\n"
        "            camera.render(pose), camera.intrinsics, pose, robot_spheres=robot,\n"
        "            update_esdf=False,\n"
        "        )\n"
        "    grid.update_esdf()\n"
        "\n"
        "\n"
        "began = time.perf_counter()\n"
        "observe(truth)\n"
        "occupied = len(grid.occupied_centres())\n"
        "seconds = time.perf_counter() - began\n"
        'print(f"{len(EYES)} frames in {seconds:.2f} s: {occupied} occupied voxels")\n'
        "clear = float(motion_gen.checker.collision_distance(start.position)) > 0\n"
        'print("the start is clear of the voxels:", clear)'
    ),
    new_markdown_cell(
        "## Plan in the depth-only world\n\nThe plan's clearance in the voxel world is a lower "
        "bound on the true one: the exact distances of its spheres to the true table, block "
        "and wall (`WorldCollision` of the primitives) are larger."
    ),
    new_code_cell(
        "goal = Pose.from_list([0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0])\n"
        "\n"
        "\n"
        "def true_clearance(plan: torch.Tensor, world: WorldConfig) -> float:\n"
        '    """Smallest exact distance of the plan\'s spheres to the true primitives (m)."""\n'
        "    spheres = motion_gen.checker.get_world_spheres(plan).detach()\n"
        "    return float(WorldCollision(world).sphere_distance(spheres).distance.min())\n"
        "\n"
        "\n"
        "first = motion_gen.plan_single(start, goal)\n"
        "plan_1 = first.interpolated_plan.position\n"
        'print(first.status.name, f"{plan_1.shape[0]} samples")\n'
        'print(f"clearance in the voxel world {first.min_distance * 100:.1f} cm, "\n'
        '      f"to the true primitives {true_clearance(plan_1, truth) * 100:.1f} cm")'
    ),
    new_markdown_cell(
        "## An obstacle moves\n\nA box appears where the hand passed half way. The next frames "
        "mark it and carve nothing else away; the first plan now runs through it (negative "
        "true distance) and MotionGen's new plan goes around."
    ),
    new_code_cell(
        "kinematics = motion_gen.checker.kinematics\n"
        "middle = kinematics.forward(plan_1[len(plan_1) // 2][None]).ee_position[0]\n"
        "moved = truth.copy()\n"
        'moved.add(Cuboid("box", pose=[*middle.tolist(), 1, 0, 0, 0], dims=[0.08, 0.08, 0.08]))\n'
        "observe(moved)\n"
        'print(f"the first plan, moved scene: {true_clearance(plan_1, moved) * 100:.1f} cm")\n'
        "second = motion_gen.plan_single(start, goal)\n"
        "plan_2 = second.interpolated_plan.position\n"
        'print(second.status.name, f"new plan: {true_clearance(plan_2, moved) * 100:.1f} cm")'
    ),
    new_markdown_cell(
        "## The ESDF with both plans\n\nA horizontal slice of the signed distance field at the "
        "box's height, the zero level in white, and the hand's path of each plan (projected on "
        "the slice)."
    ),
    new_code_cell(
        "z = float(middle[2])\n"
        "k = int((z - grid.bounds_min[2]) / grid.voxel_size)\n"
        "esdf = grid.esdf[:, :, k].numpy().T  # [y, x]\n"
        "(x0, y0, _), (x1, y1, _) = grid.bounds_min, grid.bounds_max\n"
        "extent = [x0, x1, y0, y1]\n"
        "\n"
        "\n"
        "def hand_path(plan: torch.Tensor) -> np.ndarray:\n"
        "    return kinematics.forward(plan).ee_position.numpy()\n"
        "\n"
        "\n"
        "fig, ax = plt.subplots(figsize=(7, 6))\n"
        "shown = np.clip(esdf, -0.05, 0.4)\n"
        'image = ax.imshow(shown, origin="lower", extent=extent, cmap="viridis")\n'
        "xs = np.linspace(*extent[:2], esdf.shape[1])\n"
        "ys = np.linspace(*extent[2:], esdf.shape[0])\n"
        'ax.contour(xs, ys, esdf, levels=[0.0], colors="white", linewidths=1)\n'
        'plans = ((plan_1, "first plan", "orange"), (plan_2, "new plan", "red"))\n'
        "for plan, label, colour in plans:\n"
        "    path = hand_path(plan)\n"
        "    ax.plot(path[:, 0], path[:, 1], color=colour, label=label)\n"
        'ax.plot(*middle[:2].tolist(), "x", color="white", label="box placed here")\n'
        'ax.set(xlabel="x (m)", ylabel="y (m)", title=f"ESDF at z = {z:.2f} m (white: zero)")\n'
        'fig.colorbar(image, label="signed distance (m)")\n'
        'ax.legend(loc="upper right")\n'
        "plt.show()"
    ),
]


REACTIVE = [
    new_markdown_cell(
        "# Reactive control: a plan tracked by MPC, replanned when an obstacle moves\n\n"
        "`ReactivePlanner` plans with `MotionGen` from the current state and tracks the plan "
        "with MPC (`MpcSolver.follow`). After every world change it checks the rest of the plan, "
        "swept, against the new world and replans when it is blocked; while a replan is pending "
        "MPC alone keeps the robot clear. Here the post of the bundled `moving_post` scene is "
        "moved onto the way to the goal 0.2 s into the motion."
    ),
    new_code_cell(
        "import matplotlib.pyplot as plt\n"
        "import torch\n\n"
        "from curobo_lite.sim import IdealTracker\n"
        "from curobo_lite.types import JointState, Pose\n"
        "from curobo_lite.wrap import ReactivePlanner\n\n"
        "%matplotlib inline\n"
        "torch.set_num_threads(1)  # small batches: one thread avoids contention on shared CPUs\n"
        "planner = ReactivePlanner.from_config('franka', 'moving_post')\n"
        "start = JointState.from_position(planner.mpc.robot_config.retract_config[None].clone())\n"
        "tracker = IdealTracker(start)  # follows every command exactly\n"
        "goal = Pose.from_list([0.4, -0.3, 0.45, 0.0, 1.0, 0.0, 0.0])\n"
        "planner.set_goal(goal)\n"
        "planner"
    ),
    new_markdown_cell(
        "## The loop\n\n"
        "One `planner.step(state)` per 20 ms control period; `move_obstacle` between steps. "
        "Each step's result says whether it replanned (and why), the clearance of the robot's "
        "spheres to the obstacles, and the pose error. The loop stops once the goal is held "
        "(1 cm, 0.05 rad, nearly at rest)."
    ),
    new_code_cell(
        "MOVE_STEP, MOVED = 10, [0.42, -0.08, 0.33, 1.0, 0.0, 0.0, 0.0]\n"
        "t, clearance, error, replans = [], [], [], []\n"
        "for i in range(300):\n"
        "    if i == MOVE_STEP:\n"
        "        planner.move_obstacle('post', MOVED)\n"
        "    result = planner.step(tracker.state)\n"
        "    state = tracker.step(result.action)\n"
        "    t.append((i + 1) * planner.control_dt)\n"
        "    clearance.append(result.clearance)\n"
        "    error.append(result.position_error)\n"
        "    if result.replanned:\n"
        "        replans.append((t[-1], result.replan_reason))\n"
        "    held = result.position_error < 0.01 and result.rotation_error < 0.05\n"
        "    if held and float(state.velocity.abs().max()) < 0.05:\n"
        "        break\n"
        "print(f'{len(t)} steps ({t[-1]:.2f} s), replans at {replans}, smallest clearance '\n"
        "      f'{min(clearance) * 100:.1f} cm, final error {error[-1] * 1000:.1f} mm')"
    ),
    new_code_cell(
        "fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(13, 3.6))\n"
        "ax0.plot(t, [c * 100 for c in clearance], label='clearance of the spheres')\n"
        "ax0.axhline(0.0, color='k', lw=0.6)\n"
        "ax1.semilogy(t, error, label='end-effector position error')\n"
        "for ax in (ax0, ax1):\n"
        "    ax.axvline((MOVE_STEP + 1) * planner.control_dt, color='tab:gray', ls=':',\n"
        "               label='post moved')\n"
        "    for k, (when, reason) in enumerate(replans):\n"
        "        ax.axvline(when, color='tab:red', ls='--', lw=0.8,\n"
        "                   label='replan' if k == 0 else None)\n"
        "        ax.annotate(reason, (when, 0.95), xycoords=('data', 'axes fraction'),\n"
        "                    rotation=90, fontsize=7, ha='right', va='top')\n"
        "    ax.set_xlabel('t [s]')\n"
        "    ax.legend(fontsize=7)\n"
        "ax0.set_ylabel('cm')\n"
        "ax1.set_ylabel('m')\n"
        "ax0.set_title('clearance to the obstacles')\n"
        "ax1.set_title('pose error')\n"
        "plt.tight_layout()"
    ),
    new_code_cell(
        "assert min(clearance) >= 0.0, 'touched an obstacle'\n"
        "assert any(reason == 'blocked' for _, reason in replans), 'the moved post blocked the plan'\n"
        "assert error[-1] < 0.01"
    ),
]


PICK_PLACE = [
    new_markdown_cell(
        "# Pick and place: a box from a shelf to a table\n\n"
        "The Franka takes a 5 x 5 x 12 cm box from the middle board of the bundled `bookshelf` "
        "to a table beside it (`curobo_lite.wrap.motion.pick_place`; the command line is "
        "`curobo-lite pick-place`): `plan_goalset` to 10 pre-grasps, a straight approach, "
        "attach, lift and straight retreat, a straight carry that turns the hand only about the "
        "vertical (the box stays upright), set-down, detach, straight release. Every stage is "
        "judged by the exact mesh check with the held box's true shape."
    ),
    new_code_cell(
        "import tempfile\n"
        "from pathlib import Path\n"
        "\n"
        "import torch\n"
        "from IPython.display import Image\n"
        "\n"
        "from curobo_lite.types import JointState\n"
        "from curobo_lite.wrap.cli.pick_place import plot_run, stage_table\n"
        "from curobo_lite.wrap.motion.pick_place import (\n"
        "    PickPlaceTask,\n"
        "    concatenate,\n"
        "    pick_place_motion_gen,\n"
        "    plan_pick_place,\n"
        ")\n"
        "from curobo_lite.wrap.motion.pick_place_run import run_pick_place\n"
        "\n"
        "torch.set_num_threads(2)\n"
        "task = PickPlaceTask()  # PickPlaceTask.sampled(seed) puts the box elsewhere\n"
        "motion_gen = pick_place_motion_gen(task)  # spheres kept clear: the plant is made of them\n"
        "start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())\n"
        "plan = plan_pick_place(motion_gen, task, start)\n"
        "print(stage_table(plan))"
    ),
    new_markdown_cell(
        "## In closed loop on the MuJoCo plant\n\n"
        "The box is a free body resting on its board; a MuJoCo weld between the hand's "
        "`attached_object` link and the box is switched on at the grasp and off after the "
        "set-down. The tilt, the box's distance from the hand and the contacts come from "
        "MuJoCo's state."
    ),
    new_code_cell(
        "run = run_pick_place(motion_gen, plan)\n"
        "summary = run.summary()\n"
        "for key, value in summary.items():\n"
        '    print(f"{key:>26}: {value}")\n'
        'assert summary["max_tilt_carried_rad"] <= 0.05 and not summary["unexpected_contacts"]'
    ),
    new_code_cell(
        'figure = Path(tempfile.mkdtemp()) / "pick_place.png"\n'
        "Image(filename=str(plot_run(plan, run, str(figure))))"
    ),
    new_markdown_cell(
        "## Played back in the viewer, with the box\n\n"
        "`Viewer.attach_object` draws the held box's true shape on the hand and its fitted "
        "spheres; `show_plan(..., held_rows=(first, end))` says which rows hold it (before, it "
        "stands where the hand takes it; after, where the hand leaves it). `viewer.url` in a "
        "browser, or `viewer.notebook()`, shows it; `curobo-lite pick-place --view` does the same."
    ),
    new_code_cell(
        "from curobo_lite.viz import Viewer\n"
        "\n"
        "world = task.world_config()\n"
        'world.remove("box")  # drawn as the held object instead\n'
        "viewer = Viewer(motion_gen.robot_config, world, port=0)\n"
        "trajectory, spans = concatenate(plan.stages)\n"
        "rows = {name: (first, end) for name, first, end in spans}\n"
        "viewer.attach_object(plan.held)\n"
        'frames = viewer.show_plan(trajectory, 0.01, held_rows=(rows["retreat"][0] - 1, rows["place"][1]))\n'
        "viewer.frame = frames.num_frames // 2\n"
        'print(viewer.url, f"{frames.num_frames} frames")\n'
        "viewer.close()"
    ),
]


def write(name: str, cells: list) -> None:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, os.path.join(HERE, name))


def main() -> None:
    write("01_step_kernels.ipynb", STEP_KERNELS)
    write("02_mpc.ipynb", MPC)
    write("03_trajopt.ipynb", TRAJOPT)
    write("04_viewer.ipynb", VIEWER)
    write("05_dataset.ipynb", DATASET)
    write("06_perception.ipynb", PERCEPTION)
    write("07_reactive.ipynb", REACTIVE)
    write("08_pick_place.ipynb", PICK_PLACE)


if __name__ == "__main__":
    main()
