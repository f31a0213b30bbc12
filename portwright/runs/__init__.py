"""The run store: what a run observed, on disk under ``<state_dir>/runs/<run_id>/``."""

from portwright.runs.models import EvidenceKind, EvidenceRecord, RunManifest
from portwright.runs.store import RunStore

__all__ = ["EvidenceKind", "EvidenceRecord", "RunManifest", "RunStore"]
