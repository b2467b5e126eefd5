"""Support matrix generated from the tables: kernels x device x quant scheme.

Each cell evaluates, for one kernel on one device and one quant scheme, only the
checks that read device and quantization fields (every other field unknown, so
those checks abstain). A cell is supported, unsupported (with the deciding rule
ids), or conditional (a coupled rule reads another field). The HTML page is
self-contained: no scripts, no external resources; every cell links to the rules
that decide it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Mapping

from ..core.catalog import Catalog, ExpertsEntry
from ..core.checks import Check, Outcome
from ..core.fields import NONE
from ..inputs.hardware import GPU_CATALOG
from ..core.quant import SCHEMES
from ..core.vocab import Platform

__all__ = ["Cell", "MATRIX_DEVICES", "MatrixView", "cell", "cell_for_values", "cuda_values", "matrix_view", "render_html", "render_markdown", "render_text"]

MATRIX_DEVICES = ("A100", "L40S", "H200", "B200", "B300", "RTX_PRO_6000", "DGX_SPARK", "MI300X", "MI355X", "ARC_B580", "CPU_X86_64_AMX", "CPU_AARCH64", "CPU_PPC64LE")
_DEVICE_FIELDS = frozenset({"platform", "device_capability", "gpu_arch", "cpu_arch", "cpu_amx"})
_QUANT_FIELDS = frozenset({"quant_scheme", "weight_quant", "activation_quant", "quant_family"})
_READ = _DEVICE_FIELDS | _QUANT_FIELDS


@dataclass(frozen=True)
class Cell:
    """One kernel x device x scheme: ``status`` is ``yes``, ``no`` or ``conditional``."""

    status: str
    rules: tuple[str, ...]


def _scheme_values(scheme_name: str) -> dict[str, Any]:
    scheme = SCHEMES[scheme_name]
    return {
        "quant_scheme": scheme_name,
        "weight_quant": scheme.weight or NONE,
        "activation_quant": scheme.activation or NONE,
        "quant_family": scheme.family.value,
    }


def _values(device_name: str, scheme_name: str) -> dict[str, Any]:
    dev = GPU_CATALOG[device_name].device
    return {
        "platform": dev.platform.value,
        "device_capability": dev.capability if dev.platform is Platform.CUDA else NONE,
        "gpu_arch": dev.arch if dev.platform in (Platform.ROCM, Platform.XPU) else NONE,
        "cpu_arch": dev.arch if dev.platform is Platform.CPU else NONE,
        "cpu_amx": dev.cpu_amx if dev.platform is Platform.CPU else False,
        **_scheme_values(scheme_name),
    }


def cuda_values(capability: int, scheme_name: str) -> dict[str, Any]:
    """Device and quant values of a CUDA device of ``capability`` (major*10+minor) running ``scheme_name``."""
    return {"platform": Platform.CUDA.value, "device_capability": capability, "gpu_arch": NONE, "cpu_arch": NONE, "cpu_amx": False, **_scheme_values(scheme_name)}


def _relevant(chk: Check) -> bool:
    if not set(chk.fields_read) & _READ:
        return False
    # A layer rule that applies only under a deployment option the matrix does not fix (an all2all
    # backend, a quantization method) says nothing about what the device runs for the scheme.
    return not (chk.rule.startswith("constraint.") and any(p.field not in _READ for p in chk.condition))


_RELEVANT: dict[int, tuple[Any, tuple[Check, ...]]] = {}


def _relevant_checks(entry: ExpertsEntry) -> tuple[Check, ...]:
    """``entry``'s checks that decide a cell, worked out once per entry (a matrix asks for each
    entry's cells hundreds of times: 2.7 million ``_relevant`` calls drew the full matrix)."""
    hit = _RELEVANT.get(id(entry.checks))
    if hit is None or hit[0] is not entry.checks:
        hit = (entry.checks, tuple(c for c in entry.checks if _relevant(c)))
        _RELEVANT[id(entry.checks)] = hit
    return hit[1]


def cell(entry: ExpertsEntry, device_name: str, scheme_name: str) -> Cell:
    """Support of ``entry`` for ``scheme_name`` on ``device_name`` (see module doc)."""
    return cell_for_values(entry, _values(device_name, scheme_name))


def cell_for_values(entry: ExpertsEntry, values: Mapping[str, Any]) -> Cell:
    """Support of ``entry`` for device/quant ``values`` (e.g. from :func:`cuda_values`); other checks are ignored."""
    failed: list[str] = []
    conditional: list[str] = []
    for chk in _relevant_checks(entry):
        outcome = chk.evaluate(values)
        if outcome is Outcome.FAIL:
            failed.append(chk.rule)
        elif outcome is Outcome.ABSTAIN:
            conditional.append(chk.rule)
    if failed:
        return Cell("no", tuple(failed))
    if conditional:
        return Cell("conditional", tuple(conditional))
    return Cell("yes", ())


