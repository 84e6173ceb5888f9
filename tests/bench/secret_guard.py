"""What the secret guard costs per create (docs/design.md, section 4.2): `find_credential`, the
whole of its work in a create, timed in this process on what memories hold.

    python -m tests.bench.secret_guard                # 7 rounds of 200 passes over each set
    python -m tests.bench.secret_guard --rounds 3 --passes 50

Sets: `make bench`'s own creates (tests/bench/dataset.py: 80 to 120 characters of plain
facts), the benign and the credential corpus of the tests (tests/support/secret_corpus.py:
memories near credentials, most of which the shortcuts let through to every rule), and two
of 1,000 characters, the longest memory: prose, prose with a long URL (every rule over the
whole text), Japanese with English words (the text folded before it is read) and prose naming
a credential in every sentence (rule 4 at every name). For each: microseconds of process CPU per call, the best and the median
round. What the guard adds to the worker's CPU per create is `make bench`'s figure with the
guard on against `SECRET_GUARD_DEFAULT=false` (tests/bench/README.md, "The secret guard").
"""

from __future__ import annotations

import argparse
import statistics
import time

from tests.bench.dataset import World, specs
from tests.support.secret_corpus import BENIGN, CREDENTIALS
from worker.domain.secret_guard import find_credential

PROSE = "{user} likes long walks on the beach, green tea and board games with friends on Fridays. " * 12
LONG_URL = (PROSE[:800] + " https://docs.example.com/document/d/1aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abcdEFGH/edit"
            "?usp=sharing&ouid=104955738291002193746")
# Text the guard reads after folding it (not ASCII: every character looked up, ASCII set apart
# from the kana and kanji), and text naming a credential in every sentence (every name tries
# both of rule 4's tails).
JAPANESE = "{user}はPython3.12とRustが好きで、毎週金曜日にboard gameをしている。トークンの話もよくする。" * 20
NAMES = "the password for the wifi is on the fridge, the token for the game is the blue meeple. " * 12


def sets() -> dict[str, list[str]]:
    bench = [s.content for s in specs(World(workspaces=200), 2_000, seed=1, prefix="guard")]
    return {"make bench's creates": bench, "benign corpus": BENIGN,
            "credential corpus": [c.content for c in CREDENTIALS],
            "1,000 characters of prose": [PROSE[:1000]], "1,000 characters with a long URL": [LONG_URL[:1000]],
            "1,000 characters of Japanese": [JAPANESE[:1000]], "1,000 characters naming secrets": [NAMES[:1000]]}


def per_call_us(texts: list[str], rounds: int, passes: int) -> tuple[float, float]:
    """(best, median) round's process CPU per call, in microseconds."""
    results = []
    calls = passes * len(texts)
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(passes):
            for text in texts:
                find_credential(text)
        results.append((time.process_time() - started) / calls * 1e6)
    return min(results), statistics.median(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.secret_guard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--passes", type=int, default=200, help="passes over each set per round (the 2,000 bench"
                                                                 " creates get a tenth of them)")
    args = parser.parse_args(argv)
    print(f"find_credential, process CPU per call ({args.rounds} rounds):")
    for name, texts in sets().items():
        passes = max(1, args.passes // 10) if len(texts) > 1_000 else args.passes
        best, median = per_call_us(texts, args.rounds, passes)
        refused = sum(find_credential(t) is not None for t in texts)
        print(f"  {name:<34} {len(texts):>5} texts, {refused:>4} refused: best {best:7.1f} µs, median {median:7.1f} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
