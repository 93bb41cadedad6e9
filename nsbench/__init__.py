"""nsbench: compare noise-suppression engines side by side, honestly."""
__version__ = "0.1.0"
