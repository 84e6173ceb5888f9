"""The documentation site builds strictly (a broken link, a missing page or anchor fails) and
renders in a real headless browser (Debian's chromium: `make chromium`); its pages stay short,
its tutorials' sentences too, and the README fits on one page."""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MKDOCS = Path(sys.executable).with_name("mkdocs")


def site_pages() -> list[Path]:
    return [p for p in sorted(DOCS.rglob("*.md")) if "node_modules" not in p.parts
            and p not in (DOCS / "design.md", DOCS / "tomoribot.md")]


def prose(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.DOTALL)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if not MKDOCS.exists():
        pytest.fail("mkdocs is not installed in this venv: `pip install -e '.[test]'` (the docs extra)")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([str(MKDOCS), "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1", "PATH": ""})
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_site_builds_strictly_with_every_page_in_it(site):
    built = {p.relative_to(site).with_suffix(".md") for p in site.rglob("*.html")}
    assert {p.relative_to(DOCS) for p in site_pages()} <= built


def test_no_page_is_over_about_three_thousand_words():
    long = {str(p.relative_to(ROOT)): n for p in site_pages() if (n := len(p.read_text(encoding="utf-8").split())) > 3000}
    assert long == {}


def test_no_tutorial_sentence_is_over_35_words():
    long = []
    for page in sorted((DOCS / "tutorials").glob("*.md")):
        text = re.sub(r"^\s*(#|\||<!--).*$", "", prose(page.read_text(encoding="utf-8")), flags=re.MULTILINE)
        for sentence in re.split(r"(?<=[.!?:])\s+", " ".join(text.split())):
            if len(sentence.split()) > 35:
                long.append(f"{page.name}: {sentence}")
    assert long == []


def test_the_readme_fits_on_one_page():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


@pytest.fixture(scope="module")
def served(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def chromium(*args: str) -> str:
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("Debian's chromium is not installed (`make chromium`, as root): the site is not rendered")
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--user-data-dir=/tmp/memory-worker-docs-chromium", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize(("page", "title", "content"), [
    ("index.html", "memory worker", "Where to start"),
    ("reference/configuration.html", "Configuration", "MEMORY_PARTITIONS"),
    ("reference/contract.html", "Subjects, streams, commands and statuses", "memory_saved_successfully"),
    ("tutorials/run-locally.html", "Run it locally", "Play a conversation"),
])
def test_the_browser_renders_the_page_with_its_nav(served, page, title, content):
    dom = chromium("--dump-dom", f"{served}/{page}")
    assert re.search(rf"<h1[^>]*>{re.escape(title)}", dom), dom[:2000]
    assert 'class="md-nav' in dom and "Tutorials" in dom and "Reference" in dom
    assert content in dom
    if page.startswith("reference/"):
        assert re.search(r"<table>.*?<td>", dom, flags=re.DOTALL), "the generated table did not render"
