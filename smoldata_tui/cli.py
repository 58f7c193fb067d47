"""The ``smoldata-tui`` command. Imports stay lazy so ``--help`` is instant."""

from __future__ import annotations

import argparse
import os
import sys

from smoldata_tui import __version__
from smoldata_tui.commands.stdout_guard import StdoutGuard, report_output_failure


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smoldata-tui",
        description="See what an OpenCode agent did in a SmolDataEnvs episode, and what training makes of it.",
        epilog="A command exits 74 when its output cannot be written (a full disk, an I/O error), 141 "
        "quietly when the reader of its output goes away (| head; run --headless stops its episode and exits 1), "
        "3 on an internal error.",
    )
    parser.add_argument("--version", action="version", version=f"smoldata-tui {__version__}")
    parser.add_argument("--tasks", dest="home_tasks", metavar="DIR",
                        help="the task set the home screen lists (default: the sample tasks); before `tasks`, `run` "
                        "or `opencode compare`, theirs")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="compute the training wrapper's verdict and the findings of traces",
        description=(
            "For each trace, compute native_tool_calls exactly as the environment's training wrapper "
            "does, and list what is wrong with the trace. Exit 0 when every trace gets an int verdict, "
            "1 when any is rejected (None) or would crash the wrapper, 2 on usage errors and unreadable or missing "
            "paths (the others are still checked), 74 when the output "
            "cannot be written, 141 when its reader goes away (| head)."
        ),
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="trace files, or directories of *.jsonl traces")
    check.add_argument("--json", action="store_true", help="one JSON object per trace (JSON Lines)")
    check.add_argument(
        "--strict", action="store_true", help="also fail on error findings in traces the wrapper accepts"
    )
    check.add_argument(
        "--summary",
        action="store_true",
        help="the totals (verdicts, rejection reasons, findings, per-task pass rates): instead of the table, "
        "or as a last JSON line after the per-trace lines with --json",
    )
    check.add_argument(
        "--groups",
        action="store_true",
        help="the groups a GRPO-style trainer learns from (k attempts of one task by one model): rewards, mean, "
        "sample std, advantages, 'no learning signal', wrapper rejections and where passing and failing attempts "
        "part ways; a table, or a last JSON line {\"groups\": [...]} with --json",
    )
    check.add_argument(
        "--no-cache",
        action="store_true",
        help="read every trace; by default --json keeps each trace's result in the user's cache directory "
        "and reuses it while the trace and the files beside it are unchanged",
    )
    replay = commands.add_parser(
        "replay",
        help="open the episode viewer on a trace (or a folder of traces)",
        description=(
            "Browse an OpenCode trace in a terminal timeline: every event, the findings, the stats and the "
            "training wrapper's verdict. PATH is a trace file, or a folder: the fleet table opens on it, one row per "
            "episode (every trace below it); Enter opens one."
        ),
    )
    replay.add_argument("path", metavar="PATH", help="a trace file (.jsonl), or a directory of traces")
    replay.add_argument(
        "--follow", "-f", action="store_true", help="keep reading a trace that is still being written (like tail -f)"
    )
    replay.add_argument(
        "--speed",
        type=float,
        metavar="X",
        help="play the trace back on its own timestamps, X times as fast (space pauses, . steps, End jumps)",
    )
    tasks = commands.add_parser(
        "tasks",
        help="list a task set (default: the sample tasks shipped with smoldata-tui)",
        description="List the Harbor task folders of a task set: tier, category, where the data comes from, the "
        "instruction's first line. Exit 2 when the task root is missing or a task is malformed, 74 when the "
        "output cannot be written, 141 when its reader goes away (| head).",
    )
    tasks.add_argument("--tasks", metavar="DIR", help="the folder that holds the task folders")
    tasks.add_argument("--json", action="store_true", help="one JSON object per task (JSON Lines)")
    opencode = commands.add_parser(
        "opencode",
        help="install the pinned OpenCode binary, or show where it is",
        description="OpenCode is installed from npm (opencode-ai) into $XDG_CACHE_HOME/smoldata-tui/opencode/VERSION "
        "on first use and reused afterwards. Exit 1 when it cannot be installed, or (path) is not installed.",
    )
    opencode_actions = opencode.add_subparsers(dest="opencode_action", metavar="ACTION", required=True)
    for action, action_help in (
        ("install", "install OpenCode unless already installed, then print the binary's path"),
        ("path", "print the installed binary's path"),
    ):
        opencode_actions.add_parser(action, help=action_help).add_argument(
            "--version", dest="opencode_version", metavar="V", help="OpenCode version (default: the environment's pin)"
        )
    _add_opencode_compare_parser(opencode_actions)
    _add_run_parser(commands)
    _add_daytona_parser(commands)
    _add_local_parser(commands)
    diff = commands.add_parser("diff", help="where two episodes part ways: their tool calls aligned",
                               description="Align the tool calls of two episodes (trace files or episode folders) "
                               "and show where they part ways: on the screen in a terminal, as text in a pipe, a "
                               "file or a CI log. Exit 0 when every call is the same, 1 when they "
                               "differ, 2 on usage errors, 74 when the output cannot be written, 141 when its "
                               "reader goes away (| head).")  # fmt: skip
    diff.add_argument("a", metavar="A", help="a trace file, or an episode folder (run.jsonl + run.meta.json)")
    diff.add_argument("b", metavar="B", help="the other trace file or episode folder")
    diff.add_argument("--json", action="store_true", help="one JSON object instead of the screen or the text")
    return parser


