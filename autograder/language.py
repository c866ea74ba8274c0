"""Which language the learner reads: one rule, standard library only (``bootstrap`` uses it before the course's
environment exists; :mod:`autograder.i18n` uses it in every process, kernels included).

In order: the command line's ``--lang`` (:func:`choose`), the ``COURSE_LANG`` environment variable, the choice
remembered in ``$XDG_CONFIG_HOME/ai-hardware-course/language`` (:func:`remember`; default ``~/.config``), the locale
(``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``: one starting with ``ko`` is Korean, any other but ``C``/``POSIX``
English), else both (Korean first, then English).
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

LANGUAGES = ("ko", "en", "both")
OPTION = "--lang"
_option: str | None = None


def choose(lang: str | None) -> None:
    """The language this process was told on its command line (``None``: none)."""
    global _option
    _option = lang if lang in LANGUAGES else None


def chosen() -> str:
    """``ko``, ``en`` or ``both`` by the rule above."""
    env = os.environ.get("COURSE_LANG")
    return _option or (env if env in LANGUAGES else None) or remembered() or from_locale() or "both"


def from_locale() -> str | None:
    """``ko`` or ``en`` from the first locale setting that names a language; None for none (or ``C``/``POSIX``)."""
    names = os.environ.get("LANGUAGE", "").split(":") + [os.environ.get(k, "") for k in ("LC_ALL", "LC_MESSAGES", "LANG")]
    for name in names:
        name = name.strip().lower()
        if name and name.split(".")[0] not in ("c", "posix"):
            return "ko" if name.startswith("ko") else "en"
    return None


def remembered_path() -> Path | None:
    """Where the choice is remembered: one small file per user (None where there is no home folder)."""
    try:
        config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    except (RuntimeError, KeyError):
        return None
    return Path(config) / "ai-hardware-course" / "language"


@lru_cache(maxsize=1)
def remembered() -> str | None:
    """The remembered choice, read once per process (None if there is none or it is not a language)."""
    path = remembered_path()
    try:
        lang = path.read_text(encoding="utf-8").strip() if path else None
    except (OSError, UnicodeDecodeError):
        return None
    return lang if lang in LANGUAGES else None


def remember(lang: str) -> Path:
    """Remember ``lang`` for next time; the file written. Raises OSError where it cannot be written."""
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}: {lang!r}")
    path = remembered_path()
    if path is None:
        raise OSError("no home folder to remember the language in")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(lang + "\n", encoding="utf-8")
    remembered.cache_clear()
    return path


_NAMES = {"ko": ("한국어로", "Korean"), "en": ("영어로", "English"), "both": ("두 언어(한국어와 영어)로", "both Korean and English")}


def keep(lang: str) -> str | None:
    """Remember ``lang`` (an explicit choice) and return the line that says so, in that language; None if it was
    already the remembered choice."""
    if remembered() == lang:
        return None
    try:
        path = remember(lang)
    except OSError as error:
        return pick(f"언어 선택을 기억하지 못해 이번에만 씁니다({error}).",
                    f"Could not remember the language ({error}): it applies this time only.", lang)
    ko = (f"언어를 {_NAMES[lang][0]} 기억했습니다({path}). 과정의 명령이 다음부터 이 언어를 씁니다"
          "(바꾸기: --lang ko, en 또는 both).")
    en = (f"Language remembered: {_NAMES[lang][1]} ({path}). The course's commands use it from now on "
          "(change it with --lang ko, en or both).")
    env = os.environ.get("COURSE_LANG")
    if env in LANGUAGES and env != lang:
        ko += f" 단, COURSE_LANG 환경 변수({env})가 설정된 곳에서는 그 값이 먼저입니다."
        en += f" Where COURSE_LANG={env} is set, it comes first."
    return pick(ko, en, lang)


def split(argv: list[str]) -> tuple[str | None, list[str]]:
    """The value of ``--lang`` on a command line (``--lang en`` or ``--lang=en``) if it names a language, and the
    command line without it."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == OPTION and i + 1 < len(argv) and argv[i + 1] in LANGUAGES:
            return argv[i + 1], argv[:i] + argv[i + 2:]
        if arg.startswith(OPTION + "=") and arg[len(OPTION) + 1:] in LANGUAGES:
            return arg[len(OPTION) + 1:], argv[:i] + argv[i + 1:]
    return None, list(argv)


def option(argv: list[str]) -> str | None:
    """The language ``--lang`` names on a command line, if any."""
    return split(argv)[0]


def page(lang: str | None = None) -> str:
    """The language of a page that exists in one language only (the start page): under both, the locale's, else English."""
    lang = lang or chosen()
    return lang if lang in ("ko", "en") else from_locale() or "en"


def pick(ko: str, en: str, lang: str | None = None, joiner: str = "\n") -> str:
    """``ko`` or ``en`` in the chosen language; under both, the two joined by ``joiner`` (one text when they agree)."""
    lang = lang or chosen()
    return ko if lang == "ko" or ko == en else en if lang == "en" else f"{ko}{joiner}{en}"
