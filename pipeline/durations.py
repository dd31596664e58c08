"""The one duration format of the project, as common/duration.h prints it in C++:
"42s", "3m05s", "1h02m03s"; "?" for a negative or non-finite value (an ETA not known yet)."""

import math


def format_duration(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s // 60 % 60:02d}m{s % 60:02d}s"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"
