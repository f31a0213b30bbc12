"""The run store: what a run observed, on disk under ``<state_dir>/runs/<run_id>/``,
each record signed with this machine's evidence key."""

from portwright.runs.keys import EvidenceKeyError, evidence_key, evidence_key_path
from portwright.runs.models import EvidenceKind, EvidenceRecord, RunManifest
from portwright.runs.store import RunStore, UntrustedEvidence

__all__ = ["EvidenceKeyError", "EvidenceKind", "EvidenceRecord", "RunManifest", "RunStore",
           "UntrustedEvidence", "evidence_key", "evidence_key_path"]