def _add_opencode_compare_parser(actions) -> None:
    compare = actions.add_parser(
        "compare", help="replay recordings on two OpenCode versions and say what changed",
        description="Replay each recording (default: the shipped real recordings of the built-in harness) through "
        "OpenCode OLD and NEW, capture on, and report per recording: verdict, grade and exit on both, event types "
        "and fields that appeared or vanished, step order changes, the tools offered to the model and the replay's "
        "divergences. Exit 0 when nothing differs, 1 when something does, 2 for usage errors.")  # fmt: skip
    compare.add_argument("old", metavar="OLD", help="the OpenCode version in use, e.g. 1.18.31")
    compare.add_argument("new", metavar="NEW", help="the version to check, e.g. 1.18.33")
    compare.add_argument("recordings", nargs="*", metavar="RECORDING", help="a trace, or an episode folder")
    compare.add_argument("--task", metavar="NAME", help="the task of every recording (default: each one's metadata)")
    compare.add_argument("--tasks", metavar="DIR", help="the task set (default: the sample tasks)")
    compare.add_argument("--jobs", type=int, metavar="N", help="episodes of one version at once (default: the CPU count)")
    compare.add_argument("--timeout", type=float, default=300.0, metavar="S", help="each episode's limit (default 300)")
    compare.add_argument("--save", metavar="DIR", help="keep the replayed episodes in DIR/old and DIR/new")
    compare.add_argument("--json", action="store_true", help="one JSON object as the last line instead of the table")


def _add_daytona_parser(commands) -> None:
    daytona = commands.add_parser(
        "daytona",
        help="list or delete the Daytona sandboxes smoldata-tui made",
        description="Sandboxes carry the labels app=smoldata-tui, run, owner and task. `ls` lists them with the "
        "live run (if any) each belongs to; `gc` deletes those not tied to a live run of this machine "
        "(other owners' only with --all-owners). Needs DAYTONA_API_KEY (and DAYTONA_API_URL / DAYTONA_TARGET).",
    )
    actions = daytona.add_subparsers(dest="daytona_action", metavar="ACTION", required=True)
    ls = actions.add_parser("ls", help="list our sandboxes")
    ls.add_argument("--json", action="store_true", help="one JSON object per sandbox")
    gc = actions.add_parser("gc", help="delete our sandboxes that no live run uses")
    gc.add_argument("--yes", action="store_true", help="delete without asking")
    gc.add_argument("--all-owners", action="store_true", help="also other users' and machines' sandboxes")


def _add_local_parser(commands) -> None:
    local = commands.add_parser(
        "local",
        help="list or clean up the local (bubblewrap) sandboxes a killed run left behind",
        description="A run removes its local sandbox on every exit short of SIGKILL. `ls` lists the sandbox "
        "folders in $XDG_CACHE_HOME/smoldata-tui/sandboxes with their owner process; `gc` ends the processes and "
        "removes the folders of those whose owner is gone, and marks saved episodes whose process is gone "
        "interrupted. Exit 1 when there was something to do and it was not done.",
    )
    actions = local.add_subparsers(dest="local_action", metavar="ACTION", required=True)
    ls = actions.add_parser("ls", help="list the local sandboxes")
    ls.add_argument("--json", action="store_true", help="one JSON object per sandbox")
    gc = actions.add_parser("gc", help="remove the sandboxes of dead runs, mark their episodes interrupted")
    gc.add_argument("--yes", action="store_true", help="do it without asking")
    gc.add_argument("--save", default="runs", metavar="DIR", help="where episodes are saved (default ./runs)")


