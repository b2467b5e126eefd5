"""`moe-oracle matrix --html` rendered by a real headless Chromium (Debian's /usr/bin/chromium).

Two browser runs on the page generated from the shipped tables: ``--dump-dom`` (the DOM
Chromium built: one table per quant scheme, cells classed yes/no/conditional that agree
with :func:`moe_oracle.explain.matrix.cell`, every link resolving to an element id, nothing
external) and ``--screenshot`` (a PNG, decoded with zlib+struct: not blank, the cell
colours of the stylesheet present, the tables inside the 1400 px viewport).
"""

from __future__ import annotations

import re
import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from itertools import accumulate
from pathlib import Path

import pytest

from moe_oracle.cli import main
from moe_oracle.explain.matrix import _CSS, MATRIX_DEVICES, cell
from moe_oracle.core.quant import SCHEMES

CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1400, 2000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)"),
]

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]
MARKS = {"yes": "\u2713", "no": "\u2717", "conditional": "~"}


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    proc = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=90, check=False)
    assert proc.returncode == 0, f"chromium exited {proc.returncode}: {proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def page(tmp_path_factory, catalog):
    tmp = tmp_path_factory.mktemp("matrix_html")
    path = tmp / "matrix.html"
    assert main(["matrix", "--html", str(path)]) == 0
    return tmp, path


# ----------------------------------------------------------------------------- DOM


