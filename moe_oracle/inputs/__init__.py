"""moe_oracle.inputs: see docs/architecture.md (layers)."""