def _add_run_parser(commands) -> None:
    run = commands.add_parser(
        "run",
        help="run a task live: real OpenCode in a sandbox, streamed, graded, saved",
        description=(
            "Stage a task into a fresh sandbox, run the pinned OpenCode against a model endpoint (or the "
            "replay model), follow its log, grade the answer on the host and save the episode "
            "(trace + metadata, no secrets). With --headless: one line per event, then one JSON line. "
            "Several tasks, --all or --attempts K > 1 run a batch: one episode per (task, attempt) in "
            "SAVE/<batch>/<task>-<attempt>/ with batch.json, pass@k per task. "
            "Exit 0 when the episode (every episode of a batch) was graded, 1 when not, 2 for usage errors."
        ),
    )
    run.add_argument("--task", action="append", metavar="NAME",
                     help="the task folder's name; repeat it for a batch of several tasks")
    run.add_argument("--all", action="store_true", help="every task of the task set, as one batch")
    run.add_argument("--attempts", type=int, default=1, metavar="K",
                     help="episodes per task; a batch reports pass@1..pass@K per task (default 1)")
    run.add_argument("--concurrency", type=int, metavar="N",
                     help="episodes of a batch running at once (default: the CPU count locally, "
                     "16 on Daytona)")
    run.add_argument("--tasks", metavar="DIR", help="the task set (default: the sample tasks that ship with smoldata-tui)")
    run.add_argument("--backend", default="local", choices=["local", "daytona"],
                     help="where the sandbox runs: local (bubblewrap) or daytona (DAYTONA_API_KEY) (default: local)")
    run.add_argument("--harness", default="builtin", choices=["builtin", "opencode-env"],
                     help="builtin: smoldata-tui's driver (opencode_env's configuration, rebuilt); opencode-env: "
                     "opencode_env's own OpenCodeSessionFactory in the environment's configuration, with its "
                     "logging proxy (needs opencode_env installed) (default: builtin)")
    run.add_argument("--daytona-snapshot", metavar="NAME",
                     help="create Daytona sandboxes from this snapshot (default: $DATA_AGENT_DAYTONA_SNAPSHOT, "
                     "the environment's, else $DAYTONA_SNAPSHOT, else the environment's image)")
    for flag, unit, default in (("cpu", "CPUs", 1), ("memory", "GiB of memory", 4), ("disk", "GiB of disk", 5)):
        run.add_argument(f"--daytona-{flag}", metavar="N",
                         help=f"{unit} of a Daytona sandbox made from the image (default {default}, as the "
                         "environment's backend; a snapshot brings its own)")
    run.add_argument("--daytona-target", metavar="REGION",
                     help="the Daytona target (region) for this run's sandboxes (default: $DAYTONA_TARGET, else "
                     "the account's default)")
    run.add_argument("--model", metavar="M", help="model name at the endpoint, or replay:TRACE for the replay model")
    run.add_argument("--base-url", metavar="URL", help="OpenAI-compatible endpoint (default: $SANDBOX_VLLM_URL + /v1)")
    run.add_argument("--api-key", metavar="KEY", help="the endpoint's key (default: $SANDBOX_VLLM_KEY); never shown or saved")
    run.add_argument("--timeout", type=float, default=600.0, metavar="S", help="episode wall-clock limit: staging and the agent share it (default 600)")
    run.add_argument("--save", default="runs", metavar="DIR", help="where episodes are saved (default ./runs)")
    run.add_argument("--opencode-version", default="1.18.31", metavar="V", help="OpenCode version (default 1.18.31)")
    run.add_argument("--opencode-bin", metavar="PATH", help="use this OpenCode binary instead of the cached install")
    run.add_argument("--headless", action="store_true", help="no TUI: print events and a final JSON line")
    run.add_argument("--fork", metavar="EPISODE",
                     help="fork a saved episode (its folder or run.jsonl): its task, its recording as the model "
                     "before --at-step, --model from there on (docs/replay-model.md)")
    run.add_argument("--at-step", type=int, metavar="N", help="with --fork: the first step --model answers (from 1)")
    run.add_argument("--edit", action="store_true",
                     help="with --fork: edit in $EDITOR what step N's request carries last (step N-1's last tool "
                     "output, or at step 1 the prompt); the model reads the edit")
    run.add_argument("--sampling", action="append", metavar="temperature=T",
                     help="training's sampling policy, as a trainer's capture session sets it: the temperature "
                     "(top_p 1.0, top_k -1, min_p 0 and neutral penalties are sent with it; any other value is "
                     "refused); default: none sent, the engine's defaults. Not with --no-capture")
    run.add_argument("--context-window", metavar="N",
                     help="the served model's context window in tokens, for the budget forecast (default: the "
                     "endpoint's /v1/models max_model_len when it says; else unknown). Not with --no-capture")
    run.add_argument("--no-capture", action="store_true",
                     help="OpenCode talks straight to the endpoint (its key in the sandbox), not through openenv's "
                     "capture proxy in training's policy; no run.training.json")


