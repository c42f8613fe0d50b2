"""python -m sdpabench_history SUBCOMMAND ...: scripts/history's one entry point (cli.main)."""
import sys

from .cli import main

sys.exit(main())
