"""wrap."""
