"""Every program in shared/examples/bad/ is rejected with the diagnostic that bad/expect.txt names:
`FILE:LINE` (the path as given) and the exact message text."""
from __future__ import annotations

from pathlib import Path

import pytest
from shared_paths import SHARED_EXAMPLES

from assembler import assemble_file
from isa.errors import DlvmError
from isa.ops import OPS

BAD = SHARED_EXAMPLES / "bad"
EXPECT = BAD / "expect.txt"
# these rows need ops that another part of the table provides
NEEDS = {"shape_mismatch.dlasm": "matmul", "bad_attr.dlasm": "transpose",
         "result_type.dlasm": "matmul"}


def expectations() -> list[tuple[str, int, str]]:
    """(file, line, message) rows of expect.txt; `#` lines are comments."""
    if not EXPECT.is_file():
        return []
    rows = []
    for raw in EXPECT.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        name, line, message = raw.split(None, 2)
        rows.append((name, int(line), message.strip()))
    return rows


ROWS = expectations()


def marks(name: str) -> list:
    op = NEEDS.get(name)
    if op is not None and op not in OPS:
        return [pytest.mark.xfail(reason=f"the op table has no {op} yet", strict=False)]
    return []


@pytest.mark.skipif(not ROWS, reason=f"no shared bad examples at {BAD}")
@pytest.mark.parametrize("name, line, message",
                         [pytest.param(*r, id=r[0], marks=marks(r[0])) for r in ROWS] or
                         [pytest.param("", 0, "", id="none")])
def test_bad_program_is_reported(name: str, line: int, message: str):
    path = BAD / name
    with pytest.raises(DlvmError) as e:
        assemble_file(path)
    shown = e.value.format()
    assert f"{path}:{line}:" in shown, shown
    assert message in shown, shown
    # the offending line and a caret under it
    src = path.read_text(encoding="utf-8").split("\n")[line - 1]
    assert "  " + src in shown.split("\n"), shown


def test_every_bad_program_has_an_expectation():
    if not ROWS:
        pytest.skip(f"no shared bad examples at {BAD}")
    listed = {r[0] for r in ROWS}
    assert {p.name for p in Path(BAD).glob("*.dlasm")} <= listed
