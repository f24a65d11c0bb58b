"""Objects -> MjSpec -> compiled MjModel: the scan, models attached, compile errors mapped to objects."""
