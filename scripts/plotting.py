"""What the plot scripts (plot_*.py) share: their argument parser and the
matplotlib import that says which python to use when it is missing."""
import argparse
import sys


class Parser(argparse.ArgumentParser):
    """argparse, with errors that say how to get the usage."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\nRun '{self.prog} --help' for the usage.\n")


def import_pyplot():
    try:
        import matplotlib
    except ImportError:
        sys.exit(f"{sys.argv[0]}: {sys.executable} has no matplotlib: run the script with /usr/bin/python3 "
                 "after scripts/install-deps.sh (Debian's python3-matplotlib), or pip install matplotlib for "
                 "this python")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
