"""Write the generated reference pages (docs/configuration.md, docs/commands.md).

    .venv/bin/python scripts/gen_docs.py [--check]

`--check` writes nothing and exits 1 when a page differs from what the code gives.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from league.reference_docs import PAGES

DOCS = Path(__file__).resolve().parents[1] / "docs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is stale")
    args = parser.parse_args()
    stale = []
    for name, make in PAGES.items():
        text, path = make(), DOCS / name
        if path.exists() and path.read_text() == text:
            continue
        stale.append(name)
        if not args.check:
            path.write_text(text)
            print(f"wrote {path}")
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run scripts/gen_docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
