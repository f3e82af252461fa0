"""Password hashing in a bulk job: the time a job's rows spend hashing their password when every
row has its own password against when the rows share one (one hash per job), in process.

    python -m benchmarks passwords [--rows 2000] [--distinct 20]

``--distinct`` rows are hashed each (the per-row cost); ``--rows`` rows then share one password in
one job's scope (shortener.links.passwords.hash_password), as a bulk file's password column or a
job's default does.
"""

import argparse
import time

from shortener.links.passwords import hash_password


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000, help="rows sharing one password")
    parser.add_argument("--distinct", type=int, default=20, help="rows hashed with passwords of their own")
    options = parser.parse_args()
    started = time.perf_counter()
    for row in range(options.distinct):
        hash_password(f"row password {row}")
    per_row = (time.perf_counter() - started) / options.distinct
    started = time.perf_counter()
    for _ in range(options.rows):
        hash_password("one password for the job", scope="benchmark-job")
    shared = (time.perf_counter() - started) / options.rows
    print(f"hash per row, own passwords:     {per_row * 1000:.1f} ms")
    print(f"hash per row, one per job:       {shared * 1_000_000:.1f} us ({options.rows} rows)")
    print(f"10,000 rows, own passwords:      {per_row * 10_000:.0f} s of hashing")
    print(f"10,000 rows, one password:       {per_row + shared * 10_000:.2f} s of hashing")


if __name__ == "__main__":
    main()
