"""Demo module (m00): three tiny tasks, no lesson, for the grading pipeline's tests."""
