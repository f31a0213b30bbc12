"""pystats: a Python port of the tinystats JavaScript library."""

from pystats.stats import mean, median

__all__ = ["mean", "median"]
