"""Where a notebook of the course opens: the targets of the website's launch buttons, made from ``data/site.yaml``.

Every target is a documented URL form: Colab's GitHub path, Binder's ``/v2/gh/`` with ``urlpath``, nbgitpuller's
``git-pull`` link on a class's JupyterHub, and the README's section with the two commands.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlencode

from .datafile import read_yaml
from .i18n import msg

SITE = Path(__file__).parent / "data" / "site.yaml"
KINDS = ("local", "hub", "colab", "binder")
_GITHUB = re.compile(r"^https://github\.com/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class Button:
    """One launch button: ``kind`` (one of ``KINDS``), its ``label`` in a language, and its target ``url``
    (None for ``hub`` without a hub address: the site then links to the instructor guide's class links)."""

    kind: str
    label: str
    url: str | None


@lru_cache(maxsize=1)
def settings() -> dict:
    """``data/site.yaml``: repository, branch, site_url, binder, colab, local_section."""
    return read_yaml(SITE)


def repository() -> tuple[str, str]:
    """(owner, name) of the course's GitHub repository, or a clear error naming the setting."""
    url = settings()["repository"]
    found = _GITHUB.match(url)
    if not found:
        raise ValueError(msg("launch.no_repository", url=url).text())
    return found["owner"], found["repo"]


def _notebook(path: str) -> str:
    """``path`` as a repository-relative POSIX path of a notebook, or a clear error."""
    pure = PurePosixPath(str(path).replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or pure.suffix != ".ipynb":
        raise ValueError(msg("launch.bad_path", path=path).text())
    return str(pure)


def colab(path: str) -> str:
    """Colab opens a notebook straight from GitHub: ``/github/<owner>/<repo>/blob/<branch>/<path>``."""
    owner, name = repository()
    return f"{settings()['colab']}/github/{owner}/{name}/blob/{settings()['branch']}/{quote(_notebook(path))}"


def binder(path: str) -> str:
    """Binder builds the repository (``binder/``) and opens ``path`` in JupyterLab, from the repository's root."""
    owner, name = repository()
    query = urlencode({"urlpath": f"lab/tree/{_notebook(path)}"}, quote_via=quote)
    return f"{settings()['binder']}/v2/gh/{owner}/{name}/{settings()['branch']}?{query}"


def hub_link(hub: str, path: str) -> str:
    """nbgitpuller's link: the first click clones the course into the learner's home on ``hub``, later ones merge
    the course's changes and keep the learner's; it then opens ``path`` in JupyterLab. The repository may be any
    git URL nbgitpuller can clone (a class's own server too)."""
    if not re.match(r"^https?://[^/\s]+", hub or ""):
        raise ValueError(msg("launch.bad_hub", hub=hub).text())
    repo = settings()["repository"]
    folder = repo.split("/")[-1]  # where nbgitpuller clones it (its SyncHandler's default targetpath)
    query = urlencode({"repo": repo, "branch": settings()["branch"],
                       "urlpath": f"lab/tree/{folder}/{_notebook(path)}"}, quote_via=quote)
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading (github-slugger: lower case, punctuation dropped, spaces to -)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def local(lang: str) -> str:
    """The README's section with the two commands (clone, then ``start``), in ``lang``."""
    section = settings()["local_section"]["ko" if lang == "ko" else "en"]
    return f"{settings()['repository'].rstrip('/')}#{quote(slug(section))}"


def buttons(path: str, lang: str, hub: str | None = None) -> list[Button]:
    """The four launch buttons of the notebook at ``path``, labelled in ``lang``; ``hub``: a class's JupyterHub."""
    targets = {"local": local(lang), "hub": hub_link(hub, path) if hub else None,
               "colab": colab(path), "binder": binder(path)}
    return [Button(kind, msg(f"launch.{kind}").text(lang), targets[kind]) for kind in KINDS]
