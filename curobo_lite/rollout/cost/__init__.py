"""rollout/cost."""
