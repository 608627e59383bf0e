#!/usr/bin/env python3
"""Issue 19's yardstick: cold `csis plan` from disk against PyYAML's C
loader (CSafeLoader, libyaml) only parsing the same files, interleaved in
one run so both see the same machine.

Usage, from the repository root:
    cargo build --release -p csis -p csis-benches --bins
    python3 benches/scripts/cold-plan-vs-pyyaml.py [ROUNDS]

Needs PyYAML built with libyaml (`python3 -c "import yaml;
print(yaml.__with_libyaml__)"` prints True). Not part of the test run.
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(REPO, "target", "release")


def parse_all(root):
    """Every .yml file of the tree, parsed with CSafeLoader."""
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name.endswith(".yml"):
                with open(os.path.join(dirpath, name), "rb") as f:
                    yaml.load(f, Loader=yaml.CSafeLoader)


def main():
    if not yaml.__with_libyaml__:
        sys.exit("PyYAML has no libyaml here: CSafeLoader is not the C parser")
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    root = tempfile.mkdtemp(prefix="csis-cold-")
    subprocess.run([os.path.join(BIN, "gen-tree"), root, "--reference"], check=True,
                   stderr=subprocess.DEVNULL)
    plan, parse = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([os.path.join(BIN, "csis"), "plan", "--no-cache"], cwd=root, check=True,
                       stdout=subprocess.DEVNULL)
        plan.append(time.perf_counter() - t)
        t = time.perf_counter()
        parse_all(root)
        parse.append(time.perf_counter() - t)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    p, y = statistics.median(plan), statistics.median(parse)
    print(f"csis plan, cold from disk: median {p:.3f} s ({min(plan):.3f}-{max(plan):.3f}), "
          f"peak RSS {peak:.0f} MiB")
    print(f"PyYAML CSafeLoader, parse only: median {y:.3f} s ({min(parse):.3f}-{max(parse):.3f})")
    print(f"PyYAML / csis plan (medians): {y / p:.2f}")


if __name__ == "__main__":
    main()
