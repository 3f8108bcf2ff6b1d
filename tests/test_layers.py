"""The package's layers: league.core is pure, each layer imports only those below
it, and there is no import cycle among league, rlmodules and envs."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("league", "rlmodules", "envs")

# Lowest first. A module may import its own layer and any layer listed before it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("envs", "rlmodules", "league.core"),
    ("league.run",),
    ("league.snapshot", "league.store"),
    ("league.config", "league.config_groups", "league.presets"),
    ("league.tools",),
    ("league.training",),
    ("league.cli", "league"),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """First-party modules imported anywhere in the file (top level or inside functions)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] in PACKAGES}


def _graph() -> dict[str, set[str]]:
    files = {
        _module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py") if p.is_file()
    }
    return {
        name: {m for m in _imports(path) if m in files and m != name}
        for name, path in files.items()
    }


def _layer(module: str) -> int:
    best, best_len = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best is not None, f"{module} is in no layer"
    return best


def test_core_imports_neither_ray_nor_torch():
    code = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("ray", "torch"):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        import league.core
        import league.core.league, league.core.matchmaking, league.core.retirement
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_each_layer_imports_only_layers_below():
    graph = _graph()
    upward = [
        f"{module} -> {imported}"
        for module, imports in graph.items()
        for imported in imports
        if _layer(imported) > _layer(module)
        and not module.startswith(imported + ".")  # a package's own __init__
        and imported != "league"
    ]
    assert not upward, upward


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles


def test_front_door_exports_resolve_and_stay_lazy():
    code = textwrap.dedent(
        """
        import sys
        import league
        assert "ray" not in sys.modules and "torch" not in sys.modules
        from league import League, LeagueConfig, RunDir
        assert "ray" not in sys.modules
        import league as pkg
        for name in pkg.__all__:
            getattr(pkg, name)
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_the_cli_and_config_start_without_torch_scipy_or_ray():
    """Every `league` command parses and validates its config before it needs torch,
    scipy or Ray: `--help` or a refused config answers in well under a second."""
    code = textwrap.dedent(
        """
        import sys
        import league.cli
        from league.config import TrainConfig
        TrainConfig.from_dict({"env": "connect_four", "mode": "league"})
        assert league.cli.main(["train", "--env", "nope"]) == 2  # refused in one line
        heavy = sorted({"torch", "scipy", "ray"} & set(sys.modules))
        assert not heavy, heavy
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
