"""What `python -m devcopy` reads and writes, with the command's errors: one
line, exit status 2."""
import os
import shutil
import sys

MAX_INPUT = 64 << 20  # bytes: far past any real report; /dev/zero stops here


class CliError(Exception):
    """A one-line error for stderr (exit status 2)."""


def read_input(path):
    """The text of `path` ('-': stdin), read with a size limit."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_INPUT + 1)
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None
    if len(data) > MAX_INPUT:
        raise CliError(f"{path}: larger than {MAX_INPUT >> 20} MiB, not a devcopy report")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CliError(f"{path}: not a devcopy JSON report (not UTF-8 text at byte {e.start})") from None


def write_output(path, text):
    """Writes `text` to `path` (stdout when None). A regular file is replaced
    only once the whole text is written, keeping its mode: a failed write
    leaves it as it was. Anything else (/dev/stdout, a pipe) is written to."""
    if path is None:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError as e:
            # What could not be flushed must not fail again at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise CliError(f"cannot write to stdout: {e.strerror or e}") from None
        return
    regular = not os.path.exists(path) or os.path.isfile(path)
    tmp = f"{path}.devcopy-{os.getpid()}.tmp" if regular else path
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        if regular:
            if os.path.exists(path):
                shutil.copymode(path, tmp)
            os.replace(tmp, path)
    except OSError as e:
        if regular and os.path.exists(tmp):
            os.unlink(tmp)
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None
