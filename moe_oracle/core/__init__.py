"""moe_oracle.core: see docs/architecture.md (layers)."""
