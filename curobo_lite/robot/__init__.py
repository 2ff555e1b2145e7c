"""robot."""
