"""Browser 3D viewer on `viser <https://viser.studio>`_ (``pip install 'curobo_lite[viz]'``):
robot (URDF link meshes or collision spheres coloured by clearance), obstacles, goal, plans
with a frame slider and play/pause, and a live view of a running MPC loop::

    from curobo_lite.viz import Viewer

    viewer = Viewer("franka", world="table")     # serves http://127.0.0.1:8080
    viewer.show_goal([0.5, 0.2, 0.3, 0, 1, 0, 0])
    viewer.show_plan(motion_gen_result)          # or a JointState [T, D] with dt=...
    viewer.wait()                                # until Ctrl-C

:class:`Viewer` and :class:`MpcView` load ``viser`` on first use, so this package imports
without it; :mod:`curobo_lite.viz.scene` (clearances, colours, obstacle meshes) never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curobo_lite.viz.mpc_view import MpcView
    from curobo_lite.viz.viewer import Viewer

__all__ = ["MpcView", "Viewer"]


def __getattr__(name: str) -> Any:
    # deferred: importing the viewer pulls in torch, and the command lines import
    # curobo_lite.viz.options while building their parsers
    if name == "Viewer":
        from curobo_lite.viz.viewer import Viewer

        return Viewer
    if name == "MpcView":
        from curobo_lite.viz.mpc_view import MpcView

        return MpcView
    raise AttributeError(f"module 'curobo_lite.viz' has no attribute {name!r}")
