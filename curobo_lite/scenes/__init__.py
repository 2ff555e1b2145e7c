"""Benchmark scenes: MotionBenchMaker's Franka scene families and grasp problems in them.

``families`` samples a family's world and its grasp candidates from a seed; ``problems`` turns
one into a planning problem (start, goal pose, goal configuration) checked against the robot's
collision meshes.
"""

from curobo_lite.scenes.families import FAMILIES, SceneSample, family_rng, sample_scene
from curobo_lite.scenes.problems import MbmProblem, ProblemGenerator

__all__ = [
    "FAMILIES",
    "MbmProblem",
    "ProblemGenerator",
    "SceneSample",
    "family_rng",
    "sample_scene",
]
