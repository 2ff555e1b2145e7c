"""cuRobo's ``curobo.wrap.model`` names: ``robot_world`` (:class:`RobotWorld`,
:class:`RobotWorldConfig`), adapters over :class:`curobo_lite.wrap.RobotWorld`."""
