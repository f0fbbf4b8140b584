"""Re-extract LangChain's tests into tests/compat/upstream from a langchain sdist.

Usage: python tests/compat/fetch.py [VERSION]   (default: the version in use now)

Downloads the sdist with pip, copies the files listed in upstream/SHA256SUMS
verbatim and rewrites SHA256SUMS. Review the diff, rerun the compat tests, and
update the version in upstream/README.md.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

UPSTREAM = Path(__file__).parent / "upstream"


def main(version: str) -> None:
    names = [
        line.split(maxsplit=1)[1] for line in (UPSTREAM / "SHA256SUMS").read_text().splitlines()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"langchain=={version}",
                "-d",
                tmp,
            ],
            check=True,
        )
        (sdist,) = Path(tmp).glob("langchain-*.tar.gz")
        print(f"{sdist.name} sha256 {hashlib.sha256(sdist.read_bytes()).hexdigest()}")
        with tarfile.open(sdist) as archive:
            prefix = archive.getnames()[0].split("/", 1)[0]
            lines = []
            for name in names:
                member = archive.extractfile(f"{prefix}/{name}")
                assert member is not None, name
                data = member.read()
                target = UPSTREAM / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                lines.append(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    (UPSTREAM / "SHA256SUMS").write_text("".join(lines))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        from importlib.metadata import version

        main(version("langchain"))
