"""cuRobo's ``curobo.wrap.reacher`` names over this package's solvers: ``motion_gen``
(:class:`MotionGen`, :class:`MotionGenConfig`, :class:`MotionGenPlanConfig`), ``ik_solver``
(:class:`IKSolver`, :class:`IKSolverConfig`) and ``mpc`` (:class:`MpcSolver`,
:class:`MpcSolverConfig`). Each is a thin adapter: the planning is
:class:`curobo_lite.wrap.MotionGen`'s, :class:`curobo_lite.wrap.IKSolver`'s and
:class:`curobo_lite.wrap.MpcSolver`'s. ``docs/coming_from_curobo.md`` lists every name, what it
maps to and how it differs."""