def main(argv: list[str] | None = None) -> int:
    guard = StdoutGuard(sys.stdout)
    sys.stdout = guard
    args = argparse.Namespace(command=None)
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        _apply_task_set_before_command(parser, args)
        status = _dispatch(args)
        if guard.failed is None:
            sys.stdout.flush()  # a failure now is this command's, not the interpreter's at exit
        else:
            guard.silence()  # the command dealt with its reader going away (run --headless)
        return status
    except KeyboardInterrupt:
        print("smoldata-tui: interrupted", file=sys.stderr)
        return 130
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - one clear line instead of a traceback
        failure = guard.failure_of(exc)
        if failure is not None:
            guard.silence()
            return report_output_failure(args.command, failure)
        if isinstance(exc, SystemExit):
            raise
        if os.environ.get("SMOLDATA_TUI_DEBUG"):
            raise
        name = f"smoldata-tui{' ' + args.command if args.command else ''}"
        if isinstance(exc, ImportError):  # a broken installation, not a bug of ours
            print(f"{name}: a library it needs cannot be loaded: {type(exc).__name__}: {exc} "
                  "(reinstall smoldata-tui with its dependencies)", file=sys.stderr)  # fmt: skip
            return 3
        print(
            f"{name}: internal error: {type(exc).__name__}: {exc} "
            "(set SMOLDATA_TUI_DEBUG=1 to see the traceback, and please report it)",
            file=sys.stderr,
        )
        return 3
    finally:
        sys.stdout = guard.stream


def _apply_task_set_before_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``smoldata-tui --tasks DIR COMMAND``: the task set of a command that takes one (tasks, run,
    opencode compare), never ignored without a word."""
    if args.command is None or args.home_tasks is None:
        return
    if not hasattr(args, "tasks"):
        parser.error(f"--tasks before a command is the home screen's task set; `{args.command}` takes none")
    if args.tasks is None:
        args.tasks = args.home_tasks
    elif args.tasks != args.home_tasks:
        parser.error(f"two task sets: --tasks {args.home_tasks} before the command and --tasks {args.tasks} after it")


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "check":
        from smoldata_tui.commands.check import run_check

        return run_check(args.paths, as_json=args.json, strict=args.strict, summary=args.summary,
                         groups=args.groups, use_cache=not args.no_cache)  # fmt: skip
    if args.command == "replay":
        from smoldata_tui.ui.apps.viewer import run_replay

        return run_replay(args.path, follow=args.follow, speed=args.speed)
    if args.command == "tasks":
        from smoldata_tui.tasks.listing import run_tasks_listing

        return run_tasks_listing(args.tasks, as_json=args.json)
    if args.command == "run":
        from smoldata_tui.commands.run import run_live_or_headless

        return run_live_or_headless(args)
    if args.command == "diff":
        from smoldata_tui.commands.diff import run_diff

        return run_diff(args.a, args.b, as_json=args.json)
    if args.command == "daytona":
        from smoldata_tui.commands.daytona import run_daytona_cli

        return run_daytona_cli(args)
    if args.command == "local":
        from smoldata_tui.commands.local import run_local_cli

        return run_local_cli(args)
    if args.command == "opencode" and args.opencode_action == "compare":
        from smoldata_tui.diff.opencode_compare import run_compare_cli

        return run_compare_cli(args)
    if args.command == "opencode":
        from smoldata_tui.opencode.install import run_opencode_cli

        return run_opencode_cli(args.opencode_action, args.opencode_version)
    from smoldata_tui.ui.apps.live import run_home

    return run_home(args.home_tasks)


if __name__ == "__main__":
    raise SystemExit(main())
