"""docs/lifecycle.md "Testing your plugin": its example runs exactly as written."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "lifecycle.md"


def section_code() -> str:
    section = DOC.read_text(encoding="utf-8").split("\n## Testing your plugin\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    return code


async def test_the_documented_plugin_test_passes_as_written():
    namespace: dict = {"__name__": "documented_plugin_test"}
    exec(compile(section_code(), f"{DOC}#testing-your-plugin", "exec"), namespace)
    tests = [fn for name, fn in namespace.items() if name.startswith("test_")]
    assert len(tests) == 1
    await tests[0]()