@dataclass(frozen=True)
class MatrixView:
    """Which part of the matrix to show: device columns (catalog names), schemes and kernels.

    Built by :func:`matrix_view` from the ``matrix --gpu/--quant/--backend`` filters.
    """

    devices: tuple[str, ...] = MATRIX_DEVICES
    schemes: tuple[str, ...] = tuple(SCHEMES)
    entries: tuple[ExpertsEntry, ...] | None = None

    def kernels(self, catalog: Catalog) -> tuple[ExpertsEntry, ...]:
        return self.entries if self.entries is not None else catalog.experts


def matrix_view(catalog: Catalog, gpus: tuple[str, ...] = (), quants: tuple[str, ...] = (), backends: tuple[str, ...] = ()) -> MatrixView:
    """The view for the given filters; each may list several names (comma-separated or repeated).

    ``gpus``: hardware catalog or ``nvidia-smi`` names, one column each, in the order given;
    ``quants``: scheme names or reference aliases; ``backends``: backend ids or ``moe_backend``
    names.

    Raises:
        ConfigError: an unknown name (with a did-you-mean).
    """
    from ..core.requests import resolve_request
    from ..core.errors import ConfigError
    from ..inputs.hardware import lookup_hardware
    from ..core.quant import scheme_by_name, unknown_scheme_issue

    def split(values: tuple[str, ...]) -> list[str]:
        return [v.strip() for value in values for v in value.split(",") if v.strip()]

    devices: list[str] = []
    for name in split(gpus):
        key = next(k for k, hw in GPU_CATALOG.items() if hw is lookup_hardware(name))
        if key not in devices:
            devices.append(key)
    schemes: list[str] = []
    for name in split(quants):
        try:
            scheme = scheme_by_name(name)
        except KeyError:
            raise ConfigError([unknown_scheme_issue("--quant", name)]) from None
        schemes.append(next(k for k, v in SCHEMES.items() if v == scheme))
    entries = None
    if backends:
        wanted: set[str] = set()
        for name in split(backends):
            wanted.update(resolve_request(catalog, name, "--backend") or ())
        entries = tuple(e for e in catalog.experts if e.backend in wanted)
    return MatrixView(tuple(devices) or MATRIX_DEVICES, tuple(dict.fromkeys(schemes)) or tuple(SCHEMES), entries)


def _schemes_for(entry: ExpertsEntry, view: MatrixView | None = None) -> list[str]:
    view = view or MatrixView()
    return [s for s in view.schemes if any(cell(entry, d, s).status != "no" for d in view.devices)]


_TEXT_MARK = {"yes": "Y", "no": ".", "conditional": "~"}
_EMPTY = "No kernel supports the selected schemes on the selected devices."


def render_text(catalog: Catalog, view: MatrixView | None = None, width: int = 100) -> str:
    """A terminal table no wider than ``width`` columns: per scheme, kernels x device names.

    Marks: ``Y`` supported, ``~`` conditional (a coupled rule reads another field), ``.``
    unsupported. When the device columns do not fit, they continue in further blocks that
    repeat the kernel names.
    """
    view = view or MatrixView()
    rows = [(s, e) for s in view.schemes for e in view.kernels(catalog) if any(cell(e, d, s).status != "no" for d in view.devices)]
    head = [f"MoE kernel support (tables {catalog.tables_hash}): Y supported, ~ conditional, . unsupported.",
            "Device and quantization rules only; `moe-oracle explain` decides the rest."]
    if not rows:
        return "\n".join(head + [_EMPTY]) + "\n"
    label = max([len(e.id) for _, e in rows] + [len(s) for s, _ in rows]) + 4
    cols = [max(len(d), 3) + 1 for d in view.devices]
    chunks: list[list[int]] = [[]]
    used = label
    for i, w in enumerate(cols):
        if chunks[-1] and used + w > width:
            chunks.append([])
            used = label
        chunks[-1].append(i)
        used += w
    out = head
    for chunk in chunks:
        scheme = None
        for s, e in rows:
            marks = [cell(e, view.devices[i], s).status for i in chunk]
            if all(m == "no" for m in marks):
                continue  # this block's devices run none of it; another block shows the row
            if s != scheme:
                scheme = s
                out.append("")
                out.append(s.ljust(label) + "".join(view.devices[i].ljust(cols[i]) for i in chunk).rstrip())
            out.append(f"  {e.id}".ljust(label) + "".join(_TEXT_MARK[m].ljust(cols[i]) for m, i in zip(marks, chunk)).rstrip())
    return "\n".join(out) + "\n"


