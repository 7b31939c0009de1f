"""The web blueprints, one per area."""
