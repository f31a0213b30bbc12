"""pystats: a Python port of the tinystats JavaScript library."""

from pystats.stats import clamp, mean, median, percentile

__all__ = ["clamp", "mean", "median", "percentile"]
