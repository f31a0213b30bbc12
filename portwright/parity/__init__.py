"""The records a port keeps: pin, coverage matrices, parity ledger, from-scratch inventory
and row specs, as typed models with readers and writers that change only their own bytes.

File formats are described in ``docs/parity-files.md``.
"""
