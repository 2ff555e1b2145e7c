"""rollout/dynamics_model."""
