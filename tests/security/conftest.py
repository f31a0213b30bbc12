"""The gates' test world (a downstream/upstream pair, a local sandbox, a run store) serves
the attacks on evidence too."""

from tests.gates.conftest import sandbox, store, world

__all__ = ["sandbox", "store", "world"]
