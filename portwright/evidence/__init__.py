"""Deterministic engines that establish facts from git and from commands."""
