"""The docs' "Layout" (docs/layout.md) is the tree: every module and folder it lists exists, every
module of ``proxy/hookgate`` and every top-level folder is listed, and so is every command of
the CLI. The test suite mirrors the package (a test folder is named for a package of
``hookgate``, or is one of the suites that cross them), and its shared fixtures import no client
SDK, so the pure tests run without one.

How the Layout block reads: a line at the left margin names a top-level path; a line indented by
two spaces names modules of ``hookgate`` (``errors.py · ids.py``) or one of its packages
(``server/``); deeper-indented lines continue the line above. A package's description names its
modules (``app.py``) and subpackages, a subpackage followed by its own modules in parentheses
(``translate/ (fit.py, …)``)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from hookgate.cli import main

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "proxy" / "hookgate"
TESTS = ROOT / "tests"
IGNORED = set((ROOT / ".gitignore").read_text().split())
"""What git ignores: build output (``site/``, ``build/``) is no part of the tree."""
CROSSING_SUITES = {"e2e", "hardening"}
"""Test folders that run the whole product, not one package: real frameworks, faults."""

MODULE = re.compile(r"\b\w+\.py\b")
FOLDER = re.compile(r"(?<![\w./*-])(\w+)/(?=[\s(),·]|$)")
"""A folder's name, not a slash between two words (``reserve/settle``)."""
SUBPACKAGE = re.compile(r"(?<![\w./-])(\w+)/ \(([^)]*)\)")
FILE = re.compile(r"(?<![\w./*-])[\w-]+\.(?:py|yaml|yml|json|md)\b")


@dataclass
class Entry:
    """One line of the Layout block at the margin or two spaces in, with its continuations."""

    name: str
    text: str
    nested: bool


def layout() -> list[Entry]:
    (block,) = re.findall(r"```\n(.*?)```", (ROOT / "docs/layout.md").read_text(), flags=re.S)
    entries: list[Entry] = []
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip())
        if indent > 2:
            entries[-1].text += " " + line.strip()
        elif line.strip():
            name, _, text = re.split(r"( {2,}|$)", line.strip(), maxsplit=1)
            entries.append(Entry(name, text.strip(), nested=indent == 2))
    return entries


def listed_modules() -> set[Path]:
    """The modules the Layout names, relative to ``proxy/hookgate``, and the packages it
    names (``server``, ``wire/translate``) as folders."""
    listed: set[Path] = set()
    for entry in layout():
        if not entry.nested:
            continue
        listed |= {Path(name) for name in MODULE.findall(entry.name)}
        folder = FOLDER.fullmatch(entry.name)
        if folder is None:
            continue
        package = Path(folder[1])
        listed.add(package)
        rest = entry.text
        for sub, modules in SUBPACKAGE.findall(entry.text):
            listed.add(package / sub)
            listed |= {package / sub / name for name in MODULE.findall(modules)}
            rest = rest.replace(f"{sub}/ ({modules})", "")
        listed |= {package / name for name in MODULE.findall(rest)}
        listed |= {package / name for name in FOLDER.findall(rest)}
    return listed


def test_every_module_the_layout_lists_exists() -> None:
    missing = sorted(str(path) for path in listed_modules() if not (PACKAGE / path).exists())
    assert not missing, f"the Layout lists what proxy/hookgate has not: {missing}"


def test_every_module_of_the_package_is_in_the_layout() -> None:
    modules = {
        path.relative_to(PACKAGE)
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" or path.parent == PACKAGE
    }
    packages = {path.parent.relative_to(PACKAGE) for path in PACKAGE.rglob("__init__.py")}
    unlisted = sorted(map(str, (modules | packages - {Path(".")}) - listed_modules()))
    assert not unlisted, f"missing from the Layout (docs/layout.md): {unlisted}"


def test_every_top_level_folder_is_in_the_layout_and_what_it_lists_exists() -> None:
    top = [entry for entry in layout() if not entry.nested]
    folders = {
        path.name
        for path in ROOT.iterdir()
        if path.is_dir()
        and not path.name.startswith((".", "__"))
        and not path.name.endswith(".egg-info")
        and f"{path.name}/" not in IGNORED
    }
    assert folders <= {entry.name.split("/")[0] for entry in top}
    for entry in top:
        assert any(ROOT.glob(entry.name)), f"the Layout lists {entry.name}, which is not there"
        base = ROOT / entry.name if entry.name.endswith("/") else (ROOT / entry.name).parent
        named = [*FILE.findall(entry.text), *(f"{f}/" for f in FOLDER.findall(entry.text))]
        missing = [name for name in named if not (base / name).exists()]
        assert not missing, f"{entry.name}: the Layout names what is not there: {missing}"


def test_every_command_of_the_cli_is_in_the_layout(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    found = re.search(r"\{([\w,]+)\}", capsys.readouterr().out)
    assert found is not None
    (cli,) = [entry for entry in layout() if "cli.py" in entry.name]
    named = set(re.findall(r"\w+", cli.text))
    assert set(found[1].split(",")) <= named, cli.text


def test_test_folders_mirror_the_package() -> None:
    folders = {
        path.parent.relative_to(TESTS)
        for path in TESTS.rglob("test_*.py")
        if path.parent != TESTS and "__pycache__" not in path.parts
    }
    strays = sorted(
        str(folder)
        for folder in folders
        if folder.parts[0] not in CROSSING_SUITES and not (PACKAGE / folder).is_dir()
    )
    assert not strays, f"test folders that are no package of hookgate: {strays}"


def test_the_shared_fixtures_import_no_client_sdk() -> None:
    """tests/conftest.py loads with ``openai`` and ``anthropic`` missing."""
    blocked = "import sys; sys.modules['openai'] = sys.modules['anthropic'] = None; "
    loaded = subprocess.run(
        [sys.executable, "-c", blocked + "import tests.conftest"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert loaded.returncode == 0, loaded.stderr
