"""Where the shared example programs are: ../shared beside the checkout, or $DLVM_SHARED."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DLVM_SHARED", REPO.parent / "shared"))
SHARED_EXAMPLES = SHARED / "examples"
PROJECT_EXAMPLES = REPO / "examples"


def example_programs(folder: Path = SHARED_EXAMPLES) -> list[Path]:
    """Programs that come with inputs and expected outputs."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.dlasm") if p.with_suffix(".expect.npz").exists())
