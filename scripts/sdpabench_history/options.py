"""argparse types shared by scripts/history's subcommands (cli.py) and its bench (bench.py)."""
import argparse
import math


def at_least(low, kind=float):
    """An argparse type: a finite number of `kind` >= low."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects a number, got {text!r}")
        if not math.isfinite(v) or v < low:
            raise argparse.ArgumentTypeError(f"expects a finite number >= {low}, got {text}")
        return v
    return parse


def pvalue(text):
    """An argparse type: a p-value threshold in (0, 1]."""
    v = at_least(0.0)(text)
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"expects a p-value in (0, 1], got {text}")
    return v

