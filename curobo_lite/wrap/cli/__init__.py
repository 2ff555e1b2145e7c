"""The command-line modules behind ``curobo-lite`` (``plan``, ``trajopt``, ``mpc``, ``robot``)
and ``sharded_solve``: the top of ``wrap``, imported by nothing in it."""
