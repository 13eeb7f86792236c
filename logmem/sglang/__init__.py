"""SGLang's own rules: the formulas and constants the tool relies on, each written once."""
