"""Module 08 lesson helpers: what the lesson's cells call."""
