"""The record every table tool reports (lint, drift)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Finding"]


@dataclass(frozen=True)
class Finding:
    """One lint result. ``severity``: ``error`` (the tables are wrong), ``warning`` (probably wrong), ``note``."""

    severity: str
    code: str
    subject: str
    message: str

    def format(self) -> str:
        return f"{self.severity:<7} {self.code:<22} {self.subject}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "subject": self.subject, "message": self.message}
