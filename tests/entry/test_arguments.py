"""How the console commands end their process (``harness.arguments.console_command``) and that every command of
the package is wired through it."""

from __future__ import annotations

import gc
import subprocess
import sys
from importlib.metadata import distribution

import pytest

from harness.arguments import console_command


@pytest.fixture()
def unfrozen():
    """The test process's garbage collector as it was: whatever a test froze is unfrozen after it."""
    yield
    gc.unfreeze()


def test_the_value_is_returned_and_the_objects_alive_are_frozen(unfrozen):
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    assert console_command(lambda: 7) == 7
    assert gc.get_freeze_count() > 0


@pytest.mark.parametrize("exc", [SystemExit(3), ValueError("boom")])
def test_an_exit_or_an_error_passes_through_and_still_freezes(unfrozen, exc):
    gc.unfreeze()

    def main():
        raise exc

    with pytest.raises(type(exc)) as info:
        console_command(main)
    assert info.value is exc
    assert gc.get_freeze_count() > 0


def test_every_command_is_a_console_function():
    scripts = {ep.name: ep.value for ep in distribution("bleu-harness").entry_points if ep.group == "console_scripts"}
    assert scripts == {"harness": "harness.app:console", "harness-score": "harness.cli:console",
                       "harness-history": "harness.history:console", "harness-compare": "harness.compare:console"}


def test_what_an_ending_process_wrote_is_all_there(tmp_path):
    """Skipping the last collection loses nothing a command writes: a file closed by its writer, and text printed
    to both standard streams and not flushed, are all there; the exit status is the command's."""
    out = tmp_path / "closed.txt"
    code = (
        "import sys\n"
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
    assert (proc.returncode, proc.stdout, proc.stderr) == (4, "printed", "warned")
    assert out.read_text() == "x" * 100000