class _Dom(HTMLParser):
    """The parts of the dumped DOM the assertions need."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.tags: Counter[str] = Counter()
        self.srcs: list[str] = []
        self.h2_schemes: list[str] = []
        self.tables: list[dict] = []
        self.legend: list[str] = []
        self._cell: dict | None = None
        self._row: list | None = None
        self._section: str | None = None
        self._small = 0
        self._in_legend = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] += 1
        if "id" in a:
            self.ids.add(a["id"])
        if "href" in a:
            self.hrefs.append(a["href"])
        if "src" in a:
            self.srcs.append(a["src"])
        cls = (a.get("class") or "").split()
        if tag == "h2" and a.get("id", "").startswith("scheme-"):
            self.h2_schemes.append(a["id"][len("scheme-"):])
        elif tag == "p" and "legend" in cls:
            self._in_legend = True
        elif tag == "span" and self._in_legend and "key" in cls:
            self.legend.append(" ".join(c for c in cls if c != "key"))
        elif tag == "table" and "matrix" in cls:
            self.tables.append({"scheme": a.get("data-scheme"), "head": [], "rows": []})
        elif tag in ("thead", "tbody") and self.tables:
            self._section = tag
        elif tag == "tr" and self._section:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = {"class": cls, "text": "", "href": None}
        elif tag == "a" and self._cell is not None:
            self._cell["href"] = a.get("href")
        elif tag == "small":
            self._small += 1

    def handle_endtag(self, tag):
        if tag == "small":
            self._small -= 1
        elif tag == "p":
            self._in_legend = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._cell["text"] = self._cell["text"].strip()
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            table = self.tables[-1]
            if self._section == "thead":
                table["head"] = [c["text"] for c in self._row]
            else:
                table["rows"].append(self._row)
            self._row = None
        elif tag in ("thead", "tbody"):
            self._section = None

    def handle_data(self, data):
        if self._cell is not None and not self._small:
            self._cell["text"] += data


@pytest.fixture(scope="module")
def dom(page):
    tmp, path = page
    proc = chromium(tmp, "--dump-dom", path.as_uri())
    assert "</html>" in proc.stdout and "<html" in proc.stdout.lower()[:100], proc.stdout[:200]
    parser = _Dom()
    parser.feed(proc.stdout)
    return parser


def test_dom_has_one_table_per_scheme_with_every_device(dom):
    assert dom.tables, "no table.matrix in the rendered DOM"
    schemes = [t["scheme"] for t in dom.tables]
    assert schemes == dom.h2_schemes and len(set(schemes)) == len(schemes)
    assert set(schemes) <= set(SCHEMES)
    assert {"unquantized", "fp8_block", "nvfp4", "mxfp4_mxfp8"} <= set(schemes)
    for table in dom.tables:
        assert table["head"] == ["kernel", "backend", *MATRIX_DEVICES], table["scheme"]
        assert table["rows"], f"{table['scheme']}: no kernels"
        for row in table["rows"]:
            assert len(row) == 2 + len(MATRIX_DEVICES)
    assert dom.legend == ["yes", "conditional", "no"]


def test_dom_cells_agree_with_the_tables_and_link_to_existing_rules(dom, catalog):
    entries = {e.id: e for e in catalog.experts}
    statuses: Counter[str] = Counter()
    for table in dom.tables:
        scheme = table["scheme"]
        shown = [row[0]["text"] for row in table["rows"]]
        expected = [e.id for e in catalog.experts if any(cell(e, d, scheme).status != "no" for d in MATRIX_DEVICES)]
        assert shown == expected, scheme
        for row in table["rows"]:
            entry = entries[row[0]["text"]]
            assert row[1]["text"] == entry.backend
            for device, td in zip(MATRIX_DEVICES, row[2:]):
                want = cell(entry, device, scheme)
                where = f"{scheme}/{entry.id}/{device}"
                assert td["class"] == [want.status], where
                assert td["text"] == MARKS[want.status], where
                statuses[want.status] += 1
                if want.rules:
                    assert td["href"] == f"#rule-{want.rules[0]}", where
                    assert td["href"][1:] in dom.ids, f"{where}: link target {td['href']} missing"
                else:
                    assert td["href"] is None, where
    assert statuses["yes"] and statuses["no"] and statuses["conditional"], statuses


def test_every_link_target_exists_and_nothing_is_external(dom, page):
    _, path = page
    assert dom.hrefs
    for href in dom.hrefs:
        assert href.startswith("#"), f"non-local link {href}"
        assert href[1:] in dom.ids, f"dangling link {href}"
    assert dom.tags["script"] == 0 and dom.tags["iframe"] == 0 and dom.tags["img"] == 0 and not dom.srcs
    source = path.read_text(encoding="utf-8")
    assert "<script" not in source and "url(" not in source and "@import" not in source
    assert "http:" not in source and "https:" not in source


def test_stylesheet_keeps_headers_sticky_and_widths_fixed():
    css = re.sub(r"\s+", "", _CSS)
    assert re.search(r"table\.matrixtheadth\{position:sticky;top:", css), "sticky column headers"
    assert re.search(r"\.legend\{position:sticky;top:0", css), "sticky legend"
    assert "table-layout:fixed" in css, "same column widths in every scheme's table"


# ----------------------------------------------------------------------------- screenshot


def decode_png(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, bytes per pixel, rows) of an 8-bit, non-interlaced RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    assert ihdr is not None
    width, height, depth, color_type, _, _, interlace = ihdr
    assert depth == 8 and color_type in (2, 6) and interlace == 0, ihdr
    bpp = 3 if color_type == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    assert len(raw) == height * (stride + 1)
    mask = (255).__and__
    prior, rows = bytes(stride), []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1 : start + 1 + stride]
        if kind == 0:
            cur = line
        elif kind == 1:  # Sub: a running sum per channel
            out = bytearray(stride)
            for c in range(bpp):
                out[c::bpp] = bytes(map(mask, accumulate(line[c::bpp])))
            cur = bytes(out)
        elif kind == 2:  # Up
            cur = bytes(map(mask, map(int.__add__, line, prior)))
        elif kind == 3:  # Average
            out = bytearray(line)
            for i in range(stride):
                left = out[i - bpp] if i >= bpp else 0
                out[i] = (out[i] + ((left + prior[i]) >> 1)) & 255
            cur = bytes(out)
        elif kind == 4:  # Paeth
            out = bytearray(line)
            for i in range(stride):
                a, c = (out[i - bpp], prior[i - bpp]) if i >= bpp else (0, 0)
                b = prior[i]
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                out[i] = (out[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            cur = bytes(out)
        else:
            raise AssertionError(f"bad PNG filter {kind} in row {y}")
        rows.append(cur)
        prior = cur
    return width, height, bpp, rows


def _css_colour(name: str) -> tuple[int, int, int]:
    m = re.search(rf"--{name}:#([0-9a-fA-F]{{6}})", _CSS)
    assert m, f"--{name} not in the stylesheet"
    return tuple(int(m.group(1)[i : i + 2], 16) for i in (0, 2, 4))


@pytest.fixture(scope="module")
def screenshot(page):
    tmp, path = page
    png = tmp / "matrix.png"
    chromium(tmp, f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", path.as_uri())
    return decode_png(png.read_bytes())


def test_screenshot_is_not_blank_and_shows_the_cell_colours(screenshot):
    width, height, bpp, rows = screenshot
    assert (width, height) == (WIDTH, HEIGHT)
    colours: Counter[tuple[int, ...]] = Counter()
    right_edge: dict[tuple[int, ...], int] = {}
    wanted = {name: _css_colour(name) for name in ("yes", "no", "cond")}
    for row in rows[::2]:
        for x in range(0, width, 2):
            px = tuple(row[x * bpp : x * bpp + 3])
            colours[px] += 1
            if px in wanted.values():
                right_edge[px] = max(right_edge.get(px, 0), x)
    total = sum(colours.values())
    assert len(colours) > 20, "a near-uniform image: the page did not render"
    assert colours[(255, 255, 255)] < 0.9 * total, "mostly white: the page did not render"
    for name, rgb in wanted.items():
        assert colours[rgb] > 500, f"the {name} cell colour #{bytes(rgb).hex()} is (almost) absent: {colours[rgb]} px"
    # Readable width: every table fits in the 1400 px viewport (no cell pushed off to the right).
    assert max(right_edge.values()) < width - 20, right_edge

