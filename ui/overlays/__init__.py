"""The viewport's MuJoCo overlays: what they draw (engine/overlays.py computes it),
their switches (settings.py, the header popover) and the draw callback."""
