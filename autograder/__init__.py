"""AI hardware course support package."""
