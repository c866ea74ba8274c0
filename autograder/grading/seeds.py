"""An assignment's seed and device secret, kept in the gradebook's database (SQLite or PostgreSQL alike).

The seed draws the hidden cases of every grading of the assignment (the kernel gets it as
``COURSE_GRADING_SEED``); the secret never leaves the grader: each submission gets a key derived from it
(:func:`submission_key`), and a simulated device's parameters are drawn from that key, the task and the
case (:func:`device_rng`). Both are drawn once, at ``release`` or at the first grading, so re-grading an
unchanged submission gives the same score on any machine.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import random
import secrets
from dataclasses import dataclass

from .course import Course

TABLE = "aihw_assignment_seed"


@dataclass(frozen=True)
class Drawn:
    seed: int  # of the hidden cases; the kernel sees it
    secret: str  # of the simulated devices (hex); the kernel never does


def of(course: Course, assignment: str, new: bool = False) -> Drawn:
    """``assignment``'s seed and secret, drawn and stored the first time (``new``: drawn again, replacing them)."""
    from sqlalchemy import create_engine, delete, insert, select
    from sqlalchemy.exc import IntegrityError
    engine = create_engine(course.gradebook_url)
    try:
        table = _table()
        table.metadata.create_all(engine)  # next to nbgrader's tables; nothing if it is there
        key = (table.c.course_id == course.course_id) & (table.c.assignment == assignment)
        try:
            with engine.begin() as con:
                if new:
                    con.execute(delete(table).where(key))
                row = con.execute(select(table.c.seed, table.c.secret).where(key)).first()
                if row is not None:
                    return Drawn(int(row.seed), row.secret)
                drawn = Drawn(secrets.randbelow(2**31), secrets.token_hex(32))
                con.execute(insert(table).values(course_id=course.course_id, assignment=assignment,
                                                 seed=drawn.seed, secret=drawn.secret))
                return drawn
        except IntegrityError:  # another grader stored the first one at the same moment: that one
            with engine.begin() as con:
                row = con.execute(select(table.c.seed, table.c.secret).where(key)).one()
                return Drawn(int(row.seed), row.secret)
    finally:
        engine.dispose()


def _table():
    from sqlalchemy import Column, Integer, MetaData, String, Table
    return Table(TABLE, MetaData(), Column("course_id", String(128), primary_key=True),
                 Column("assignment", String(128), primary_key=True), Column("seed", Integer, nullable=False),
                 Column("secret", String(64), nullable=False))


def submission_key(secret: str, assignment: str, student: str) -> str:
    """The key of one submission's simulated devices (hex): what a grading worker gets instead of the secret."""
    return hmac.new(bytes.fromhex(secret), f"{assignment}\0{student}".encode(), hashlib.sha256).hexdigest()


def device_rng(key: str, task_id: str, case) -> random.Random:
    """The random source of the simulated device of ``task_id``'s ``case`` under a submission's ``key``; no key
    (a referee outside a class grading): a fresh one."""
    if not key:
        return random.Random(secrets.randbits(64))
    message = f"{task_id}\0{json.dumps(case, sort_keys=True)}".encode()
    return random.Random(hmac.new(bytes.fromhex(key), message, hashlib.sha256).digest())
