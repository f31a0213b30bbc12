"""portwright: agents port upstream work into a downstream project; the framework checks it."""

__version__ = "0.1.0"
