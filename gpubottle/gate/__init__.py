"""The CI performance gate: budgets checked against a baseline, noise-aware."""
