"""`python -m benchmarks NAME [args]`: run one benchmark module of this package."""

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> None:
    available = sorted(
        module.name
        for module in pkgutil.iter_modules([str(Path(__file__).parent)])
        if not module.name.startswith("_")
    )
    if len(sys.argv) < 2 or sys.argv[1] not in available:
        print(f"usage: python -m benchmarks {{{','.join(available)}}} [args]", file=sys.stderr)
        raise SystemExit(2)
    name = sys.argv.pop(1)
    importlib.import_module(f"benchmarks.{name}").main()


if __name__ == "__main__":
    main()
