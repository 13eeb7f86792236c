"""The model: launches, ranks, models and graphs built from events (launch)."""
