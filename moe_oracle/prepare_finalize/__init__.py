"""Prepare/finalize tables (``<kind>.yaml``) and their ``torch.distributed`` implementations (``<kind>.py``).

The catalog reads only the YAML files; implementation modules are imported when
a Decision is turned into a kernel (:func:`moe_oracle.runtime.build.make_kernel`).
"""
