"""Where a module's files are, from its one record in ``data/modules.json``: number, topic, titles, and which parts
it has. Every name is derived here (``Module``): ``04_training_memory`` names its notebooks' folders (their file names
carry the topic, so that JupyterLab's tabs tell them apart: ``lessons/01_devices/01_devices.ko.ipynb``,
``solutions/01_devices/01_devices_exercise.ipynb``), ``m04`` its tasks (``m04.audit``) and tests folder,
``m04_training_memory`` its package folder and answers module. Standard library only: ``bootstrap`` uses it before
the course's environment exists."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

RECORDS = Path("autograder") / "data" / "modules.json"
OWN = Path(__file__).resolve().parent.parent / RECORDS
PARTS = ("lesson", "exercise", "package", "answers", "tests")
LANGS = ("ko", "en")
LESSON = re.compile(r"(?:^|/)lessons/(\d\d_[a-z0-9_]+)/\1\.(ko|en)\.ipynb$")
NUMBER = re.compile(r"\d\d")
TOPIC = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Module:
    """One module's record: ``number`` ``"04"``, ``topic`` ``"training_memory"``, its title in Korean and English,
    ``has`` (which of :data:`PARTS` it has) and ``start`` (the start page)."""

    number: str
    topic: str
    title_ko: str
    title_en: str
    has: tuple = PARTS
    start: bool = False

    def title(self, lang: str) -> str:
        return self.title_ko if lang == "ko" else self.title_en

    @property
    def id(self) -> str:
        """``04_training_memory``: the folder of its lesson, exercise and solution, and the assignment's name."""
        return f"{self.number}_{self.topic}"

    @property
    def short(self) -> str:
        """``m04``: its tasks' prefix (``m04.audit``) and its tests' folder."""
        return f"m{self.number}"

    @property
    def package(self) -> str:
        """``m04_training_memory``: its folder in ``autograder/modules`` and its module in ``course_answers``."""
        return f"m{self.id}"

    def lesson(self, lang: str, root: Path | str = ".") -> Path:
        return lesson(self.id, lang, root)

    def exercise(self, kind: str = "solutions", root: Path | str = ".") -> Path:
        return exercise(self.id, kind, root)

    def paths(self, root: Path | str = ".") -> dict[str, list[Path]]:
        """Each part's files (or folders), whether the record says it has the part or not."""
        root = Path(root)
        return {"lesson": [lesson_source(self.id, root), *(self.lesson(lang, root) for lang in LANGS)],
                "exercise": [self.exercise("solutions", root)],
                "package": [root / "autograder" / "modules" / self.package / name for name in ("__init__.py", "tasks.py")],
                "answers": [root / "course_answers" / f"{self.package}.py"],
                "tests": [root / "tests" / "modules" / self.short]}

    def heading(self, lang: str) -> str:
        """The first heading of its lesson: ``# 04 · <title>``."""
        return f"# {self.number} · {self.title(lang)}"


def lesson(module: str, lang: str, root: Path | str = ".") -> Path:
    """A lesson notebook: ``lessons/NN_topic/NN_topic.{ko,en}.ipynb`` (built from :func:`lesson_source`)."""
    return in_language(lesson_source(module, root), lang)


def in_language(path: Path, lang: str | None) -> Path:
    """The file of notebook ``path`` (``X.ipynb``, both languages) in one language, ``X.<lang>.ipynb``; ``path``
    itself where ``lang`` is None."""
    return path.with_name(f"{path.stem}.{lang}.ipynb") if lang else path


def lesson_source(module: str, root: Path | str = ".") -> Path:
    """A lesson's one source, both languages side by side (``autograder.bilingual``): ``lessons/NN_topic/NN_topic.ipynb``."""
    return Path(root) / "lessons" / module / f"{module}.ipynb"


def lesson_sources(root: Path | str = ".") -> list[Path]:
    """Every lesson's source, in module order."""
    return [lesson_source(m.id, root) for m in modules(root, "lesson")]


def exercise(module: str, kind: str = "solutions", root: Path | str = ".") -> Path:
    """An exercise notebook in ``solutions/`` (the nbgrader source) or ``exercises/`` (the student version)."""
    return Path(root) / kind / module / f"{module}_exercise.ipynb"


def records_file(root: Path | str | None = None) -> Path:
    """The records of the course at ``root``; this package's where ``root`` is None or holds no course package."""
    path = Path(root) / RECORDS if root is not None else OWN
    return path if path.exists() else OWN


def modules(root: Path | str | None = None, part: str | None = None) -> list[Module]:
    """Every module in the order of its record (with ``part``: those that have it)."""
    path = records_file(root).resolve()
    stat = path.stat()
    return [m for m in _load(path, stat.st_mtime_ns, stat.st_size) if part is None or part in m.has]


@lru_cache(maxsize=None)
def _load(path: Path, *_version) -> tuple[Module, ...]:
    """The records in ``path`` (read again when its modification time or size changed)."""
    return tuple(Module(r["number"], r["topic"], r["title"]["ko"], r["title"]["en"], tuple(r["has"]), bool(r.get("start")))
                 for r in json.loads(path.read_text(encoding="utf-8"))["modules"])