def render_markdown(catalog: Catalog, view: MatrixView | None = None) -> str:
    """Markdown: one row per kernel, one column per device; a cell lists the schemes it runs there."""
    view = view or MatrixView()
    devices = view.devices
    lines = [
        f"# MoE kernel support matrix (tables {catalog.tables_hash})",
        "",
        "Generated by `moe-oracle matrix` from the capability tables: device and quantization rules only;",
        "`*` marks a scheme that a coupled rule (e.g. SM-specific quantization) makes conditional. Activation,",
        "routing, parallel and package rules are in `moe-oracle explain`.",
        "",
        "| kernel | backend | interface | " + " | ".join(devices) + " |",
        "|---|---|---|" + "---|" * len(devices),
    ]
    for entry in view.kernels(catalog):
        schemes = _schemes_for(entry, view)
        if not schemes:
            continue
        cells = []
        for dev in devices:
            parts = []
            for s in schemes:
                c = cell(entry, dev, s)
                if c.status == "yes":
                    parts.append(s)
                elif c.status == "conditional":
                    parts.append(s + "*")
            cells.append(", ".join(parts) if parts else "-")
        fmt = "" if entry.activation_format.value == "standard" else " (batched)"
        lines.append(f"| `{entry.id}` | {entry.backend} | {entry.interface.value}{fmt} | " + " | ".join(cells) + " |")
    if len(lines) == 8:  # the header only: say so instead of an empty table
        lines[6:] = [_EMPTY]
    return "\n".join(lines) + "\n"


_CSS = """
:root{--line:#c9d1d9;--head:#eef1f4;--yes:#cdf3d6;--no:#fbdede;--cond:#fff0b8}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem;color:#1b1f24;line-height:1.4}
h1{font-size:1.4rem;margin:0 0 .5rem} h1 small{font-weight:normal;color:#57606a;font-size:.9rem}
h2{font-size:1.1rem;margin:2rem 0 .5rem} h2 small{font-weight:normal;color:#57606a}
h2 a.up{font-size:.8rem;font-weight:normal;margin-left:.5rem;text-decoration:none}
p.intro{max-width:70rem}
.legend{position:sticky;top:0;z-index:5;box-sizing:border-box;height:2.4rem;min-width:81.75rem;white-space:nowrap;overflow:hidden;background:#fff;padding:.35rem 0;margin:0;border-bottom:1px solid var(--line)}
h2,dt{scroll-margin-top:3rem}
.legend span.key{display:inline-block;padding:.1rem .6rem;margin-right:.5rem;border:1px solid var(--line);border-radius:3px}
.legend .yes{background:var(--yes)} .legend .conditional{background:var(--cond)} .legend .no{background:var(--no);color:#8a2a2a}
.legend small{color:#57606a}
nav{margin:.75rem 0;max-width:80rem} nav a{white-space:nowrap}
table.matrix{border-collapse:separate;border-spacing:0;table-layout:fixed;width:81.75rem;font-size:.8rem}
table.matrix col.k{width:16rem} table.matrix col.b{width:7.25rem} table.matrix col.d{width:4.5rem}
table.matrix th,table.matrix td{border-right:1px solid var(--line);border-bottom:1px solid var(--line);padding:.2rem .35rem;text-align:center;vertical-align:middle}
table.matrix tr>:first-child{border-left:1px solid var(--line)}
table.matrix thead th{position:sticky;top:2.4rem;z-index:2;background:var(--head);border-top:1px solid var(--line);line-height:1.15}
table.matrix thead th small{display:block;font-weight:normal;color:#57606a}
table.matrix td.k,table.matrix th.k{text-align:left;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;position:sticky;left:0;z-index:1;background:#fff;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
table.matrix thead th.k{z-index:4;background:var(--head)}
table.matrix th.b{text-align:left}
table.matrix td.b{text-align:left;color:#57606a;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
table.matrix tbody tr:hover td{filter:brightness(.95)}
td.yes{background:var(--yes);color:#116329} td.no{background:var(--no);color:#8a2a2a} td.conditional{background:var(--cond);color:#6b5200}
td a{color:inherit;text-decoration:none;display:block} td a:hover{text-decoration:underline}
dl.rules{max-width:80rem} dl.rules dt{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;margin-top:.6rem;font-weight:600}
dl.rules dd{margin-left:1.2rem;color:#3d444d} dl.rules dd small{color:#57606a}
dl.rules dt:target,dl.rules dt:target+dd{background:var(--cond)}
"""

_MARK = {"yes": "&#10003;", "no": "&#10007;", "conditional": "~"}


def _width_css(n_devices: int) -> str:
    """Table and legend width for ``n_devices`` device columns (the CSS above is sized for the default 13)."""
    if n_devices == len(MATRIX_DEVICES):
        return ""
    rem = 16 + 7.25 + 4.5 * n_devices
    return f"\ntable.matrix{{width:{rem:g}rem}} .legend{{min-width:{rem:g}rem}}\n"


