"""Reporters: one analysis model rendered as text, Markdown, JSON or HTML (`render(model) -> str`)."""
