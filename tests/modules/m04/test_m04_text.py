"""Module 04's Korean reads as one voice: no English-style space before a parenthesis in prose, bold that renders
before a Hangul particle, the course's words for its parts, and the submit command the CLI accepts."""
import importlib.util
import re
from pathlib import Path

from autograder import layout

_SPEC = importlib.util.spec_from_file_location(
    "learner_text", Path(__file__).resolve().parents[2] / "fixtures" / "learner_text.py")
learner_text = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(learner_text)
HANGUL, ROOT = learner_text.HANGUL, learner_text.ROOT

NOT_PROSE = [re.compile(r"```.*?```", re.S), re.compile(r"`[^`\n]*`"), re.compile(r"https?://\S+")]
SPACE_BEFORE_PAREN = re.compile(r"[\uac00-\ud7a3A-Za-z0-9%.] \((?!한국어\))")
# CommonMark leaves ** literal when it follows punctuation and is followed by a letter: **…)**를
BOLD_THEN_PARTICLE = re.compile(r"[)`.,:;!?\"'”]\*\*[\uac00-\ud7a3]")
KOREAN = [(place, text) for group, place, lang, text in learner_text.texts()
          if group.startswith("m04") and lang == "ko" and HANGUL.search(text)]


def prose_lines(text: str):
    """Lines of prose: headings (their '(2점, 워밍업)' form is the course's), table rows and code left out."""
    for pattern in NOT_PROSE:
        text = pattern.sub(" ", text)
    return [line for line in text.splitlines() if not line.lstrip().startswith(("#", "|"))]


def test_no_space_before_a_parenthesis_in_korean_prose():
    found = [f"{place}: {line.strip()}" for place, text in KOREAN for line in prose_lines(text)
             if SPACE_BEFORE_PAREN.search(line)]
    assert not found, "write 'HBM(고대역폭 메모리)', not 'HBM (고대역폭 메모리)':\n" + "\n".join(found)


def test_bold_renders_before_a_particle():
    found = [place for place, text in KOREAN if BOLD_THEN_PARTICLE.search(text)]
    assert not found, "write '**통합 메모리**(unified memory)를', not '**…(…)**를':\n" + "\n".join(found)


def test_the_exercise_uses_the_course_words_and_the_real_submit_command():
    text = layout.exercise("04_training_memory", "solutions", ROOT).read_text(encoding="utf-8")
    assert "python3 -m autograder submit 04_training_memory --student 학번" in text
    assert "--student-id" not in text
    for avoided in ("연습 문제", "연습 과제", "검사 셀", "강의"):
        assert avoided not in text, avoided
    assert "# 실습 04 · 학습 메모리는 어디에 쓰이고, 줄이는 네 가지 방법" in text
