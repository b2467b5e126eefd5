"""moe_oracle.explain: see docs/architecture.md (layers)."""
