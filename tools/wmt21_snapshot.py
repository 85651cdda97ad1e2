"""The WMT21 news systems as the public snapshot holds them (wmt-conference/wmt21-news-systems): every language
pair's source, references and system outputs (``txt/``), its official automatic scores
(``scores/automatic-scores.tsv``) and its system-level COMET scores (``scores/COMET/``).

``SNAPSHOT`` is a checkout of the repository or a bare git directory of it (read with ``git show``): the
reproduction benchmark and the tools that build test data from it share this module.

    from wmt21_snapshot import Snapshot
    snap = Snapshot("/path/to/wmt21-news-systems")
    pair = snap.pair("en-ja")    # .source, .refs {"A": [...]}, .systems {"NiuTrans": [...]}, .test_set
"""

from __future__ import annotations

import csv
import io
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: The commit of wmt-conference/wmt21-news-systems these tools were written against.
COMMIT = "f41750d"


@dataclass(frozen=True)
class Pair:
    """One language pair of WMT21: its test set's name, source lines, references by name and systems by name."""

    lp: str
    test_set: str
    source: list[str]
    refs: dict[str, list[str]]
    systems: dict[str, list[str]]

    @property
    def target_lang(self) -> str:
        return self.lp.split("-")[1]


class Snapshot:
    """Read the snapshot from a checkout (``txt/`` present) or a git directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.checkout = (self.root / "txt").is_dir()
        if not self.checkout and not (self.root / "HEAD").exists() and not (self.root / ".git").exists():
            raise SystemExit(f"{self.root}: neither a checkout of wmt21-news-systems nor a git directory of it")

    def _names(self, folder: str) -> list[str]:
        if self.checkout:
            return sorted(p.name for p in (self.root / folder).iterdir())
        out = subprocess.run(["git", f"--git-dir={self._git_dir()}", "ls-tree", "--name-only", "HEAD", folder + "/"],
                             capture_output=True, text=True, check=True).stdout
        return sorted(line.rsplit("/", 1)[-1] for line in out.splitlines())

    def _git_dir(self) -> Path:
        return self.root / ".git" if (self.root / ".git").exists() else self.root

    def read(self, path: str) -> bytes:
        """The bytes of a file of the repository."""
        if self.checkout:
            return (self.root / path).read_bytes()
        return subprocess.run(["git", f"--git-dir={self._git_dir()}", "show", f"HEAD:{path}"], capture_output=True,
                              check=True).stdout

    def lines(self, path: str) -> list[str]:
        """A text file's lines (UTF-8, split on ``\\n``, without the final empty string)."""
        text = self.read(path).decode("utf-8")
        return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")

    def pairs(self) -> list[str]:
        """Every language pair with references, in name order."""
        return sorted({name.split(".")[1] for name in self._names("txt/references")})

    def pair(self, lp: str) -> Pair:
        """The texts of one language pair."""
        refs = [n for n in self._names("txt/references") if n.split(".")[1] == lp]
        if not refs:
            raise SystemExit(f"no references of {lp} in the snapshot")
        test_set = refs[0].split(".")[0]
        src_lang, tgt_lang = lp.split("-")
        source = self.lines(f"txt/sources/{test_set}.{lp}.src.{src_lang}")
        references = {n.split(".")[-2]: self.lines(f"txt/references/{n}") for n in refs}
        prefix = f"{test_set}.{lp}.hyp."
        systems = {n[len(prefix):-len(tgt_lang) - 1]: self.lines(f"txt/system-outputs/{n}")
                   for n in self._names("txt/system-outputs") if n.startswith(prefix)}
        return Pair(lp, test_set, source, references, systems)

    def official_scores(self) -> list[dict[str, str]]:
        """The rows of ``scores/automatic-scores.tsv``: ``pair system id is_constrained metric score``."""
        text = self.read("scores/automatic-scores.tsv").decode("utf-8")
        return list(csv.DictReader(io.StringIO(text), delimiter="\t"))

    def comet(self, lp: str) -> dict[str, dict[str, float]]:
        """System-level COMET of one pair per reference (``scores/COMET/LP/COMET_TESTSET_ref-R.tsv``):
        ``{"A": {system: score}}``."""
        out: dict[str, dict[str, float]] = {}
        for name in self._names(f"scores/COMET/{lp}"):
            ref = name.rsplit("ref-", 1)[1].split(".")[0]
            rows = self.read(f"scores/COMET/{lp}/{name}").decode("utf-8").splitlines()
            out[ref] = {}
            for row in rows:
                fields = row.split("\t")
                if len(fields) >= 2:
                    try:
                        out[ref][fields[0]] = float(fields[-1])
                    except ValueError:
                        continue  # a header
        return out
