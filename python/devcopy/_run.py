"""python -m devcopy run: a whole script under the copy observer, started as
python starts it (as python -m cProfile does): sys.argv, a __main__ module,
sys.path[0] the script's folder; the report goes to stderr afterwards, also
when the script raised or exited, and the exit status is the script's."""
import builtins
import os
import runpy
import sys
import traceback
import types

from ._cli import CliError, write_output

_HERE = os.path.dirname(os.path.abspath(__file__))


def _status(exit):
    """The exit status `python script.py` gives for a SystemExit."""
    if exit.code is None:
        return 0
    if isinstance(exit.code, int):
        return exit.code
    print(exit.code, file=sys.stderr)
    return 1


def _print_traceback(exc):
    """The traceback python prints, without runpy's and devcopy's frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith((_HERE, "<frozen", runpy.__file__)):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def _run_script(path):
    """Runs `path` as `python path` does: a fresh __main__ module, __file__
    absolute, sys.argv[0] as given."""
    with open(path, "rb") as f:
        source = f.read()
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=os.path.abspath(path), __builtins__=builtins, __cached__=None)
    sys.modules["__main__"] = main
    exec(compile(source, main.__file__, "exec"), main.__dict__)


def run(args):
    """Runs args.target (a script, or a module with args.module) with
    args.args; returns its exit status."""
    from ._observe import observe
    if args.module:
        sys.argv = [args.target, *args.args]  # runpy sets argv[0] to the module's file
    else:
        if not os.path.isfile(args.target):
            raise CliError(f"cannot run {args.target}: no such file")
        sys.argv = [args.target, *args.args]
        sys.path[0] = os.path.dirname(os.path.abspath(args.target))
    status = 0
    with observe() as obs:
        try:
            if args.module:
                runpy.run_module(args.target, run_name="__main__", alter_sys=True)
            else:
                _run_script(args.target)
        except SystemExit as e:
            status = _status(e)
        except KeyboardInterrupt as e:
            _print_traceback(e)
            status = 130
        except BaseException as e:
            _print_traceback(e)
            status = 1
    report = obs.report
    sys.stdout.flush()
    sys.stderr.write(str(report))
    sys.stderr.flush()
    if args.json:
        write_output(args.json, report.to_json())
    if args.html:
        write_output(args.html, report.to_html(title=f"devcopy run {args.target}"))
    return status
