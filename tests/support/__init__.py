"""Helpers every test layer shares: waiting on a condition, environment knobs, the partition a
workspace lands on, a bot's publish-until-stored, the directory rows a test needs."""
