"""How the console commands end their process (``harness.arguments.console_command``, ``skip_last_collection``)
and that every command of the package is wired through it."""

from __future__ import annotations

import atexit
import subprocess
import sys
from importlib.metadata import distribution

import pytest

from harness.arguments import console_command, skip_last_collection

pytestmark = pytest.mark.slow  # end to end: the fast tier (-m 'not slow') leaves it out


def test_the_value_is_returned():
    assert console_command(lambda: 7) == 7


@pytest.mark.parametrize("exc", [SystemExit(3), ValueError("boom")])
def test_an_exit_or_an_error_passes_through(exc):
    def main():
        raise exc

    with pytest.raises(type(exc)) as info:
        console_command(main)
    assert info.value is exc


def test_the_freeze_is_registered_once_per_process():
    skip_last_collection()
    before = atexit._ncallbacks()
    skip_last_collection()
    console_command(lambda: None)
    assert atexit._ncallbacks() == before


def test_every_command_is_a_console_function():
    scripts = {ep.name: ep.value for ep in distribution("bleu-harness").entry_points if ep.group == "console_scripts"}
    assert scripts == {"harness": "harness.app:console", "harness-score": "harness.cli:console",
                       "harness-history": "harness.history:console", "harness-compare": "harness.compare:console",
                       "harness-import": "harness.import_data:console"}


def test_an_ending_process_skips_the_collection_and_loses_nothing(tmp_path):
    """At exit the objects are frozen (seen by an ``atexit`` handler registered earlier, which runs later), and
    nothing a command writes is lost: a file closed by its writer, and text printed to both standard streams and
    not flushed, are all there; the exit status is the command's."""
    out = tmp_path / "closed.txt"
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f' frozen={gc.get_freeze_count() > 0}'))\n"
        "from harness.arguments import console_command\n"
        "def main():\n"
        f"    with open({str(out)!r}, 'w') as f:\n"
        "        f.write('x' * 100000)\n"
        "    print('printed', end='')\n"
        "    sys.stderr.write('warned')\n"
        "    return 4\n"
        "sys.exit(console_command(main))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (4, "printed", "warned frozen=True")
    assert out.read_text() == "x" * 100000