def module(name: str | int, root: Path | str | None = None) -> Module:
    """The module ``name`` spells: ``4``, ``"04"``, ``"m04"``, ``"04_training_memory"`` or ``"m04_training_memory"``
    (``mNN`` names the one with a package). Raises ValueError when it names none or more than one."""
    found = find(name, root)
    if len(found) != 1:
        known = ", ".join(m.id for m in modules(root))
        raise ValueError(f"모듈 {name!r}: " + (f"{', '.join(m.id for m in found)} 중 하나를 전체 이름으로 쓰세요 / "
                                               f"{name!r} names {', '.join(m.id for m in found)}: use the full name"
                                               if found else f"그런 모듈이 없습니다 (있는 모듈: {known}) / "
                                               f"no such module {name!r} (known: {known})"))
    return found[0]


def find(name: str | int, root: Path | str | None = None) -> list[Module]:
    """The modules ``name`` may spell (see :func:`module`)."""
    name = f"{name:02d}" if isinstance(name, int) else str(name)
    exact = [m for m in modules(root) if name in (m.id, m.package)]
    return exact or [m for m in modules(root) if name == m.number or (name == m.short and "package" in m.has)]


def start(root: Path | str | None = None) -> Module:
    """The start page's module."""
    return next(m for m in modules(root) if m.start)


def lessons(lang: str, root: Path | str = ".") -> list[Path]:
    """Every lesson in ``lang``, in module order."""
    return [m.lesson(lang, root) for m in modules(root, "lesson")]


def exercises(kind: str = "solutions", root: Path | str = ".") -> list[Path]:
    """Every exercise notebook in ``solutions/`` or ``exercises/``, in module order."""
    return [m.exercise(kind, root) for m in modules(root, "exercise")]


def notebooks(root: Path | str = ".") -> list[Path]:
    """Every notebook of the course: the lessons (their sources, then each language), then the exercises' sources
    and student versions."""
    return [*lesson_sources(root), *lessons("ko", root), *lessons("en", root), *exercises("solutions", root),
            *exercises("exercises", root)]


def problems(root: Path | str = ".") -> list[str]:
    """Where the records and the course at ``root`` disagree: a record that is malformed or repeats another's name, a
    part a record has whose files are missing or one it lacks whose files exist, a module folder or file no record
    names. Empty when they agree."""
    root, found = Path(root), []
    records = modules(root)
    for m in records:
        if not (NUMBER.fullmatch(m.number) and TOPIC.fullmatch(m.topic) and set(m.has) <= set(PARTS)
                and m.title_ko and m.title_en):
            found.append(f"{m.id}: a record has a two-digit number, a topic in [a-z0-9_], parts among {PARTS} "
                         "and a title in ko and en")
        for part, paths in m.paths(root).items():
            there = [p.exists() for p in paths]
            if part in m.has and not all(there):
                found += [f"{m.id} has a {part}: {p.relative_to(root)} is missing" for p, ok in zip(paths, there) if not ok]
            elif part not in m.has and any(there):
                found.append(f"{m.id} has no {part} in its record, but {paths[there.index(True)].relative_to(root)} exists")
    for names, what in (([m.id for m in records], "id"), ([m.short for m in records if "package" in m.has], "package"),
                        ([m.number for m in records if {"lesson", "exercise"} & set(m.has)], "lesson number")):
        found += [f"two records share the {what} {name}" for name in sorted({n for n in names if names.count(n) > 1})]
    if sum(m.start for m in records) != 1:
        found.append("one record is the start page (\"start\": true)")
    named = {root / "lessons" / m.id for m in records if "lesson" in m.has} \
        | {root / kind / m.id for m in records if "exercise" in m.has for kind in ("solutions", "exercises")} \
        | {root / "autograder" / "modules" / m.package for m in records if "package" in m.has} \
        | {root / "course_answers" / f"{m.package}.py" for m in records if "answers" in m.has} \
        | {root / "tests" / "modules" / m.short for m in records if "tests" in m.has}
    for folder, keep in (("lessons", Path.is_dir), ("solutions", Path.is_dir), ("exercises", Path.is_dir),
                         ("autograder/modules", lambda p: (p / "__init__.py").exists()),
                         ("course_answers", lambda p: p.suffix == ".py" and p.name != "__init__.py"),
                         ("tests/modules", Path.is_dir)):
        found += [f"{p.relative_to(root)} belongs to no module record ({RECORDS})"
                  for p in sorted((root / folder).glob("*")) if keep(p) and p.name != "__pycache__" and p not in named]
    return found


def dump(records: list[Module], about: str) -> str:
    """The text of ``data/modules.json``: ``about``, then one record a line."""
    rows = [json.dumps({"number": m.number, "topic": m.topic, "title": {lang: m.title(lang) for lang in LANGS}, "has": list(m.has),
                        **({"start": True} if m.start else {})}, ensure_ascii=False) for m in records]
    return "{\n" + f' "_about": {json.dumps(about, ensure_ascii=False)},\n "modules": [\n  ' + ",\n  ".join(rows) + "\n ]\n}\n"
