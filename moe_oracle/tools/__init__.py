"""moe_oracle.tools: see docs/architecture.md (layers)."""
