"""AGENTS.md → :class:`Rules`: prose for the prompts, gates for the framework."""

from portwright.rules.loader import RULES_NAME, load_rules, parse_rules_file
from portwright.rules.models import (
    BuiltinCheck,
    GatesBlock,
    GateSpec,
    Phase,
    ResolvedGate,
    Rules,
    RulesFile,
    RuntimeProbe,
    Seam,
    SpecRules,
)

__all__ = [
    "RULES_NAME",
    "BuiltinCheck",
    "GateSpec",
    "GatesBlock",
    "Phase",
    "ResolvedGate",
    "Rules",
    "RulesFile",
    "RuntimeProbe",
    "Seam",
    "SpecRules",
    "load_rules",
    "parse_rules_file",
]
