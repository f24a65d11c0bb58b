"""Building a model in the viewport: add, convert, default classes, keyframes, validation, display."""
