"""From raw collected data to typed evidence (no judgement here: that is rules/)."""
