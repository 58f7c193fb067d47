"""Pull the task's data into the sandbox, as SmolDataEnvs' pull_bucket.py does.

The "bucket" is bucket.jsonl beside this script (one object a line: key, sha256,
content), so staging needs no network; the checksum check stands for a real download's.
Writes every object under $INPUT_DIR (default /home/user/input).
"""

import hashlib
import json
import os
import sys
from pathlib import Path, PurePosixPath


def main() -> int:
    destination = Path(os.environ.get("INPUT_DIR", "/home/user/input"))
    bucket = Path(__file__).resolve().with_name("bucket.jsonl")
    pulled = 0
    for number, line in enumerate(bucket.read_text(encoding="utf-8").splitlines(), 1):
        item = json.loads(line)
        key = PurePosixPath(item["key"])
        if key.is_absolute() or ".." in key.parts:
            print(f"bucket.jsonl line {number}: refusing the key {item['key']!r}", file=sys.stderr)
            return 1
        data = item["content"].encode("utf-8")
        if hashlib.sha256(data).hexdigest() != item["sha256"]:
            print(f"bucket.jsonl line {number}: {key} failed its checksum", file=sys.stderr)
            return 1
        target = destination.joinpath(*key.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        pulled += 1
    print(f"pulled {pulled} objects into {destination}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
