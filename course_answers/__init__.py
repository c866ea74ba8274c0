"""The instructor's part of the course: reference implementations and hidden cases, one file per module.

``course_answers/<module folder>.py`` (``m04_training_memory.py``) holds the module's
reference implementations, ``EXPECT`` (task name -> case -> expected answer as JSON
data) and ``HIDDEN`` (task name -> random.Random -> hidden cases). A learner edition
(``instructor edition``) leaves this package out; the grading sandbox hides it.
"""
