"""Debugging aids: scale tracking of cost terms through forward and backward passes."""

from curobo_lite.debug.scale_tracker import (
    ScaleHistory,
    ScalePair,
    ScaleTracker,
    ScaleTrackingSession,
    active_session,
    tensor_std,
    track,
    track_scales,
)

__all__ = [
    "ScaleHistory",
    "ScalePair",
    "ScaleTracker",
    "ScaleTrackingSession",
    "active_session",
    "tensor_std",
    "track",
    "track_scales",
]