def _device_label(device_name: str) -> str:
    dev = GPU_CATALOG[device_name].device
    if dev.platform is Platform.CUDA:
        return f"SM {dev.capability}"
    if dev.platform is Platform.CPU:
        return (dev.arch or "cpu") + (" AMX" if dev.cpu_amx else "")
    return dev.arch or dev.platform.value


def render_html(catalog: Catalog, view: MatrixView | None = None) -> str:
    """A static, self-contained page: per quant scheme, kernels x devices; cells link to rules.

    No scripts and no external resources. Every unsupported or conditional cell links to
    the first rule that decides it (the tooltip lists all of them); the rules are listed,
    with id ``rule-<rule id>``, at the end of the page.
    """
    esc = html.escape
    view = view or MatrixView()
    devices = view.devices
    kernels = view.kernels(catalog)
    grid = {(e.id, d, s): cell(e, d, s) for e in kernels for d in devices for s in view.schemes}
    rules: dict[str, Check] = {}
    for entry in kernels:
        for chk in entry.checks:
            if _relevant(chk):
                rules.setdefault(chk.rule, chk)
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>MoE kernel support matrix ({esc(catalog.tables_hash)})</title>",
        f"<style>{_CSS}{_width_css(len(devices))}</style></head><body>",
        f"<h1 id='top'>MoE kernel support matrix <small>tables {esc(catalog.tables_hash)}</small></h1>",
        "<p class='intro'>Generated by <code>moe-oracle matrix --html</code> from the capability tables. Each cell evaluates the "
        "device and quantization rules of one kernel; other dimensions (activation, routing, parallel config, packages) are "
        "decided by <code>moe-oracle explain</code>. Click an unsupported or conditional cell for the rule that decides it.</p>",
        "<p class='legend'><span class='key yes'>&#10003; supported</span><span class='key conditional'>~ conditional</span>"
        "<span class='key no'>&#10007; unsupported</span> <small>conditional: a coupled rule reads another field "
        "(e.g. the all2all backend)</small></p>",
        "<nav><strong>Schemes:</strong> ",
    ]
    schemes = [s for s in view.schemes if any(grid[e.id, d, s].status != "no" for e in kernels for d in devices)]
    out.append(" &middot; ".join(f"<a href='#scheme-{esc(s)}'>{esc(s)}</a>" for s in schemes))
    out.append(" &middot; <a href='#rules'>rules</a></nav>")
    if not schemes:
        out.append(f"<p class='empty'>{esc(_EMPTY)}</p>")
    cols = "<colgroup><col class='k'><col class='b'>" + "<col class='d'>" * len(devices) + "</colgroup>"
    head = "<thead><tr><th class='k'>kernel</th><th class='b'>backend</th>" + "".join(f"<th title='{esc(GPU_CATALOG[d].description)}'>{'_<wbr>'.join(esc(part) for part in d.split('_'))}<small>{esc(_device_label(d))}</small></th>" for d in devices) + "</tr></thead>"
    for s in schemes:
        entries = [e for e in kernels if any(grid[e.id, d, s].status != "no" for d in devices)]
        out.append(f"<h2 id='scheme-{esc(s)}'>{esc(s)} <small>({esc(SCHEMES[s].family.value)}, {len(entries)} kernels)</small><a class='up' href='#top'>&uarr; top</a></h2>")
        out.append(f"<table class='matrix' data-scheme='{esc(s)}'>{cols}{head}<tbody>")
        for e in entries:
            row = [f"<tr><td class='k' title='{esc(e.id)}'>{esc(e.id)}</td><td class='b'>{esc(e.backend)}</td>"]
            for d in devices:
                c = grid[e.id, d, s]
                mark = _MARK[c.status]
                if c.rules:
                    row.append(f"<td class='{c.status}' title='{esc(', '.join(c.rules))}'><a href='#rule-{esc(c.rules[0])}'>{mark}</a></td>")
                else:
                    row.append(f"<td class='{c.status}'>{mark}</td>")
            row.append("</tr>")
            out.append("".join(row))
        out.append("</tbody></table>")
    out.append("<h2 id='rules'>Rules <a class='up' href='#top'>&uarr; top</a></h2><dl class='rules'>")
    for rule_id in sorted(rules):
        chk = rules[rule_id]
        ref = f"<br><small>{esc(chk.reference)}</small>" if chk.reference else ""
        out.append(f"<dt id='rule-{esc(rule_id)}'>{esc(rule_id)}</dt><dd>{esc(chk.code.value)}: {esc(chk.hint)}{ref}</dd>")
    out.append("</dl></body></html>")
    return "\n".join(out) + "\n"
