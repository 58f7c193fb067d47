"""The ``smoldata-tui`` command. Imports stay lazy so ``--help`` is instant."""

from __future__ import annotations

import argparse
import os
import sys

from smoldata_tui import __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smoldata-tui",
        description="See what an OpenCode agent did in a SmolDataEnvs episode, and what training makes of it.",
    )
    parser.add_argument("--version", action="version", version=f"smoldata-tui {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="compute the training wrapper's verdict and the findings of traces",
        description=(
            "For each trace, compute native_tool_calls exactly as the environment's training wrapper "
            "does, and list what is wrong with the trace. Exit 0 when every trace gets an int verdict, "
            "1 when any is rejected (None) or would crash the wrapper, 2 on usage errors."
        ),
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="trace files, or directories of *.jsonl traces")
    check.add_argument("--json", action="store_true", help="one JSON object per trace (JSON Lines)")
    check.add_argument(
        "--strict", action="store_true", help="also fail on error findings in traces the wrapper accepts"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            from smoldata_tui.check import run_check

            return run_check(args.paths, as_json=args.json, strict=args.strict)
        parser.print_help()
        return 0
    except KeyboardInterrupt:
        print("smoldata-tui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (e.g. `| head`); nothing left to say
        return 0
    except Exception as exc:  # noqa: BLE001 - one clear line instead of a traceback
        from smoldata_tui.check import UsageError

        if isinstance(exc, UsageError):
            print(f"smoldata-tui {args.command}: {exc}", file=sys.stderr)
            return 2
        if os.environ.get("SMOLDATA_TUI_DEBUG"):
            raise
        print(
            f"smoldata-tui {args.command}: internal error: {type(exc).__name__}: {exc} "
            "(set SMOLDATA_TUI_DEBUG=1 to see the traceback, and please report it)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    raise SystemExit(main())
