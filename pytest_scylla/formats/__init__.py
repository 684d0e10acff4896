"""What evaluations are made of: cases, tiers, rubrics, their schemas and provenance."""

from pathlib import Path


def _shipped(name: str) -> Path:
    """A folder the wheel ships inside the package; in a source checkout, the repository's."""
    inside_wheel = Path(__file__).resolve().parents[1] / name
    return inside_wheel if inside_wheel.is_dir() else Path(__file__).resolve().parents[2] / name


PACKAGED = _shipped("tiers")  # the paper's T0-T6: the default tier set
PACKAGED_RUBRICS = _shipped("rubrics")  # shared rubrics a case may name
