"""Times edi-inbox's parser against pydifact (EDIFACT) and pyx12 (X12) on the same 1 MiB
interchanges, in one run, and prints MB/s and the ratios.

edi-inbox's figure is a full parse: envelope validation, invoice mapping and fingerprint. The Python
figures are tokenizing only (segments read), so the ratios understate the difference.
Run through bench/compare.sh, which installs the pinned PyPI packages into a virtualenv.
"""

import pathlib
import subprocess
import sys
import time
import warnings

from pydifact.segmentcollection import Interchange
from pyx12 import x12file

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "target" / "bench"


def ours():
    out = subprocess.run(
        ["cargo", "run", "--quiet", "--release", "--example", "throughput", "--", str(DATA)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return {name: float(mbps) for name, _, mbps in (line.split() for line in out.splitlines())}


def timed(parse, path, minimum_runs=3, minimum_seconds=3.0):
    size = path.stat().st_size
    runs, started = 0, time.perf_counter()
    while runs < minimum_runs or time.perf_counter() - started < minimum_seconds:
        segments = parse(path)
        runs += 1
    seconds = (time.perf_counter() - started) / runs
    return size / seconds / 1e6, segments


def pydifact_parse(path):
    interchange = Interchange.from_str(path.read_text(encoding="latin-1"))
    return sum(1 for _ in interchange.segments)


def pyx12_parse(path):
    with open(path, encoding="ascii") as handle:
        return sum(1 for _ in x12file.X12Reader(handle))


def main():
    warnings.filterwarnings("ignore")  # pydifact warns about its own missing validation data
    rust = ours()
    rows = [
        ("EDIFACT INVOIC", "edifact-invoic-1mib.edi", "pydifact", pydifact_parse),
        ("X12 810", "x12-810-1mib.edi", "pyx12", pyx12_parse),
    ]
    print(f"{'interchange':<16}{'edi-inbox MB/s':>16}{'other':>10}{'other MB/s':>12}{'ratio':>9}")
    for label, name, other, parse in rows:
        mbps, segments = timed(parse, DATA / name)
        if segments < 1000:
            sys.exit(f"{other} read only {segments} segments of {name}")
        print(f"{label:<16}{rust[name]:>16.1f}{other:>10}{mbps:>12.2f}{rust[name] / mbps:>8.0f}x")


if __name__ == "__main__":
    main()
