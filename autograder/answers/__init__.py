"""Reference implementations that the checks score against (hidden from submissions while grading)."""
