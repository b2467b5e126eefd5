"""Experts kernel tables (``<family>.yaml``) and their adapters (``<family>.py``).

The catalog reads only the YAML files; an adapter module is imported when a
Decision is turned into a kernel (:func:`moe_oracle.runtime.build.make_kernel`),
so importing this package needs neither torch nor any kernel library.
"""
