"""The launch buttons' targets (autograder/launch.py): every lesson and exercise notebook gets a Colab, Binder,
JupyterHub (nbgitpuller) and "run locally" target of the documented shape, pointing at a file the repository holds;
Binder's configuration installs the course and its Jupyter settings; `instructor hub-link` prints the hub's links."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from packaging.requirements import Requirement

from autograder import launch, layout

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
HUB = "https://hub.example.edu"


def tracked() -> set[str]:
    return set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split())



@pytest.fixture(scope="module")
def pages() -> list[str]:
    found = sorted({p.relative_to(ROOT).as_posix() for p in ROOT.glob("lessons/*/*.??.ipynb")}
                   | {p.relative_to(ROOT).as_posix() for p in ROOT.glob("exercises/*/*.??.ipynb")})
    assert len(found) >= 2 * (9 + 8), found  # nine lessons (the start page too) and eight exercises, two languages
    return found


def test_every_page_gets_four_buttons_in_its_language(pages):
    for path in pages:
        lang = path.rsplit(".", 2)[1]
        got = launch.buttons(path, lang, HUB)
        assert [b.kind for b in got] == list(launch.KINDS)
        assert all(b.url and b.label for b in got), got
        other = launch.buttons(path, "en" if lang == "ko" else "ko", HUB)
        assert all(a.label != b.label for a, b in zip(got, other))
    assert launch.buttons(pages[0], "en")[1].url is None  # no hub address: the site links to the guide's class links
    assert re.search("[가-힣]", launch.buttons(pages[0], "ko")[0].label)


def test_colab_opens_the_file_from_github(pages):
    owner, name = launch.repository()
    files = tracked()
    for path in pages:
        url = urlsplit(launch.colab(path))
        assert (url.scheme, url.netloc) == ("https", "colab.research.google.com")
        found = re.fullmatch(rf"/github/{owner}/{name}/blob/(?P<branch>[^/]+)/(?P<path>.+)", unquote(url.path))
        assert found and found["branch"] == launch.settings()["branch"], url
        assert found["path"] == path and path in files, path  # committed, so GitHub serves it


def test_binder_builds_the_repository_and_opens_the_notebook(pages):
    owner, name = launch.repository()
    files = tracked()
    for path in pages:
        url = urlsplit(launch.binder(path))
        assert (url.scheme, url.netloc, url.path) == ("https", "mybinder.org",
                                                      f"/v2/gh/{owner}/{name}/{launch.settings()['branch']}")
        assert parse_qs(url.query) == {"urlpath": [f"lab/tree/{path}"]} and path in files


def test_hub_link_is_nbgitpuller_s_shape(pages):
    owner, name = launch.repository()
    for path in pages:
        url = urlsplit(launch.hub_link(HUB + "/", path))
        assert (url.scheme, url.netloc, url.path) == ("https", "hub.example.edu", "/hub/user-redirect/git-pull")
        assert parse_qs(url.query) == {"repo": [launch.settings()["repository"]],
                                       "branch": [launch.settings()["branch"]],
                                       "urlpath": [f"lab/tree/{name}/{path}"]}


def test_run_locally_opens_the_readme_section_with_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for lang in ("ko", "en"):
        heading = launch.settings()["local_section"][lang]
        url = urlsplit(launch.local(lang))
        assert f"{url.scheme}://{url.netloc}{url.path}" == launch.settings()["repository"]
        assert unquote(url.fragment) == launch.slug(heading)
        section = readme.split(f"### {heading}\n", 1)[1].split("\n#", 1)[0]
        assert "python3 -m autograder start" in section and "git clone" in section, lang


def test_slug_is_github_s():
    assert launch.slug("Run it on your computer") == "run-it-on-your-computer"
    assert launch.slug("내 컴퓨터에서 실행하기") == "내-컴퓨터에서-실행하기"
    assert launch.slug("3. Collect (nbgrader)") == "3-collect-nbgrader"


def test_bad_input_says_what_to_give():
    from autograder.i18n import speaking
    with speaking("en"):
        with pytest.raises(ValueError, match="starts with http"):
            launch.hub_link("hub.example.edu", "lessons/01_devices/01_devices.en.ipynb")
        for bad in ("README.md", "../x.ipynb", "/etc/x.ipynb"):
            with pytest.raises(ValueError, match="not one of the course's notebooks"):
                launch.colab(bad)


def test_binder_requirements_install_torch_cpu_and_the_course():
    lines = [l.strip() for l in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
             if l.strip() and not l.startswith("#")]
    options = [l for l in lines if l.startswith("--")]
    assert options == ["--extra-index-url https://download.pytorch.org/whl/cpu"]
    assert Requirement(next(l for l in lines if l.startswith("torch"))).name == "torch"
    editable = next(l for l in lines if l.startswith("-e "))
    extras = re.fullmatch(r"-e \.\[(?P<extras>[\w,]+)\]", editable)["extras"].split(",")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras) <= set(declared), extras


def test_binder_post_build_installs_the_course_s_jupyter_settings(tmp_path):
    script = ROOT / "binder" / "postBuild"
    assert os.access(script, os.X_OK) and script.read_text().startswith("#!/bin/bash\n")
    env = dict(os.environ, NB_PYTHON_PREFIX=str(tmp_path))
    subprocess.run([str(script)], cwd=ROOT, env=env, check=True, capture_output=True)  # repo2docker: the repo's folder
    jupyter = ROOT / "autograder" / "data" / "jupyter"
    assert (tmp_path / "etc/jupyter/jupyter_server_config.json").read_text() == \
        (jupyter / "jupyter_server_config.json").read_text()
    assert (tmp_path / "share/jupyter/lab/settings/overrides.json").read_text() == \
        (jupyter / "lab/en/overrides.json").read_text()


def test_instructor_hub_link_prints_a_link_per_notebook(tmp_path):
    env = dict(os.environ, COURSE_LANG="en", XDG_CONFIG_HOME=str(tmp_path))
    run = lambda *a: subprocess.run([sys.executable, "-m", "autograder", "instructor", "hub-link", *a], cwd=ROOT,
                                    env=env, capture_output=True, text=True)
    done = run(HUB)
    assert done.returncode == 0 and not done.stderr, done.stderr
    starts = [layout.start().lesson(lang).as_posix() for lang in ("ko", "en")]
    assert done.stdout.split() == [x for p in starts for x in (p, launch.hub_link(HUB, p))]
    bad = run("hub.example.edu")
    assert bad.returncode == 2 and "starts with http" in bad.stdout and not bad.stderr


def test_readme_leads_with_read_run_and_free_gpu():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lead = readme.split("\n## ", 1)[0]  # before the first language's section
    for words in ("여기서 읽기 · Read it here", "여기서 실행하기 · Run it here", "무료 GPU에서 실행하기 · Run it on a free GPU"):
        assert f"**{words}**" in lead, words
    site = launch.settings()["site_url"]
    for lang in ("ko", "en"):
        start = layout.start().lesson(lang).as_posix()
        assert f"({site}{lang}/)" in lead and f"({launch.binder(start)})" in lead
        assert f"(#{launch.slug(launch.settings()['local_section'][lang])})" in lead
        assert f"({launch.colab(layout.lesson('01_devices', lang).as_posix())})" in lead
    assert "python3 -m autograder start" in lead and "python3 -m autograder test" in lead  # the two commands stay
